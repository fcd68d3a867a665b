"""The data-service roofline (seed 000, section 4.2).

x = server processes / client processes. The rate one client process can
expect is bounded by what it can issue alone (the client ceiling) and by
its share of the servers (x times the server ceiling):

    r(x) = min(client, x * server)

The ridge x* = client / server is where the two meet: below it servers
bind (the service is under-provisioned), above it clients bind (servers
idle). Ceilings are ranges [min, max] measured over samples or node pairs,
so the roofline and the ridge are ranges too.

A third ceiling goes past the paper (its section 5.2): a client process
alone on its node can outrun what each client gets when the whole node is
busy (shared NIC, memory bandwidth). The *client node* ceiling, measured
with one node full of clients against ample servers, replaces the client
ceiling wherever it is lower; the model error is reported with and without.

The model says when it cannot tell (issue 10, item 7). Each ceiling carries
a 95 % interval of the mean of its samples (Student t; a published range is
its own interval), so the ridge has an interval, and the recommended ratio a
verdict (Roofline.verdict): one practical ratio; a range of them around a
best estimate; or, when the client and server intervals overlap and the
ridge's interval spans several practical ratios, "not distinguishable". A
client and server ceiling measured by the same samples (2 nodes: one
placement stands for every stage) are never distinguishable. Samples whose
placement puts more processes on nodes sharing cores than those cores hold
(the emulated cluster's Node.emulation["shared_with"]) are not used for
ceilings; a ceiling left with no other samples is drawn from them but the
verdict is "cannot tell".
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from rooftop import metrics, stages
from rooftop.units import PARAM_UNITS, fmt_rate

#: The practical ratio may fall short of the client ceiling by this much.
PRACTICAL_TOLERANCE = 0.05

#: A client-node sample reaching this share of its servers' capacity
#: (x * server ceiling) measured the servers, not the client node.
SERVER_BOUND = 0.8


#: Confidence of each ceiling's interval.
CONFIDENCE = 0.95
#: Student t quantiles t(0.975, df), df = 1..30.
_T975 = (
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
)


class ModelError(ValueError):
    """Bad or missing roofline parameters; the message says which."""


def t975(df: int) -> float:
    """The 97.5 % quantile of Student's t with df degrees of freedom (a
    table to 30, then the Cornish-Fisher expansion, within 1e-3)."""
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959964
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def t_interval(values: list[float]) -> tuple[float, float] | None:
    """95 % interval of the mean: mean +- t(0.975, n-1) s / sqrt(n), the
    lower end at least 0; None for fewer than 2 values."""
    n = len(values)
    if n < 2:
        return None
    mean = statistics.fmean(values)
    half = t975(n - 1) * statistics.stdev(values) / math.sqrt(n)
    return max(0.0, mean - half), mean + half


@dataclass
class Ceiling:
    """A range [lo, hi] and the central value the model draws (centre):
    from samples (Ceiling.of) their median; for a range given without
    samples (Ceiling.span) its midpoint; for a ratio of ceilings (the
    ridge) the ratio of their centres."""

    lo: float
    hi: float
    centre: float
    #: 95 % interval of the mean of its samples (None: fewer than 2).
    ci: tuple[float, float] | None = None
    #: How many samples (0: a published or hand-written range).
    n: int = 0
    #: The store keys of its samples: ceilings with the same keys are one measurement.
    keys: frozenset = frozenset()

    @classmethod
    def of(cls, values: list[float], keys=()) -> Ceiling:
        return cls(
            min(values), max(values), statistics.median(values), t_interval(values), len(values), frozenset(keys)
        )

    @classmethod
    def span(cls, lo: float, hi: float) -> Ceiling:
        """A published or hand-written range: no samples, centred on its midpoint."""
        return cls(lo, hi, (lo + hi) / 2)

    @property
    def median(self) -> float | None:
        """The median of its samples (None: a range given without samples)."""
        return self.centre if self.n else None

    @property
    def midpoint(self) -> float:
        return (self.lo + self.hi) / 2

    @property
    def interval(self) -> tuple[float, float] | None:
        """What the verdict uses: the 95 % interval from samples; a range
        given without samples is its own interval; None from one sample."""
        return (self.lo, self.hi) if self.n == 0 else self.ci


def practical(x: float) -> tuple[int, int] | None:
    """(servers, clients): the smallest practical ratio, 1 server per k
    clients or m servers per client, within 5 % of the client ceiling when
    the ridge is x (a ridge of 1.002 is 1:1, not 2:1); None for x 0 or
    infinite."""
    if not 0 < x < math.inf:
        return None
    target = x / (1 + PRACTICAL_TOLERANCE)
    if target <= 1:
        return 1, max(1, math.floor(1 / target + 1e-9))
    return math.ceil(target - 1e-9), 1


def ratio_text(r: tuple[int, int] | None) -> str:
    return "-" if r is None else f"{r[0]}:{r[1]}"


def _span_text(lo: tuple[int, int] | None, hi: tuple[int, int] | None) -> str:
    if lo is None and hi is None:
        return "any ratio"
    if lo is None:
        return f"any ratio up to {ratio_text(hi)}"
    if hi is None:
        return f"any ratio from {ratio_text(lo)} up"
    return f"any ratio from {ratio_text(lo)} to {ratio_text(hi)}"


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
        servers, clients = practical(r.centre)
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
            "ridge_interval": _finite(ri),
            "range": [list(e) if e else None for e in ends] if ri else None,
            "ratio": None,
        }
        why = self._cannot_tell(ri)
        if why:
            return dict(doc, kind="cannot_tell", text=f"cannot tell: {why}")
        span = _span_text(*ends)
        noise = "within noise" if self.server.n else "within the ranges given"
        if self.one_measurement:
            text = (
                "the ceilings are not distinguishable here: the client and server ceilings are "
                "one measurement (the same placement), which cannot locate the ridge; collect "
                "on 3 or more nodes"
            )
            if ends[0] != ends[1]:
                text += f" ({span} is {noise})"
            return dict(doc, kind="indistinguishable", text=text)
        if ends[0] == ends[1] is not None:  # (both None: intervals reaching 0 and infinity)
            return dict(doc, kind="ratio", ratio=list(ends[0]), text=f"{ratio_text(ends[0])} (servers:clients)")
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
                f"(collect.samples of 3 or more)"
            )
        return ""


def _finite(pair):
    return None if pair is None else [v if math.isfinite(v) else None for v in pair]


def _clip(r: tuple[int, int], lo, hi) -> tuple[int, int]:
    """r moved into [lo, hi] (None: unbounded), ratios compared as s / c."""
    v = r[0] / r[1]
    if lo is not None and v < lo[0] / lo[1]:
        return lo
    if hi is not None and v > hi[0] / hi[1]:
        return hi
    return r


@dataclass
class Check:
    """One validation sample against the model."""

    x: float
    measured: float
    predicted: float
    predicted_lo: float
    predicted_hi: float
    binding: str
    server_nodes: int = 0
    client_nodes: int = 0

    @property
    def error_pct(self) -> float:
        return (self.measured - self.predicted) / self.predicted * 100.0

    @property
    def efficiency(self) -> float:
        return self.measured / self.predicted

    @property
    def above_roofline(self) -> bool:
        return self.measured > self.predicted_hi * 1.05


@dataclass
class Evaluation:
    roofline: Roofline
    checks: list[Check] = field(default_factory=list)
    #: The same samples against the roofline without the client-node ceiling.
    without_node: Evaluation | None = None
    #: Validation samples exclusion() names: (check, why); no error, shown marked.
    excluded: list = field(default_factory=list)

    def median_abs_error(self, binding: str | None = None) -> float | None:
        errs = [abs(c.error_pct) for c in self.checks if binding is None or c.binding == binding]
        return statistics.median(errs) if errs else None

    def to_dict(self) -> dict:
        r = self.roofline
        return {
            "metric": r.metric,
            "unit": r.unit,
            "source": r.source,
            "client": _ceiling_dict(r.client),
            "server": _ceiling_dict(r.server),
            "client_node": (dict(_ceiling_dict(r.client_node), binds=r.node_binds) if r.client_node else None),
            "client_node_rejected": r.client_node_rejected or None,
            "ridge": {
                "min": r.ridge.lo,
                "median": r.ridge.centre,
                "max": r.ridge.hi,
                "ci95": _finite(r.ridge_interval),
            },
            "recommended": r.recommended(),
            "verdict": r.verdict(),
            "measured_once": r.measured_once,
            "core_shared": {
                "excluded": [{"stage": st, "key": k, "why": why} for st, k, why in r.core_shared],
                "only": r.core_shared_only,
            },
            "validation": [
                {
                    "x": c.x,
                    "server_nodes": c.server_nodes,
                    "client_nodes": c.client_nodes,
                    "measured": c.measured,
                    "predicted": c.predicted,
                    "predicted_range": [c.predicted_lo, c.predicted_hi],
                    "error_pct": c.error_pct,
                    "binding": c.binding,
                    "efficiency": c.efficiency,
                    "above_roofline": c.above_roofline,
                }
                for c in self.checks
            ],
            "validation_excluded": [{"x": c.x, "measured": c.measured, "why": why} for c, why in self.excluded],
            "median_abs_error_pct": {
                "server_bound": self.median_abs_error("server"),
                "client_bound": self.median_abs_error("client"),
                "all": self.median_abs_error(),
            },
            "median_abs_error_pct_without_client_node": (
                {
                    "server_bound": self.without_node.median_abs_error("server"),
                    "client_bound": self.without_node.median_abs_error("client"),
                    "all": self.without_node.median_abs_error(),
                }
                if self.without_node
                else None
            ),
        }


def _ceiling_dict(c: Ceiling) -> dict:
    """min, median, max; ci95: the interval the verdict uses (None: one
    sample); samples: how many (0: a published range)."""
    return {"min": c.lo, "median": c.centre, "max": c.hi, "ci95": _finite(c.interval), "samples": c.n}


def evaluate(roofline: Roofline, samples: list[dict], nodes=None) -> Evaluation:
    """Validation samples (store rows of stage 'validate') against the model
    (and, when it has a client-node ceiling, against the model without it).
    Samples exclusion() names give no error: they are kept apart
    (Evaluation.excluded, shown marked in figures). nodes: the run's nodes."""
    ev = Evaluation(roofline)
    if roofline.client_node is not None:
        ev.without_node = evaluate(roofline.without_client_node(), samples, nodes)
    mine = [s for s in samples if s.get("metric") == roofline.metric and s.get("status") == "ok"]
    why = exclusions(mine, nodes)
    for s in mine:
        x = s["x"]
        c = Check(
            x,
            s["per_client"],
            roofline.rate(x),
            roofline.rate(x, "lo"),
            roofline.rate(x, "hi"),
            roofline.binding(x),
            len(s.get("server_nodes") or []),
            len(s.get("client_nodes") or []),
        )
        if why[_kid(s)]:
            ev.excluded.append((c, why[_kid(s)]))
        else:
            ev.checks.append(c)
    ev.checks.sort(key=lambda c: (c.x, c.measured))
    return ev


def _node_info(nodes) -> dict[int, dict]:
    """Node index -> its description (config dicts or launcher Nodes)."""
    out = {}
    for n in nodes or []:
        d = n.describe() if hasattr(n, "describe") else n
        out[d["index"]] = d
    return out


def core_sharing(sample: dict, nodes, beside=()) -> str:
    """Why a sample's placement shares cores ('' if it does not): nodes it
    uses share a core (Node.emulation["shared_with"]) and put more processes
    on those shared cores than there are, so processes time-slice. beside:
    the samples that ran at the same time (the other pairs of its pair
    round, ran_beside): their processes count too."""
    info = _node_info(nodes)
    if not any((d.get("emulation") or {}).get("shared_with") for d in info.values()):
        return ""
    procs: dict[int, float] = {}
    for s in (sample, *beside):
        for where, total in (
            (s.get("server_nodes") or [], s.get("server_procs") or 0),
            (s.get("client_nodes") or [], s.get("client_procs") or 0),
        ):
            for i in where:
                procs[i] = procs.get(i, 0) + total / len(where)
    mine = set(sample.get("server_nodes") or []) | set(sample.get("client_nodes") or [])
    for comp in _sharing_components(sorted(procs), info):
        if not mine & set(comp):
            continue
        cores = sorted(set().union(*(info[i].get("cores") or () for i in comp if i in info)))
        n = sum(procs[i] for i in comp)
        if len(comp) > 1 and n > len(cores):
            others = [
                s for s in beside if set(comp) & (set(s.get("server_nodes") or []) | set(s.get("client_nodes") or []))
            ]
            at_once = " with pair(s) " + ", ".join(_pair_name(s) for s in others) + " running at once" if others else ""
            return (
                f"nodes {', '.join(f'n{i}' for i in comp)} share core(s) "
                f"{','.join(map(str, cores))}: {n:g} processes on {len(cores)} core(s){at_once}"
            )
    return ""


def _pair_name(s: dict) -> str:
    return "-".join(f"n{i}" for i in (*(s.get("server_nodes") or []), *(s.get("client_nodes") or [])))


def ran_beside(samples: list[dict]) -> dict[str, list[dict]]:
    """Sample identity (_kid) -> the samples measured at the same time as it:
    the other pairs of its window in a pair round. The round's record is its
    folder's round.json (window by window, the keys measured at once); rows
    of one folder, metric, window index and attempt are those of one window."""
    groups: dict[tuple, list[dict]] = {}
    for s in samples:
        if s.get("raw_dir") and s.get("status") != "failed":
            groups.setdefault((s["raw_dir"], s.get("metric"), s.get("sample"), s.get("attempt", 1)), []).append(s)
    out: dict[str, list[dict]] = {}
    for (raw, *_), rows in groups.items():
        if len(rows) < 2:
            continue
        together = _round_windows(raw)
        for s in rows:
            keys = next((w for w in together if s["key"] in w), ())
            others = [o for o in rows if o is not s and o["key"] in keys]
            if others:
                out[_kid(s)] = others
    return out


def _round_windows(raw_dir: str) -> list[set]:
    """The key sets of a round's windows (round.json), [] when unrecorded."""
    try:
        doc = json.loads((Path(raw_dir) / "round.json").read_text())
        return [set(keys) for keys in doc["keys"]]
    except (OSError, ValueError, KeyError, TypeError):
        return []


#: Foreign CPU is not (yet) part of the rule: rooftop.foreign counts the
#: softirq time of a round's own network traffic as foreign (recorded bw
#: rounds read 1.0-1.6 cores on 2 cores), so a gate would drop good
#: samples; the report warns from FOREIGN_WARN up instead.


def exclusion(sample: dict, nodes=None, beside=()) -> str:
    """THE rule: why a sample may feed no ceiling, outlier score, learned
    dataset row, validation error or figure's fitted line ('' when it may).
    Not measured or unusable (status failed or invalid), measured with
    --allow-concurrent, or nodes sharing cores (core_sharing; beside: the
    samples that ran at the same time, ran_beside). Figures may still show
    such a sample, marked."""
    status = sample.get("status")
    if status != "ok":
        return f"{status}: {(sample.get('error') or '')[:120]}"
    if sample.get("concurrent"):
        return "measured with --allow-concurrent: another campaign may have shared its cores"
    return core_sharing(sample, nodes, beside)


def exclusions(samples: list[dict], nodes=None) -> dict[str, str]:
    """exclusion() of every sample, by identity (_kid): '' when usable."""
    beside = ran_beside(samples)
    return {_kid(s): exclusion(s, nodes, beside.get(_kid(s), ())) for s in samples}


def usable(samples: list[dict], nodes=None) -> list[dict]:
    """The samples exclusion() lets through."""
    why = exclusions(samples, nodes)
    return [s for s in samples if not why[_kid(s)]]


def _sharing_components(used: list[int], info: dict[int, dict]) -> list[list[int]]:
    """The used nodes grouped by shared cores (connected components)."""

    def shares(a, b):
        return b in ((info.get(a, {}).get("emulation") or {}).get("shared_with") or ())

    comps: list[list[int]] = []
    for i in used:
        linked = [c for c in comps if any(shares(i, j) or shares(j, i) for j in c)]
        merged = sorted({i, *(j for c in linked for j in c)})
        comps = [c for c in comps if c not in linked] + [merged]
    return comps


def _kid(s: dict) -> str:
    """A sample's identity: its store key (synthetic rows: the object)."""
    return s.get("key") or f"#{id(s)}"


def _rows(samples: list[dict], stage: str) -> list[dict]:
    from rooftop.store.records import stands_for

    return [s for s in samples if stage in stands_for(s)]


def from_run(samples: list[dict], metric: str, source: str = "", exclude_nodes: list[int] = (), nodes=None) -> Roofline:
    """Ceilings from a run's stored samples: client peak per client process
    (every node pair and sample), server peak per server process; a sample
    measured once for several stages counts for each. exclude_nodes: client
    peak pairs that include these nodes are left out (flagged outlier
    nodes). nodes: the run's nodes (config "nodes"): samples whose nodes
    share cores (core_sharing) are left out of ceilings."""
    from rooftop.store.records import stands_for

    out = set(exclude_nodes)
    ok = [s for s in samples if s["metric"] == metric and s["status"] == "ok"]
    why = exclusions([s for s in samples if s["metric"] == metric], nodes)
    shared = {_kid(s): why[_kid(s)] for s in ok}
    usable = [s for s in ok if not shared[_kid(s)]]
    spoilt = [s for s in ok if shared[_kid(s)]]
    keep = lambda rows: [s for s in rows if not (out and out & set(s["server_nodes"] + s["client_nodes"]))]
    cs, ss, ns = (stages.of_role(role).name for role in ("client", "server", "node"))
    client, server = keep(_rows(usable, cs)), _rows(usable, ss)
    only = []
    if not client and keep(_rows(spoilt, cs)):
        client, only = keep(_rows(spoilt, cs)), only + ["client"]
    if not server and _rows(spoilt, ss):
        server, only = _rows(spoilt, ss), only + ["server"]
    if not client or not server:
        missing = (cs if not client else ss).replace("_", " ")
        raise ModelError(
            f"{metric}: the run has no successful {missing} samples (run 'rooftop collect' with both stages)"
        )
    r = Roofline(
        metric,
        metrics.get(metric).unit,
        Ceiling.of([s["per_client"] for s in client], map(_kid, client)),
        Ceiling.of([s["per_server"] for s in server], map(_kid, server)),
        source,
    )
    r.measured_once = sorted({tuple(stands_for(s)) for s in ok if len(stands_for(s)) > 1})
    r.measured_once = [list(t) for t in r.measured_once]
    r.core_shared = [(st, _kid(s), shared[_kid(s)]) for s in spoilt for st in stands_for(s)]
    r.core_shared_only = only
    _set_client_node(r, _rows(usable, ns), _rows(spoilt, ns), shared)
    return r


def _set_client_node(r: Roofline, rows: list[dict], spoilt: list[dict], shared: dict) -> None:
    """The node-full client ceiling, or why it is not used."""
    if not rows:
        if spoilt:
            r.client_node_rejected = f"no client-node sample may be used ({shared[_kid(spoilt[0])]})"
        return
    # Only a client-bound measurement is a client ceiling: with too few
    # servers (x * server ceiling near what each client got) the servers
    # were the limit, as on a 2-node machine (x = 1).
    x = statistics.median(s["x"] for s in rows)
    cn = Ceiling.of([s["per_client"] for s in rows], map(_kid, rows))
    if cn.keys <= r.server.keys:
        r.client_node_rejected = (
            "the client-node stage was server-bound: it was measured once with "
            "the server peak (the same placement), so its servers, not the "
            "client node, were the limit"
        )
    elif cn.centre >= SERVER_BOUND * x * r.server.centre:
        r.client_node_rejected = (
            f"the client-node stage was server-bound: x = {x:.3g} server processes per client "
            f"give at most {fmt_rate(x * r.server.centre, r.unit)} per client and each got "
            f"{fmt_rate(cn.centre, r.unit)}; more server nodes are needed to saturate a client node"
        )
    else:
        r.client_node = cn


#: Ceilings in a parameters file, in base units (ops/s, bytes/s): beyond
#: these a value is a typo (or 1e400), and ridge ratios would overflow.
PARAM_RANGE = (1e-3, 1e18)


def _ceiling(v, factor: float, unit: str, where: str) -> Ceiling:
    """A positive number or [min, max] in unit, as a Ceiling in base units."""
    vals = v if isinstance(v, list) else [v]
    if not vals or len(vals) > 2 or not all(isinstance(a, (int, float)) and not isinstance(a, bool) for a in vals):
        raise ModelError(f"{where}: expected a positive number or [min, max], got {_short(v)}")
    try:
        base = [float(a) * factor for a in vals]
    except OverflowError:
        base = [math.inf]
    lo_ok, hi_ok = PARAM_RANGE
    if not all(math.isfinite(b) and lo_ok <= b <= hi_ok for b in base):
        raise ModelError(
            f"{where}: {_short(v)} {unit} is not a usable ceiling (finite, between "
            f"{lo_ok:g} and {hi_ok:g} in {PARAM_UNITS[unit][0]})"
        )
    return Ceiling.span(min(base), max(base))


def _short(v) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def load_params(path: str | Path) -> dict[str, Roofline]:
    """A parameters file: published or hand-written ceilings, e.g.

    {"name": "Aurora (seed 000, Table 2)",
     "metrics": {"rpc": {"unit": "K ops/s", "client": [148, 173], "server": [524, 530]},
                 "bw":  {"unit": "GiB/s",   "client": [20.2, 20.5], "server": [1.7, 1.8]}}}

    A ceiling is [min, max] or a single number; units: see
    rooftop.units.PARAM_UNITS. An
    optional "client_node" ceiling (per client process with the client node
    full) is used where it is lower than "client".
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except OSError as e:
        raise ModelError(f"cannot read parameters file {path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise ModelError(f"{path}: not valid JSON: line {e.lineno}: {e.msg}") from None
    except UnicodeDecodeError:
        raise ModelError(f"{path}: not a text file (expected JSON)") from None
    if not isinstance(data, dict) or not isinstance(data.get("metrics"), dict) or not data["metrics"]:
        raise ModelError(f'{path}: expected {{"name": ..., "metrics": {{"rpc": {{...}}}}}}')
    name = str(data.get("name") or path.stem)
    out = {}
    for metric, m in data["metrics"].items():
        where = f"{path}: metrics.{metric}"
        if metric not in metrics.METRICS:
            raise ModelError(f"{where}: unknown metric ({' or '.join(metrics.METRICS)})")
        if not isinstance(m, dict):
            raise ModelError(f"{where}: expected an object with unit, client, server")
        unit = m.get("unit")
        if not isinstance(unit, str) or unit not in PARAM_UNITS:
            raise ModelError(f"{where}.unit: {_short(unit)} is not one of {', '.join(PARAM_UNITS)}")
        base, factor = PARAM_UNITS[unit]
        if base != metrics.get(metric).unit:
            raise ModelError(f"{where}.unit: {unit} does not measure {metric}")
        ceilings = {}
        for side in ("client", "server", "client_node"):
            v = m.get(side)
            if side == "client_node" and v is None:
                ceilings[side] = None
                continue
            ceilings[side] = _ceiling(v, factor, unit, f"{where}.{side}")
        out[metric] = Roofline(metric, base, ceilings["client"], ceilings["server"], name, ceilings["client_node"])
    return out
