"""The report's "Since the last comparable run" section: per metric, the
run's ceilings against the last comparable run before it (the baseline
rule, rooftop.history.check), and the history figure when there are at
least MIN_RUNS comparable runs up to this one. Both follow the check.*
keys as `rooftop check` does (a Rule, rooftop.history.keys: per-metric
thresholds, K and k; section(rule) binds one, SECTION reads with the
defaults). SECTION is an entry of the report sections table
(rooftop.kinds.sections)."""

from __future__ import annotations

from dataclasses import replace

from rooftop.history import check, series
from rooftop.history.figure import history_figure
from rooftop.history.keys import Rule
from rooftop.report.render import md_text
from rooftop.results.sections import Section

#: Comparable runs (this one included) from which the figure is drawn.
MIN_RUNS = 3
CAPTION = (
    "Ceilings over the comparable runs up to this one (95 % intervals; dashed line: a step change "
    "the history rule found), with the recommended ratio and the validation error"
)


def read(store, res, rule: Rule | None = None) -> dict | None:
    """{metric: {"runs": [RunCeilings], "check": MetricCheck, "events":
    [Event], "rule": Rule}} for the run's metrics with an earlier comparable
    run, judged by rule (None: the check.* keys' defaults); None: none has
    one (or the run is not complete)."""
    rule = rule or Rule()
    if res.run.status != "complete":
        return None
    mine = series.of_run(store, res.run.id)
    if not mine:
        return None
    groups = series.history(store)
    out = {}
    for metric, rc in mine.items():
        runs = [r for r in groups.get(rc.key, []) if (r.created, r.run) <= (rc.created, rc.run)]
        prior = [r for r in runs if r.run != rc.run]
        if not prior:
            continue
        threshold = rule.of(metric)
        mc = check.against_run(rc, prior[-1], threshold, f"run {prior[-1].run}")
        events = check.steps(runs, threshold, rule.k, rule.last)
        out[metric] = {"runs": runs, "check": mc, "events": events, "rule": rule}
    return out or None


def lines(data: dict) -> list[str]:
    """The rule first (as `rooftop check` prints it), then a line per metric."""
    rule = next(iter(data.values()))["rule"]
    out = [f"rule: {rule.text(list(data))}"]
    for metric, d in data.items():
        mc = d["check"]
        prior = d["runs"][-2]
        changes = "; ".join(c.text() for c in mc.changes)
        notes = "".join(f" Note: {n}." for n in mc.notes)
        out.append(f"{metric}: against run {prior.run} ({prior.created}): {mc.bound_moved()}. {changes}{notes}")
    return out


def markdown(res, data, figures, base) -> list[str]:
    if not data:
        return []
    out = ["## Since the last comparable run", ""] + [f"- {md_text(x)}" for x in lines(data)] + [""]
    return out


def context(res, data, figures) -> dict | None:
    """What sections/history.html shows; None: no earlier comparable run."""
    return {"lines": lines(data)} if data else None


def figures(res, data) -> dict:
    return {
        f"history-{metric}": history_figure(d["runs"], d["events"])
        for metric, d in (data or {}).items()
        if len(d["runs"]) >= MIN_RUNS
    }


def section(rule: Rule) -> Section:
    """SECTION judging by rule (the check.* keys `rooftop report` was given)."""
    return replace(SECTION, read=lambda store, res: read(store, res, rule))


SECTION = Section(
    name="history",
    read=read,
    markdown=markdown,
    template="sections/history.html",
    context=context,
    figures=figures,
    captions={"history": CAPTION},
    where="verdict",
)
