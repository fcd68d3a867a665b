"""The report's "learned model" section (issue 17, item 4): what `rooftop
learn` saved beside its model (RESULTS/RUN/learned/METRIC.json): the
comparison table, the extrapolation table, and predicted against measured
for the best plain and the best roofline-informed model (their
cross-validated predictions). SECTION is its entry of the report sections
table (rooftop.kinds.sections; rooftop.results.sections says what an entry
is)."""

from __future__ import annotations

import io
import json
from pathlib import Path

from matplotlib.figure import Figure

from rooftop.report import render
from rooftop.results.sections import Section


def load(run_dir: Path) -> list[dict]:
    """Every metric's saved comparison of a run (none: no `rooftop learn`)."""
    folder = run_dir / "learned"
    out = []
    for p in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        if p.name.endswith(".model.json"):
            continue  # the model file itself (modelfile.py), not a comparison
        try:
            out.append(json.loads(p.read_text()))
        except (OSError, ValueError):
            continue  # a damaged file: the section shows what it can
    return out


#: The predicted-against-measured figure's resolution (drawn in memory).
PNG_DPI = 110


def figure(doc: dict):
    """Predicted against measured (per-client rate, log-log), one colour per
    model, the line of perfect prediction."""
    pred = doc["predictions"]
    fig = Figure(figsize=(5.5, 4.5))
    ax = fig.add_subplot()
    y = pred["measured"]
    for (name, values), colour in zip(pred["models"].items(), ("#d62728", "#1f77b4")):
        ax.scatter(y, values, s=14, alpha=0.7, color=colour, label=name)
    lo, hi = min(y + sum(pred["models"].values(), [])), max(y + sum(pred["models"].values(), []))
    ax.plot([lo, hi], [lo, hi], color="#222222", lw=1, label="predicted = measured")
    ax.set(
        xscale="log",
        yscale="log",
        xlabel=f"measured per client ({doc['unit']})",
        ylabel=f"predicted ({doc['unit']})",
        title=f"{doc['metric']}: cross-validated predictions",
    )
    ax.legend(fontsize=7)
    return fig


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=PNG_DPI, bbox_inches="tight")
    return buf.getvalue()


def _rows(models: list[dict]) -> list[list[str]]:
    def spread(v):
        return "-" if not v else f"{v[0]:.1f}–{v[1]:.1f}"

    return [
        [
            m["model"],
            f"{m['median_ape']:.1f}",
            spread(m["median_ape_folds"]),
            f"{m['mean_ape']:.1f}",
            spread(m["mean_ape_folds"]),
        ]
        for m in models
    ]


#: (No "|" in them: the Markdown table would split there.)
HEAD = ["model", "median abs. error %", "over folds", "mean abs. error %", "over folds"]


def _summary(doc: dict) -> str:
    noise = doc.get("repeat_noise_median_ape")
    return (
        f"{doc['samples']} samples, {doc['configurations']} configurations from run(s) "
        f"{', '.join(doc['runs'])}; saved model: {doc['best']}"
        + (f"; repeats of one configuration differ by {noise:.1f} % (median)" if noise else "")
    )


def markdown(docs: list[dict]) -> list[str]:
    lines = []
    for d in docs:
        lines += [
            f"## Learned model: {render.md_text(d['metric'])}",
            "",
            render.md_text(_summary(d)),
            "",
            render.md_row(HEAD),
            "|" + " --- |" * len(HEAD),
        ]
        lines += [render.md_row(r) for r in _rows(d["cross_validation"])]
        ex = d["extrapolation"]
        lines += ["", f"Extrapolation: {render.md_text(ex['split'])}", ""]
        if ex["models"]:
            lines += [render.md_row(HEAD), "|" + " --- |" * len(HEAD)]
            lines += [render.md_row(r) for r in _rows(ex["models"])]
        lines.append("")
    return lines


def context(docs: list[dict]) -> dict | None:
    """What sections/learned.html shows, per metric: the summary, the
    cross-validation and extrapolation tables, the figure. None: nothing learned."""
    if not docs:
        return None
    out = []
    for d in docs:
        ex = d["extrapolation"]
        fig = None
        if d.get("predictions"):
            fig = render.figure(
                _png(figure(d)),
                f"learned-{d['metric']}",
                f"{d['metric']} predicted against measured",
                "predicted against measured: the best plain and the best roofline-informed model, each "
                "sample predicted by the fold that did not train on it",
                dpi=PNG_DPI,
            )
        out.append(
            {
                "metric": d["metric"],
                "summary": _summary(d),
                "cross_validation": _rows(d["cross_validation"]),
                "split": ex["split"],
                "extrapolation": _rows(ex["models"]) if ex["models"] else [],
                "figure": fig,
            }
        )
    return {"head": HEAD, "learned": out}


SECTION = Section(
    name="learned",
    read=lambda store, res: load(store.run_dir(res.run.id)),
    markdown=lambda res, docs, figures, base: markdown(docs),
    template="sections/learned.html",
    context=lambda res, docs, figures: context(docs),
)
