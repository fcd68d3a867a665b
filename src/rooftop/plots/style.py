"""Colours and the server/client-ratio axis shared by every figure (units:
rooftop.units.rate_scale)."""

from __future__ import annotations

from fractions import Fraction

#: Colours: client ceiling, node-saturated client ceiling, server ceiling, roofline.
CLIENT = "#1f77b4"
CLIENT_NODE = "#9467bd"
SERVER = "#d62728"
ROOF = "#222222"
RIDGE = "#2ca02c"


def ratio_label(x: float) -> str:
    """1/16, 1/2, 1, 2, 16 ..."""
    if x >= 1:
        return f"{x:g}"
    f = Fraction(x).limit_denominator(1024)
    return f"{f.numerator}/{f.denominator}"


def ratio_axis(ax, lo: float = 1 / 16, hi: float = 16.0) -> list[float]:
    """Log-2 x axis of server/client ratios with ticks 1/16 ... 16 (widened
    to cover lo..hi). Returns the ticks."""
    a, b = 1 / 16, 16.0
    while a > lo:
        a /= 2
    while b < hi:
        b *= 2
    ticks = []
    t = a
    while t <= b * 1.0001:
        ticks.append(t)
        t *= 2
    ax.set_xscale("log", base=2)
    ax.set_xlim(a / 1.25, b * 1.25)
    ax.set_xticks(ticks)
    ax.set_xticklabels([ratio_label(t) for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel("server processes per client process (x, log scale)")
    return ticks


#: Validation points by number of server nodes: distinct from the ceilings' colours.
POINT_PALETTE = ("#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#bcbd22", "#7f7f7f", "#2ca02c",
                 "#1a55b0", "#a0522d", "#000000")


def server_node_colours(counts) -> dict[int, str]:
    """A distinct colour per number of server nodes."""
    return {c: POINT_PALETTE[i % len(POINT_PALETTE)] for i, c in enumerate(sorted(set(counts)))}
