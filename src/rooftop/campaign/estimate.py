"""The one estimator of a campaign's time (of the three time modules: costs
prices, estimate counts and prices, forecast plans `rooftop plan`): what its
stages measure, counted (Work: placements, client rounds, windows,
launches), priced with the launch mode's constants (rooftop.campaign.costs)
into an Estimate per stage and in total.

The dry run counts the placements it is about to run (count); `rooftop
plan` counts the same plan on N planned nodes, or, where the client
ceiling's pairs are too many to list, takes them from the pair strategy's
expected counts (pair_work); both print Estimate.lines(). The progress
bars' per-row costs (rooftop.campaign.tracking.expect) use the same
constants.

Names no stage and no metric: it reads placements, their measurements and
the config's start options."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

from rooftop.campaign.costs import LaunchMode, launch_mode
from rooftop.campaign.plan import client_rounds
from rooftop.stages import Placement
from rooftop.stages.pairs import PairsExpected
from rooftop.units import fmt_pct


def round_start_s(cfg: dict, warmup: float, nclients: float = 2) -> float:
    """A round's time before its first window: its warmup, then the start
    barrier's settle time (engine.start = barrier; none for a lone client,
    which starts without the barrier) or the clock's lead. nclients: the
    round's client processes (on average, for an expected count)."""
    e = cfg["engine"]
    if e["start"] == "barrier":
        return warmup + (e["settle"] if nclients > 1 else 0.0)
    return warmup + e["start_lead"]


@dataclass
class Work:
    """What (part of) a plan measures, counted."""

    placements: int = 0
    rounds: int = 0
    windows: int = 0
    #: Stored rows (a pair round stores one per pair and window).
    rows: int = 0
    #: Engine launches: one per server node of each placement and per
    #: client node of each round (a job step under srun, an mpiexec), as
    #: engine.launch = per-placement launches them (a mode that launches
    #: once per node forks these instead: Estimate.launches).
    launches: int = 0
    #: Engine processes started.
    processes: int = 0
    measuring_s: float = 0.0
    warmup_s: float = 0.0

    def add(self, other: Work) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def overhead_s(self, mode: LaunchMode) -> float:
        """The launch mode's fixed costs of this work."""
        return self.placements * mode.placement_s + self.rounds * mode.round_s + self.windows * mode.window.value

    def total_s(self, mode: LaunchMode) -> float:
        return self.measuring_s + self.warmup_s + self.overhead_s(mode)


def count(cfg: dict, placements: list[Placement], done: set[str] | frozenset = frozenset()) -> dict[str, Work]:
    """The work of what is left of a plan (rows in done are stored already),
    by stage label (a measurement standing for several shared stages:
    'server_peak+client_peak'), in plan order, as the Runner measures it: a
    server group per placement with something left, then its client rounds."""
    out: dict[str, Work] = {}
    for pl in placements:
        todo = client_rounds(pl.measurements, done)
        if not todo:
            continue
        w = out.setdefault(todo[0].measurement.label, Work())
        w.placements += 1
        w.launches += len(pl.server_nodes)
        w.processes += len(pl.server_nodes) * pl.servers_per_node
        for rnd in todo:
            m = rnd.measurement
            r = out.setdefault(m.label, Work())
            r.rounds += 1
            r.launches += len(m.client_nodes)
            r.processes += m.client_procs
            r.warmup_s += round_start_s(cfg, m.warmup, m.client_procs)
            r.windows += len(rnd.windows)
            r.measuring_s += m.duration * len(rnd.windows)
            # (without done, the rows of a pair round of 500 pairs are not listed one by one)
            per_window = len(m.pairs or (None,))
            r.rows += sum(k not in done for k in rnd.keys()) if done else per_window * len(rnd.windows)
    return out


def pair_work(cfg: dict, x: PairsExpected) -> Work:
    """The client ceiling's work from its pair strategy's expected counts:
    every metric measures every round, collect.windows windows each."""
    c = cfg["collect"]
    metrics, samples = len(cfg["metrics"]), c["windows"]
    rounds = x.rounds * metrics
    return Work(
        placements=x.placements,
        rounds=rounds,
        windows=rounds * samples,
        rows=x.pairs * metrics * samples,
        launches=x.server_nodes + x.pairs * metrics,
        processes=x.server_nodes + x.pairs * metrics,
        measuring_s=rounds * samples * c["duration"],
        warmup_s=rounds * round_start_s(cfg, c["warmup"], x.pairs / max(1, x.rounds)),
    )


@dataclass
class Estimate:
    """A plan's expected time, per stage and in total, under a launch mode."""

    mode: LaunchMode
    nodes: int
    #: Stage label -> its work, in plan order.
    stages: dict[str, Work] = field(default_factory=dict)
    #: The client ceiling's pairs, as its pair strategy expects them (None:
    #: no client ceiling planned).
    pairs: PairsExpected | None = None
    strategy: str | None = None

    @property
    def work(self) -> Work:
        w = Work()
        for s in self.stages.values():
            w.add(s)
        return w

    @property
    def fixed_s(self) -> float:
        """The launch mode's cost once per campaign (nothing to do: none)."""
        return self.mode.fixed_s(self.nodes) if self.stages else 0.0

    @property
    def overhead_s(self) -> float:
        return self.work.overhead_s(self.mode) + self.fixed_s

    @property
    def total_s(self) -> float:
        return self.work.total_s(self.mode) + self.fixed_s

    @property
    def launches(self) -> int:
        """Engine launches: per placement and round, or one per node for a
        mode that launches once per node."""
        if self.mode.once_per_node:
            return self.nodes if self.stages else 0
        return self.work.launches

    def line(self) -> str:
        """One line: the expected time and how it adds up."""
        w = self.work
        return (
            f"expected run time: {fmt_duration(self.total_s)} ({_n(w.placements, 'placement')}, "
            f"{_n(w.rounds, 'client round')}, {_n(w.windows, 'window')}: measuring "
            f"{fmt_duration(w.measuring_s)}, warmups {fmt_duration(w.warmup_s)}, overhead "
            f"{fmt_duration(self.overhead_s)} at {self.mode.placement_s:g} s per placement and "
            f"{self.mode.round_s:g} s per round)"
        )

    def lines(self) -> list[str]:
        """The table per stage, its total, the launches and the pairs."""
        head = ("stage", "placements", "rounds", "windows", "launches", "measuring", "overhead", "time")
        each = "-" if self.mode.once_per_node else None  # launches counted for the campaign, not per stage
        rows: list[tuple[str, ...]] = [head]
        for name, w in self.stages.items():
            rows.append(_row(name, w, each or str(w.launches), w.overhead_s(self.mode), w.total_s(self.mode)))
        if self.fixed_s:
            rows.append((f"{self.mode.name} launch, once", "", "", "", "", "", fmt_duration(self.fixed_s), ""))
        rows.append(_row("total", self.work, str(self.launches), self.overhead_s, self.total_s))
        width = [max(len(r[i]) for r in rows) for i in range(len(head))]
        out = [
            "  ".join(c.ljust(width[0]) if i == 0 else c.rjust(width[i]) for i, c in enumerate(r)).rstrip()
            for r in rows
        ]
        if self.pairs is not None:
            out.append(pairs_line(self.strategy or "", self.pairs))
        return out

    def as_dict(self) -> dict:
        w = self.work
        return {
            "total_s": round(self.total_s, 3),
            "measuring_s": round(w.measuring_s, 3),
            "warmup_s": round(w.warmup_s, 3),
            "overhead_s": round(self.overhead_s, 3),
            "placements": w.placements,
            "rounds": w.rounds,
            "windows": w.windows,
            "rows": w.rows,
            "launches": self.launches,
            "processes": w.processes,
            "launch_mode": self.mode.name,
            "stages": {name: self._stage_dict(s) for name, s in self.stages.items()},
            "pairs": None if self.pairs is None else {"strategy": self.strategy, **asdict(self.pairs)},
        }

    def _stage_dict(self, w: Work) -> dict:
        """A stage's work; its launches None when the mode launches once
        per node for the whole campaign (the table's '-')."""
        d = {**_rounded(asdict(w)), "total_s": round(w.total_s(self.mode), 3)}
        if self.mode.once_per_node:
            d["launches"] = None
        return d


def _rounded(d: dict) -> dict:
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in d.items()}


def _row(name: str, w: Work, launches: str, overhead: float, total: float) -> tuple[str, ...]:
    return (
        name,
        str(w.placements),
        str(w.rounds),
        str(w.windows),
        launches,
        fmt_duration(w.measuring_s),
        fmt_duration(overhead),
        fmt_duration(total),
    )


def pairs_line(strategy: str, x: PairsExpected) -> str:
    """'client peak pairs (rounds): 136 pairs in 17 rounds, up to 8 at once, ...';
    for a strategy that stops at an interval, its first batch and the width
    each class's interval is expected to reach."""
    at_once = f", up to {x.most_at_once} at once" if x.rounds < x.pairs else ", one at a time"
    first = "first batch " if x.interval is not None else ""
    line = f"client peak pairs ({strategy}): {first}{_n(x.pairs, 'pair')} in {_n(x.rounds, 'round')}{at_once}"
    if x.by_class:
        line += " (" + ", ".join(f"{k}: {v}" for k, v in x.by_class.items()) + ")"
    if x.interval is not None:
        line += f"; more only where a class's client ceiling interval is wider than +-{fmt_pct(x.interval)}"
        if x.widths and x.spread is not None:
            widths = ", ".join(
                (f"{k} +-{fmt_pct(w, 1)}" if w >= 0.0005 else f"{k} under +-0.1 %")
                if w is not None
                else f"{k} none yet"
                for k, w in x.widths.items()
            )
            line += f" (after the first batch, at a {fmt_pct(x.spread)} spread of pair rates: {widths})"
    if x.follow_up:
        line += (
            f"; each suspect adds a follow-up batch before it is named: an expected {_n(x.follow_up['node'], 'pair')} "
            f"per slow node, {_n(x.follow_up['link'], 'pair')} per slow link (none on a healthy platform)"
        )
    return line + "; each round measured by every metric"


def estimate(cfg: dict, stages: dict[str, Work], pairs: PairsExpected | None = None) -> Estimate:
    """The estimate of this work on the config's nodes, under its launch mode."""
    strategy = cfg["collect"]["pairs"] if pairs is not None else None
    return Estimate(launch_mode(cfg), len(cfg["nodes"]), stages, pairs, strategy)


def fmt_duration(s: float) -> str:
    """'45 s', '1 min 32 s', '2 h 05 min', '3 d 4 h'."""
    s = max(0.0, s)
    if s < 60:
        return f"{s:.0f} s" if s >= 10 else f"{s:.1f} s"
    m, sec = divmod(round(s), 60)
    if m < 60:
        return f"{m} min {sec:02d} s"
    h, m = divmod(m, 60)
    if h < 48:
        return f"{h} h {m:02d} min"
    d, h = divmod(h, 24)
    return f"{d} d {h} h"


def _n(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"
