"""A service's one answer (issue 43), computed once beside the platform's:
its efficiency against the roofline of its metric, quoted only against
what the platform's answer (rooftop.model.answer) stands behind, its own
unit, and where its points came from. rooftop.service.report attaches one
per service to a run's results (RunResults.services), and every command,
figure and export reads that object: `model`, `size --service`, the
report's verdict card, "How many servers" and the service's section, the
figures, the figures of merit.

What is quoted, by the platform's verdict:

- **ridge located** ('ratio', 'range'): the efficiency at every placement,
  and its median on each side of the ridge ("38 % of the RPC roofline
  where servers bind and 61 % where clients bind").
- **ridge not located, ceilings told apart** (their intervals overlap, so
  which one binds near the ridge is not known): the efficiency at every
  placement and their median, never split by side. r(x) = min(client,
  x * server) is a value both ceilings stand behind even where which of
  them gives it is not known.
- **one measurement** (the client and server ceilings are the same
  placement: 2 logical nodes): r(x) is the platform's measured rate only
  at that placement's ratio x0 = client / server ceiling; anywhere else
  it is extrapolated from it, and each ceiling there may be held down by
  the other side (one client, one server), so measured / r(x) would only
  bound the efficiency from above (a service "above" the roofline at x =
  0.25 on such a run is the ceiling's shortfall, not the service's
  strength). The efficiency is quoted at placements at x0 only; the others
  are shown with no efficiency, and the answer says why.
- **cannot tell** (a ceiling without an interval, or only from samples the
  model may not use): no efficiency at all, and why.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rooftop import units
from rooftop.keys import ConfigError
from rooftop.model.answer import Answer
from rooftop.service.efficiency import Placement, ServiceEfficiency, pct
from rooftop.service.points import ServicePoint

#: Two ratios x this close (relative) are one.
SAME_X = 1e-6


def quote(v: float, metric: str) -> str:
    """A service's efficiency in prose, the one way: '55 % of the RPC roofline'."""
    return f"{pct(v)} of the {metric.upper()} roofline"


@dataclass(frozen=True)
class OwnUnit:
    """The service's own unit: what its spec reads (rate.unit) where that
    is not the metric's unit family (a bulk service read in requests/s
    against bw), else the metric's. per_metric: its units per metric base
    unit; note: what one of its operations is then ('1 op = 1 MiB')."""

    base: str
    per_metric: float = 1.0
    note: str = ""

    def axis(self, top: float) -> tuple[float, str]:
        """(divisor in the metric's base units, label) of a figure axis up
        to `top` (in the metric's base units), scaled by rooftop.units."""
        div, label = units.rate_scale(self.base, top * self.per_metric)
        return div / self.per_metric, label

    def to_dict(self) -> dict:
        return {"unit": self.base, "per_metric_unit": self.per_metric, "note": self.note or None}


def own_unit(metric_unit: str, spec: dict | None) -> OwnUnit:
    """The unit a service's spec reads its rate in (imported points have no
    spec: the metric's unit, which their file's unit had to measure)."""
    try:
        base, _ = units.parse((spec or {})["rate"]["unit"])
        if base == metric_unit:
            return OwnUnit(base)
        op = units.parse_size((spec or {}).get("operation"), "operation")
    except (KeyError, TypeError, ConfigError):
        return OwnUnit(metric_unit)
    note = f"1 op = {_size_text(op)}"
    return OwnUnit(base, 1 / op if base == "ops/s" else float(op), note)


def _size_text(n: int) -> str:
    """1048576 -> '1 MiB', 4096 -> '4 KiB', 100 -> '100 bytes'."""
    for label, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f and n % f == 0:
            return f"{n // f} {label}"
    return f"{n} bytes"


@dataclass(frozen=True)
class ServiceAnswer:
    """One service's answer (module docstring): its placements against the
    platform's answer of its metric."""

    efficiency: ServiceEfficiency
    platform: Answer
    unit: OwnUnit
    #: measured | imported | measured and imported
    origin: str = "measured"
    #: What it measures: the spec's description, and the files it was
    #: imported from ('imported from redis-get.csv').
    description: str = ""
    #: The spec it was measured with (None: imported).
    spec: dict | None = field(default=None, compare=False)

    HEAD = ("x", "servers x clients", "samples", "measured", "aggregate", "roofline r(x)", "efficiency", "binds")

    # --- what it is ---------------------------------------------------------
    @property
    def service(self) -> str:
        return self.efficiency.service

    @property
    def metric(self) -> str:
        return self.efficiency.metric

    @property
    def roofline(self):
        return self.platform.roofline

    @property
    def placements(self) -> list[Placement]:
        return self.efficiency.placements

    @property
    def left_out(self) -> list:
        return self.efficiency.left_out

    def left_out_lines(self) -> list[str]:
        return self.efficiency.left_out_lines()

    # --- what is quoted -------------------------------------------------------
    @property
    def split(self) -> bool:
        """Whether which ceiling binds at a placement is known: the
        platform's answer locates the ridge."""
        return self.platform.located

    @property
    def x0(self) -> float | None:
        """The one ratio the ceilings were measured at (one measurement);
        None: they were not one measurement."""
        r = self.roofline
        return r.client.centre / r.server.centre if r.one_measurement and r.server.centre > 0 else None

    def is_quoted(self, p: Placement) -> bool:
        if self.platform.verdict["kind"] == "cannot_tell":
            return False
        x0 = self.x0
        return x0 is None or abs(p.x / x0 - 1) <= SAME_X

    @property
    def quoted(self) -> list[Placement]:
        """The placements whose efficiency is quoted (module docstring)."""
        return [p for p in self.placements if self.is_quoted(p)]

    def median(self, side: str | None = None) -> float | None:
        """Median efficiency over the quoted placements where `side` binds
        (None: all of them); None for a side where which binds is not known."""
        if side is not None and not self.split:
            return None
        effs = [p.efficiency for p in self.quoted if side in (None, p.binding)]
        return statistics.median(effs) if effs else None

    @property
    def not_quoted(self) -> str:
        """Why some or all of the efficiency is not quoted ('' where all of it is)."""
        a, m = self.platform, self.metric.upper()
        if a.verdict["kind"] == "cannot_tell":
            return f"no efficiency against the {m} roofline, whose verdict cannot tell: {a.ridge.reason}"
        if self.split:
            return ""
        unknown = f"which ceiling binds is not known, as the ridge is not located: {a.ridge.reason}"
        x0 = self.x0
        if x0 is None:
            return unknown
        rest = len(self.placements) - len(self.quoted)
        if not rest:
            return unknown
        where = "its" if not self.quoted else f"its {rest} other"
        return (
            f"no efficiency at {where} placement(s): the {m} roofline is the platform's measured rate only at "
            f"x = {units.fmt_num(x0)}, the one placement its ceilings were measured at, and extrapolated from it "
            f"elsewhere; {unknown}"
        )

    def headline(self) -> str:
        """The service's answer in a sentence (module docstring)."""
        s, m = self.service, self.metric.upper()
        if not self.placements:
            lo = self.left_out
            why = f" ({len(lo)} left out: {lo[0][1]})" if lo else ""
            return f"{s} has no usable point on the {m} roofline{why}"
        if not self.quoted:
            return f"{s}: {self.not_quoted}"
        if self.split:
            sv, cl = self.median("server"), self.median("client")
            if sv is not None and cl is not None:
                return f"{s} reaches {quote(sv, m)} where servers bind and {pct(cl)} where clients bind"
            side, v, other = ("server", sv, "client") if sv is not None else ("client", cl, "server")
            assert v is not None
            return f"{s} reaches {quote(v, m)} where {side}s bind (no point where {other}s bind)"
        overall = self.median()
        assert overall is not None
        x0 = self.x0
        at = (
            f"at x = {units.fmt_num(x0)} ({len(self.quoted)} placement(s))"
            if x0 is not None
            else f"over its {len(self.quoted)} placement(s)"
        )
        return f"{s} reaches {quote(overall, m)} {at}; {self.not_quoted}"

    def legend(self) -> str:
        """A figure's legend entry: 'redis-get (3 placements: 38 % where
        servers bind, 61 % where clients bind)'."""
        n = len(self.placements)
        if self.split:
            eff = ", ".join(
                f"{pct(v)} where {side}s bind" for side in ("server", "client") if (v := self.median(side)) is not None
            )
        elif self.quoted:
            v = self.median()
            assert v is not None
            eff = f"{pct(v)} of the roofline" + (f" at x = {units.fmt_num(self.x0)}" if self.x0 is not None else "")
        else:
            eff = "no efficiency quoted"
        return f"{self.service} ({n} placement{'s' if n != 1 else ''}: {eff})"

    def binds(self, p: Placement) -> str:
        return p.binding if self.split else "not known"

    def rows(self) -> list[list[str]]:
        """The table as text: x, server x client processes, samples, measured
        per client, aggregate, roofline r(x), efficiency ('-' where not
        quoted), which ceiling binds ('not known' where the ridge is not located)."""
        f = lambda v: units.fmt_rate(v, self.efficiency.unit)  # noqa: E731
        return [
            [
                units.fmt_num(p.x),
                f"{p.server_procs} x {p.client_procs}",
                str(p.samples),
                f(p.measured),
                f(p.aggregate),
                f(p.predicted),
                pct(p.efficiency) if self.is_quoted(p) else "-",
                self.binds(p),
            ]
            for p in self.placements
        ]

    def card(self) -> dict:
        """The report's verdict card: {name, big, says, lines}."""
        v = self.median()
        samples = sum(p.samples for p in self.placements)
        lines = [
            f"on the {self.metric} roofline ({self.roofline.source}): {self.description or self.origin}",
            f"{len(self.placements)} placement(s), {samples} usable sample(s)"
            + (f"; {len(self.left_out)} left out" if self.left_out else ""),
        ]
        if v is not None:
            lines.insert(0, f"the median efficiency over the {len(self.quoted)} placement(s) it is quoted at")
        if self.unit.note:
            lines.append(f"its rate in {self.unit.base}: {self.unit.note}")
        return {
            "name": self.service,
            "big": quote(v, self.metric) if v is not None else "no efficiency quoted",
            "says": self.headline(),
            "lines": lines,
        }

    def to_dict(self) -> dict:
        e = self.efficiency
        return {
            "service": self.service,
            "metric": self.metric,
            "unit": e.unit,
            "roofline_source": self.roofline.source,
            "origin": self.origin,
            "description": self.description,
            "own_unit": self.unit.to_dict(),
            "headline": self.headline(),
            "efficiency": {
                "server_bound": self.median("server"),
                "client_bound": self.median("client"),
                "overall": self.median(),
                "binding_known": self.split,
                "quoted_placements": len(self.quoted),
                "not_quoted": self.not_quoted or None,
            },
            "placements": [
                dict(
                    p.to_dict(),
                    quoted=self.is_quoted(p),
                    efficiency=p.efficiency if self.is_quoted(p) else None,
                    binding=p.binding if self.split else None,
                )
                for p in self.placements
            ],
            "left_out": e.left_out_dicts(),
        }


def service_answer(
    ev: ServiceEfficiency, platform: Answer, spec: dict | None = None, pts: Sequence[ServicePoint] = ()
) -> ServiceAnswer:
    """A service's answer from its efficiency, the platform's answer of its
    metric, its spec (None: imported) and its points (where they came from)."""
    mine = [p for p in pts if p.service == ev.service and p.metric == ev.metric]
    origins = sorted({p.origin for p in mine}) or ["measured"]
    files = sorted(
        {Path(str(p.detail.get("file"))).name for p in mine if p.origin == "imported" and p.detail.get("file")}
    )
    desc = "; ".join(
        x
        for x in (str((spec or {}).get("description") or ""), "imported from " + ", ".join(files) if files else "")
        if x
    )
    return ServiceAnswer(ev, platform, own_unit(ev.unit, spec), " and ".join(origins), desc, spec)


def answers_of(
    effs: list[ServiceEfficiency], answers: dict[str, Answer], specs: dict[str, dict], pts: list[ServicePoint]
) -> list[ServiceAnswer]:
    """Each service's answer (the platform answers by metric: the run's own,
    RunResults.answers, or a parameters file's)."""
    return [service_answer(e, answers[e.metric], specs.get(e.service), pts) for e in effs]
