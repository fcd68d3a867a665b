"""What to do after a run, in three short parts the report leads with:
which ratio to deploy (the model's verdict), where the client pair matrix
points (an outlier node or link, or nowhere), and what to measure again
(and how). Each part is a list of sentences; they read the results the
report and `model` already show, and add no judgement of their own."""

from __future__ import annotations

from rooftop.config.units import fmt_rate
from rooftop.foreign import FOREIGN_WARN
from rooftop.model import outliers
from rooftop.results import WIDE_CLIENT_RANGE, RunResults


def deploy(res: RunResults) -> list[str]:
    """Per metric: the ratio to deploy, or why the model gives none."""
    out = []
    for metric, r in sorted(res.rooflines.items()):
        v = r.verdict()
        if v["kind"] == "ratio":
            s, c = v["ratio"]
            out.append(
                f"{metric}: deploy {s} server process{'es' if s != 1 else ''} per {c} client "
                f"process{'es' if c != 1 else ''}: the predicted rate is then within 5 % of "
                f"the client ceiling ({fmt_rate(r.client_bound.centre, r.unit)} per client)."
            )
        elif v["kind"] == "range":
            safe = v["range"][1] if v.get("range") and v["range"][1] else None
            out.append(
                f"{metric}: deploy {v['text']}"
                + (f"; {safe[0]}:{safe[1]} is the safe side (more servers)." if safe else ".")
            )
        else:
            out.append(f"{metric}: no ratio yet: {v['text']}.")
    return out


def pairs(res: RunResults) -> list[str]:
    """Per metric: the outlier nodes and links of the client pair matrix, or none."""
    out = []
    for metric, pm in sorted(res.pairs.items()):
        flagged = res.flagged(metric)
        slow = outliers.slow_pairs(pm.rates, flagged, pm.classes)
        links = [(p, v) for p, v in slow if not set(p) & set(flagged)]
        if flagged:
            w = res.without_flagged.get(metric)
            out.append(
                f"{metric}: the pair matrix points at node{'s' if len(flagged) > 1 else ''} "
                + ", ".join(f"n{n}" for n in flagged)
                + ": its pairs are slow. Check it (NIC, "
                "link, CPU load) before trusting the client ceiling"
                + (
                    f"; without it the ceiling is {fmt_rate(w.client.lo, w.unit)} .. {fmt_rate(w.client.hi, w.unit)}."
                    if w
                    else "."
                )
            )
        if links:
            out.append(
                f"{metric}: the pair matrix points at the link"
                + ("s " if len(links) > 1 else " ")
                + ", ".join(f"n{a}-n{b} ({fmt_rate(v, pm.unit)})" for (a, b), v in links[:3])
                + ": slow between those nodes only (a cable, a switch port, a route)."
            )
        if not flagged and not links:
            why = outliers.cannot_tell(pm.rates, pm.nodes)
            if why.startswith("cannot tell") and pm.left_out:
                out.append(
                    f"{metric}: the pair matrix {why} ({len(pm.left_out)} pair(s) left out: "
                    f"{next(iter(pm.left_out.values()))[1]})."
                )
            elif len(pm.rates) < outliers.MIN_NODES:
                out.append(
                    f"{metric}: {len(pm.rates)} node pair(s): too few for the pair matrix to "
                    f"point anywhere; collect on 3 or more nodes to tell a slow node."
                )
            else:
                out.append(
                    f"{metric}: the pair matrix points nowhere: no node or link stands out among {len(pm.rates)} pairs."
                )
    return out


def remeasure(res: RunResults) -> list[str]:
    """What to measure again, and how; empty when nothing needs it."""
    out = []
    run = res.run.id
    if res.run.status != "complete":
        out.append(f"The run is {res.run.status}: finish it (rooftop collect --resume {run}).")
    for metric, r in sorted(res.rooflines.items()):
        c = r.client
        if c.lo > 0 and c.hi / c.lo - 1 > WIDE_CLIENT_RANGE and not res.flagged(metric):
            out.append(
                f"{metric}: the client ceiling spans {c.hi / c.lo - 1:.0%}: measure longer or more "
                f"samples (collect.duration, collect.samples) on a quiet machine."
            )
        if r.verdict()["kind"] in ("indistinguishable", "cannot_tell") and not r.one_measurement:
            out.append(
                f"{metric}: narrow the ceilings' intervals to get a ratio: more samples "
                f"(collect.samples) or longer ones (collect.duration)."
            )
        elif r.one_measurement:
            out.append(
                f"{metric}: collect on 3 or more nodes, so that the client and server ceilings "
                f"are separate measurements."
            )
        ev = res.evaluations.get(metric)
        if ev is not None and not ev.checks:
            out.append(f"{metric}: no validation yet: rooftop validate --run {run}.")
        elif ev is not None and any(ch.above_roofline for ch in ev.checks):
            out.append(
                f"{metric}: validation samples sit above the roofline: measure the server "
                f"ceiling again (rooftop collect), or check the samples are comparable."
            )
    bad = [s for s in res.samples if s["status"] != "ok"]
    busy = [s for s in res.samples if s.get("concurrent") or (s.get("foreign_cpu") or 0) > FOREIGN_WARN]
    if bad:
        out.append(f"{len(bad)} sample(s) failed or are invalid (see Warnings): measure them again.")
    if busy:
        out.append(f"{len(busy)} sample(s) shared the machine with other work: measure again on a quiet machine.")
    return out
