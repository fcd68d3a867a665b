"""NIC policies compared across runs (Carns et al., CUG 2025, Figure 2): the server-node
aggregate of each run's server-peak samples, grouped by core binding and
NIC policy (the clients' nic.policy), mean and standard deviation over the
samples, and which policy is best per binding -- or that the policies
cannot be told apart.

Two policies are indistinguishable under a binding when their mean +- one
standard deviation overlap: the report then recommends neither (a
difference inside the noise is not a reason to choose). A policy is named
best overall when it is best or indistinguishable from the best under every
binding, and clearly best under at least one.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from rooftop import stages


@dataclass
class Bar:
    binding: str
    policy: str
    values: list[float]
    runs: list[str] = field(default_factory=list)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values)

    @property
    def std(self) -> float:
        return statistics.stdev(self.values) if len(self.values) > 1 else 0.0


@dataclass
class Comparison:
    metric: str
    unit: str
    bars: list[Bar]
    #: binding -> the best policy there, or None when the best is within the noise of another
    best: dict[str, str | None]
    #: the policy best or tied under every binding and clearly best under one; None otherwise
    overall: str | None
    verdict: list[str]


def _overlap(a: Bar, b: Bar) -> bool:
    return a.mean - a.std <= b.mean + b.std and b.mean - b.std <= a.mean + a.std


def _best(bars: list[Bar]) -> tuple[str | None, list[str]]:
    """(the best policy of one binding's bars or None, the policies tied with the best)."""
    ranked = sorted(bars, key=lambda b: b.mean, reverse=True)
    tied = [b.policy for b in ranked[1:] if _overlap(ranked[0], b)]
    return (None if tied else ranked[0].policy), [ranked[0].policy] + tied


def gather(runs: list[tuple[str, dict, list[dict]]], metric: str | None = None) -> list[Bar]:
    """runs: (run id, its config, its samples). One bar per (binding, policy)
    with the ok server-peak aggregates of that metric (the first metric the
    runs share when None)."""
    server = stages.of_role("server").name
    bars: dict[tuple[str, str], Bar] = {}
    for run_id, cfg, samples in runs:
        rows = [
            s
            for s in samples
            if s["stage"] == server and s["status"] == "ok" and (metric is None or s["metric"] == metric)
        ]
        key = (cfg["binding"], cfg["nic"]["policy"])
        bar = bars.setdefault(key, Bar(*key, []))
        bar.values += [s["aggregate"] for s in rows]
        bar.runs.append(run_id)
    return [b for b in bars.values() if b.values]


BINDING_ORDER = ("core", "2cores", "none")


def compare(runs: list[tuple[str, dict, list[dict]]], metric: str) -> Comparison:
    """The comparison of one metric over runs; ValueError when fewer than
    two policies have ok server-peak samples under some binding."""
    bars = gather(runs, metric)
    policies = sorted({b.policy for b in bars})
    if len(policies) < 2:
        raise ValueError(
            f"NIC policy comparison: the runs measure {metric} under "
            f"{len(policies)} NIC policy ({', '.join(policies) or 'none'}); give runs of "
            f"at least two (rooftop collect --nic-policy A,B)"
        )
    unit = next(s["unit"] for _, _, ss in runs for s in ss if s["metric"] == metric)
    bindings = sorted({b.binding for b in bars}, key=lambda x: BINDING_ORDER.index(x) if x in BINDING_ORDER else 9)
    bars.sort(key=lambda b: (bindings.index(b.binding), policies.index(b.policy)))
    best, verdict, wins = {}, [], {}
    for bnd in bindings:
        group = [b for b in bars if b.binding == bnd]
        if len(group) < 2:
            best[bnd] = None
            verdict.append(f"binding {bnd}: only {group[0].policy} was measured")
            continue
        winner, tied = _best(group)
        best[bnd] = winner
        for p in tied:
            wins.setdefault(p, set()).add(bnd)
        if winner:
            ranked = sorted(group, key=lambda b: b.mean, reverse=True)
            verdict.append(
                f"binding {bnd}: {winner} is best ({ranked[0].mean / ranked[1].mean:.2f}x "
                f"{ranked[1].policy}, beyond one standard deviation of each)"
            )
        else:
            verdict.append(
                f"binding {bnd}: {', '.join(tied)} are indistinguishable (their mean +- "
                f"one standard deviation overlap): no recommendation between them"
            )
    compared = [b for b in bindings if len([x for x in bars if x.binding == b]) > 1]
    overall = [
        p
        for p in policies
        if all(b in wins.get(p, set()) for b in compared) and any(best.get(b) == p for b in compared)
    ]
    chosen = overall[0] if len(overall) == 1 else None
    if chosen:
        verdict.insert(
            0, f"best NIC policy: {chosen} (best or indistinguishable from the best under every binding measured)"
        )
    elif not any(best.values()):
        verdict.insert(
            0,
            "the NIC policies are indistinguishable here (every difference is within "
            "the noise): none is recommended over another",
        )
    else:
        verdict.insert(0, "no NIC policy is best under every binding: choose by the binding your processes use")
    return Comparison(metric, unit, bars, best, chosen, verdict)
