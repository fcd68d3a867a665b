"""The report of a bursts run (`rooftop report RUN` on a run of `rooftop
bursts`): the summary table per progress mode with its notes, what each mode
costs a job beside the server (when a neighbour ran), the figure, every
parameter and the environment; one self-contained HTML file and a Markdown
summary, as the roofline report. Other studies' parts (the run under load,
`rooftop interfere --bursts-run`) come from the caller, the bursts run kind
(rooftop.kinds.bursts), so this study names no other."""

from __future__ import annotations

from pathlib import Path

from markupsafe import Markup

from rooftop import files
from rooftop.bursts import summary as burst_summary
from rooftop.bursts.figure import plot
from rooftop.bursts.run import shown_table
from rooftop.numbers import json_text
from rooftop.report import render


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
        f"# rooftop bursts {render.md_text(run.id)}",
        "",
        render.md_text(f"{run.created}, status {run.status}"),
        "",
        render.md_row(header),
        "|" + " --- |" * len(header),
    ]
    out += [render.md_row(r) for r in rows]
    out += [""] + [
        f"- {render.md_text(n)}"
        for n in burst_summary.notes(res["params"], res["power_note"], res["neighbour"], res["rows"])
    ]
    nb = _neighbour_lines(res)
    if nb:
        out += ["", "## Cost to the neighbour", ""] + [f"- {render.md_text(n)}" for n in nb]
    for lines, _ in studies:
        if lines:
            out += [""] + lines
    if figure:
        out += ["", f"![rate, CPU and power per mode]({figure})"]
    out += ["", "## Parameters", "", "```json", json_text(res["params"], indent=1), "```"]
    return "\n".join(out) + "\n"


def html_page(res: dict, figure: Path | None, studies=()) -> str:
    """The page (templates/bursts.html); studies: (Markdown lines, HTML) each."""
    run = res["run"]
    header, rows = shown_table(res)
    env = run.environment
    fig = None
    if figure:
        fig = render.figure(
            figure,
            "bursts",
            "rate, CPU and power per mode",
            "Per mode: the client's rate per interval (left), the server's CPU in cores (right) and package "
            "power where RAPL is readable; shaded: bursts.",
        )
    return render.render(
        "bursts.html",
        run={"id": run.id, "created": run.created, "status": run.status},
        host=str(env.get("host", "?")),
        provider=run.config["fabric"]["provider"],
        header=header,
        rows=rows,
        notes=burst_summary.notes(res["params"], res["power_note"], res["neighbour"], res["rows"]),
        power_note=res["power_note"],
        neighbour=_neighbour_lines(res),
        studies=[Markup(h) for _, h in studies],
        figure=fig,
        params_json=json_text(res["params"], indent=2),
        env_json=json_text(env, indent=2),
        config_json=json_text(run.config, indent=2),
    )


def write(res: dict, out_dir: Path, studies=()) -> tuple[Path, Path]:
    """Writes out_dir/report.html, report.md and figures/bursts.*; returns
    (html, md). studies: other studies' parts of the report, (Markdown lines,
    HTML) each, shown after the neighbour's cost."""
    figs = plot(res, out_dir / "figures") if res["lines"] else []
    png = next((f for f in figs if f.suffix == ".png"), None)
    page, md = out_dir / "report.html", out_dir / "report.md"
    files.write(page, html_page(res, png, studies))
    files.write(md, markdown(res, f"figures/{png.name}" if png else None, studies))
    return page, md
