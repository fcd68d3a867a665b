"""The report's Markdown summary (report.md), in the page's reading order."""

from __future__ import annotations

from pathlib import Path

from rooftop import __version__
from rooftop.model.answer import answer
from rooftop.report.parts import (
    class_text,
    headline,
    interval_text,
    machine_text,
    markdown_of,
    nic_lines,
    percent_text,
    range_text,
    ridge_text,
    shown,
    stages_text,
    todo,
    todo_common,
    validation_of,
    verdict_md,
    warnings,
)
from rooftop.report.render import md_image, md_row, md_text
from rooftop.results import RunResults
from rooftop.units import fmt_pct, fmt_rate


def _metric_md(h: dict, common) -> list[str]:
    """A metric's section of report.md: its ceilings, ridge, verdict and validation."""
    lines: list[str] = []
    u = h["unit"]
    lines += [
        f"## {md_text(h['metric'])}",
        "",
        f"- client ceiling (per process): {range_text(h['client'], u)}{interval_text(h['client_ci'], u)}"
        + (
            f"; per topology class: {md_text(class_text(h))}. {md_text(h['deployment'])}" if h["client_classes"] else ""
        ),
    ]
    if h["client_node"]:
        lines.append(
            f"- client ceiling with the client node full: {range_text(h['client_node'], u)}"
            + (" (lower: the model uses it)" if h["client_node_binds"] else " (not lower)")
        )
    lines += [
        f"- server ceiling (per process): {range_text(h['server'], u)}{interval_text(h['server_ci'], u)}",
        f"- {h['ridge_text']}",
        f"- verdict: {verdict_md(h)}",
        *([] if common else [f"- to do: {md_text(h['todo'])}"]),
        *[f"- measured once: {stages_text(st)}: the same placement" for st in h["measured_once"]],
        f"- validation: {h['validation']} samples; {h['accuracy']}"
        + (
            f" ({percent_text(h['error_all_without_client_node'])} without the client-node ceiling)"
            if h["error_all_without_client_node"] is not None
            else ""
        ),
        *[f"- **warning:** {md_text(d)}" for d in h["drift"]],
        "",
    ]
    return lines


def _validation_md(res: RunResults) -> list[str]:
    """Each metric's validation table."""
    lines: list[str] = []
    for v in validation_of(res):
        if not v["rows"]:
            continue
        lines += [
            f"### {md_text(v['metric'])}",
            "",
            "| " + " | ".join(v["head"]) + " |",
            "|---:|---:|---:|---:|---:|---|---|---:|",
        ]
        for r in v["rows"]:
            lines.append(md_row([*r["cells"], r["efficiency"] + (" (above roofline)" if r["above"] else "")]))
        lines += ["", f"Accuracy: {v['accuracy']}.", ""]
    return lines


def markdown(res: RunResults, figures: dict[str, list[Path]], base: Path, mixes=(), nic=None) -> str:
    """report.md. Every value that is not the report's own wording (a host
    name, a note, an error, what a section or the advice says) goes in as
    text (md_text: never markup, one line)."""
    run = res.run
    lines = [
        f"# rooftop report: run {md_text(run.id)}",
        "",
        md_text(f"{res.host}, {res.provider}, {run.created} ({run.status}); rooftop {__version__}"),
        "",
    ]
    heads = headline(res)
    common = todo_common(heads)
    for h in heads:
        lines += _metric_md(h, common)
    lines += markdown_of(res, "cards", figures, base)  # a card per service (rooftop.results.sections)
    if common:
        lines += [f"**To do ({md_text(common[0])}):** {md_text(common[1])}", ""]
    lines += markdown_of(res, "verdict", figures, base)  # rooftop.results.sections
    lines += _todo_md(res, mixes, nic)
    lines += ["## Figures", ""]
    for name, png, caption in shown(res, figures):
        lines += [md_image(name, _rel(png, base)) if png is not None else f"*{md_text(caption)}*", ""]
    lines += ["## Warnings", ""]
    lines += [f"- {md_text(w)}" for w in warnings(res)] or ["- none"]
    lines += ["", "## Validation", ""]
    lines += _validation_md(res)
    lines += markdown_of(res, "validation", figures, base)
    counted = {m: pm for m, pm in sorted(res.pairs.items()) if len(pm.nodes) >= 3}
    if counted:
        lines += ["## Nodes (client pair matrix)", ""]
        lines += [
            f"- {md_text(metric)}: {md_text(line)}" for metric, pm in counted.items() for line in pm.outlier_lines()
        ]
        lines.append("")
    if any(res.scores.values()):
        lines += ["| metric | node | median of its pairs | score | flag |", "|---|---|---:|---:|---|"]
        for metric, scores in sorted(res.scores.items()):
            u = res.pairs[metric].unit
            lines += [
                md_row([metric, f"n{sc.node}", fmt_rate(sc.median, u), f"{sc.z:+.1f}", sc.flagged or ""])
                for sc in scores
            ]
        for metric, w in sorted(res.without_flagged.items()):
            lines.append(
                f"\n{md_text(metric)} without n{', n'.join(map(str, res.flagged(metric)))}: client ceiling "
                f"{range_text([w.client.lo, w.client.hi], w.unit)}, {ridge_text(answer(w).ridge)}"
            )
        lines.append("")
    lines += markdown_of(res, "nodes", figures, base)
    lines += _run_md(run)
    return "\n".join(lines)


def _todo_md(res: RunResults, mixes, nic) -> list[str]:
    """What to do, then each combined roofline and the NIC policies."""
    lines = ["## What to do", ""]
    for title, said in todo(res):
        lines += [f"**{title}**", "", *[f"- {md_text(x)}" for x in said], ""]
    for comb in mixes:
        lines += [f"## Combined roofline: {md_text(comb.mix.name)}", "", *[f"- {md_text(x)}" for x in comb.lines()], ""]
    if nic is not None:
        lines += ["## NIC policies", "", *[f"- {md_text(x)}" for x in nic_lines(nic)], ""]
    return lines


def _run_md(run) -> list[str]:
    """The run itself: its time, launcher, engine and machine."""
    ov = run.overhead
    return [
        "## Run",
        "",
        f"- time {run.wall_s:.0f} s, measuring {run.measured_s:.0f} s"
        + (f", overhead {fmt_pct(ov)}" if ov is not None else ""),
        f"- launcher {md_text(run.config['launcher']['type'])}, {len(run.config.get('nodes') or [])} nodes, "
        f"binding {md_text(run.config['binding'])}",
        f"- engine {md_text(run.environment.get('engine', '?'))}",
        f"- machine {md_text(machine_text(run.environment))}",
        "",
    ]


def _rel(p: Path, base: Path) -> str:
    try:
        return str(p.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(p)
