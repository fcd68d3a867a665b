"""Several rooflines on one figure: different machines, providers or
configs side by side (the point of a scale-free model)."""

from __future__ import annotations

import matplotlib.pyplot as plt

from rooftop.model import Roofline
from rooftop.plots import roofline as rl
from rooftop import units
from rooftop.plots import style

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf", "#7f7f7f")


def figure(items: list[tuple[str, Roofline]], title: str):
    """items: (label, roofline) of one metric."""
    if not items:
        raise ValueError("nothing to compare")
    lo = min(r.ridge.lo for _, r in items)
    hi = max(r.ridge.hi for _, r in items)
    top = max(r.client.hi for _, r in items)
    scale, unit = units.rate_scale(items[0][1].unit, top)
    fig, ax = plt.subplots(figsize=(9, 5.6))
    ticks = style.ratio_axis(ax, lo, hi)
    for i, (label, r) in enumerate(items):
        rl.draw(ax, r, scale, colour=COLOURS[i % len(COLOURS)], label=label,
                xlim=(ticks[0], ticks[-1]), bands=True)
    ax.set_ylim(0, top / scale * 1.15)
    ax.set_ylabel(f"rate per client process ({unit})")
    ax.text(0.01, 0.98, "bands: ceiling ranges; solid: roofline; dashed: ridge", transform=ax.transAxes,
            va="top", fontsize=8, color="#555555")
    ax.set_title(title, fontsize=11)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), fontsize=8, frameon=False)
    fig.tight_layout()
    return fig
