"""Latency distributions: per stage, the merged histogram of every client
process's operation latency (the engine's ~4 % bins), on a log axis.

The axis spans the data, not the histogram's range: from the fastest
operation to the 99.9th percentile of the slowest stage (a handful of slow
operations would otherwise stretch a 20 µs distribution over four decades).
A stage whose slowest operations lie beyond is marked at the right edge and
its legend says how far its tail goes and what share it holds."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from rooftop import stages
from rooftop.plots import style
from rooftop.results import Latency
from rooftop.units import fmt_num, fmt_pct

#: The axis ends at this quantile of the slowest stage.
TAIL_QUANTILE = 0.999


def fmt_us(v: float) -> str:
    """'24.9 µs', '1.66 ms', '304 s'."""
    if v < 1e3:
        return f"{fmt_num(v)} µs"
    return f"{fmt_num(v / 1e3)} ms" if v < 1e6 else f"{fmt_num(v / 1e6)} s"


def _name(lat: Latency) -> str:
    """The stage's legend (saying whether a saturating stage saturated); a
    measurement standing for several names them all."""
    if not lat.also:
        st = stages.STAGES.get(lat.stage)
        return st.legend_for(lat.placements) if st else lat.stage
    return " = ".join(x.replace("_", " ") for x in (lat.stage, *lat.also)) + " (one measurement)"


def x_limits(lats: list[Latency]) -> tuple[float, float]:
    """From the fastest operation to the slowest stage's TAIL_QUANTILE."""
    lo = min(b[0] for lat in lats for b in lat.bins if b[2] > 0)
    hi = max(lat.quantile(TAIL_QUANTILE) for lat in lats)
    return max(lo, 1e-3) / 1.25, hi * 1.6


def _tail(lat: Latency, right: float) -> tuple[float, float] | None:
    """(slowest operation, share of operations) beyond the axis' right end."""
    beyond = [(hi, n) for lo, hi, n in lat.bins if n > 0 and lo >= right]
    if not beyond:
        return None
    return max(h for h, _ in beyond), sum(n for _, n in beyond) / lat.count


#: The engine's plotting bins (histogram.cpp, Histogram::bins): about this
#: many per doubling of latency, each about 4.4 % wide.
BINS_PER_OCTAVE = 16
YLABEL = "% of operations per bin (bins 4.4 % wide)"


def _steps(lat: Latency) -> tuple[np.ndarray, np.ndarray]:
    """(values, edges) for stairs: each bin's share of the operations in %,
    per 1/BINS_PER_OCTAVE octave of latency (a bin of that width: its share;
    a wider one, at the bottom of the range where buckets are whole
    nanoseconds, its share spread over its width), and 0 over the gaps
    between bins (the engine lists only bins that hold operations). The
    heights of nominal bins add up to 100 %."""
    vals, edges = [], [lat.bins[0][0]]
    for lo, hi, n in lat.bins:
        if lo > edges[-1] * 1.0001:
            vals.append(0.0)
            edges.append(lo)
        octaves = np.log2(max(hi, lo * 1.0001) / max(lo, 1e-3))
        vals.append(100 * n / lat.count / (octaves * BINS_PER_OCTAVE))
        edges.append(max(hi, edges[-1]))
    return np.array(vals), np.array(edges)


def why_not(lats: list[Latency], metric: str) -> str:
    """Why the figure would carry no information ("" when it carries some)."""
    if any(l.metric == metric and l.count for l in lats):
        return ""
    return (
        "no latency histogram: the run's engine documents (RUN/raw/) are missing or carry none "
        "(rooftop doctor checks the folder)"
    )


def figure(lats: list[Latency], metric: str, title: str):
    lats = [l for l in lats if l.metric == metric]
    if not lats:
        raise ValueError(f"no latency distributions for {metric}")
    fig, ax = plt.subplots(figsize=(8, 4.6))
    left, right = x_limits(lats)
    for i, lat in enumerate(lats):
        dens, edges = _steps(lat)
        colour = stages.STAGES[lat.stage].colour if lat.stage in stages.STAGES else None
        label = (
            f"{_name(lat)}: p50 {fmt_us(lat.quantile(0.5))}, p99 {fmt_us(lat.quantile(0.99))} ({lat.processes} proc.)"
        )
        tail = _tail(lat, right)
        if tail:
            label += f"; tail to {fmt_us(tail[0])} ({fmt_pct(tail[1], 2)}) beyond the axis ▶"
            ax.plot(
                [right],
                [0.92 - 0.07 * i],
                marker=">",
                ms=9,
                color=colour,
                clip_on=False,
                gid=f"tail-{lat.stage}",
                transform=ax.get_xaxis_transform(),
            )
        ax.stairs(dens, edges, color=colour, lw=1.6, gid=f"latency-{lat.stage}", label=label)
    ax.set_xscale("log")
    ax.set_xlim(left, right)
    style.log_axis_numbers(ax.xaxis, left, right, fmt_us)
    ax.set_xlabel("operation latency (log scale)")
    ax.set_ylabel(YLABEL)
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), frameon=False)
    fig.tight_layout()
    return fig
