"""Colours and the server/client-ratio axis shared by every figure (units:
rooftop.units.rate_scale)."""

from __future__ import annotations

from fractions import Fraction

from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from rooftop.units import fmt_num

#: Colours: client ceiling, node-saturated client ceiling, server ceiling, roofline.
CLIENT = "#1f77b4"
CLIENT_NODE = "#9467bd"
SERVER = "#d62728"
ROOF = "#222222"
RIDGE = "#2ca02c"
#: Rooflines measured under other conditions (RunResults.loaded: rooftop
#: interfere's loaded runs), one colour per condition, in order.
LOADED_COLOURS = ("#7f3c8d", "#e68310", "#11a579", "#cf1c90", "#3969ac", "#80ba5a")


def ratio_label(x: float) -> str:
    """1/16, 1/2, 1, 2, 16 ..."""
    if x >= 1:
        return f"{x:g}"
    f = Fraction(x).limit_denominator(1024)
    return f"{f.numerator}/{f.denominator}"


def x_text(x: float) -> str:
    """A measured ratio of processes: '1', '1/3', '4/3'; else 3 digits."""
    f = Fraction(x).limit_denominator(64)
    if abs(float(f) - x) > 1e-9 * x:
        return fmt_num(x)
    return str(f.numerator) if f.denominator == 1 else f"{f.numerator}/{f.denominator}"


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
POINT_PALETTE = (
    "#ff7f0e",
    "#17becf",
    "#8c564b",
    "#e377c2",
    "#bcbd22",
    "#7f7f7f",
    "#2ca02c",
    "#1a55b0",
    "#a0522d",
    "#000000",
)


def server_node_colours(counts) -> dict[int, str]:
    """A distinct colour per number of server nodes."""
    return {c: POINT_PALETTE[i % len(POINT_PALETTE)] for i, c in enumerate(sorted(set(counts)))}


#: --yscale choices of roofline figures (plot, compare).
YSCALES = ("auto", "log", "linear")
#: A linear y axis from 0 is readable when the lowest value it shows is at
#: least this share of its height (below, points and ceilings sit on the floor).
LINEAR_FLOOR = 0.1
#: Room above the highest value: linear (as before) and log (a factor).
LINEAR_HEADROOM, LOG_MARGIN = 1.18, 1.6


def pick_yscale(values, top: float, yscale: str = "auto") -> str:
    """The y scale of a roofline figure. values: everything that must be
    inside the frame (points, the ceilings: plots.roofline.frame_values);
    top: the highest flat thing (client ceilings, points), where a linear
    frame ends (as in Carns et al. (CUG 2025), whose rising server ceiling leaves the frame
    just past the ridge). auto: linear when that frame holds every value,
    none below LINEAR_FLOOR of its height; otherwise log (a straight x·server
    line; with the ratio axis reaching past the ridge, that is always)."""
    if yscale != "auto":
        return yscale
    vals = [v for v in values if v > 0]
    height = top * LINEAR_HEADROOM
    fits = max(vals) <= height and min(vals) >= LINEAR_FLOOR * height
    return "linear" if fits else "log"


def y_axis(ax, values, top: float, yscale: str, label: str) -> str:
    """Sets the y scale and limits (pick_yscale) and the label, which says
    the scale; returns the scale used."""
    used = pick_yscale(values, top, yscale)
    if used == "linear":
        ax.set_ylim(0, top * LINEAR_HEADROOM)
        ax.set_ylabel(label)
        return used
    vals = [v for v in values if v > 0]
    lo, hi = min(vals) / LOG_MARGIN, max(vals) * LOG_MARGIN
    ax.set_yscale("log")
    ax.set_ylim(lo, hi)
    log_axis_numbers(ax.yaxis, lo, hi)
    ax.set_ylabel(label.rstrip(")") + ", log scale)" if label.endswith(")") else label + " (log scale)")
    return used


def log_axis_numbers(axis, lo: float, hi: float, fmt=fmt_num) -> None:
    """Ticks of a log axis as plain numbers (20, 50, 100, not 2x10^1; fmt:
    value -> text): 1, 2, 5 x 10^k, or every integer multiple on less than
    a decade."""
    subs = tuple(range(1, 10)) if hi / lo < 10 else (1.0, 2.0, 5.0)
    axis.set_major_locator(LogLocator(base=10, subs=subs))
    axis.set_major_formatter(FuncFormatter(lambda v, _: fmt(v)))
    axis.set_minor_formatter(NullFormatter())
