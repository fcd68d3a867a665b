"""Several rooflines on one figure: different machines, providers or
configs side by side (the point of a scale-free model).

Rates differ by orders of magnitude between sources (tcp against shm, a
laptop against Aurora), so the y axis is log by default (style.pick_yscale
over every source's ceilings), or normalised: each source's rate divided by
its own client ceiling, so every roofline flattens at 1 and the ridges
compare directly. The figure says which."""

from __future__ import annotations

import matplotlib.pyplot as plt

from rooftop import units
from rooftop.model.roofline import Roofline
from rooftop.plots import roofline as rl
from rooftop.plots import style

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf", "#7f7f7f")


def figure(items: list[tuple[str, Roofline]], title: str, yscale: str = "auto", normalise: bool = False):
    """items: (label, roofline) of one metric. normalise: y is each
    roofline's rate / its own client ceiling (linear unless yscale is log)."""
    if not items:
        raise ValueError("nothing to compare")
    lo = min(r.ridge.lo for _, r in items)
    hi = max(r.ridge.hi for _, r in items)
    top = max(r.client.hi for _, r in items)
    scale, unit = units.rate_scale(items[0][1].unit, top)
    fig, ax = plt.subplots(figsize=(9, 5.6))
    ticks = style.ratio_axis(ax, lo, hi)
    values = []
    for i, (label, r) in enumerate(items):
        div = r.client_bound.centre if normalise else scale
        show = units.rate_scale(r.unit, r.client.hi) if normalise else (scale, unit)
        rl.draw(ax, r, div, show, colour=COLOURS[i % len(COLOURS)], label=label, xlim=(ticks[0], ticks[-1]), bands=True)
        values += rl.frame_values(r, ax.get_xlim(), div)
    if normalise:
        flat = max(r.client.hi / r.client_bound.centre for _, r in items)
        style.y_axis(
            ax, values, flat, "linear" if yscale == "auto" else yscale, "rate / the source's own client ceiling"
        )
        how = "normalised: each source's rate / its own client ceiling (roofline flat at 1)"
    else:
        used = style.y_axis(ax, values, top / scale, yscale, f"rate per client process ({unit})")
        how = f"rates per client process, {used} y axis"
    # Bottom right: under the plateaus, past every ridge, where nothing is drawn.
    ax.text(
        0.99,
        0.02,
        f"{how}\nbands: ceiling ranges; solid: roofline; dashed: ridge",
        transform=ax.transAxes,
        ha="right",
        va="bottom",
        fontsize=8,
        color="#555555",
        gid="view",
        bbox={"facecolor": "white", "alpha": 0.8, "lw": 0},
    )
    ax.set_title(title, fontsize=11)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), fontsize=8, frameon=False)
    fig.tight_layout()
    return fig
