"""What the report's Markdown and HTML share: the headline per metric with
its verdict said once (verdict_of) and what it asks (said once for every
metric that asks the same: todo_common), the verdict and ridge in a table
cell (verdict_short, ridge_short: also rooftop compare's), the 'What to do' parts, the
warnings the verdicts have not already said, the NIC policy lines, the
figures with a sentence in place of those that carry no information, the
report sections of a slot (rooftop.results.sections), the machine in a
line and the formatting of rates, ratios and intervals."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from rooftop.engine import machine as mach
from rooftop.model import classes
from rooftop.model.answer import answer
from rooftop.model.drift import drift_lines
from rooftop.model.roofline import ONE_MEASUREMENT_TODO
from rooftop.plots.run import FIGURES, left_out
from rooftop.report import advice
from rooftop.report.render import md_text
from rooftop.results import RunResults
from rooftop.units import fmt_num, fmt_pct, fmt_range, fmt_rate, fmt_ratio, fmt_span

#: Caption per figure kind (a figure's name before the first "-"); the
#: report sections add theirs (captions()).
CAPTIONS = {
    "roofline": "Per-client-process rate against x = server processes / client processes (both "
    "on log scales unless the axis says otherwise). Bands: client ceiling (horizontal) and x times the server ceiling "
    "(rising); the roofline is the lower of the two, solid over the ratios the run measured (the bar on the x axis) "
    "and dashed where it extrapolates; the dashed vertical line marks the ridge. "
    "Points: validation samples, coloured by number of server nodes.",
    "sweep": "One server node's aggregate rate as its server processes grow, against linear scaling.",
    "pairs": "Client peak per node pair: one client process against one idle server process. "
    "Boxed: only the pairs that are outliers (the outlier-node rule applied to pairs); a "
    "node in every boxed pair is the suspect. No box: no pair stands out.",
    "nic_policies": "Figure 2 of Carns et al. (CUG 2025) on this machine: the server node's aggregate rate per "
    "core binding of the clients, one bar per clients' NIC policy (mean over the "
    "samples of the runs compared; error bars: one standard deviation).",
    "latency": "Operation latency of every client process, per stage (merged histograms), up to "
    "the 99.9th percentile; a longer tail is marked at the right edge (legend: how far). Height: "
    "the share of the operations in each bin (bins 4.4 % of the latency wide), so the bars add up to 100 %.",
    "mix": "A workload mix (rooftop model --mix): each metric's roofline in mix operations per "
    "client process (dashed: its ceilings / what one mix operation asks of it) and the "
    "binding envelope, the lowest of them (thick), with the resource binding on each side of "
    "the dotted ridge.",
}


def captions(res: RunResults) -> dict[str, str]:
    """CAPTIONS and the captions of the run's report sections."""
    return {**CAPTIONS, **{k: v for s, _ in res.sections for k, v in s.captions.items()}}


def shown_figures(res: RunResults, figures: dict[str, list[Path]]) -> dict[str, list[Path]]:
    """The report's Figures: all but those a report section shows itself."""
    own = tuple(s.own_figures for s, _ in res.sections if s.own_figures)
    return {k: v for k, v in figures.items() if not (own and k.startswith(own))}


def markdown_of(res: RunResults, where: str, figures: dict[str, list[Path]], base: Path) -> list[str]:
    """The Markdown of the report sections shown at `where`, in the table's order."""
    return [line for s, data in res.sections if s.where == where for line in s.markdown(res, data, figures, base)]


def shown(res: RunResults, figures: dict[str, list[Path]]) -> list[tuple[str, Path | None, str]]:
    """The report's Figures in order, (name, PNG, caption) each; a figure
    that would carry no information (rooftop.plots.run.left_out) has no PNG
    and its caption says why. Per metric the run's own figures, then the rest
    (mixes, NIC policies, the sections' figures not shown in their sections)."""
    caps, notes, figs = captions(res), left_out(res), shown_figures(res, figures)
    png = lambda name: next((p for p in figs.get(name, []) if p.suffix == ".png"), None)  # noqa: E731
    out: list[tuple[str, Path | None, str]] = []
    names = [f"{fig}-{m}" for m in res.metrics for fig in FIGURES]
    names += [n for n in figs if n not in names]
    for name in names:
        if name in notes:
            out.append((name, None, f"{name}: not drawn: {notes[name]}."))
        elif png(name) is not None:
            out.append((name, png(name), f"{name}: {caps.get(name.split('-')[0], '')}"))
    return out


def headline(res: RunResults) -> list[dict]:
    out = []
    for metric, r in sorted(res.rooflines.items()):
        a = res.answers[metric]  # the one answer: verdict, ridge, accuracy
        ev = res.evaluations[metric]
        g = a.ridge
        out.append(
            {
                "metric": metric,
                "unit": r.unit,
                "client": [r.client.lo, r.client.hi],
                "server": [r.server.lo, r.server.hi],
                "client_node": [r.client_node.lo, r.client_node.hi] if r.client_node else None,
                "client_node_binds": r.node_binds,
                "ridge": [g.lo, g.centre, g.hi] if g.located else None,
                "ridge_text": ridge_text(g),
                "recommended": r.recommended() if g.located else None,
                "verdict": a.verdict,
                "says": verdict_of(r),
                "todo": advice.todo_of(r),
                "measured_once": [] if r.one_measurement else r.measured_once,
                "client_ci": r.client.interval if r.client.n else None,
                # Per topology class (a run that recorded its topology), nearest first.
                "client_classes": [c.to_dict() for c in res.classes.get(metric, [])],
                "deployment": classes.deployment_text(res.classes.get(metric, []), partial(fmt_rate, unit=r.unit)),
                "server_ci": r.server.interval if r.server.n else None,
                "validation": len(ev.checks),
                # What the validation tested: the model's accuracy over the
                # placements that test it, or "not tested" (rooftop.model.answer).
                "accuracy": a.accuracy.text,
                "error_all": a.accuracy.error_pct,
                "error_all_without_client_node": (
                    ev.without_node.median_abs_error() if ev.without_node and a.accuracy.tested else None
                ),
                # The machine changed between collect and validate (rooftop.model.drift).
                "drift": drift_lines(ev.drift, partial(fmt_rate, unit=r.unit)),
            }
        )
    return out


def ridge_text(g) -> str:
    """'ridge x* = 0.45–0.5 (median 0.47)', or why the verdict locates none."""
    if not g.located:
        return f"ridge not located: {g.reason}"
    return f"ridge x* = {fmt_span(g.lo, g.hi)} (median {fmt_num(g.centre)})"


def verdict_md(h: dict) -> str:
    """The verdict in a line (Markdown): the ratio, or the big line and why."""
    v, rec = h["verdict"], h["recommended"]
    if v["kind"] == "ratio":
        return f"{md_text(v['text'])}, x >= {fmt_num(rec['x'])}"
    if v["kind"] == "range":
        return md_text(v["text"])
    return f"{big_line(v)}: {md_text(h['says'])}"


def stages_text(stages: list[str]) -> str:
    return ", ".join(x.replace("_", " ") for x in stages)


def interval_text(ci, unit) -> str:
    return "" if ci is None else f" (95 % interval {range_text(ci, unit)})"


def big_line(v: dict) -> str:
    """The card's big line: a ratio when the model can tell, else what it says."""
    if v["kind"] in ("ratio", "range"):
        return f"{fmt_ratio(*v['ratio'])} (servers:clients)"
    return "not distinguishable" if v["kind"] == "indistinguishable" else "cannot tell"


def verdict_short(v: dict, one_measurement: bool = False) -> str:
    """The verdict in a table cell (rooftop compare): '1:3'; '12:1 (11:1–12:1)';
    'not distinguishable (1:2–2:1)'; 'cannot tell'. One measurement (one
    placement for both ceilings) has no span of ratios."""
    span = "–".join(_ratio(e) for e in v["range"]) if v["range"] and not one_measurement else ""
    if v["kind"] == "ratio":
        return _ratio(v["ratio"])
    if v["kind"] == "range":
        return f"{_ratio(v['ratio'])} ({span})"
    if v["kind"] == "indistinguishable":
        return f"not distinguishable ({span})" if span else "not distinguishable"
    return "cannot tell"


def ridge_short(r) -> str:
    """The ridge in a table cell (rooftop compare): '0.45–0.5'; 'not located'
    where the verdict locates no ridge."""
    g = answer(r).ridge
    return fmt_span(g.lo, g.hi) if g.located else "not located"


def _ratio(r) -> str:
    return "?" if r is None else fmt_ratio(*r)


def range_text(vals, unit) -> str:
    return fmt_range(vals[0], vals[1], unit)


def class_text(h: dict) -> str:
    """The client ceiling per topology class, one phrase per class: 'same
    switch 2.80–2.90 MiB/s (median 2.85 MB/s, 7 pairs); across groups ...'."""
    u = h["unit"]
    return "; ".join(
        f"{c['label']} {range_text([c['min'], c['max']], u)} (median {fmt_rate(c['median'], u)}, {c['pairs']} pairs"
        + (
            f", {classes.concurrency_text(c['at_once'], c['through_same_links'])}"
            if c.get("at_once") is not None
            else ""
        )
        + ")"
        for c in h.get("client_classes") or []
    )


def percent_text(v) -> str:
    return fmt_pct(None if v is None else v / 100)


def verdict_of(r) -> str:
    """The verdict's sentence without what it asks (said apart: todo_common)
    and without the words the headline's big line already says."""
    v = r.verdict()
    text = v["text"].replace(f"; {ONE_MEASUREMENT_TODO}", "")
    for said in ("the ceilings are not distinguishable here: ", "cannot tell: "):
        text = text.removeprefix(said)
    return "" if v["kind"] == "ratio" else text


def todo_common(heads: list[dict]) -> tuple[str, str] | None:
    """(metrics, what to do) when every metric's verdict asks the same, and
    there are several: said once below the cards; None: each card says its own."""
    asks = {h["todo"] for h in heads}
    if len(heads) < 2 or len(asks) != 1:
        return None
    return ", ".join(h["metric"] for h in heads), asks.pop()


def todo(res: RunResults) -> list[tuple[str, list[str]]]:
    """The 'What to do' parts beyond what the verdicts ask: (title, sentences),
    a sentence shared by several metrics said once."""
    again = advice.said_once(advice.remeasure(res)) or ["Nothing more: every sample was usable."]
    return [
        (
            "Pair matrix",
            advice.said_once(advice.pairs(res)) or ["No client pair matrix in this run (rooftop collect)."],
        ),
        ("Measure again", again),
    ]


def warnings(res: RunResults) -> list[str]:
    """The run's warnings but the verdicts (the cards say them), a warning
    shared by several metrics said once."""
    said = {f"{m}: {r.verdict()['text']}" for m, r in res.rooflines.items() if r.verdict()["kind"] != "ratio"}
    items: list[tuple[str | None, str]] = []
    for w in res.warnings:
        if w in said:
            continue
        metric = next((m for m in res.metrics if w.startswith(f"{m}: ")), None)
        items.append((metric, w.removeprefix(f"{metric}: ") if metric else w))
    return advice.said_once(items)


def nic_lines(nic) -> list[str]:
    """The NIC policy comparison as sentences: the verdict, then each bar."""
    out = list(nic.verdict)
    for b in nic.bars:
        out.append(
            f"{b.binding}, {b.policy}: {fmt_rate(b.mean, nic.unit)} +- {fmt_rate(b.std, nic.unit)} "
            f"({len(b.values)} samples; run {', '.join(b.runs)})"
        )
    return out


def machine_text(env: dict) -> str:
    """The machine row of the environment table: the machine in a line and
    its identity (rooftop.engine.machine), or why there is none."""
    m = mach.of_environment(env)
    if m is not None:
        return mach.one_line(m)
    if isinstance(env.get(mach.KEY), dict):
        return "not read on any node (the table below says why)"
    return "not recorded (a run before rooftop named machines)"


def validation_of(res: RunResults) -> list[dict]:
    """The validation table per metric, as the HTML page and report.md
    both show it: each check's cells, its efficiency, whether it sits above
    the roofline, and what the validation tested (the answer's accuracy)."""
    out = []
    for metric, ev in sorted(res.evaluations.items()):
        u = ev.roofline.unit
        rows = [
            {
                "cells": [
                    fmt_num(c.x),
                    f"{c.server_nodes}/{c.client_nodes}",
                    fmt_rate(c.measured, u),
                    fmt_rate(c.predicted, u),
                    fmt_pct(c.error_pct / 100, sign=True),
                    c.binding,
                    "the model" if c.tests_model else "repeatability",
                ],
                "efficiency": fmt_pct(c.efficiency),
                "above": c.above_roofline,
            }
            for c in ev.checks
        ]
        head = ["x", "server/client nodes", "measured", "predicted", "error", "binds", "tests", "efficiency"]
        out.append({"metric": metric, "head": head, "rows": rows, "accuracy": res.answers[metric].accuracy.text})
    return out
