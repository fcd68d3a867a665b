"""The roofline figure (Carns et al., CUG 2025, Figures 13-14): per-process rate against
the server/client ratio x on a log scale, client and server ceilings as
min/max lines with a shaded band, the roofline, the ridge, and validation
samples coloured by the number of server nodes.

The y axis is log by default (style.pick_yscale: every ceiling and every
point inside the frame, the rising x·server a straight line well past the
ridge: frame_values);
yscale="linear" is the CUG 2025 roofline paper's style (the server ceiling curves and leaves
the frame past the ridge)."""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import numpy as np

from rooftop import units
from rooftop.model.answer import answer
from rooftop.model.evaluation import Evaluation
from rooftop.model.roofline import Roofline
from rooftop.plots import style


def x_range(roofline: Roofline, xs=()) -> tuple[float, float]:
    pts = [roofline.ridge.lo, roofline.ridge.hi, *xs]
    return min(pts), max(pts)


#: The rising server ceiling is kept in the frame up to this multiple of
#: the client ceiling: well past the ridge (where it no longer binds) on a
#: log axis, without spending the frame on decades where nothing binds.
RISE = 3.0


def frame_values(r: Roofline, xlim: tuple[float, float], scale: float = 1.0) -> list[float]:
    """What must be inside the frame of r over the axis' x limits: both
    client ceilings' ends, and the server band from the left edge until it
    is RISE times the client ceiling (or the right edge)."""
    rise = min(xlim[1] * r.server.hi, RISE * r.client_bound.hi)
    vals = [r.client.lo, r.client.hi, xlim[0] * r.server.lo, rise]
    if r.client_node is not None:
        vals += [r.client_node.lo, r.client_node.hi]
    return [v / scale for v in vals]


def draw(
    ax,
    r: Roofline,
    scale: float,
    show: tuple[float, str],
    colour: str | None = None,
    label: str | None = None,
    xlim: tuple[float, float] = (1 / 16, 16),
    bands: bool = True,
    ridge: bool = True,
    measured: tuple[float, float] | None = None,
) -> None:
    """Draws one roofline on ax: ceilings (min/max lines, shaded), the
    roofline itself and the ridge. y = rate / scale; show: (divisor, unit
    label) of the legends' values. colour/label: one colour per roofline
    when several share a figure (compare). measured: the span of x the run
    measured (the roofline solid over it, dashed beyond, the span marked on
    the x axis); None: the ceilings are not a run's (all solid)."""
    x = np.geomspace(xlim[0] / 1.3, xlim[1] * 1.3, 400)
    if bands:
        _bands(ax, r, x, scale, show, colour)
    rc = colour or style.ROOF
    lo = np.array([r.rate(v, "lo") for v in x]) / scale
    hi = np.array([r.rate(v, "hi") for v in x]) / scale
    mid = np.array([r.rate(v) for v in x]) / scale
    ax.fill_between(x, lo, hi, color=rc, alpha=0.12 if not colour else 0.25, lw=0)
    g = answer(r).ridge  # the one answer: a ridge only where the verdict locates it
    summary = f"{label}: {provenance_text(r, show)}, " + (f"ridge {_ridge(r)}" if g.located else "ridge not located")
    name = summary if colour else "roofline r(x) = min(client, x · server)"
    if measured is None:  # published ceilings: no span of x is known
        ax.plot(x, mid, color=rc, lw=2.5, gid="roofline", label=name)
    else:
        _measured_and_extrapolated(ax, x, mid, measured, rc, name)
    if ridge and not g.located and not colour:
        ax.text(
            0.02,
            0.97,
            "\n".join(textwrap.wrap(f"no ridge drawn: {g.reason}", 60)),
            transform=ax.transAxes,
            va="top",
            fontsize=8.5,
            color=style.RIDGE,
            gid="ridge-not-located",
            bbox={"boxstyle": "round", "fc": "white", "ec": style.RIDGE, "alpha": 0.9},
        )
    if ridge and g.located:
        rg = r.ridge
        ax.axvspan(rg.lo, rg.hi, color=colour or style.RIDGE, alpha=0.15, lw=0)
        ax.axvline(rg.centre, color=colour or style.RIDGE, lw=1.5, ls="--", gid="ridge")
        if not colour:
            ax.annotate(
                f"ridge x* = {_ridge(r)}",
                xy=(rg.centre, r.client_bound.centre / scale),
                xytext=(8, 10),
                textcoords="offset points",
                color=style.RIDGE,
                fontsize=9,
                fontweight="bold",
            )


def _measured_and_extrapolated(ax, x, y, span: tuple[float, float], colour: str, name: str) -> None:
    """The roofline solid over the measured span of x (gid roofline), dashed
    beyond it (gid roofline-extrapolated), and the span as a bar on the x axis
    (gid measured-x)."""
    a, b = span
    inside = (x >= a / 1.0001) & (x <= b * 1.0001)
    what = f"x = {style.x_text(a)}" + ("" if abs(b - a) < 1e-9 * b else f" to {style.x_text(b)}")
    ax.plot(np.where(inside, x, np.nan), y, color=colour, lw=2.5, gid="roofline", label=f"{name}, measured (solid)")
    for side in (x <= a * 1.0001, x >= b / 1.0001):
        ax.plot(np.where(side, x, np.nan), y, color=colour, lw=2.5, ls=(0, (4, 3)), gid="roofline-extrapolated")
    ax.plot([], [], color=colour, lw=2.5, ls=(0, (4, 3)), label="roofline, extrapolated (dashed)")
    # The measured span, widened a little so that one placement shows.
    ax.axvspan(a / 1.05, b * 1.05, ymin=0, ymax=0.02, color=colour, lw=0, gid="measured-x", label=f"measured: {what}")


def _bands(ax, r: Roofline, x, scale: float, show, colour: str | None) -> None:
    """The client ceilings (flat) and x times the server ceiling (rising),
    each a min/max pair of lines over a shaded band; legend entries when
    the figure has one roofline (colour None)."""
    cc, sc = (colour or style.CLIENT), (colour or style.SERVER)
    ax.axhspan(r.client.lo / scale, r.client.hi / scale, color=cc, alpha=0.15, lw=0)
    for v in (r.client.lo, r.client.hi):
        ax.axhline(v / scale, color=cc, lw=1, ls="-" if not colour else ":")
    if not colour:
        ax.plot([], [], color=cc, lw=6, alpha=0.3, label=f"client ceiling {_range(r.client, show)}")
    if r.client_node is not None:
        nc = colour or style.CLIENT_NODE
        ax.axhspan(
            r.client_node.lo / scale,
            r.client_node.hi / scale,
            color=nc,
            alpha=0.15,
            lw=0,
            hatch="//" if colour else None,
        )
        for v in (r.client_node.lo, r.client_node.hi):
            ax.axhline(v / scale, color=nc, lw=1, ls="--")
        if not colour:
            ax.plot(
                [],
                [],
                color=nc,
                lw=1.5,
                ls="--",
                label=f"client ceiling, node full {_range(r.client_node, show)}"
                + ("" if r.node_binds else " (not lower: unused)"),
            )
    ax.fill_between(x, x * r.server.lo / scale, x * r.server.hi / scale, color=sc, alpha=0.15, lw=0)
    for v in (r.server.lo, r.server.hi):
        ax.plot(x, x * v / scale, color=sc, lw=1, ls="-" if not colour else ":")
    if not colour:
        ax.plot([], [], color=sc, lw=6, alpha=0.3, label=f"x · server ceiling {_range(r.server, show)}")


def provenance_text(r: Roofline, show: tuple[float, str]) -> str:
    """'client 1.62 GiB/s (node full, derived; alone 20.2–20.5 GiB/s,
    published), server 1.7–1.8 GiB/s (published), per process': each ceiling
    the model uses and where it comes from."""
    return f"client {client_text(r, show)}, server {_range(r.server, show)} ({r.provenance('server')}), per process"


def client_text(r: Roofline, show: tuple[float, str]) -> str:
    """The client ceiling the model uses, where it comes from, and the lone
    client's when the node-full one is lower."""
    alone = f"{_range(r.client, show)} ({r.provenance('client')})"
    if not r.node_binds or r.client_node is None:
        return alone
    return (
        f"{_range(r.client_node, show)} (node full, {r.provenance('client_node')}; alone "
        f"{_range(r.client, show)}, {r.provenance('client')})"
    )


def _range(c, show: tuple[float, str]) -> str:
    """'148–173 K ops/s'; one value when both ends read the same. In the
    axis' scale (show: divisor, label) where it reads there from 0.1 to
    999, else in the scale its value reaches ('1.04 M ops/s' beside a K
    ops/s axis, never '1,040 K ops/s')."""
    scale, label = show
    if not 0.1 <= c.hi / scale < 999.5:
        label, scale = units.scale_for(c.hi, units.PARAM_UNITS[label][0])
    return units.fmt_span(c.lo, c.hi, label, scale)


def _ridge(r: Roofline) -> str:
    rg = r.ridge
    if abs(rg.hi - rg.lo) < 1e-9:
        return style.ratio_label(rg.centre)
    return units.fmt_span(rg.lo, rg.hi)


#: A service's points (rooftop.service): marker and colour, one per service.
SERVICE_MARKERS = ("D", "^", "s", "P", "v", "*")
SERVICE_COLOURS = ("#c51b7d", "#4d9221", "#542788", "#b35806", "#01665e", "#8e0152")


def figure(ev: Evaluation, title: str, yscale: str = "auto", loaded=(), services=(), span=None):
    """The roofline of ev.roofline with ev's validation samples; yscale:
    auto, log or linear (style.pick_yscale). loaded: (label, Roofline) of
    the same stages measured under other conditions (RunResults.loaded:
    beside background loads, rooftop interfere), each drawn as a second,
    lower band in a colour of its own. services: the answers of the
    services on this metric (rooftop.service.answer.ServiceAnswer: its
    placements, its legend), each service's placements (median per client)
    in a marker and colour of its own."""
    r = ev.roofline
    svc = [(p.x, p.measured) for s in services for p in s.placements]
    xs = [c.x for c in ev.checks] + [c.x for c, _ in ev.excluded] + [x for x, _ in svc]
    lo, hi = x_range(r, xs)
    measured = [c.measured for c in ev.checks] + [m for _, m in svc]
    top = max([r.client.hi, *measured, *(c.measured for c, _ in ev.excluded)])
    scale, unit = units.rate_scale(r.unit, top)
    fig, ax = plt.subplots(figsize=(9, 5.6))
    ticks = style.ratio_axis(ax, lo, hi)
    draw(ax, r, scale, (scale, unit), xlim=(ticks[0], ticks[-1]), measured=span)
    for (name, lr), colour in zip(loaded, style.LOADED_COLOURS):
        draw(
            ax,
            lr,
            scale,
            (scale, unit),
            colour=colour,
            label=f"under load, {name}",
            xlim=(ticks[0], ticks[-1]),
            ridge=False,
        )
    colours = style.server_node_colours(c.server_nodes for c in ev.checks)
    for n, col in colours.items():
        pts = [c for c in ev.checks if c.server_nodes == n]
        ax.scatter(
            [c.x for c in pts],
            [c.measured / scale for c in pts],
            s=46,
            color=col,
            alpha=0.6,
            edgecolors="black",
            linewidths=0.5,
            zorder=5,
            gid=f"validation-{n}",
            label=f"measured, {n} server node{'s' if n != 1 else ''} ({len(pts)})",
        )
    if ev.excluded:  # shown, marked; no error (rooftop.model.exclusion)
        ax.scatter(
            [c.x for c, _ in ev.excluded],
            [c.measured / scale for c, _ in ev.excluded],
            s=46,
            marker="x",
            color="grey",
            zorder=5,
            gid="validation-excluded",
            label=f"not used ({len(ev.excluded)}): {ev.excluded[0][1][:60]}",
        )
        measured = measured + [c.measured for c, _ in ev.excluded]
    for i, s in enumerate(services):
        _service(
            ax,
            s.service,
            [(p.x, p.measured) for p in s.placements],
            s.legend(),
            scale,
            SERVICE_MARKERS[i % len(SERVICE_MARKERS)],
            SERVICE_COLOURS[i % len(SERVICE_COLOURS)],
        )
    values = frame_values(r, ax.get_xlim(), scale) + [v / scale for v in measured]
    values += [v for _, lr in loaded for v in frame_values(lr, ax.get_xlim(), scale)]
    style.y_axis(ax, values, top / scale, yscale, f"rate per client process ({unit})")
    ax.set_title(title, fontsize=11)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8, framealpha=0.9)
    fig.tight_layout()
    return fig


def _service(ax, name: str, pts, legend: str, scale: float, marker: str, colour: str) -> None:
    """One service's placements (x, rate per client process in the base
    unit; gid service-NAME), its answer's legend entry (its efficiency as
    the answer quotes it)."""
    ax.scatter(
        [x for x, _ in pts],
        [v / scale for _, v in pts],
        s=70,
        marker=marker,
        color=colour,
        edgecolors="white",
        linewidths=0.8,
        zorder=6,
        gid=f"service-{name}",
        label=legend,
    )


def service_figure(
    r: Roofline,
    title: str,
    name: str,
    pts,
    legend: str,
    unit: tuple[float, str],
    ylabel: str,
    yscale: str = "auto",
    span: tuple[float, float] | None = None,
):
    """A service's own figure: its placements pts ((x, rate per client
    process in r's base unit, its efficiency as its answer quotes it, or
    None where it quotes none: drawn hollow)) over the platform's roofline
    r, the y axis in the service's own unit (unit: (divisor of r's base
    unit, label); ylabel names the service), under its own title, without
    the engine's validation samples (the platform's figure shows them).
    span: the x the run measured (the roofline solid over it)."""
    lo, hi = x_range(r, [x for x, _, _ in pts])
    scale, label = unit
    top = max([r.client.hi, *(v for _, v, _ in pts)])
    fig, ax = plt.subplots(figsize=(9, 5.6))
    ticks = style.ratio_axis(ax, lo, hi)
    draw(ax, r, scale, (scale, label), xlim=(ticks[0], ticks[-1]), measured=span)
    colour = SERVICE_COLOURS[0]
    quoted = [(x, v, e) for x, v, e in pts if e is not None]
    _service(ax, name, [(x, v) for x, v, _ in quoted], legend, scale, SERVICE_MARKERS[0], colour)
    for x, v, e in quoted:
        ax.annotate(e, xy=(x, v / scale), xytext=(7, 5), textcoords="offset points", fontsize=8.5, color=colour)
    rest = [(x, v) for x, v, e in pts if e is None]
    if rest:
        ax.scatter(
            [x for x, _ in rest],
            [v / scale for _, v in rest],
            s=70,
            marker=SERVICE_MARKERS[0],
            facecolors="none",
            edgecolors=colour,
            linewidths=1.2,
            zorder=6,
            gid=f"service-{name}-not-quoted",
            label=f"{name}, no efficiency quoted here ({len(rest)})",
        )
    values = frame_values(r, ax.get_xlim(), scale) + [v / scale for _, v, _ in pts]
    style.y_axis(ax, values, top / scale, yscale, ylabel)
    ax.set_title(title, fontsize=11)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8, framealpha=0.9)
    fig.tight_layout()
    return fig
