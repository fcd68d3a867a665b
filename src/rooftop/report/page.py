"""The report's HTML page: one self-contained file (figures inline, no
network needed). Narrow screens (phones) get one column; wide tables
scroll inside their box, never the page."""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path

from rooftop import __version__
from rooftop.config.units import fmt_rate
from rooftop.report.parts import (
    _big,
    _ci,
    _fmt_ratio,
    _pct,
    _rng,
    _stages,
    captions,
    class_text,
    headline,
    html_of,
    nic_lines,
    shown_figures,
    todo,
)
from rooftop.results import RunResults

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


def _img(png: Path, alt: str) -> str:
    data = base64.b64encode(png.read_bytes()).decode()
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def _pairs_text(res: RunResults) -> str:
    """collect.pairs, and for sampled pairs how many of all and where the
    topology came from."""
    cfg = res.run.config
    text = str(cfg.get("collect", {}).get("pairs", "serial"))
    sample, topo = cfg.get("pair_sample"), res.topology
    if sample and topo is not None:
        text += f": {len(sample['pairs'])} of {topo.n * (topo.n - 1) // 2} pairs, topology: {topo.describe()}" + (
            f"; stopped: {sample['stop']}" if sample.get("stop") else ""
        )
    return text


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
        f"<div class='small'>client ceiling {e(_rng(h['client'], u))} per process{e(_ci(h['client_ci'], u))}</div>"
        + (f"<div class='small'>per topology class: {e(class_text(h))}</div>" if h["client_classes"] else "")
        + f"{node}"
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
        html_of(res, "verdict", figures),  # rooftop.results.sections
        _todo_html(res),
        _mixes_html(mixes),
        _nic_html(nic),
        _figures_html(shown_figures(res, figures), captions(res)),
        _warnings_html(res),
        _validation_html(res),
        html_of(res, "validation", figures),
        _nodes_html(res),
        html_of(res, "nodes", figures),
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


def _figures_html(figures: dict[str, list[Path]], captions: dict[str, str]) -> str:
    e = html.escape
    parts = ["<h2>Figures</h2>"]
    for name, paths in figures.items():
        png = next((p for p in paths if p.suffix == ".png"), None)
        if png is None:
            continue
        kind = name.split("-")[0]
        parts.append(
            f"<figure id='{e(name)}'>{_img(png, name)}<figcaption>{e(name)}: "
            f"{e(captions.get(kind, ''))}</figcaption></figure>"
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
        ["client pairs", _pairs_text(res)],
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
