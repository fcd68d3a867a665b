"""The audit's table (CLI text), its report (one self-contained HTML page
and a Markdown file, the figure inline) and its figure."""

from __future__ import annotations

import json
from pathlib import Path

from rooftop import files
from rooftop.units import fmt_range, fmt_rate


def setting_text(s: dict, unit: str) -> str:
    """'reuse 1.62 GiB/s (1.60–1.70 GiB/s, n=3)', or why it was not measured."""
    if not s["n"]:
        return f"{s['setting']}: not measurable here"
    spread = f" ({fmt_range(s['min'], s['max'], unit)}, n={s['n']})" if s["n"] > 1 else ""
    return f"{s['setting']} {fmt_rate(s['median'], unit)}{spread}"


def verdicts(row: dict) -> str:
    return "; ".join(f"{c['a']} vs {c['b']}: {c['verdict']}" for c in row["comparisons"])


def table_text(rows: list[dict]) -> str:
    """The CLI table: one block per pitfall (settings side by side, the
    verdict, what it means for a service, the rationale)."""
    out = []
    for r in rows:
        out.append(f"{r['title']}" + (f"  [{r['where']}]" if r["where"] else ""))
        out.append("  " + "  |  ".join(setting_text(s, r["unit"]) for s in r["settings"]))
        out.append(f"  verdict: {verdicts(r)}")
        out.append(f"  for your service: {r['meaning']}")
        out.append(f"  why: {r['rationale']}")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def markdown(run_id: str, rows: list[dict], figure: Path | None) -> str:
    from rooftop.report.render import md_image, md_text

    lines = [
        f"# rooftop audit {md_text(run_id)}",
        "",
        "## Pitfalls measured here (“The Dark Side of Microbenchmarking”)",
        "",
        "| pitfall | settings (median, range of repeats) | verdict | what this means for your service |",
        "| --- | --- | --- | --- |",
    ]
    for r in rows:
        settings = "<br>".join(md_text(setting_text(s, r["unit"])) for s in r["settings"])
        lines.append(f"| {md_text(r['title'])} | {settings} | {md_text(verdicts(r))} | {md_text(r['meaning'])} |")
    lines += ["", "## Why each pair differs", ""]
    lines += [
        f"- **{md_text(r['title'])}**: {md_text(r['rationale'])}"
        + (f" (storage: {md_text(r['where'])})" if r["where"] else "")
        for r in rows
    ]
    errors = [
        f"- {md_text(r['title'])}, {md_text(s['setting'])}: {md_text(s['error'])}"
        for r in rows
        for s in r["settings"]
        if s["error"]
    ]
    if errors:
        lines += ["", "## Not measurable here", "", *errors]
    if figure is not None:
        lines += ["", md_image("audit", f"figures/{figure.name}")]
    return "\n".join(lines) + "\n"


def write(run, rows: list[dict], out_dir: Path) -> tuple[Path, Path]:
    """out_dir/report.html (templates/audit.html) and report.md, the figure under out_dir/figures/."""
    from rooftop.audit import figure as audit_plot
    from rooftop.plots.save import save
    from rooftop.report import render

    figure = None
    if any(s["n"] for r in rows for s in r["settings"]):
        paths = save(audit_plot.figure(rows, f"rooftop audit {run.id}"), out_dir / "figures", "audit")
        figure = next(p for p in paths if p.suffix == ".png")
    page = render.render(
        "audit.html",
        run={"id": run.id, "host": run.environment.get("host", ""), "created": run.created, "status": run.status},
        rows=[
            {
                "title": r["title"],
                "settings": [setting_text(s, r["unit"]) for s in r["settings"]],
                "verdict": verdicts(r),
                "meaning": r["meaning"],
                "rationale": r["rationale"],
                "errors": [f"{s['setting']}: not measurable here: {s['error']}" for s in r["settings"] if s["error"]],
            }
            for r in rows
        ],
        figure=render.figure(
            figure, "audit-figure", "audit deltas", "Each setting's median rate; whiskers: the range of its repeats."
        )
        if figure is not None
        else None,
        params=_params(run.config),
    )
    files.write(out_dir / "report.html", page)
    files.write(out_dir / "report.md", markdown(run.id, rows, figure))
    return out_dir / "report.html", out_dir / "report.md"


def _params(cfg: dict) -> str:
    return json.dumps(cfg.get("audit", {}), indent=1)
