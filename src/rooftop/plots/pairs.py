"""The client pair matrix as a node x node heatmap, slowest pairs marked
(seed 000's Polaris lesson: slow pairs that share one node)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Rectangle

from rooftop import units
from rooftop.plots import style
from rooftop.results import PairMatrix


def figure(pm: PairMatrix, title: str, slowest: int = 3, flagged: list[int] = ()):
    n = len(pm.nodes)
    top = max(pm.rates.values())
    scale, unit = units.rate_scale(pm.unit, top)
    m = np.full((n, n), np.nan)
    for (a, b), v in pm.rates.items():
        m[a, b] = m[b, a] = v / scale
    size = max(4.5, min(12, 1.0 + 0.55 * n))
    fig, ax = plt.subplots(figsize=(size + 1.2, size))
    cmap = plt.get_cmap("viridis").with_extremes(bad="#dddddd")
    im = ax.imshow(m, cmap=cmap, origin="upper", gid="pairs")
    fig.colorbar(im, ax=ax, shrink=0.8, label=f"client peak per process ({unit})")
    ticks = list(range(n))
    labels = [f"n{i}" + (" !" if i in flagged else "") for i in ticks]
    ax.set_xticks(ticks, labels, rotation=90 if n > 12 else 0)
    ax.set_yticks(ticks, labels)
    for i in flagged:
        for t in (ax.get_xticklabels()[i], ax.get_yticklabels()[i]):
            t.set_color(style.SERVER)
            t.set_fontweight("bold")
    ax.set_xlabel("node")
    ax.set_ylabel("node")
    if n <= 12:
        vmid = np.nanmean(m)
        for a in range(n):
            for b in range(n):
                if not np.isnan(m[a, b]):
                    ax.text(b, a, f"{m[a, b]:.3g}", ha="center", va="center", fontsize=8,
                            color="white" if m[a, b] < vmid else "black")
    slow = pm.slowest(slowest) if len(pm.rates) > 1 else []
    for (a, b), v in slow:
        for (i, j) in ((a, b), (b, a)):
            ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, ec=style.SERVER, lw=2.5,
                                   gid="slow-pair"))
    if slow:
        text = "slowest: " + ", ".join(f"n{a}–n{b} {v / scale:.3g}" for (a, b), v in slow)
        ax.set_title(f"{title}\n{text} {unit}", fontsize=10)
    else:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig
