"""The roofline figure (seed 000, Figures 13-14): per-process rate against
the server/client ratio x on a log scale, client and server ceilings as
min/max lines with a shaded band, the roofline, the ridge, and validation
samples coloured by the number of server nodes."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from rooftop.model import Evaluation, Roofline
from rooftop import units
from rooftop.plots import style


def x_range(roofline: Roofline, xs=()) -> tuple[float, float]:
    pts = [roofline.ridge.lo, roofline.ridge.hi, *xs]
    return min(pts), max(pts)


def draw(ax, r: Roofline, scale: float, colour: str | None = None, label: str | None = None,
         xlim: tuple[float, float] = (1 / 16, 16), bands: bool = True, ridge: bool = True) -> None:
    """Draws one roofline on ax: ceilings (min/max lines, shaded), the
    roofline itself and the ridge. colour/label: one colour per roofline
    when several share a figure (compare)."""
    x = np.geomspace(xlim[0] / 1.3, xlim[1] * 1.3, 400)
    cc, sc, rc = (colour or style.CLIENT), (colour or style.SERVER), (colour or style.ROOF)
    if bands:
        ax.axhspan(r.client.lo / scale, r.client.hi / scale, color=cc, alpha=0.15, lw=0)
        for v in (r.client.lo, r.client.hi):
            ax.axhline(v / scale, color=cc, lw=1, ls="-" if not colour else ":")
        if not colour:
            ax.plot([], [], color=cc, lw=6, alpha=0.3, label=f"client ceiling {_range(r.client, scale)}")
        if r.client_node is not None:
            nc = colour or style.CLIENT_NODE
            ax.axhspan(r.client_node.lo / scale, r.client_node.hi / scale, color=nc, alpha=0.15,
                       lw=0, hatch="//" if colour else None)
            for v in (r.client_node.lo, r.client_node.hi):
                ax.axhline(v / scale, color=nc, lw=1, ls="--")
            if not colour:
                ax.plot([], [], color=nc, lw=1.5, ls="--",
                        label=f"client ceiling, node full {_range(r.client_node, scale)}"
                              + ("" if r.node_binds else " (not lower: unused)"))
        ax.fill_between(x, x * r.server.lo / scale, x * r.server.hi / scale, color=sc, alpha=0.15, lw=0)
        for v in (r.server.lo, r.server.hi):
            ax.plot(x, x * v / scale, color=sc, lw=1, ls="-" if not colour else ":")
        if not colour:
            ax.plot([], [], color=sc, lw=6, alpha=0.3, label=f"x · server ceiling {_range(r.server, scale)}")
    lo = np.array([r.rate(v, "lo") for v in x]) / scale
    hi = np.array([r.rate(v, "hi") for v in x]) / scale
    mid = np.array([r.rate(v) for v in x]) / scale
    ax.fill_between(x, lo, hi, color=rc, alpha=0.12 if not colour else 0.25, lw=0)
    summary = (f"{label}: client {_range(r.client_bound, scale)}, server {_range(r.server, scale)}, "
               f"ridge {_ridge(r)}")
    ax.plot(x, mid, color=rc, lw=2.5, gid="roofline",
            label=summary if colour else "roofline r(x) = min(client, x · server)")
    if ridge:
        rg = r.ridge
        ax.axvspan(rg.lo, rg.hi, color=colour or style.RIDGE, alpha=0.15, lw=0)
        ax.axvline(rg.centre, color=colour or style.RIDGE, lw=1.5, ls="--", gid="ridge")
        if not colour:
            ax.annotate(f"ridge x* = {_ridge(r)}", xy=(rg.centre, r.client_bound.centre / scale),
                        xytext=(8, 10), textcoords="offset points", color=style.RIDGE,
                        fontsize=9, fontweight="bold")


def _range(c, scale: float) -> str:
    return f"{c.lo / scale:.3g}–{c.hi / scale:.3g}"


def _ridge(r: Roofline) -> str:
    rg = r.ridge
    return (f"{style.ratio_label(rg.centre)}" if abs(rg.hi - rg.lo) < 1e-9
            else f"{rg.lo:.3g}–{rg.hi:.3g}")


def figure(ev: Evaluation, title: str):
    """The roofline of ev.roofline with ev's validation samples."""
    r = ev.roofline
    xs = [c.x for c in ev.checks]
    lo, hi = x_range(r, xs)
    top = max([r.client.hi, *(c.measured for c in ev.checks)])
    scale, unit = units.rate_scale(r.unit, top)
    fig, ax = plt.subplots(figsize=(9, 5.6))
    ticks = style.ratio_axis(ax, lo, hi)
    draw(ax, r, scale, xlim=(ticks[0], ticks[-1]))
    colours = style.server_node_colours(c.server_nodes for c in ev.checks)
    for n, col in colours.items():
        pts = [c for c in ev.checks if c.server_nodes == n]
        ax.scatter([c.x for c in pts], [c.measured / scale for c in pts], s=46, color=col,
                   alpha=0.6, edgecolors="black", linewidths=0.5, zorder=5, gid=f"validation-{n}",
                   label=f"measured, {n} server node{'s' if n != 1 else ''} ({len(pts)})")
    ax.set_ylim(0, top / scale * 1.18)
    ax.set_ylabel(f"rate per client process ({unit})")
    ax.set_title(title, fontsize=11)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8, framealpha=0.9)
    fig.tight_layout()
    return fig
