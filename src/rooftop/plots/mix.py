"""A workload mix's combined roofline (rooftop.model.mix): each metric's roofline
converted into mix operations per second per client process (its ceilings
divided by what one mix operation asks of it), and the binding envelope,
the lowest of them at each x, with the resource that binds on each side of
the mix's ridge named."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from rooftop import units
from rooftop.model.mix import Combined, work_text
from rooftop.plots import style

COLOURS = ("#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf", "#7f7f7f")


def figure(comb: Combined, title: str, yscale: str = "log"):
    r = comb.roofline
    fig, ax = plt.subplots(figsize=(9, 5.6))
    ticks = style.ratio_axis(ax, r.ridge.centre / 4, r.ridge.centre * 4)
    x = np.geomspace(ticks[0], ticks[-1], 400)
    top = max(c.client.centre for c in comb.components)
    scale, unit = units.rate_scale("ops/s", top)
    values = []
    for i, c in enumerate(comb.components):
        y = np.minimum(c.client.centre, x * c.server.centre) / scale
        values += [float(y.min()), float(y.max())]
        ax.plot(
            x,
            y,
            color=COLOURS[i % len(COLOURS)],
            lw=1.2,
            ls="--",
            gid=f"component-{c.metric}",
            label=f"{c.metric} ({work_text(c.metric, c.demand)} per operation)",
        )
    env = np.minimum(r.client.centre, x * r.server.centre) / scale
    ridge = r.ridge.centre
    ax.plot(
        x,
        env,
        color="black",
        lw=3,
        alpha=0.75,
        gid="envelope",
        label=f"binding: servers' {comb.server_metric} below x = {style.ratio_label(ridge) if ridge >= 1 else units.fmt_num(ridge)}, "
        f"clients' {comb.client_metric} above",
    )
    ax.axvline(ridge, color="black", ls=":", lw=1, gid="ridge")
    style.y_axis(ax, values, top / scale, yscale, f"mix operations per client process ({unit})")
    ax.set_title(title, fontsize=11)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), fontsize=8, frameon=False)
    fig.tight_layout()
    return fig
