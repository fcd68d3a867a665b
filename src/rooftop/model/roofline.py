"""The roofline r(x) = min(client, x * server) with its client-node ceiling, its
ridge and the verdict on the recommended ratio (rooftop.model)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from rooftop.model.ceilings import CONFIDENCE, Ceiling, practical, ratio_text, span_text

#: What to do when the client and server ceilings are one measurement (the
#: end of that verdict's text; the report says it once, apart from the verdict).
ONE_MEASUREMENT_TODO = "collect on 3 or more nodes"


@dataclass
class Roofline:
    metric: str
    unit: str  # base unit: ops/s or bytes/s
    client: Ceiling
    server: Ceiling
    source: str = ""
    #: Node-saturated client ceiling (per client process, node full), if measured.
    client_node: Ceiling | None = None
    #: Why a measured client-node ceiling is not used ("" when it is, or none).
    client_node_rejected: str = ""
    #: Stages measured once (one placement stood for each), e.g.
    #: [["server_peak", "client_peak", "client_node"]].
    measured_once: list[list[str]] = field(default_factory=list)
    #: Samples not used for ceilings: (stage, key, why: exclusion(), e.g.
    #: nodes sharing cores).
    core_shared: list[tuple[str, str, str]] = field(default_factory=list)
    #: Ceilings ("client", "server") with no samples but excluded ones:
    #: drawn from those, and the verdict cannot tell.
    core_shared_only: list[str] = field(default_factory=list)
    #: Where the ceilings come from: "measured" (a run's samples) or
    #: "published" (a parameters file); ceilings named in `derived` ("client",
    #: "server", "client_node") were worked out by the file's author instead.
    origin: str = "measured"
    derived: tuple[str, ...] = ()

    def provenance(self, ceiling: str) -> str:
        """'measured', 'published' or 'derived', for "client", "server" or "client_node"."""
        return "derived" if ceiling in self.derived else self.origin

    @property
    def client_bound(self) -> Ceiling:
        """The client ceiling the model uses: the lower of the isolated and
        the node-saturated one, bound by bound."""
        c, n = self.client, self.client_node
        if n is None:
            return c
        ci = None
        if c.interval and n.interval:
            ci = (min(c.interval[0], n.interval[0]), min(c.interval[1], n.interval[1]))
        return Ceiling(
            min(c.lo, n.lo),
            min(c.hi, n.hi),
            min(c.centre, n.centre),
            ci,
            max(c.n, n.n, 1) if ci else c.n,
            c.keys | n.keys,
        )

    @property
    def node_binds(self) -> bool:
        """Whether the client-node ceiling is lower than the isolated one."""
        return self.client_node is not None and self.client_node.centre < self.client.centre

    def without_client_node(self) -> Roofline:
        return Roofline(
            self.metric,
            self.unit,
            self.client,
            self.server,
            self.source,
            measured_once=self.measured_once,
            core_shared=self.core_shared,
            core_shared_only=self.core_shared_only,
            origin=self.origin,
            derived=tuple(d for d in self.derived if d != "client_node"),
        )

    def rate(self, x: float, bound: str = "centre") -> float:
        c, s = getattr(self.client_bound, bound), getattr(self.server, bound)
        return min(c, x * s)

    @property
    def ridge(self) -> Ceiling:
        """x* where x * server = client, as a range."""
        c = self.client_bound
        return Ceiling(c.lo / self.server.hi, c.hi / self.server.lo, c.centre / self.server.centre)

    @property
    def ridge_interval(self) -> tuple[float, float] | None:
        """The ridge's 95 % interval from the ceilings' intervals (each end
        the extreme ratio of the two; the upper end may be infinite)."""
        c, s = self.client_bound.interval, self.server.interval
        if c is None or s is None:
            return None
        return c[0] / s[1], (c[1] / s[0] if s[0] > 0 else math.inf)

    @property
    def one_measurement(self) -> bool:
        """Client and server ceilings come from the very same samples."""
        return bool(self.server.keys) and self.client.keys == self.server.keys

    def binding(self, x: float) -> str:
        return "server" if x * self.server.centre < self.client_bound.centre else "client"

    def recommended(self) -> dict:
        """The smallest ratio whose predicted rate reaches the client ceiling
        (the ridge, with its range), and the smallest practical ratio, '1
        server per k clients' or 'm servers per client', whose predicted
        rate is within 5 % of it (a ridge of 1.002 is 1:1, not 2:1)."""
        r = self.ridge
        ratio = practical(r.centre)
        assert ratio is not None, f"no practical ratio for a ridge of {r.centre}"
        servers, clients = ratio
        return {
            "x": r.centre,
            "x_range": [r.lo, r.hi],
            "servers": servers,
            "clients": clients,
            "reaches": self.rate(servers / clients) / self.client_bound.centre,
        }

    def verdict(self) -> dict:
        """What the model can tell about the ratio to deploy. kind: 'ratio'
        (one practical ratio over the ridge's interval), 'range' (several,
        the ceilings distinguishable: a best estimate and its span),
        'indistinguishable' (the client and server intervals overlap and
        span several ratios, or are one measurement) or 'cannot_tell' (a
        ceiling without an interval, or only from samples exclusion() names)."""
        ri = self.ridge_interval
        ends = (practical(ri[0]), practical(ri[1])) if ri else (None, None)
        rec = self.recommended()
        best = (rec["servers"], rec["clients"])
        doc = {
            "confidence": CONFIDENCE,
            "ridge_interval": finite_pair(ri),
            "range": [list(e) if e else None for e in ends] if ri else None,
            "ratio": None,
        }
        why = self._cannot_tell(ri)
        if why:
            return dict(doc, kind="cannot_tell", text=f"cannot tell: {why}")
        span = span_text(*ends)
        noise = "within noise" if self.server.n else "within the ranges given"
        if self.one_measurement:
            # No span of ratios either: one placement says nothing of any other.
            text = (
                "the ceilings are not distinguishable here: the client and server ceilings are "
                f"one measurement (the same placement), which cannot locate the ridge; {ONE_MEASUREMENT_TODO}"
            )
            return dict(doc, kind="indistinguishable", text=text)
        if ends[0] is not None and ends[0] == ends[1]:  # (both None: intervals reaching 0 and infinity)
            return dict(doc, kind="ratio", ratio=list(ends[0]), text=f"{ratio_text(ends[0])} (servers:clients)")
        assert ri is not None  # else _cannot_tell named the ceiling without an interval
        if ri[0] <= 1 <= ri[1]:
            return dict(
                doc,
                kind="indistinguishable",
                text=f"the ceilings are not distinguishable here: {span} (servers:clients) is {noise}",
            )
        best = _clip(best, *ends)
        return dict(
            doc, kind="range", ratio=list(best), text=f"about {ratio_text(best)} (servers:clients): {span} is {noise}"
        )

    def _cannot_tell(self, ri) -> str:
        if self.core_shared_only:
            return (
                f"the {' and '.join(self.core_shared_only)} ceiling(s) come only from samples "
                f"the model may not use ({self.core_shared[0][2]})"
            )
        if ri is None:
            one = [n for n, c in (("client", self.client_bound), ("server", self.server)) if c.interval is None]
            return (
                f"the {' and '.join(one)} ceiling(s) have a single sample, so no interval "
                f"(collect.windows of 3 or more: a sample each)"
            )
        return ""


def finite_pair(pair):
    return None if pair is None else [v if math.isfinite(v) else None for v in pair]


def _clip(r: tuple[int, int], lo, hi) -> tuple[int, int]:
    """r moved into [lo, hi] (None: unbounded), ratios compared as s / c."""
    v = r[0] / r[1]
    if lo is not None and v < lo[0] / lo[1]:
        return lo
    if hi is not None and v > hi[0] / hi[1]:
        return hi
    return r
