"""The audit's figure: one panel per pitfall, each setting's median rate
as a bar with the range of its repeats, the verdict under the panel (a
setting not measurable here is marked so, with no bar)."""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt

from rooftop.units import rate_scale

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd")


def _panel(ax, row: dict) -> None:
    top = max([s["max"] for s in row["settings"] if s["n"]] or [1.0])
    div, label = rate_scale(row["unit"], top)
    names = [s["setting"] for s in row["settings"]]
    for i, s in enumerate(row["settings"]):
        if not s["n"]:
            ax.text(i, 0, "not\nmeasurable\nhere", ha="center", va="bottom", fontsize=7, color="#555555")
            continue
        med, lo, hi = s["median"] / div, s["min"] / div, s["max"] / div
        ax.bar(i, med, color=COLOURS[i % len(COLOURS)], width=0.6)
        ax.errorbar(i, med, yerr=[[med - lo], [hi - med]], color="#222222", capsize=4, lw=1)
    ax.set_xticks(range(len(names)), names, fontsize=8)
    ax.set_ylabel(label, fontsize=8)
    low = min([s["min"] for s in row["settings"] if s["n"]] or [top])
    if low > 0 and top / low > 30:  # settings orders of magnitude apart: every bar stays visible
        ax.set_yscale("log")
        ax.set_ylim(low / div / 2, top / div * 2)
    else:
        ax.set_ylim(0, top / div * 1.15)
    ax.set_title(row["title"], fontsize=9)
    verdicts = "; ".join(f"{c['a']} vs {c['b']}: {c['verdict']}" for c in row["comparisons"])
    ax.set_xlabel(textwrap.fill(verdicts, 44), fontsize=7)


def figure(rows: list[dict], title: str):
    """One panel per audit row (bars: median; whiskers: min..max of the repeats)."""
    if not rows:
        raise ValueError("no audit rows to plot")
    fig, axes = plt.subplots(1, len(rows), figsize=(3.3 * len(rows), 3.8), squeeze=False)
    for ax, row in zip(axes[0], rows):
        _panel(ax, row)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig
