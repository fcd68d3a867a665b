"""Runs of `rooftop audit`: the Dark Side of Microbenchmarking talk's pitfalls as deltas (rooftop.audit)."""

from pathlib import Path

from rooftop.audit import run as audit_run
from rooftop.audit import show
from rooftop.kinds.base import RunKind


def _report(store, run, out_dir: Path):
    return show.write(run, audit_run.rows_of(store, run.id), out_dir)


def _plot(store, run, out_dir: Path, fmt: str) -> dict:
    from rooftop.audit import figure as audit_plot
    from rooftop.plots.save import save

    rows = audit_run.rows_of(store, run.id)
    return {"audit": save(audit_plot.figure(rows, f"rooftop audit {run.id}"), out_dir, "audit", fmt)}


KIND = RunKind(
    name="audit",
    command="rooftop audit",
    recognises=lambda store, run: run.config.get("kind") == "audit",
    report=_report,
    plot=_plot,
)
