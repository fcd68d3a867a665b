"""What `rooftop tune` shows: a line per step as it is measured, the
outcome, and the report of a tune run (`rooftop report RUN`): the
trajectory (measured and predicted rate per step, a table and a figure)
and the best configuration found, its measured rate against the roofline
when the tune named a run with ceilings (and a sentence saying so when not).
"""

from __future__ import annotations

from pathlib import Path

from rooftop import files
from rooftop.units import fmt_num, fmt_pct, fmt_rate, rate_scale

#: The trajectory figure's resolution.
PNG_DPI = 110


def _knobs(params: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())


def _rate(v, unit: str) -> str:
    return "-" if v is None else fmt_rate(v, unit)


def step_line(s, unit: str) -> str:
    """One step as measured: 'step 3 (model): 1.2 GB/s (predicted 1.1 GB/s) bw.size=...'."""
    pred = f" (predicted {_rate(s.predicted, unit)})" if s.predicted is not None else ""
    err = f" [{s.error}]" if s.error else ""
    return f"step {s.step} ({s.how}): {_rate(s.measured, unit)}{pred}  {_knobs(s.params)}{err}"


def outcome_lines(out: dict, unit: str) -> list[str]:
    """The best configuration found, the default, the roofline."""
    best = out["best"]
    if best is None:
        return [f"stopped: {out['stopped']}", "no configuration was measured successfully"]
    counted = "" if out["stopped"].startswith("budget") else f" ({len(out['steps'])} configurations measured)"
    lines = [
        f"stopped: {out['stopped']}{counted}",
        f"best: {_rate(best['measured'], unit)} per client process at step {best['step']}: {_knobs(best['params'])}",
    ]
    if out["default"]:
        lines.append(
            f"default: {_rate(out['default'], unit)} (best / default = {best['measured'] / out['default']:.2f})"
        )
    r = out.get("roofline")
    if r:
        lines.append(
            f"roofline (run {r['run']}): r(x = {fmt_num(r['x'])}) = {_rate(r['rate'], unit)}, "
            f"{r['binds']} ceiling binds; the best reaches {fmt_pct(r['share'])} of it"
        )
    else:
        lines.append(out.get("roofline_note", ""))
    return lines


def figure(out: dict, unit: str):
    """Measured and predicted rate per step, and the best predicted so far."""
    from matplotlib.figure import Figure

    steps = out["steps"]
    values = [v for s in steps for v in (s["measured"], s["predicted"], s["best_predicted"]) if v]
    div, label = rate_scale(unit, max(values + [(out.get("roofline") or {}).get("rate") or 0.0], default=1.0))
    fig = Figure(figsize=(6.5, 4))
    ax = fig.add_subplot()

    def series(field: str):
        return (
            zip(*[(s["step"], s[field] / div) for s in steps if s[field] is not None])
            if any(s[field] is not None for s in steps)
            else None
        )

    ax.plot(*series("measured") or ([], []), "o-", color="#1f77b4", label="measured (median of windows)")
    for field, style, colour, text in (
        ("predicted", "x", "#d62728", "predicted before measuring"),
        ("best_predicted", "--", "#7f7f7f", "best predicted over the space"),
    ):
        if series(field):
            ax.plot(*series(field), style, color=colour, label=text)
    if out.get("roofline"):
        ax.axhline(out["roofline"]["rate"] / div, color="#2ca02c", lw=1, label="roofline r(x) of the best")
    ax.set(xlabel="step", ylabel=f"per client process ({label})", title=f"rooftop tune: {out['metric']}")
    ax.legend(fontsize=7)
    return fig


def _rows(out: dict, unit: str) -> list[list[str]]:
    return [
        [
            str(s["step"]),
            s["how"],
            _knobs(s["params"]),
            _rate(s["measured"], unit),
            _rate(s["predicted"], unit),
            _rate(s["best_predicted"], unit),
        ]
        for s in out["steps"]
    ]


HEAD = ["step", "chosen by", "configuration", "measured", "predicted", "best predicted"]


def markdown(out: dict, unit: str, png: str) -> str:
    from rooftop.report.render import md_image, md_row, md_text

    lines = [
        f"# rooftop tune: {md_text(out['metric'])}",
        "",
        *[f"- {md_text(l)}" for l in outcome_lines(out, unit) if l],
        "",
        md_image("trajectory", png),
        "",
        md_row(HEAD),
        "|" + "---|" * len(HEAD),
    ]
    lines += [md_row(r) for r in _rows(out, unit)]
    return "\n".join(lines) + "\n"


def html_page(out: dict, unit: str, png: bytes, run_id: str) -> str:
    """The page (templates/tune.html): the best configuration, the trajectory, every step."""
    from rooftop.report import render

    return render.render(
        "tune.html",
        run_id=run_id,
        metric=out["metric"],
        outcome=[l for l in outcome_lines(out, unit) if l],
        figure=render.figure(png, "trajectory", "trajectory", "", dpi=PNG_DPI),
        head=HEAD,
        rows=_rows(out, unit),
    )


def write(out: dict, unit: str, run_id: str, folder: Path) -> tuple[Path, Path]:
    """report.html (self-contained) and report.md (+ trajectory.png)."""
    from rooftop.plots.save import save

    (png,) = save(figure(out, unit), folder, "trajectory", formats=("png",), dpi=PNG_DPI)
    page = files.write(folder / "report.html", html_page(out, unit, png.read_bytes(), run_id))
    md = files.write(folder / "report.md", markdown(out, unit, png.name))
    return page, md
