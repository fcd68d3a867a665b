"""What to do after a run, read from the results the report and `model`
already show (no judgement of its own): per metric, what its verdict asks
(the ratio to deploy, or what would give one: todo_of), where the client
pair matrix points (an outlier node or link, or nowhere: pairs), and what
else to measure again (remeasure). Each is a list of (metric, sentence),
metric None for the run as a whole; a sentence names no metric, so the
report says a sentence shared by several metrics once ("bw, rpc: ...")."""

from __future__ import annotations

import statistics

from rooftop.foreign import FOREIGN_WARN
from rooftop.model import outliers, suspects
from rooftop.model.roofline import ONE_MEASUREMENT_TODO, Roofline
from rooftop.results import WIDE_CLIENT_RANGE, RunResults
from rooftop.units import fmt_pct, fmt_range, fmt_rate, fmt_ratio

#: Where 3 or more nodes come from when this machine has too few cores.
MORE_NODES = (
    f"{ONE_MEASUREMENT_TODO} (a machine with 3 or more cores, a cluster, or the emulated cluster: "
    "rooftop cluster up --nodes 3), so that the client and server ceilings are separate measurements"
)


def todo_of(r: Roofline) -> str:
    """What the metric's verdict asks: the ratio to deploy, or what would give one."""
    v = r.verdict()
    if v["kind"] == "ratio":
        return (
            f"deploy {fmt_ratio(*v['ratio'])} (servers:clients): the predicted rate is then within 5 % of "
            f"the client ceiling ({fmt_rate(r.client_bound.centre, r.unit)} per client)"
        )
    if v["kind"] == "range":
        safe = v["range"][1] if v.get("range") and v["range"][1] else None
        return f"deploy {v['text']}" + (f"; {fmt_ratio(*safe)} is the safe side (more servers)" if safe else "")
    if r.one_measurement:
        return MORE_NODES
    if v["kind"] == "indistinguishable" or r.client.interval is None or r.server.interval is None:
        return (
            "narrow the ceilings' intervals to get a ratio: more windows (collect.windows) "
            "or longer ones (collect.duration)"
        )
    return "measure the ceilings with samples the model may use (see the warnings)"


def pairs(res: RunResults) -> list[tuple[str | None, str]]:
    """Per metric: the outlier nodes and links of the client pair matrix, or none."""
    out: list[tuple[str | None, str]] = []
    for metric, pm in sorted(res.pairs.items()):
        flagged = res.flagged(metric)
        named = pm.named.links if pm.named else []
        slow = outliers.slow_pairs(pm.rates, flagged, pm.classes)
        links = [(p, v) for p, v in slow if not set(p) & set(flagged) and not _through(res, pm, p)]
        for lk in named:
            out.append(
                (
                    metric,
                    f"the pair matrix points at the {lk.label}: its {len(lk.pairs)} pair(s) are slow "
                    f"(median {fmt_rate(statistics.median(r for _, r in lk.pairs), pm.unit)}) while its nodes' "
                    "other pairs are not. Check that link (cable, port, routing); its pairs are left out of "
                    "the class ceilings.",
                )
            )
        if flagged:
            w = res.without_flagged.get(metric)
            out.append(
                (
                    metric,
                    f"the pair matrix points at node{'s' if len(flagged) > 1 else ''} "
                    + ", ".join(f"n{n}" for n in flagged)
                    + ": its pairs are slow. Check it (NIC, "
                    "link, CPU load) before trusting the client ceiling"
                    + (f"; without it the ceiling is {fmt_range(w.client.lo, w.client.hi, w.unit)}." if w else "."),
                )
            )
        if links:
            out.append(
                (
                    metric,
                    "the pair matrix points at the link"
                    + ("s " if len(links) > 1 else " ")
                    + ", ".join(f"n{a}-n{b} ({fmt_rate(v, pm.unit)})" for (a, b), v in links[:3])
                    + ": slow between those nodes only (a cable, a switch port, a route).",
                )
            )
        if pm.states:
            out.append(
                (metric, "follow-up: " + "; ".join(suspects.state_text(s, st) for s, st in pm.states.items()) + ".")
            )
        if pm.power:
            out.append((metric, pm.power_line() + "."))
        if not flagged and not links and not named:
            why = outliers.cannot_tell(pm.rates, pm.nodes, pm.classes)
            if why.startswith("cannot tell") and pm.left_out:
                out.append(
                    (
                        metric,
                        f"the pair matrix {why} ({len(pm.left_out)} pair(s) left out: "
                        f"{next(iter(pm.left_out.values()))[1]}).",
                    )
                )
            elif len(pm.rates) < outliers.MIN_NODES:
                pairs_ = "one node pair" if len(pm.rates) == 1 else f"{len(pm.rates)} node pairs"
                out.append(
                    (
                        metric,
                        f"{pairs_}: too few for the pair matrix to point anywhere (a slow node "
                        "shows among 3 or more nodes).",
                    )
                )
            else:
                out.append(
                    (metric, f"the pair matrix points nowhere: no node or link stands out among {len(pm.rates)} pairs.")
                )
    return out


def _through(res: RunResults, pm, p) -> bool:
    """Whether the pair crosses a link named slow."""
    return bool(pm.named and pm.named.through_named(res.topology, *p))


def remeasure(res: RunResults) -> list[tuple[str | None, str]]:
    """What else to measure again, and how (what a verdict asks is todo_of's);
    empty when nothing needs it."""
    out: list[tuple[str | None, str]] = []
    run = res.run.id
    if res.run.status != "complete":
        out.append((None, f"The run is {res.run.status}: finish it (rooftop collect --resume {run})."))
    for metric, r in sorted(res.rooflines.items()):
        c = r.client
        if c.lo > 0 and c.hi / c.lo - 1 > WIDE_CLIENT_RANGE and not res.flagged(metric):
            out.append(
                (
                    metric,
                    f"the client ceiling spans {fmt_pct(c.hi / c.lo - 1)}: measure longer or more "
                    f"windows (collect.duration, collect.windows) on a quiet machine.",
                )
            )
        ev = res.evaluations.get(metric)
        if ev is not None and not ev.checks:
            out.append((metric, f"no validation yet: rooftop validate {run}."))
        elif ev is not None and any(ch.above_roofline for ch in ev.checks):
            out.append(
                (
                    metric,
                    "validation samples sit above the roofline: measure the server "
                    "ceiling again (rooftop collect), or check the samples are comparable.",
                )
            )
    bad = [s for s in res.samples if s["status"] != "ok"]
    busy = [s for s in res.samples if s.get("concurrent") or (s.get("foreign_cpu") or 0) > FOREIGN_WARN]
    if bad:
        out.append((None, f"{len(bad)} sample(s) failed or are invalid (see Warnings): measure them again."))
    if busy:
        out.append(
            (None, f"{len(busy)} sample(s) shared the machine with other work: measure again on a quiet machine.")
        )
    return out


def said_once(items: list[tuple[str | None, str]]) -> list[str]:
    """The sentences, each once, prefixed by the metrics that share it."""
    by: dict[str, list[str]] = {}
    for metric, sentence in items:
        by.setdefault(sentence, [])
        if metric is not None and metric not in by[sentence]:
            by[sentence].append(metric)
    return [f"{', '.join(ms)}: {s}" if ms else s for s, ms in by.items()]
