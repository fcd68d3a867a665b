"""The report of a run: one self-contained HTML file (figures inline, no
network needed) and a Markdown summary beside it.

In reading order: the verdict per metric (a bold ratio only when the model
can tell; ceilings with their 95 % intervals, ridge), what to do (the ratio
to deploy, where the pair matrix points, what to measure again: advice.py),
the NIC policy comparison (with --nic-runs: rooftop.nics.compare), the
figures, the warnings, the validation table, outlier nodes, the learned
models (when `rooftop learn` saved one with the run: rooftop.learn.report_section), environment
and the resolved config. Narrow screens (phones) get one column; wide tables
scroll inside their box, never the page.
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path

from rooftop import __version__
from rooftop.config.units import fmt_rate
from rooftop.interference import report as interference_report
from rooftop.learn.report_section import html_section as learned_html
from rooftop.learn.report_section import markdown as learned_markdown
from rooftop.model import advice
from rooftop.plots.run import plot_mixes, plot_run
from rooftop.results import RunResults
from rooftop.service import report as service_report

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;background:#f6f7f9;color:#1d2430}
main{max-width:1100px;margin:0 auto;padding:24px 28px 60px}
h1{font-size:26px;margin:4px 0}h2{font-size:20px;margin-top:34px;border-bottom:2px solid #dde2ea;padding-bottom:4px}
.sub{color:#5b6675;margin-bottom:18px}
.cards{display:flex;flex-wrap:wrap;gap:14px}
.card{background:#fff;border-radius:10px;box-shadow:0 1px 3px #0002;padding:14px 18px;min-width:230px;flex:1}
.card h3{margin:0 0 8px;font-size:15px;color:#5b6675;text-transform:uppercase;letter-spacing:.04em}
.big{font-size:24px;font-weight:650}.small{color:#5b6675;font-size:13px}
.verdict{font-size:14px;margin:4px 0 6px;color:#8a5a00}
.warn{background:#fff4e5;border-left:5px solid #f0a020;padding:10px 14px;margin:8px 0;border-radius:4px}
.ok{background:#eaf7ee;border-left:5px solid #2ca02c;padding:10px 14px;border-radius:4px}
figure{background:#fff;border-radius:10px;box-shadow:0 1px 3px #0002;margin:16px 0;padding:10px}
figure img{max-width:100%;display:block;margin:auto}figcaption{color:#5b6675;font-size:13px;padding:6px}
table{border-collapse:collapse;background:#fff;font-size:13px;margin:10px 0;display:block;max-width:100%;overflow-x:auto}
td{overflow-wrap:anywhere}section ul{margin:4px 0 10px;padding-left:22px}section li{margin:3px 0}
#todo h3{font-size:15px;margin:14px 0 2px}
th,td{padding:5px 10px;border-bottom:1px solid #e5e8ee;text-align:right}th{background:#eef1f5}
td:first-child,th:first-child{text-align:left}.above{color:#c0392b;font-weight:600}
pre{background:#fff;padding:12px;border-radius:8px;overflow:auto;font-size:12px;max-width:100%}
.warn,.ok{overflow-wrap:anywhere}
@media (max-width:600px){main{padding:12px 10px 40px}h1{font-size:22px}.card{min-width:0;flex-basis:100%}
.big{font-size:20px}.sub{overflow-wrap:anywhere}}
"""

CAPTIONS = {
    "roofline": "Per-client-process rate against x = server processes / client processes (both "
    "on log scales unless the axis says otherwise). Bands: client ceiling (horizontal) and x times the server ceiling "
    "(rising); the roofline is the lower of the two; the dashed line marks the ridge. "
    "Points: validation samples, coloured by number of server nodes.",
    "interference": "Left: what each background load did to the service (rooftop interfere): "
    "isolated / loaded mean rate and loaded / isolated p99 latency per stage (1: no "
    "effect). Right: against the number of concurrent copies of each load, the load's "
    "own normalized slowdown (solid) and the service's impact (dashed).",
    "sweep": "One server node's aggregate rate as its server processes grow, against linear scaling.",
    "pairs": "Client peak per node pair: one client process against one idle server process. "
    "Boxed: only the pairs that are outliers (the outlier-node rule applied to pairs); a "
    "node in every boxed pair is the suspect. No box: no pair stands out.",
    "nic_policies": "Seed 000's Figure 2 on this machine: the server node's aggregate rate per "
    "core binding of the clients, one bar per clients' NIC policy (mean over the "
    "samples of the runs compared; error bars: one standard deviation).",
    "latency": "Operation latency of every client process, per stage (merged histograms), up to "
    "the 99.9th percentile; a longer tail is marked at the right edge (legend: how far).",
    "mix": "A workload mix (rooftop model --mix): each metric's roofline in mix operations per "
    "client process (dashed: its ceilings / what one mix operation asks of it) and the "
    "binding envelope, the lowest of them (thick), with the resource binding on each side of "
    "the dotted ridge.",
}


def _fmt_ratio(x: float) -> str:
    return f"{x:.3g}"


def headline(res: RunResults) -> list[dict]:
    out = []
    for metric, r in sorted(res.rooflines.items()):
        rec = r.recommended()
        ev = res.evaluations[metric]
        out.append(
            {
                "metric": metric,
                "unit": r.unit,
                "client": [r.client.lo, r.client.hi],
                "server": [r.server.lo, r.server.hi],
                "client_node": [r.client_node.lo, r.client_node.hi] if r.client_node else None,
                "client_node_binds": r.node_binds,
                "ridge": [r.ridge.lo, r.ridge.centre, r.ridge.hi],
                "recommended": rec,
                "verdict": r.verdict(),
                "measured_once": r.measured_once,
                "client_ci": r.client.interval if r.client.n else None,
                "server_ci": r.server.interval if r.server.n else None,
                "validation": len(ev.checks),
                "error_server_bound": ev.median_abs_error("server"),
                "error_client_bound": ev.median_abs_error("client"),
                "error_all": ev.median_abs_error(),
                "error_all_without_client_node": ev.without_node.median_abs_error() if ev.without_node else None,
            }
        )
    return out


def _verdict_md(h: dict) -> str:
    v, rec = h["verdict"], h["recommended"]
    if v["kind"] == "ratio":
        return (
            f"{v['ratio'][0]} server process(es) per {v['ratio'][1]} client process(es) (x >= {_fmt_ratio(rec['x'])})"
        )
    if v["kind"] == "range":
        return f"{v['ratio'][0]} server process(es) per {v['ratio'][1]} client process(es), {v['text']}"
    return "none: " + v["text"]


def _stages(stages: list[str]) -> str:
    return ", ".join(x.replace("_", " ") for x in stages)


def _ci(ci, unit) -> str:
    return "" if ci is None else f" (95 % interval {_rng(ci, unit)})"


def _big(v: dict) -> str:
    """The card's big line: a ratio when the model can tell, else what it says."""
    if v["kind"] in ("ratio", "range"):
        s, c = v["ratio"]
        return f"{s} server{'s' if s != 1 else ''} : {c} client{'s' if c != 1 else ''}"
    return "not distinguishable" if v["kind"] == "indistinguishable" else "cannot tell"


def _rng(vals, unit) -> str:
    return f"{fmt_rate(vals[0], unit)} .. {fmt_rate(vals[1], unit)}"


def _pct(v) -> str:
    return "-" if v is None else f"{v:.0f} %"


def markdown(res: RunResults, figures: dict[str, list[Path]], base: Path, mixes=(), nic=None) -> str:
    run = res.run
    lines = [
        f"# rooftop report: run {run.id}",
        "",
        f"{res.host}, {res.provider}, {run.created} ({run.status}); rooftop {__version__}",
        "",
    ]
    for h in headline(res):
        u = h["unit"]
        lines += [
            f"## {h['metric']}",
            "",
            f"- client ceiling (per process): {_rng(h['client'], u)}{_ci(h['client_ci'], u)}",
        ]
        if h["client_node"]:
            lines.append(
                f"- client ceiling with the client node full: {_rng(h['client_node'], u)}"
                + (" (lower: the model uses it)" if h["client_node_binds"] else " (not lower)")
            )
        lines += [
            f"- server ceiling (per process): {_rng(h['server'], u)}{_ci(h['server_ci'], u)}",
            f"- ridge x* = {_fmt_ratio(h['ridge'][0])} .. {_fmt_ratio(h['ridge'][2])} "
            f"(median {_fmt_ratio(h['ridge'][1])})",
            f"- recommended: {_verdict_md(h)}",
            *[f"- measured once: {_stages(st)}: the same placement" for st in h["measured_once"]],
            f"- validation: {h['validation']} samples, median |error| {_pct(h['error_all'])}"
            + (
                f" ({_pct(h['error_all_without_client_node'])} without the client-node ceiling)"
                if h["error_all_without_client_node"] is not None
                else ""
            ),
            "",
        ]
    lines += service_report.sizing_markdown(res)
    lines += ["## What to do", ""]
    for title, said in todo(res):
        lines += [f"**{title}**", "", *[f"- {x}" for x in said], ""]
    for comb in mixes:
        lines += [f"## Combined roofline: {comb.mix.name}", "", *[f"- {x.strip()}" for x in comb.lines()], ""]
    if nic is not None:
        lines += ["## NIC policies", "", *[f"- {x}" for x in nic_lines(nic)], ""]
    lines += ["## Figures", ""]
    for name, paths in service_report.other_figures(figures).items():
        png = [p for p in paths if p.suffix == ".png"]
        if png:
            lines.append(f"![{name}]({_rel(png[0], base)})")
    lines += ["", "## Warnings", ""]
    lines += [f"- {w}" for w in res.warnings] or ["- none"]
    lines += ["", "## Validation", ""]
    for metric, ev in sorted(res.evaluations.items()):
        if not ev.checks:
            continue
        u = ev.roofline.unit
        lines += [
            f"### {metric}",
            "",
            "| x | server/client nodes | measured | predicted | error | binds | efficiency |",
            "|---:|---:|---:|---:|---:|---|---:|",
        ]
        for c in ev.checks:
            lines.append(
                f"| {c.x:.3g} | {c.server_nodes}/{c.client_nodes} | {fmt_rate(c.measured, u)} | "
                f"{fmt_rate(c.predicted, u)} | {c.error_pct:+.0f} % | {c.binding} | "
                f"{c.efficiency:.2f}{' (above roofline)' if c.above_roofline else ''} |"
            )
        lines.append("")
    lines += service_report.markdown(res, figures, base)
    counted = {m: pm for m, pm in sorted(res.pairs.items()) if len(pm.nodes) >= 3}
    if counted:
        lines += ["## Nodes (client pair matrix)", ""]
        lines += [f"- {metric}: {line}" for metric, pm in counted.items() for line in pm.outlier_lines()]
        lines.append("")
    if any(res.scores.values()):
        lines += ["| metric | node | median of its pairs | score | flag |", "|---|---|---:|---:|---|"]
        for metric, scores in sorted(res.scores.items()):
            u = res.pairs[metric].unit
            lines += [
                f"| {metric} | n{sc.node} | {fmt_rate(sc.median, u)} | {sc.z:+.1f} | {sc.flagged or ''} |"
                for sc in scores
            ]
        for metric, w in sorted(res.without_flagged.items()):
            lines.append(
                f"\n{metric} without n{', n'.join(map(str, res.flagged(metric)))}: client ceiling "
                f"{_rng([w.client.lo, w.client.hi], w.unit)}, ridge {w.ridge.lo:.3g} .. {w.ridge.hi:.3g}"
            )
        lines.append("")
    lines += interference_report.markdown(res)
    lines += learned_markdown(res.learned)
    ov = run.overhead
    lines += [
        "## Run",
        "",
        f"- time {run.wall_s:.0f} s, measuring {run.measured_s:.0f} s"
        + (f", overhead {ov:.0%}" if ov is not None else ""),
        f"- launcher {run.config['launcher']['type']}, {len(run.config.get('nodes') or [])} nodes, "
        f"binding {run.config.get('binding')}",
        f"- engine {run.environment.get('engine', '?')}",
        "",
    ]
    return "\n".join(lines)


def _rel(p: Path, base: Path) -> str:
    try:
        return str(p.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(p)


def _img(png: Path, alt: str) -> str:
    data = base64.b64encode(png.read_bytes()).decode()
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def _table(head: list[str], rows: list[list[str]], raw: bool = False) -> str:
    h = "".join(f"<th>{html.escape(c)}</th>" for c in head)
    body = "".join("<tr>" + "".join(f"<td>{c if raw else html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{h}</tr></thead><tbody>{body}</tbody></table>"


def _card(h: dict) -> str:
    """The headline card of one metric."""
    e = html.escape
    u = h["unit"]
    node = ""
    if h["client_node"]:
        node = (
            f"<div class='small'>node full: {e(_rng(h['client_node'], u))}"
            + (" (binds)" if h["client_node_binds"] else "")
            + "</div>"
        )
    err = ""
    if h["error_all"] is not None:
        err = f"<div class='small'>validation: {h['validation']} samples, median |error| {_pct(h['error_all'])}"
        if h["error_all_without_client_node"] is not None:
            err += f" ({_pct(h['error_all_without_client_node'])} without the node ceiling)"
        err += "</div>"
    return (
        f"<div class='card'><h3>{e(h['metric'])}</h3>"
        f"<div class='big'>{e(_big(h['verdict']))}</div>"
        + (f"<div class='verdict'>{e(h['verdict']['text'])}</div>" if h["verdict"]["kind"] != "ratio" else "")
        + "".join(
            f"<div class='small'>measured once: {e(_stages(st))} (the same placement)</div>"
            for st in h["measured_once"]
        )
        + f"<div class='small'>ridge x* = {_fmt_ratio(h['ridge'][0])} .. {_fmt_ratio(h['ridge'][2])}</div>"
        f"<div class='small'>client ceiling {e(_rng(h['client'], u))} per process{e(_ci(h['client_ci'], u))}</div>{node}"
        f"<div class='small'>server ceiling {e(_rng(h['server'], u))} per process{e(_ci(h['server_ci'], u))}</div>{err}</div>"
    )


def html_page(res: RunResults, figures: dict[str, list[Path]], mixes=(), nic=None) -> str:
    """The page, in reading order: the verdict (one card per metric), what
    to do, the figures, then warnings and the details."""
    run = res.run
    e = html.escape
    parts = [
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<meta name='viewport' content='width=device-width,initial-scale=1'>"
        f"<title>rooftop report {e(run.id)}</title><style>{CSS}</style></head><body><main>",
        f"<h1>rooftop report</h1><div class='sub'>run {e(run.id)}: {e(res.host)}, "
        f"{e(res.provider)}, {e(run.created)} ({e(run.status)})</div>",
        "<section id='verdict'><div class='cards'>",
        *[_card(h) for h in headline(res)],
        "</div></section>",
        service_report.sizing_html(res),
        _todo_html(res),
        _mixes_html(mixes),
        _nic_html(nic),
        _figures_html(service_report.other_figures(figures)),
        _warnings_html(res),
        _validation_html(res),
        service_report.html_section(res, figures),
        _nodes_html(res),
        interference_report.html_section(res),
        learned_html(res.learned),
        _environment_html(res),
        f"<p class='small'>rooftop {__version__}</p></main></body></html>",
    ]
    return "".join(parts)


def _todo_html(res: RunResults) -> str:
    e = html.escape
    parts = ["<section id='todo'><h2>What to do</h2>"]
    for title, lines in todo(res):
        parts.append(f"<h3>{e(title)}</h3><ul>" + "".join(f"<li>{e(x)}</li>" for x in lines) + "</ul>")
    return "".join(parts) + "</section>"


def _mixes_html(mixes) -> str:
    """Per workload mix (rooftop.model.mix.Combined): which resource binds where."""
    e = html.escape
    parts = []
    for comb in mixes:
        head, *rest = comb.lines()
        parts.append(
            f"<section class='mix'><h2>Combined roofline: {e(comb.mix.name)}</h2><p>{e(head)}</p><ul>"
            + "".join(f"<li>{e(x.strip())}</li>" for x in rest)
            + "</ul></section>"
        )
    return "".join(parts)


def _figures_html(figures: dict[str, list[Path]]) -> str:
    e = html.escape
    parts = ["<h2>Figures</h2>"]
    for name, paths in figures.items():
        png = next((p for p in paths if p.suffix == ".png"), None)
        if png is None:
            continue
        kind = name.split("-")[0]
        parts.append(
            f"<figure id='{e(name)}'>{_img(png, name)}<figcaption>{e(name)}: "
            f"{e(CAPTIONS.get(kind, ''))}</figcaption></figure>"
        )
    return "".join(parts)


def _warnings_html(res: RunResults) -> str:
    if not res.warnings:
        return (
            "<h2>Warnings</h2><div class='ok'>none: ceilings are tight, no sample above the "
            "roofline, low overhead</div>"
        )
    return "<h2>Warnings</h2>" + "".join(f"<div class='warn'>{html.escape(w)}</div>" for w in res.warnings)


def _validation_html(res: RunResults) -> str:
    e = html.escape
    parts = ["<h2>Validation</h2>"]
    for metric, ev in sorted(res.evaluations.items()):
        u = ev.roofline.unit
        if not ev.checks:
            parts.append(f"<p>{e(metric)}: no validation samples (rooftop validate --run {e(res.run.id)})</p>")
            continue
        rows = [
            [
                f"{c.x:.3g}",
                f"{c.server_nodes}/{c.client_nodes}",
                e(fmt_rate(c.measured, u)),
                e(fmt_rate(c.predicted, u)),
                f"{c.error_pct:+.0f} %",
                c.binding,
                f"{c.efficiency:.2f}" + (" <span class='above'>above roofline</span>" if c.above_roofline else ""),
            ]
            for c in ev.checks
        ]
        parts.append(
            f"<h3>{e(metric)}</h3>"
            + _table(
                ["x", "server/client nodes", "measured", "predicted", "error", "binds", "efficiency"], rows, raw=True
            )
        )
    return "".join(parts)


def _nodes_html(res: RunResults) -> str:
    counted = {m: pm for m, pm in sorted(res.pairs.items()) if len(pm.nodes) >= 3}
    if not counted:
        return ""
    e = html.escape
    parts = [
        "<h2>Nodes</h2><p class='small'>Each node's score compares the median of the "
        "client pairs that include it with the typical node, in robust spreads (MAD, at "
        "least 5 %); beyond 3.5 the node is flagged and the ceilings are also given "
        "without its pairs. Only pairs the model may use count.</p>"
    ]
    parts += [f"<p>{e(metric)}: {e(line)}</p>" for metric, pm in counted.items() for line in pm.outlier_lines()]
    for metric, scores in sorted(res.scores.items()):
        u = res.pairs[metric].unit
        rows = [
            [
                f"n{sc.node}",
                e(fmt_rate(sc.median, u)),
                f"{sc.z:+.1f}",
                f"<span class='above'>{sc.flagged}</span>" if sc.flagged else "",
                e(", ".join(f"n{a}-n{b} {fmt_rate(v, u)}" for (a, b), v in sc.pairs[:3])),
            ]
            for sc in scores
        ]
        parts.append(
            f"<h3>{e(metric)}</h3>"
            + _table(["node", "median of its pairs", "score", "flag", "slowest pairs"], rows, raw=True)
        )
        w = res.without_flagged.get(metric)
        if w:
            parts.append(
                f"<p>without n{', n'.join(map(str, res.flagged(metric)))}: client ceiling "
                f"{e(_rng([w.client.lo, w.client.hi], w.unit))}, ridge "
                f"{w.ridge.lo:.3g} .. {w.ridge.hi:.3g}</p>"
            )
    return "".join(parts)


def _environment_html(res: RunResults) -> str:
    run = res.run
    e = html.escape
    ov = run.overhead
    env_rows = [
        [
            "run time",
            f"{run.wall_s:.0f} s, measuring {run.measured_s:.0f} s"
            + (f" (overhead {ov:.0%})" if ov is not None else ""),
        ],
        ["host", str(run.environment.get("host", "?"))],
        ["launcher", f"{run.config['launcher']['type']}, {len(run.config.get('nodes') or [])} nodes"],
        ["fabric", f"{res.provider}, domain {run.config.get('fabric', {}).get('domain') or 'default'}"],
        ["binding", str(run.config.get("binding"))],
        ["client pairs", str(run.config.get("collect", {}).get("pairs", "serial"))],
        ["engine", str(run.environment.get("engine", "?"))],
        ["rooftop", str(run.environment.get("rooftop", __version__))],
        ["command", " ".join(run.environment.get("argv") or [])],
    ]
    return (
        "<h2>Environment</h2>"
        + _table(["", ""], [[e(a), e(b)] for a, b in env_rows], raw=True)
        + "<h2>Resolved config</h2><details><summary>every key, defaults included</summary>"
        f"<pre>{e(json.dumps(run.config, indent=2))}</pre></details>"
    )


def todo(res: RunResults) -> list[tuple[str, list[str]]]:
    """The 'What to do' parts: (title, sentences)."""
    again = advice.remeasure(res) or ["Nothing: the ceilings are tight and every sample was usable."]
    return [
        ("Deploy", advice.deploy(res)),
        ("Pair matrix", advice.pairs(res) or ["No client pair matrix in this run (rooftop collect)."]),
        ("Measure again", again),
    ]


def _plot_nic(nic, fig_dir: Path) -> dict:
    """The NIC policy comparison's bar chart."""
    from rooftop.nics import figure as nic_policies
    from rooftop.plots.save import save

    title = f"NIC policies, {nic.metric}: {len({b.binding for b in nic.bars})} binding(s)"
    return {f"nic_policies-{nic.metric}": save(nic_policies.figure(nic, title), fig_dir, f"nic_policies-{nic.metric}")}


def write(res: RunResults, out_dir: Path, mixes=(), nic=None) -> tuple[Path, Path]:
    """Writes out_dir/report.html, out_dir/report.md and the figures under
    out_dir/figures/; returns (html, md). mixes: combined rooflines
    (rooftop.model.mix.Combined) to report and draw; nic: a NIC policy comparison
    (rooftop.nics.compare.Comparison) to show, with its bar chart."""
    out_dir.mkdir(parents=True, exist_ok=True)
    figures = plot_run(res, out_dir / "figures")
    figures.update(plot_mixes(mixes, out_dir / "figures", res.run.id))
    if nic is not None:
        figures.update(_plot_nic(nic, out_dir / "figures"))
    page = out_dir / "report.html"
    md = out_dir / "report.md"
    page.write_text(html_page(res, figures, mixes, nic))
    md.write_text(markdown(res, figures, out_dir, mixes, nic))
    return page, md


def nic_lines(nic) -> list[str]:
    """The NIC policy comparison as sentences: the verdict, then each bar."""
    out = list(nic.verdict)
    for b in nic.bars:
        out.append(
            f"{b.binding}, {b.policy}: {fmt_rate(b.mean, nic.unit)} +- {fmt_rate(b.std, nic.unit)} "
            f"({len(b.values)} samples; run {', '.join(b.runs)})"
        )
    return out


def _nic_html(nic) -> str:
    if nic is None:
        return ""
    e = html.escape
    head, rest = nic_lines(nic)[0], nic_lines(nic)[1:]
    return (
        f"<section id='nic-policies'><h2>NIC policies</h2><p class='ok'><b>{e(head)}</b></p><ul>"
        + "".join(f"<li>{e(x)}</li>" for x in rest)
        + "</ul></section>"
    )
