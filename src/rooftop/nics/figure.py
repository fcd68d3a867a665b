"""NIC policies compared (Carns et al., CUG 2025, Figure 2): the server node's aggregate
rate per core binding, one bar per NIC policy, mean over the samples with
one standard deviation as the error bar."""

from __future__ import annotations

import matplotlib.pyplot as plt

from rooftop import units
from rooftop.nics.compare import Comparison

COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b")


def figure(c: Comparison, title: str):
    bindings = list(dict.fromkeys(b.binding for b in c.bars))
    policies = list(dict.fromkeys(b.policy for b in c.bars))
    top = max(b.mean + b.std for b in c.bars)
    scale, label = units.rate_scale(c.unit, top)
    width = 0.8 / len(policies)
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    for j, pol in enumerate(policies):
        xs, ms, sd = [], [], []
        for i, bnd in enumerate(bindings):
            bar = next((b for b in c.bars if b.binding == bnd and b.policy == pol), None)
            if bar is None:
                continue
            xs.append(i - 0.4 + width * (j + 0.5))
            ms.append(bar.mean / scale)
            sd.append(bar.std / scale)
        ax.bar(
            xs,
            ms,
            width * 0.95,
            yerr=sd,
            capsize=4,
            color=COLOURS[j % len(COLOURS)],
            label=f"{pol}",
            gid=f"policy-{pol}",
        )
    ax.set_xticks(range(len(bindings)))
    ax.set_xticklabels([f"binding {b}" for b in bindings])
    ax.set_ylabel(f"server node aggregate ({label})")
    ax.set_ylim(0, top / scale * 1.2)
    ax.set_title(title, fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(title="clients' NIC policy", fontsize=8, loc="upper right")
    ax.text(
        0.01,
        0.98,
        "bars: mean over samples; error bars: one standard deviation",
        transform=ax.transAxes,
        ha="left",
        va="top",
        fontsize=8,
        color="#555555",
    )
    fig.tight_layout()
    return fig
