"""Aggregates over common time: what the clients of a measurement did while all
of them were measuring.

Each client measures K consecutive windows from its own start (the release
of the start barrier, or a wall-clock instant) and reports, per window, its
work (operation shares) in S equal slices. Clients start a little apart
(the start skew). Window k's aggregate is the work every client did inside
the intersection of their k-th windows, divided by its length: never a sum
of rates measured over different intervals, which lets a client that
measured alone (after the others stopped) add the whole link to the sum.

Clocks: clients on one host share CLOCK_REALTIME, so their starts are
compared directly. Across hosts the barrier release is the common start
(offsets 0): there is no better clock to compare with.
"""

from __future__ import annotations

from dataclasses import dataclass

from rooftop import metrics
from rooftop.engine.enginedoc import windows_of


@dataclass
class Common:
    """Window k of a set of clients, in seconds since the earliest start."""

    lo: float
    hi: float
    length: float  # one client's window length
    skew_s: float  # latest start - earliest start

    @property
    def overlap(self) -> float:
        """Share of the window during which every client was measuring."""
        return max(0.0, self.hi - self.lo) / self.length if self.length > 0 else 0.0


def offsets(starts: dict[int, float], same_clock: bool) -> dict[int, float]:
    """Each client's measuring start after the earliest one (seconds)."""
    if not starts:
        return {}
    if not same_clock:
        return dict.fromkeys(starts, 0.0)
    first = min(starts.values())
    return {r: t - first for r, t in starts.items()}


def common(results: dict[int, dict], ranks: list[int], k: int, offs: dict[int, float]) -> Common:
    """The intersection of window k of the given clients."""
    length = min(windows_of(results[r])[k]["elapsed_s"] for r in ranks)
    starts = [offs[r] + k * windows_of(results[r])[0]["elapsed_s"] for r in ranks]
    ends = [s + windows_of(results[r])[k]["elapsed_s"] for s, r in zip(starts, ranks)]
    skew = max(offs[r] for r in ranks) - min(offs[r] for r in ranks)
    return Common(max(starts), min(ends), length, skew)


def work_between(window: dict, a: float, b: float) -> float:
    """Work (operation shares) one client did in [a, b] seconds after its
    window opened, from its slices (uniform inside a slice)."""
    slices = window.get("slice_ops") or []
    if not slices:  # an engine without slices: the window's average rate
        return window["work_ops"] * max(0.0, min(b, window["elapsed_s"]) - max(a, 0.0)) / window["elapsed_s"]
    width = window["elapsed_s"] / len(slices)
    total = 0.0
    for j, w in enumerate(slices):
        lo, hi = max(a, j * width), min(b, (j + 1) * width)
        if hi > lo:
            total += w * (hi - lo) / width
    return total


def aggregate(
    results: dict[int, dict], ranks: list[int], k: int, offs: dict[int, float], metric: str
) -> tuple[float, Common]:
    """(rate of all the clients together over common time, the common window)."""
    c = common(results, ranks, k, offs)
    if c.hi <= c.lo:
        return 0.0, c
    work = 0.0
    for r in ranks:
        w0 = offs[r] + k * windows_of(results[r])[0]["elapsed_s"]
        ops = work_between(windows_of(results[r])[k], c.lo - w0, c.hi - w0)
        work += ops * metrics.get(metric).work_per_op(results[r])
    return work / (c.hi - c.lo), c
