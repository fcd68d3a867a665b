"""The report sections table: what studies add to a campaign run's results,
report and figures (one entry per study, defined with it;
rooftop.results.sections documents the fields). It lives here, above the
studies, so that results, report and plots never name a study: the
commands that build a run's results (`report`, `plot`, `model`, `export`)
pass SECTIONS to rooftop.results.load, and the report and figures take
each section from the results. The report shows each where its entry says
(beside the verdict cards, after the verdict, the validation tables or the
outlier nodes), in this order."""

from __future__ import annotations

from rooftop.history import report as history_report
from rooftop.interference import report as interference_report
from rooftop.learn import report_section as learned
from rooftop.results.sections import Section
from rooftop.service import report as service_report

SECTIONS: tuple[Section, ...] = (
    service_report.CARDS,
    service_report.SIZING,
    service_report.SECTION,
    interference_report.SECTION,
    learned.SECTION,
    history_report.SECTION,
)


def judged_by(rule) -> tuple[Section, ...]:
    """SECTIONS with the history section judging by rule
    (rooftop.history.keys.Rule: the check.* keys a command was given)."""
    return tuple(history_report.section(rule) if s is history_report.SECTION else s for s in SECTIONS)
