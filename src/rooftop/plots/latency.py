"""Latency distributions: per stage, the merged histogram of every client
process's operation latency (the engine's ~4 % bins), on a log axis."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from rooftop import stages
from rooftop.results import Latency

def fmt_us(v: float) -> str:
    return f"{v:.3g} µs" if v < 1000 else f"{v / 1000:.3g} ms"


def _name(lat: Latency) -> str:
    """The stage's name; a measurement standing for several names them all."""
    if not lat.also:
        return stages.STAGES[lat.stage].legend if lat.stage in stages.STAGES else lat.stage
    return " = ".join(x.replace("_", " ") for x in (lat.stage, *lat.also)) + " (one measurement)"


def figure(lats: list[Latency], metric: str, title: str):
    lats = [l for l in lats if l.metric == metric]
    if not lats:
        raise ValueError(f"no latency distributions for {metric}")
    fig, ax = plt.subplots(figsize=(8, 4.6))
    for lat in lats:
        lo = np.array([b[0] for b in lat.bins])
        hi = np.array([b[1] for b in lat.bins])
        n = np.array([b[2] for b in lat.bins], dtype=float)
        # Density per log-width so differently wide bins compare.
        dens = n / lat.count / np.log10(np.maximum(hi, lo * 1.0001) / np.maximum(lo, 1e-3))
        edges = np.append(lo, hi[-1])
        ax.stairs(dens, edges, color=stages.STAGES[lat.stage].colour if lat.stage in stages.STAGES else None, lw=1.6, gid=f"latency-{lat.stage}",
                  label=f"{_name(lat)}: p50 {fmt_us(lat.quantile(0.5))}, "
                        f"p99 {fmt_us(lat.quantile(0.99))} ({lat.processes} proc.)")
    ax.set_xscale("log")
    ax.set_xlabel("operation latency (µs, log scale)")
    ax.set_ylabel("share of operations per decade")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
