"""How many servers: from a roofline (a run's or a parameters file's), the
aggregate rate C client processes reach with S server processes,

    A(S) = min(C * client, S * server)          (C * r(S / C))

times, for a service, its measured efficiency at that ratio (interpolated
between the nearest measured ratios, rooftop.service.efficiency).

With a target rate T: the smallest S with A(S) >= T. Without one: the knee,
the smallest S from which the clients bind (S * server >= C * client), and
A(S) for a few S around it.

The ceilings' intervals are carried through: each end of the answer uses
the ends of the ceilings' intervals (Ceiling.interval: the 95 % interval of
the mean of a run's samples; a published range is its own interval), so an
answer reads "12 to 14 servers; 13 at the median". When the intervals
make the answer indistinguishable -- the target is reachable at one end
and not at the other, or the model itself cannot tell the ceilings apart
(Roofline.verdict) -- the answer says so instead of recommending.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from rooftop import model
from rooftop.model.answer import answer
from rooftop.service.answer import ServiceAnswer, quote
from rooftop.service.efficiency import nearest_efficiency, pct
from rooftop.units import fmt_num, fmt_range, fmt_rate

#: Each end of an answer: fewest servers (the ceilings' upper ends), the
#: median, most servers (lower ends).
ENDS = ("hi", "centre", "lo")
#: A search for S with a service's efficiency stops here.
MAX_SERVERS = 1_000_000


def _ends(c: model.Ceiling) -> dict[str, float]:
    lo, hi = c.interval if c.interval is not None else (c.lo, c.hi)
    return {"lo": lo, "centre": c.centre, "hi": hi}


@dataclass
class Sizing:
    """One answer (kind: servers | knee | unreachable | indistinguishable |
    cannot_tell) and its table of S."""

    metric: str
    unit: str
    source: str
    clients: int
    target: float | None
    kind: str
    text: str
    #: Servers at each end: fewest (ceilings' upper ends), median, most (None: not reachable).
    servers: dict[str, int | None] = field(default_factory=dict)
    rows: list[dict] = field(default_factory=list)
    service: str | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "metric": self.metric,
            "unit": self.unit,
            "source": self.source,
            "clients": self.clients,
            "target": self.target,
            "service": self.service,
            "kind": self.kind,
            "text": self.text,
            "servers": {
                "fewest": self.servers.get("hi"),
                "median": self.servers.get("centre"),
                "most": self.servers.get("lo"),
            },
            "rows": self.rows,
            "notes": self.notes,
        }


class Sizer:
    """A(S) for C clients on a roofline, optionally scaled by a service's
    efficiency where its answer quotes one (ServiceAnswer.quoted)."""

    def __init__(self, r: model.Roofline, clients: int, service: ServiceAnswer | None = None):
        if clients < 1:
            raise model.ModelError(f"--clients: {clients} is less than 1")
        self.r, self.c, self.service = r, clients, service
        self.client, self.server = _ends(r.client_bound), _ends(r.server)

    def eff(self, s: int) -> float:
        if self.service is None:
            return 1.0
        e = nearest_efficiency(self.service.quoted, s / self.c)
        return 1.0 if e is None else e

    def aggregate(self, s: int, end: str = "centre") -> float:
        return min(self.c * self.client[end], s * self.server[end]) * self.eff(s)

    def binding(self, s: int, end: str = "centre") -> str:
        return "server" if s * self.server[end] < self.c * self.client[end] else "client"

    def servers_for(self, target: float, end: str) -> int | None:
        """The smallest S reaching target at one end of the intervals (None: none does)."""
        srv, cli = self.server[end], self.client[end]
        if srv <= 0:
            return None
        if self.service is None:
            if target > self.c * cli * (1 + 1e-12):
                return None
            return max(1, math.ceil(target / srv - 1e-9))
        # With efficiency the rate need not grow with S: search up to the
        # last measured ratio or the ridge (beyond both nothing changes).
        last = max([p.x for p in self.service.quoted] + [cli / srv, target / srv / self.c])
        for s in range(1, min(MAX_SERVERS, math.ceil(last * self.c) + 2) + 1):
            if self.aggregate(s, end) >= target * (1 - 1e-12):
                return s
        return None

    def knee(self, end: str) -> int | None:
        """The smallest S from which the clients bind at one end: S * server >= C * client."""
        lo_end = {"hi": "lo", "centre": "centre", "lo": "hi"}[end]  # fewest servers: fast servers, slow clients
        srv, cli = self.server[end], self.client[lo_end]
        if srv <= 0:
            return None
        return max(1, math.ceil(self.c * cli / srv - 1e-9))

    def row(self, s: int) -> dict:
        lo, mid, hi = (self.aggregate(s, e) for e in ("lo", "centre", "hi"))
        d = {
            "servers": s,
            "x": s / self.c,
            "aggregate": mid,
            "aggregate_range": [lo, hi],
            "per_client": mid / self.c,
            "binding": self.binding(s),
        }
        if self.service is not None:
            d["efficiency"] = self.eff(s)
        return d


def size(r: model.Roofline, clients: int, target: float | None = None, service: ServiceAnswer | None = None) -> Sizing:
    """The answer for C clients (module docstring); with a service, its
    answer's quoted efficiencies scale each rate, and a service whose
    answer quotes none cannot be sized (its answer says why)."""
    z = Sizer(r, clients, service)
    out = Sizing(r.metric, r.unit, r.source, clients, target, "", "", service=service.service if service else None)
    if service is not None and not service.quoted:
        out.kind = "cannot_tell"
        out.text = f"cannot tell how many servers {clients} {service.service} client processes need: " + (
            service.not_quoted or service.headline()
        )
        return out
    if service is not None:
        out.notes.append(
            f"{service.service}'s measured efficiency scales each rate (at the nearest measured ratios: "
            + ", ".join(f"x = {fmt_num(p.x)}: {pct(p.efficiency)}" for p in service.quoted[:6])
            + ")"
        )
    a = service.platform if service is not None else model_answer(r)
    who = f"{clients} {service.service} client processes" if service else _procs(clients, "client")
    if target is not None:
        _for_target(out, z, target, who)
    else:
        _knee(out, z, who)
    if not a.located and (out.kind in ("servers", "knee") or r.one_measurement):
        _unlocated(out, a, z, who)
    return out


def _for_target(out: Sizing, z: Sizer, target: float, who: str) -> None:
    """The servers that reach the target, at each end of the intervals."""
    r = z.r
    f = lambda v: fmt_rate(v, r.unit)  # noqa: E731
    if not target > 0:
        raise model.ModelError(f"--target: {target} is not a positive rate")
    ends = {e: z.servers_for(target, e) for e in ENDS}
    out.servers = ends
    few, mid, many = ends["hi"], ends["centre"], ends["lo"]
    top = [z.aggregate(max(1, math.ceil(z.c * 1e3)), e) for e in ("lo", "hi")]
    shown = sorted({s for s in (few and few - 1, few, mid, many) if s})
    out.rows = [z.row(s) for s in shown]
    reach = f"{who} reach {f(target)}"
    if few is None:
        out.kind = "unreachable"
        out.text = (
            f"{who} cannot reach {f(target)}: at most {fmt_range(top[0], top[1], r.unit)} "
            "however many servers (the clients bind)"
        )
    elif many is None:
        out.kind = "indistinguishable"
        out.servers = {"hi": few, "centre": None, "lo": None}  # at least `few`; no median where it may not be reached
        out.text = (
            f"not distinguishable: whether {reach} is within the ceilings' intervals (at most "
            f"{fmt_range(top[0], top[1], r.unit)}); it takes at least {few} server process(es)"
        )
    else:
        out.kind = "servers"
        out.text = f"{reach} with {_span(few, many)} server processes" + (
            "" if few == many else f"; {mid} at the median"
        )


def _knee(out: Sizing, z: Sizer, who: str) -> None:
    """Without a target: where the clients bind (the knee), at each end."""
    r = z.r
    ends = {e: z.knee(e) for e in ENDS}
    out.servers = ends
    few, mid, many = ends["hi"], ends["centre"], ends["lo"]
    out.kind = "knee"
    if few is None or many is None or mid is None:
        out.kind = "cannot_tell"
        out.servers = {}
        out.text = "cannot tell: a server ceiling's interval reaches 0"
    else:
        shown = sorted({max(1, mid // 4), max(1, mid // 2), few, mid, many, many * 2})
        out.rows = [z.row(s) for s in shown]
        lo, hi = z.row(many)["aggregate_range"]
        out.text = (
            f"{who} bind (the knee) from {_span(few, many)} server processes"
            + ("" if few == many else f"; {mid} at the median")
            + f"; there they reach {fmt_range(lo, hi, r.unit)}"
            " and more servers add nothing"
        )


def model_answer(r: model.Roofline):
    return answer(r)


def _unlocated(out: Sizing, a, z: Sizer, who: str) -> None:
    """What can honestly be said where the verdict does not locate the
    ridge: never one server count as if it were located.

    - one measurement (the client and server ceilings are one placement,
      1 server per client): each server gave at least the measured rate, so
      with a target only an upper bound holds ("at most N servers"), and
      without one only what the measured 1:1 placement gives;
    - ceilings told apart but not their ratio: the fewest and most servers
      the intervals allow, no median ("between 9 and 12");
    - cannot tell: no count at all, and why."""
    r, f = a.roofline, (lambda v: fmt_rate(v, a.unit))
    few, many = out.servers.get("hi"), out.servers.get("lo")
    reason = a.ridge.reason
    if a.verdict["kind"] == "cannot_tell":
        out.kind, out.servers, out.rows = "cannot_tell", {}, []
        out.text = f"cannot tell how many servers: {reason}"
        return
    out.kind = "indistinguishable"
    if r.one_measurement:
        # Each server's rate at the one placement measured, times the
        # service's efficiency there (its answer quotes no other).
        rate, out.rows = z.client["lo"] * z.eff(z.c), []  # a table of S would be the model the run cannot locate
        if out.target is not None and many is None:
            out.servers = {}
            out.text = (
                f"whether {who} reach {f(out.target)}, this run cannot tell: at the one placement measured "
                f"(1 server per client) they reach at least {f(z.c * rate)} in all: {reason}"
            )
        elif out.target is not None:
            out.servers = {"lo": many}
            out.text = (
                f"at most {many} server processes: each gave at least {f(rate)} at the one placement measured "
                f"(1 server per client), so {many} reach {f(out.target)}; fewer may do, which this run cannot "
                f"tell: {reason}"
            )
        else:
            out.servers = {}
            out.text = (
                f"not sized: with 1 server process per client (the one placement measured), {who} reach "
                f"at least {f(z.c * rate)} in all; whether fewer servers suffice or more would help, this run "
                f"cannot tell: {reason}"
            )
        return
    out.servers = {"hi": few, "lo": many}
    span = f"between {few} and {many}" if few != many else f"{few}"
    if out.target is not None:
        out.text = (
            f"{span} server processes reach {f(out.target)}; which, the ceilings' intervals cannot tell: {reason}"
        )
    else:
        out.text = (
            f"{who} bind from {span} server processes, and more than {many} add nothing; where between, "
            f"the ceilings' intervals cannot tell: {reason}"
        )


def _procs(n: int, side: str) -> str:
    """'1 server process', '16 client processes'."""
    return f"{n} {side} process" + ("" if n == 1 else "es")


def _span(a: int, b: int) -> str:
    return str(a) if a == b else f"{a} to {b}"


def line_name(s: Sizing) -> str:
    """What a sizing answers for: 'rpc', or 'redis-get on rpc'."""
    return f"{s.service} on {s.metric}" if s.service else s.metric


def lines(s: Sizing) -> list[str]:
    """The answer and its table as text lines."""
    f = lambda v: fmt_rate(v, s.unit)  # noqa: E731
    out = [f"{line_name(s)} ({s.source}): {s.text}"]
    for row in s.rows:
        lo, hi = row["aggregate_range"]
        eff = f", {quote(row['efficiency'], s.metric)}" if "efficiency" in row else ""
        out.append(
            f"  {row['servers']:>6} servers: {fmt_range(lo, hi, s.unit)} (median {f(row['aggregate'])}), "
            f"{row['binding']}s bind{eff}"
        )
    out += [f"  note: {n}" for n in s.notes]
    return out
