"""The platform's drift between a run's ceilings and its validation
(rooftop.model): a placement measured in both (the same servers and clients
on the same nodes) that reads clearly differently the second time says the
machine changed in between, not the model.

On a shared machine (a VM whose virtual cores move between physical ones, a
neighbour's job on the same switch) a rate can change by 2x within a minute:
on the 2-core VM rooftop is built on, loopback TCP between pinned iperf3
processes read 24-26 Gbit/s steadily when quiet and 11-25 Gbit/s in
alternating stretches of seconds while other work ran on the machine, and
the engine's bulk reads did the same. A validation error is then the drift,
and saying "the model is 56 % off" would blame the model for the machine."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from rooftop import stages
from rooftop.model.exclude import exclusions, ran_beside, row_key
from rooftop.units import fmt_pct

#: Beyond the spread of the samples, a placement must differ by this share
#: to count as drift (1 - 1/1.1 below, 10 % above): noise on a quiet
#: machine stays within it.
MARGIN = 0.10

#: The stage whose samples the drift is read against (the others: ceilings).
VALIDATION = stages.of_role("validation").name


@dataclass
class Drift:
    """One placement measured for the ceilings (before) and in validation
    (after): per-client rates of the usable samples of each."""

    metric: str
    server_nodes: tuple[int, ...]
    client_nodes: tuple[int, ...]
    server_procs: int
    client_procs: int
    before: list[float]
    after: list[float]

    @property
    def ratio(self) -> float:
        """after / before, of the medians."""
        return statistics.median(self.after) / statistics.median(self.before)

    def placement(self) -> str:
        s = ",".join(f"n{i}" for i in self.server_nodes)
        c = ",".join(f"n{i}" for i in self.client_nodes)
        return f"{self.server_procs} server(s) on {s}, {self.client_procs} client(s) on {c}"

    def line(self, fmt=lambda v: f"{v:.4g}") -> str:
        """The warning a person reads."""
        b, a = statistics.median(self.before), statistics.median(self.after)
        return (
            f"{self.metric}: the platform changed between collect and validate: the same placement "
            f"({self.placement()}) measured {fmt(b)} per client (median of {len(self.before)}) for the "
            f"ceilings and {fmt(a)} (median of {len(self.after)}) in validation, {self.ratio:.2f}x; "
            f"validation errors up to {fmt_pct(abs(self.ratio - 1))} measure the machine, not the model: "
            "measure again on a quiet machine"
        )

    def to_dict(self) -> dict:
        return {
            "server_nodes": list(self.server_nodes),
            "client_nodes": list(self.client_nodes),
            "server_procs": self.server_procs,
            "client_procs": self.client_procs,
            "before": statistics.median(self.before),
            "after": statistics.median(self.after),
            "before_samples": len(self.before),
            "after_samples": len(self.after),
            "ratio": self.ratio,
        }


def _placement(s: dict) -> tuple:
    return (
        tuple(s.get("server_nodes") or ()),
        tuple(s.get("client_nodes") or ()),
        int(s.get("server_procs") or 0),
        int(s.get("client_procs") or 0),
    )


def _outside(values: list[float], others: list[float]) -> bool:
    """The median of values lies beyond others' whole range widened by MARGIN."""
    m = statistics.median(values)
    return m > max(others) * (1 + MARGIN) or m < min(others) / (1 + MARGIN)


def platform_drift(samples: list[dict], metric: str, nodes=None) -> list[Drift]:
    """Placements of `metric` measured both for the ceilings and in
    validation whose validation median lies outside the ceiling samples'
    whole range widened by MARGIN (a change within validation still counts
    when most of its samples moved). Only samples the exclusion rule keeps count: a
    core-sharing or invalid sample is no evidence of anything, and a sample
    measured beside other pairs (a pair round) shared the network with them,
    so it is not the same measurement as a placement alone."""
    why = exclusions(samples, nodes)
    beside = ran_beside(samples)
    groups: dict[tuple, tuple[list[float], list[float]]] = {}
    for s in samples:
        if s.get("metric") != metric or s.get("status") != "ok" or why.get(row_key(s)) or row_key(s) in beside:
            continue
        rate = s.get("per_client")
        if not rate or rate <= 0:
            continue
        before, after = groups.setdefault(_placement(s), ([], []))
        (after if s.get("stage") == VALIDATION else before).append(float(rate))
    out = []
    for (sn, cn, sp, cp), (before, after) in sorted(groups.items()):
        if not before or not after:
            continue
        if _outside(after, before):
            out.append(Drift(metric, sn, cn, sp, cp, before, after))
    return out


#: Placements named one by one; the rest are counted in one more line.
SHOWN = 3


def drift_lines(drifts: list[Drift], fmt=lambda v: f"{v:.4g}") -> list[str]:
    """The warnings of a metric's drift: the SHOWN largest, then a count."""
    ranked = sorted(drifts, key=lambda d: -abs(d.ratio - 1))
    out = [d.line(fmt) for d in ranked[:SHOWN]]
    rest = ranked[SHOWN:]
    if rest:
        ratios = [d.ratio for d in rest]
        out.append(
            f"{rest[0].metric}: and {len(rest)} more placement(s) measured in both changed "
            f"({min(ratios):.2f}–{max(ratios):.2f}x)"
        )
    return out
