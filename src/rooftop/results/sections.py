"""What a report section is (Section): a study's part of a campaign run's
results, report and figures. One entry of the table in
rooftop.kinds.sections.

A campaign run (`collect`, `validate`, `interfere`'s runs) gets its
rooflines, pair matrix, latency and warnings from rooftop.results itself.
A study that leaves something of its own with such a run (`rooftop
interfere`'s comparison, `rooftop learn`'s saved models, a service's
points and the sizing of `rooftop size`) adds it as a section: `read`
finds its data for the run, `markdown` writes its part of the Markdown
summary and `template` (a Jinja2 template of rooftop/report/templates,
given what `context` returns) its part of the HTML page, where `where`
says; `figures` draws its figures. A section lives
with its study (rooftop.interference.report, rooftop.learn.report_section,
rooftop.service.report); the table that lists them, SECTIONS, lives in
rooftop.kinds, the layer above the studies, so results, report and plots
never name a study.

No section registers itself: `rooftop.results.load(store, run, sections)`
is handed the table by its caller (the commands `report`, `plot` and
`model` pass rooftop.kinds.sections.SECTIONS; `export`, `compare` and
`service --import` the sections they read), reads each section's data
once and keeps (section, data) pairs in `RunResults.sections`, in the
table's order; the report and the figures take them from there. A caller
that passes no table gets the campaign's own parts only: no import order
decides what a report shows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def _nothing(store, res) -> None:
    return None


def _no_figures(res, data) -> dict:
    return {}


def _no_context(res, data, figures) -> None:
    return None


#: Where the report shows a section: among the verdict cards (a card of
#: its own after the metrics': a service's), after the verdict cards
#: (before What to do), after the validation tables, or after the outlier
#: nodes (before the run's environment).
WHERE = ("cards", "verdict", "validation", "nodes")


@dataclass(frozen=True)
class Section:
    #: Names the section's data (RunResults.part(name)): "interference".
    name: str
    #: The report's Markdown lines of the section, from (res: the run's
    #: RunResults, data: what `read` returned, figures: {name: [files]} of
    #: the report, base: the folder of report.md); [] leaves it out.
    markdown: Callable[[Any, Any, dict, Path], list[str]]
    #: The report page's part: a template of rooftop/report/templates
    #: ("sections/NAME.html"; autoescaped, rooftop.report.render) ...
    template: str
    #: ... and what it is given, from (res, data, figures): a dict of the
    #: template's variables, or None to leave the section out of the page.
    context: Callable[[Any, Any, dict], dict | None] = _no_context
    #: Reads the section's data for a run (store: rooftop.store.db.Store;
    #: res: the RunResults being assembled, whose `loaded`, `services` and
    #: `service_notes` it may fill for the figures); None: the run has none.
    read: Callable[[Any, Any], Any] = _nothing
    #: The section's figures of the run: {name: matplotlib Figure}, written
    #: beside the run's own (rooftop.plots.run.plot_run).
    figures: Callable[[Any, Any], dict] = _no_figures
    #: The report's caption per figure name (the part before the first "-").
    captions: dict[str, str] = field(default_factory=dict)
    #: Where the report shows it (one of WHERE).
    where: str = "nodes"
    #: Figures whose names start with this the section shows itself: the
    #: report's Figures leaves them out ("": none).
    own_figures: str = ""

    def __post_init__(self) -> None:
        if self.where not in WHERE:
            raise ValueError(f"report section {self.name}: where={self.where!r}, not one of {', '.join(WHERE)}")
