"""A service's efficiency against the roofline: per placement (server x
client processes), the median of its usable samples, the roofline's rate
r(x) there, efficiency = measured / r(x), and which ceiling binds at x --
the model's own notion (Roofline.binding: servers where x * server ceiling
is below the client ceiling, clients beyond the ridge). What of it is
quoted, and how, is the service's answer's (rooftop.service.answer: only
what the platform's verdict stands behind).

Samples the model's one rule leaves out (rooftop.model.exclusion: not ok,
measured with --allow-concurrent, nodes sharing cores) are listed with the
reason and given no efficiency.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from rooftop import model
from rooftop.service.points import ServicePoint
from rooftop.units import fmt_pct


@dataclass
class Placement:
    """One placement of a service against the roofline (rates per client
    process unless named aggregate)."""

    server_procs: int
    client_procs: int
    samples: int  # usable samples, medians over them
    measured: float
    aggregate: float
    predicted: float
    predicted_lo: float
    predicted_hi: float
    binding: str  # server | client
    origins: tuple[str, ...] = ()  # its points' (rooftop.service.points.ORIGINS)

    @property
    def x(self) -> float:
        return self.server_procs / self.client_procs

    @property
    def efficiency(self) -> float:
        return self.measured / self.predicted

    def to_dict(self) -> dict:
        return {
            "server_procs": self.server_procs,
            "client_procs": self.client_procs,
            "x": self.x,
            "samples": self.samples,
            "measured": self.measured,
            "aggregate": self.aggregate,
            "roofline": self.predicted,
            "roofline_range": [self.predicted_lo, self.predicted_hi],
            "efficiency": self.efficiency,
            "binding": self.binding,
            "origin": ",".join(self.origins),
        }


@dataclass
class ServiceEfficiency:
    service: str
    metric: str
    unit: str
    roofline: model.Roofline
    placements: list[Placement] = field(default_factory=list)
    #: Points left out (the model's exclusion rule): (point, why).
    left_out: list[tuple[ServicePoint, str]] = field(default_factory=list)

    def left_out_lines(self) -> list[str]:
        return [
            f"{p.service} {p.server_procs} x {p.client_procs} window {p.window} ({p.origin}) left out: {why}"
            for p, why in self.left_out
        ]

    def left_out_dicts(self) -> list[dict]:
        return [
            {
                "key": p.the_key(),
                "server_procs": p.server_procs,
                "client_procs": p.client_procs,
                "window": p.window,
                "status": p.status,
                "why": why,
            }
            for p, why in self.left_out
        ]


def pct(v: float) -> str:
    """0.38 -> '38 %' (rooftop.units.fmt_pct)."""
    return fmt_pct(v)


def as_sample(p: ServicePoint) -> dict:
    """A point in the shape of an engine sample, for the model's exclusion rule."""
    d = p.detail or {}
    return {
        "key": f"service/{p.service}/{p.the_key()}",
        "status": p.status,
        "error": p.error,
        "server_procs": p.server_procs,
        "client_procs": p.client_procs,
        "server_nodes": list(d.get("server_nodes") or []),
        "client_nodes": list(d.get("client_nodes") or []),
        "concurrent": bool(d.get("concurrent")),
    }


def evaluate(roofline: model.Roofline, pts: list[ServicePoint], nodes=None) -> ServiceEfficiency:
    """One service's points (all of one service and metric) against a
    roofline of that metric. nodes: the run's nodes (core sharing)."""
    if not pts:
        raise ValueError("no points")
    service, metric = pts[0].service, pts[0].metric
    ev = ServiceEfficiency(service, metric, roofline.unit, roofline)
    groups: dict[tuple[int, int], list[tuple[float, ServicePoint]]] = {}  # (aggregate, point)
    for p in pts:
        why = "" if p.aggregate is not None or p.status != "ok" else "ok but no rate"
        why = why or model.exclusion(as_sample(p), nodes)
        if why or p.aggregate is None:  # one usable has a rate (exclusion: status ok)
            ev.left_out.append((p, why))
        else:
            groups.setdefault((p.server_procs, p.client_procs), []).append((p.aggregate, p))
    for (sp, cp), group in groups.items():
        x = sp / cp
        ev.placements.append(
            Placement(
                sp,
                cp,
                len(group),
                statistics.median(a / cp for a, _ in group),
                statistics.median(a for a, _ in group),
                roofline.rate(x),
                roofline.rate(x, "lo"),
                roofline.rate(x, "hi"),
                roofline.binding(x),
                tuple(sorted({p.origin for _, p in group})),
            )
        )
    ev.placements.sort(key=lambda p: (p.x, p.server_procs))
    return ev


def of_points(rooflines: dict[str, model.Roofline], pts: list[ServicePoint], nodes=None):
    """Every service of pts against the roofline of its metric: (list of
    ServiceEfficiency, list of lines for services whose metric has none)."""
    by: dict[tuple[str, str], list[ServicePoint]] = {}
    for p in pts:
        by.setdefault((p.service, p.metric), []).append(p)
    out, missing = [], []
    for (service, metric), group in sorted(by.items()):
        r = rooflines.get(metric)
        if r is None:
            missing.append(
                f"{service}: {len(group)} point(s) compared with {metric}, which has no roofline here "
                f"(rooftop collect --metrics {metric})"
            )
            continue
        out.append(evaluate(r, group, nodes))
    return out, missing


def nearest_efficiency(placements: list[Placement], x: float) -> float | None:
    """A service's efficiency at ratio x from its placements (those whose
    efficiency its answer quotes: ServiceAnswer.quoted): interpolated (in
    log x) between the two nearest either side, the end one's beyond them;
    None without placements."""
    pts = sorted((p.x, p.efficiency) for p in placements)
    if not pts:
        return None
    # Several placements at one x: their median.
    xs: dict[float, list[float]] = {}
    for px, e in pts:
        xs.setdefault(px, []).append(e)
    line = [(px, statistics.median(es)) for px, es in sorted(xs.items())]
    if x <= line[0][0]:
        return line[0][1]
    if x >= line[-1][0]:
        return line[-1][1]
    for (x0, e0), (x1, e1) in zip(line, line[1:]):
        if x0 <= x <= x1:
            t = (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0))
            return e0 + t * (e1 - e0)
    return line[-1][1]
