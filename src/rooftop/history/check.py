"""The rule: did a ceiling change beyond noise, by how much, which way, and
which bound moved.

Against a baseline (a named baseline or one earlier run): a ceiling changed
beyond noise when its 95 % interval and the baseline's do not overlap AND
its median moved by more than the metric's threshold (DEFAULT_THRESHOLD;
the keys check.threshold and check.METRIC.threshold: rooftop.history.keys).
A ceiling without an interval (one sample) is judged on the threshold alone.

Against history: the last K (LAST, key check.last) comparable runs of the
current regime (since the last step change, outlier runs left out) give the
ceiling's median m and its median absolute deviation MAD; the run's median
is beyond noise when |value - m| > k * 1.4826 * MAD (K_MAD, key check.k;
1.4826 makes the MAD a standard deviation for normal noise) AND
|value - m| / m exceeds the threshold. With fewer than MIN_HISTORY such
runs the rule falls back to the baseline rule against the last comparable
run, and says so.

A change found in a history (steps) is a step change when the next run
is beyond noise the same way against the same window (the regime then
starts at it), an outlier when the next run is back within noise (it is
then left out of later windows), and unconfirmed when it is the last run.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from rooftop.history import series
from rooftop.history.comparable import machine_differences, machine_note
from rooftop.history.series import RunCeilings
from rooftop.model import practical, ratio_text
from rooftop.units import fmt_range, fmt_rate

#: A ceiling must move by more than this share of its median (per metric
#: default; `--threshold METRIC=PCT`) to count.
DEFAULT_THRESHOLD = 0.10
#: Runs of history the rule looks at (`--last`).
LAST = 8
#: Width of the history band in robust standard deviations (`--k`).
K_MAD = 3.0
#: Fewer comparable runs than this: the rule compares with the last one.
MIN_HISTORY = 3
#: MAD to standard deviation for normal noise.
MAD_SIGMA = 1.4826

NAMES = {"server": "server ceiling", "client": "client ceiling", "client_node": "client-node ceiling"}


@dataclass
class Change:
    metric: str
    ceiling: str
    before: float
    after: float
    unit: str
    #: (after - before) / before
    change: float
    beyond_noise: bool
    #: "fell", "rose" or "held" (held: within noise)
    direction: str
    #: Why it is (or is not) beyond noise.
    why: str

    @property
    def fell(self) -> bool:
        return self.beyond_noise and self.direction == "fell"

    def text(self) -> str:
        pct = f"{abs(self.change) * 100:.0f} %"
        what = f"{self.metric} {NAMES[self.ceiling]}"
        vals = f"{fmt_rate(self.before, self.unit)} -> {fmt_rate(self.after, self.unit)}"
        if self.beyond_noise:
            return f"{what} {self.direction} {pct} ({vals}): {self.why}"
        return f"{what} held ({'+' if self.change >= 0 else '-'}{pct}, {vals}): {self.why}"

    def to_dict(self) -> dict:
        return {
            "metric": self.metric,
            "ceiling": self.ceiling,
            "before": self.before,
            "after": self.after,
            "unit": self.unit,
            "change": self.change,
            "beyond_noise": self.beyond_noise,
            "direction": self.direction,
            "why": self.why,
        }


@dataclass
class MetricCheck:
    metric: str
    run: str
    #: What it was compared with: "baseline NAME (run R)", "run R", "history of N runs ...".
    against: str
    changes: list[Change]
    ratio_before: tuple[int, int] | None
    ratio_after: tuple[int, int] | None
    notes: list[str] = field(default_factory=list)
    #: The threshold the rule used (a fraction of the median).
    threshold: float | None = None

    @property
    def fell(self) -> list[Change]:
        return [c for c in self.changes if c.fell]

    def bound_moved(self) -> str:
        """Which bound moved, told by the ratio before and after."""
        moved = [c for c in self.changes if c.beyond_noise]
        if not moved:
            return "no ceiling moved beyond noise"
        held = [NAMES[c.ceiling] for c in self.changes if not c.beyond_noise]
        lead = ", ".join(f"the {NAMES[c.ceiling]} {c.direction} {abs(c.change) * 100:.0f} %" for c in moved)
        if held:
            lead += f", the {' and the '.join(held)} held"
        a, b = ratio_text(self.ratio_before), ratio_text(self.ratio_after)
        sides = {c.ceiling.split("_")[0] for c in moved}
        if self.ratio_before is None or self.ratio_after is None:  # a verdict that locates no ridge
            which = [w for w, r in (("before", self.ratio_before), ("now", self.ratio_after)) if r is None]
            tail = f"no ratio to compare: the verdict locates no ridge {' or '.join(which)}"
        elif a == b:
            tail = f"the recommended ratio holds at {a} (servers:clients)"
        elif sides == {"server"}:
            tail = f"the servers' side bound the deployment at {a} and now binds at {b} (servers:clients)"
        elif sides == {"client"}:
            tail = f"the clients' side bound the deployment at {a} and now binds at {b} (servers:clients)"
        else:
            tail = f"the recommended ratio moves from {a} to {b} (servers:clients)"
        return f"{lead}: {tail}"

    def to_dict(self) -> dict:
        return {
            "metric": self.metric,
            "run": self.run,
            "against": self.against,
            "changes": [c.to_dict() for c in self.changes],
            "ratio_before": list(self.ratio_before) if self.ratio_before else None,
            "ratio_after": list(self.ratio_after) if self.ratio_after else None,
            "bound_moved": self.bound_moved(),
            "notes": self.notes,
            "threshold_pct": None if self.threshold is None else round(self.threshold * 100, 9),
        }


def _direction(change: float, beyond: bool) -> str:
    return "held" if not beyond else ("fell" if change < 0 else "rose")


def against_run(target: RunCeilings, base: RunCeilings, threshold: float, against: str) -> MetricCheck:
    """The baseline rule: intervals that do not overlap and a move beyond the threshold."""
    changes = []
    for name, p in target.ceilings.items():
        b = base.ceilings.get(name)
        if b is None:
            continue
        ch = (p.median - b.median) / b.median
        over = abs(ch) > threshold
        if p.interval and b.interval:
            apart = p.interval[0] > b.interval[1] or p.interval[1] < b.interval[0]
            noise = "the 95 % intervals do not overlap" if apart else "the 95 % intervals overlap"
        else:
            apart, noise = True, "no interval (one sample): the threshold alone decides"
        beyond = apart and over
        why = f"{noise}; threshold {threshold * 100:.0f} %" + ("" if over else " not exceeded")
        changes.append(
            Change(target.metric, name, b.median, p.median, target.unit, ch, beyond, _direction(ch, beyond), why)
        )
    mc = MetricCheck(target.metric, target.run, against, changes, base.ratio, target.ratio, threshold=threshold)
    note = machine_note(target.signature, base.signature, f"run {base.run}")
    if note:
        mc.notes.append(note)
    return mc


def _other_machines(target: RunCeilings, window: list[RunCeilings]) -> str | None:
    """The note naming the runs of window measured on another machine than
    target (None: all on its machine, or unknown)."""
    others = [r for r in window if machine_differences(target.signature, r.signature)]
    if not others:
        return None
    newest = others[-1]
    named = ", ".join(r.run for r in others[:4]) + (", ..." if len(others) > 4 else "")
    diff = "; ".join(machine_differences(target.signature, newest.signature) or [])
    return (
        f"{len(others)} of the {len(window)} runs of the window ({named}) were measured on a "
        f"different machine; this run against the newest of them, run {newest.run}: {diff}"
    )


def _band(values: list[float], k: float) -> tuple[float, float]:
    m = statistics.median(values)
    mad = statistics.median(abs(v - m) for v in values)
    return m, k * MAD_SIGMA * mad


def against_window(
    target: RunCeilings, window: list[RunCeilings], threshold: float, k: float, against: str
) -> MetricCheck:
    """The history rule: median +- k * 1.4826 * MAD of the window, and a move beyond the threshold."""
    changes = []
    medians: dict[str, float] = {}
    for name, p in target.ceilings.items():
        vals = [r.ceilings[name].median for r in window if name in r.ceilings]
        if len(vals) < MIN_HISTORY:
            continue
        m, half = _band(vals, k)
        medians[name] = m
        ch = (p.median - m) / m
        outside, over = abs(p.median - m) > half, abs(ch) > threshold
        beyond = outside and over
        why = (
            f"{'outside' if outside else 'inside'} median +- {k:g} x 1.4826 x MAD of {len(vals)} runs "
            f"({fmt_range(m - half, m + half, target.unit)}); "
            f"threshold {threshold * 100:.0f} %" + ("" if over else " not exceeded")
        )
        changes.append(Change(target.metric, name, m, p.median, target.unit, ch, beyond, _direction(ch, beyond), why))
    before = None
    if "server" in medians and "client" in medians:
        client = min(medians["client"], medians.get("client_node", medians["client"]))
        before = practical(client / medians["server"])
    mc = MetricCheck(target.metric, target.run, against, changes, before, target.ratio, threshold=threshold)
    note = _other_machines(target, window)
    if note:
        mc.notes.append(note)
    return mc


@dataclass
class Event:
    """A change found in a history: at run index `at`, kind 'step',
    'outlier' or 'unconfirmed' (the last run)."""

    at: int
    run: str
    kind: str
    check: MetricCheck


def steps(runs: list[RunCeilings], threshold: float, k: float = K_MAD, last: int = LAST) -> list[Event]:
    """Every run of a comparable series checked against its window (see the module doc)."""
    events: list[Event] = []
    start, outliers = 0, set()
    for i, r in enumerate(runs):
        window = [w for j, w in enumerate(runs[start:i], start) if j not in outliers][-last:]
        if len(window) < MIN_HISTORY:
            continue
        mc = against_window(r, window, threshold, k, "history")
        moved = {(c.ceiling, c.direction) for c in mc.changes if c.beyond_noise}
        if not moved:
            continue
        if i + 1 == len(runs):
            events.append(Event(i, r.run, "unconfirmed", mc))
            continue
        nxt = against_window(runs[i + 1], window, threshold, k, "history")
        if moved & {(c.ceiling, c.direction) for c in nxt.changes if c.beyond_noise}:
            events.append(Event(i, r.run, "step", mc))
            start = i
        else:
            events.append(Event(i, r.run, "outlier", mc))
            outliers.add(i)
    return events


def regime(prior: list[RunCeilings], threshold: float, k: float = K_MAD, last: int = LAST) -> list[RunCeilings]:
    """The window a new run is checked against: the prior runs since the
    last step change, outliers left out, the last `last` of them."""
    ev = steps(prior, threshold, k, last)
    start = max([e.at for e in ev if e.kind == "step"], default=0)
    out = {e.at for e in ev if e.kind == "outlier"}
    return [r for j, r in enumerate(prior[start:], start) if j not in out][-last:]


def against_history(
    target: RunCeilings, prior: list[RunCeilings], threshold: float, k: float = K_MAD, last: int = LAST
) -> MetricCheck:
    """The history rule, or with fewer than MIN_HISTORY runs in the window
    the baseline rule against the last comparable run (noted)."""
    window = regime(prior, threshold, k, last)
    if len(window) >= MIN_HISTORY:
        first, final = window[0].run, window[-1].run
        return against_window(target, window, threshold, k, f"history of {len(window)} runs ({first} to {final})")
    mc = against_run(target, prior[-1], threshold, f"run {prior[-1].run}")
    mc.notes.append(
        f"only {len(window)} comparable run(s) in the history (the rule needs {MIN_HISTORY}): "
        f"compared with the last one, {prior[-1].run}, by its intervals"
    )
    return mc


def history(store, rule) -> list[tuple[list[RunCeilings], list[Event]]]:
    """`rooftop history`: each comparable series of the results folder
    (rooftop.history.series) with the changes the rule finds in it (steps;
    rule: rooftop.history.keys.Rule)."""
    return [(runs, steps(runs, rule.of(runs[0].metric), rule.k, rule.last)) for runs in series.history(store).values()]


def history_doc(rule, found: list[tuple[list[RunCeilings], list[Event]]]) -> dict:
    """`rooftop history --json`: the rule applied (as check --json's
    "check") and each series with its changes and the runs measured on a
    different machine than the run before."""
    groups = [
        {
            "signature": runs[0].signature,
            "runs": [r.to_dict() for r in runs],
            "changes": [{"run": e.run, "kind": e.kind, **e.check.to_dict()} for e in events],
            "machine_changes": [
                {"run": r.run, "after": prev.run, "differences": diff} for prev, r, diff in series.machine_changes(runs)
            ],
        }
        for runs, events in found
    ]
    return {"check": rule.record(), "groups": groups}
