"""What a person sees while a campaign runs: a progress bar per stage and
one for the run, each with its ETA, advancing per measured window, and a
summary table at the end (on stderr; stdout stays for the
run id or --json)."""

from __future__ import annotations

import statistics
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console
from rich.measure import Measurement
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from rooftop import stages
from rooftop.campaign import tracking
from rooftop.results import sharing_lines
from rooftop.store.records import stands_for

# Re-exported: cli formats rates through ui (the table is rooftop.units).
from rooftop.units import fmt_pct, fmt_range, fmt_rate  # noqa: F401

console = Console(stderr=True, highlight=False)
if not console.is_terminal:
    console.width = 110  # logs and CI: wide enough that most tables do not wrap


def print_table(out: Console, table: Table) -> None:
    """Prints a table without cutting a cell ('58.2 K ops…'). In a
    terminal every column may wrap (long words fold) instead of being
    truncated; to a file or pipe the width grows to the table's minimum,
    so columns that must not wrap (numbers, labels) are whole and the
    others wrap."""
    if out.is_terminal:
        for col in table.columns:
            col.no_wrap, col.overflow = False, "fold"
        out.print(table)
        return
    width = out.width
    try:
        out.width = 10_000  # measure against no limit
        out.width = max(width, _unbroken_width(out, table))
        out.print(table)
    finally:
        out.width = width


def _unbroken_width(out: Console, table: Table) -> int:
    """The narrowest the table can be with its no_wrap columns whole (the
    others wrapped down to their longest word)."""
    natural = out.measure(table).maximum
    for col in table.columns:
        if col.no_wrap:
            continue
        cells = [Measurement.get(out, out.options, c) for c in (col.header, *col.cells)]
        natural -= max(m.maximum for m in cells) - max(m.minimum for m in cells)
    return natural


class EtaColumn(ProgressColumn):
    """Time until the task's stage (the run, for the run's bar) is expected
    to be done: the plan's time left, scaled by how long the rows counted so
    far took (rooftop.campaign.tracking.Tracker); known from the start."""

    def __init__(self, tracker):
        super().__init__()
        self.tracker = tracker

    def render(self, task) -> Text:
        s = int(self.tracker.eta(task.fields.get("stage")))
        return Text(f"ETA {s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}", style="progress.remaining")


class Bars:
    """The campaign's progress: a bar per stage and one for the run. Rows
    count when every client has measured their window (on_window, from the
    engine's window logs) or when they are stored (on_sample), whichever
    comes first; each event goes to the progress log too."""

    def __init__(self, tracker, bars: Progress | None):
        self.tracker, self.progress = tracker, bars
        self.tasks: dict[str | None, int] = {}
        self.nfailed: dict[str, int] = {}
        if bars is not None:
            for stage in tracker.order:
                self.tasks[stage] = bars.add_task(
                    stage, total=tracker.total[stage], failed="", stage=stage, start=False
                )
            self.tasks[None] = bars.add_task("run", total=len(tracker.x.cost), failed="", stage=None)

    def _advance(self, keys: list[str], event: str) -> list[str]:
        new = self.tracker.count(keys, event)
        if new and self.progress is not None:
            stage = self.tracker.x.stage[new[0]]
            self.progress.start_task(self.tasks[stage])  # its elapsed time starts with its first row
            self.progress.advance(self.tasks[stage], len(new))
            self.progress.advance(self.tasks[None], len(new))
        return new

    def on_window(self, m, window: int) -> None:
        new = self._advance(m.row_keys(window), "window")
        if new and self.progress is not None and not console.is_terminal:
            n, total = self.tracker.done()
            console.print(
                f"  {new[0]}: window measured (run {n}/{total}, ETA {tracking.fmt_duration(self.tracker.eta())})"
            )

    def on_sample(self, m, row) -> None:
        self._advance([row["key"]], "sample")
        if self.progress is None:
            return
        if row["status"] != "ok":
            self.nfailed[m.stage] = self.nfailed.get(m.stage, 0) + 1
            self.progress.update(self.tasks[m.stage], failed=f"[red]{self.nfailed[m.stage]} not usable")
        if not console.is_terminal:
            console.print(
                f"  {row['key']}: "
                + (
                    fmt_rate(row[stages.get(m.stage).rate], row["unit"])
                    if row["status"] == "ok"
                    else f"{row['status'].upper()} {row['error'][:200]}"
                )
            )


@contextmanager
def stage_progress(groups, done: set[str], cfg: dict, quiet: bool = False, log: Path | None = None):
    """Yields the Bars of the placements' rows not in done (quiet: none
    drawn; the progress log, if given, is written all the same)."""
    tracker = tracking.Tracker(tracking.expect(cfg, groups, done), log)
    if quiet or not tracker.x.cost:
        yield Bars(tracker, None)
        return
    bars = Progress(
        SpinnerColumn(),
        TextColumn("{task.description:14s}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[failed]}"),
        TimeElapsedColumn(),
        EtaColumn(tracker),
        console=console,
        transient=False,
    )
    with bars:
        yield Bars(tracker, bars)


def summarize(samples: list[dict]) -> list[dict]:
    """Per stage and metric: samples, failures, min/median/max of its rate.
    A sample measured once for several stages counts for each of them
    ("once_with": the other stages it stands for)."""
    by: dict[tuple[str, str], list[dict]] = {}
    for s in samples:
        for stage in stands_for(s):
            by.setdefault((stage, s["metric"]), []).append(s)
    out = []
    for stage, metric in sorted(by, key=lambda k: (stages.order(k[0]), k[1])):
        rows = by[(stage, metric)]
        rate = stages.get(stage).rate
        ok = [s[rate] for s in rows if s["status"] == "ok"]
        once = sorted({o for s in rows for o in stands_for(s) if o != stage}, key=stages.order)
        out.append(
            {
                "stage": stage,
                "metric": metric,
                "rate": rate,
                "unit": rows[0]["unit"],
                "samples": len(rows),
                "failed": sum(1 for s in rows if s["status"] == "failed"),
                "invalid": sum(1 for s in rows if s["status"] == "invalid"),
                "min": min(ok) if ok else None,
                "median": statistics.median(ok) if ok else None,
                "max": max(ok) if ok else None,
                "once_with": once,
            }
        )
    return out


def print_summary(run, samples: list[dict]) -> None:
    t = Table(title=f"run {run.id} ({run.status})", title_justify="left")
    for col in ("stage", "metric", "samples", "min", "median", "max"):
        t.add_column(col, no_wrap=True, justify="right" if col in ("samples", "min", "median", "max") else "left")
    for r in summarize(samples):
        n = (
            f"{r['samples']}"
            + (f" ([red]{r['failed']} failed[/])" if r["failed"] else "")
            + (f" ([yellow]{r['invalid']} invalid[/])" if r["invalid"] else "")
        )
        label = stages.get(r["stage"]).label + (" *" if r["once_with"] else "")
        t.add_row(
            label,
            r["metric"],
            n,
            fmt_rate(r["min"], r["unit"]),
            fmt_rate(r["median"], r["unit"]),
            fmt_rate(r["max"], r["unit"]),
        )
    print_table(console, t)
    once = sorted({tuple(stands_for(s)) for s in samples if len(stands_for(s)) > 1})
    for names in once:
        console.print(
            "* "
            + ", ".join(x.replace("_", " ") for x in names)
            + ": measured once, the same placement (the same samples stand for each)"
        )
    if run.overhead is not None:
        console.print(
            f"time: {run.wall_s:.1f} s, of which {run.measured_s:.1f} s measuring; "
            f"overhead outside windows (warmups, launches, readiness, teardown) {fmt_pct(run.overhead)}"
        )
    elif run.wall_s > 0:
        console.print(
            f"time: {run.measured_s:.1f} s measuring; the run's time is not known in full "
            f"({run.wall_s:.1f} s recorded: an earlier command was killed before it could record its own)"
        )
    for line in sharing_lines(samples):
        console.print(f"[yellow]warning[/]: {line}")
    failed = [s for s in samples if s["status"] != "ok"]
    for s in failed[:5]:
        console.print(f"[red]{s['status']}[/] {s['key']}: {s['error'][:300]}")
    if len(failed) > 5:
        console.print(f"... and {len(failed) - 5} more failed or invalid samples (rooftop export {run.id})")
