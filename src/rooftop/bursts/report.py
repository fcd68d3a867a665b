"""The report of a bursts run (`rooftop report RUN` on a run of `rooftop
bursts`): the summary table per progress mode with its notes, what each mode
costs a job beside the server (when a neighbour ran), the figure, every
parameter and the environment; one self-contained HTML file and a Markdown
summary, as the roofline report. Other studies' parts (the run under load,
`rooftop interfere --bursts-run`) come from the caller, the bursts run kind
(rooftop.kinds.bursts), so this study names no other."""

from __future__ import annotations

import html
import json
from pathlib import Path

from rooftop import __version__
from rooftop.bursts import summary as burst_summary
from rooftop.bursts.figure import plot
from rooftop.bursts.run import shown_table
from rooftop.report import CSS, _img, _table


def _neighbour_lines(res: dict) -> list[str]:
    """One sentence per mode: what it cost the neighbour."""
    nb = res["neighbour"]
    if not res["params"].get("neighbour"):
        return []
    if not nb["alone_s"]:
        return ["The neighbour's time alone was not measured: no slowdown."]
    return [
        f"{m}: the neighbour took {s:.2f} s against {nb['alone_s']:.2f} s alone, {nb['slowdown'][m]:.2f}x"
        for m, s in nb["seconds"].items()
    ]


def markdown(res: dict, figure: str | None, studies=()) -> str:
    """figure: the PNG's path relative to the Markdown file; studies: other
    studies' parts, (Markdown lines, HTML) each."""
    run, (header, rows) = res["run"], shown_table(res)
    out = [
        f"# rooftop bursts {run.id}",
        "",
        f"{run.created}, status {run.status}",
        "",
        "| " + " | ".join(header) + " |",
        "|" + " --- |" * len(header),
    ]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    out += [""] + [
        f"- {n}" for n in burst_summary.notes(res["params"], res["power_note"], res["neighbour"], res["rows"])
    ]
    nb = _neighbour_lines(res)
    if nb:
        out += ["", "## Cost to the neighbour", ""] + [f"- {n}" for n in nb]
    for lines, _ in studies:
        if lines:
            out += [""] + lines
    if figure:
        out += ["", f"![rate, CPU and power per mode]({figure})"]
    out += ["", "## Parameters", "", "```json", json.dumps(res["params"], indent=1), "```"]
    return "\n".join(out) + "\n"


def html_page(res: dict, figure: Path | None, studies=()) -> str:
    run, e = res["run"], html.escape
    header, rows = shown_table(res)
    notes = "".join(
        f"<li>{e(n)}</li>" for n in burst_summary.notes(res["params"], res["power_note"], res["neighbour"], res["rows"])
    )
    nb = _neighbour_lines(res)
    env = run.environment
    parts = [
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<meta name='viewport' content='width=device-width,initial-scale=1'>"
        f"<title>rooftop bursts {e(run.id)}</title><style>{CSS}</style></head><body><main>",
        f"<h1>rooftop bursts</h1><div class='sub'>run {e(run.id)}: {e(str(env.get('host', '?')))}, "
        f"{e(run.config['fabric']['provider'])}, {e(run.created)} ({e(run.status)})</div>",
        "<section id='summary'><h2>Per progress mode</h2>",
        _table(header, rows),
        f"<ul class='small'>{notes}</ul></section>",
    ]
    if res["power_note"]:
        parts.append(
            f"<div class='warn'>Power is not measured here: {e(res['power_note'])}. "
            "The figure shows rate and CPU only.</div>"
        )
    if nb:
        parts.append(
            "<section id='neighbour'><h2>Cost to the job beside the server</h2><ul>"
            + "".join(f"<li>{e(n)}</li>" for n in nb)
            + "</ul></section>"
        )
    parts.extend(h for _, h in studies)
    if figure:
        parts.append(
            f"<figure>{_img(figure, 'rate, CPU and power per mode')}<figcaption>Per mode: the "
            "client's rate per interval (left), the server's CPU in cores (right) and package "
            "power where RAPL is readable; shaded: bursts.</figcaption></figure>"
        )
    parts += [
        "<h2>Parameters</h2><details open><summary>bursts (defaults included)</summary>"
        f"<pre>{e(json.dumps(res['params'], indent=2))}</pre></details>",
        "<h2>Environment</h2><details><summary>host, engine, command; the resolved config</summary>"
        f"<pre>{e(json.dumps(env, indent=2))}</pre><pre>{e(json.dumps(run.config, indent=2))}</pre>"
        f"</details><p class='small'>rooftop {__version__}</p></main></body></html>",
    ]
    return "".join(parts)


def write(res: dict, out_dir: Path, studies=()) -> tuple[Path, Path]:
    """Writes out_dir/report.html, report.md and figures/bursts.*; returns
    (html, md). studies: other studies' parts of the report, (Markdown lines,
    HTML) each, shown after the neighbour's cost."""
    out_dir.mkdir(parents=True, exist_ok=True)
    figs = plot(res, out_dir / "figures") if res["lines"] else []
    png = next((f for f in figs if f.suffix == ".png"), None)
    page, md = out_dir / "report.html", out_dir / "report.md"
    page.write_text(html_page(res, png, studies))
    md.write_text(markdown(res, f"figures/{png.name}" if png else None, studies))
    return page, md
