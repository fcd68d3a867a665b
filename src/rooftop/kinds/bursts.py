"""Runs of `rooftop bursts`: Figure 6 of Carns et al. (CUG 2025) per progress mode."""

from pathlib import Path

from rooftop.bursts import run as bursts
from rooftop.interference.run import read_summary
from rooftop.kinds.base import RunKind
from rooftop.model.ceilings import ModelError


def _report(store, run, out_dir: Path):
    from rooftop.bursts import report as bursts_report
    from rooftop.interference import report as interference_report

    # Measured with `rooftop interfere --bursts-run`: alone (then the impact
    # factors, RUN/interference.json) or beside a load.
    doc = read_summary(store.run_dir(run.id))
    under_load = (interference_report.markdown_of(doc, run), interference_report.html_of(doc, run))
    return bursts_report.write(bursts.results(store, run.id), out_dir, [under_load])


def _plot(store, run, out_dir: Path, fmt: str) -> dict:
    from rooftop.bursts import figure as bursts_plot
    from rooftop.plots.save import save

    res = bursts.results(store, run.id)
    if not res["lines"]:
        raise ModelError(f"bursts run {run.id} measured no interval")
    return {"bursts": save(bursts_plot.figure(res), out_dir, "bursts", fmt)}


KIND = RunKind(
    name="bursts",
    command="rooftop bursts",
    recognises=lambda store, run: "bursts" in run.config,
    report=_report,
    plot=_plot,
)
