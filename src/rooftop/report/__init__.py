"""The report of a run: one self-contained HTML file (figures inline, no
network needed; page, rendered from the Jinja2 templates of
rooftop/report/templates by render) and a Markdown summary beside it
(summary); what both say in common: parts. Each thing is said once: a metric's verdict in its
card, with what it asks (once for all metrics when they ask the same); a
figure that would carry no information is a sentence saying why.

In reading order: the verdict per metric (a bold ratio only when the model
can tell; ceilings with their 95 % intervals, ridge, what to do), what else
to do (where the pair matrix points, what to measure again: advice.py),
the NIC policy comparison (with --nic-runs: rooftop.nics.compare), the
figures, the warnings, the validation table, outlier nodes, the studies'
report sections (rooftop.results.sections: the run under load, `rooftop
interfere`; the learned models, `rooftop learn`), environment and the
resolved config.
"""

from __future__ import annotations

from pathlib import Path

from rooftop import files
from rooftop.nics import figure as nic_policies
from rooftop.plots.run import plot_mixes, plot_run
from rooftop.plots.save import save
from rooftop.report.page import html_page
from rooftop.report.parts import CAPTIONS, headline, nic_lines, todo
from rooftop.report.summary import markdown
from rooftop.results import RunResults

__all__ = ["CAPTIONS", "headline", "html_page", "markdown", "nic_lines", "todo", "write"]


def _plot_nic(nic, fig_dir: Path) -> dict:
    """The NIC policy comparison's bar chart."""
    title = f"NIC policies, {nic.metric}: {len({b.binding for b in nic.bars})} binding(s)"
    return {f"nic_policies-{nic.metric}": save(nic_policies.figure(nic, title), fig_dir, f"nic_policies-{nic.metric}")}


def write(res: RunResults, out_dir: Path, mixes=(), nic=None) -> tuple[Path, Path]:
    """Writes out_dir/report.html, out_dir/report.md and the figures under
    out_dir/figures/; returns (html, md). mixes: combined rooflines
    (rooftop.model.mix.Combined) to report and draw; nic: a NIC policy comparison
    (rooftop.nics.compare.Comparison) to show, with its bar chart. Every
    file is written by rooftop.files.write (whole, never through a link)."""
    figures = plot_run(res, out_dir / "figures")
    figures.update(plot_mixes(mixes, out_dir / "figures", res.run.id))
    if nic is not None:
        figures.update(_plot_nic(nic, out_dir / "figures"))
    page = out_dir / "report.html"
    md = out_dir / "report.md"
    files.write(page, html_page(res, figures, mixes, nic))
    files.write(md, markdown(res, figures, out_dir, mixes, nic))
    return page, md
