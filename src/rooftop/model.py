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
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path

#: Units a parameters file may use, and their factor to the base unit.
UNITS = {
    "ops/s": ("ops/s", 1.0), "K ops/s": ("ops/s", 1e3), "M ops/s": ("ops/s", 1e6),
    "bytes/s": ("bytes/s", 1.0), "KiB/s": ("bytes/s", 2.0 ** 10), "MiB/s": ("bytes/s", 2.0 ** 20),
    "GiB/s": ("bytes/s", 2.0 ** 30), "MB/s": ("bytes/s", 1e6), "GB/s": ("bytes/s", 1e9),
}


#: The practical ratio may fall short of the client ceiling by this much.
PRACTICAL_TOLERANCE = 0.05

#: A client-node sample reaching this share of its servers' capacity
#: (x * server ceiling) measured the servers, not the client node.
SERVER_BOUND = 0.8


class ModelError(ValueError):
    """Bad or missing roofline parameters; the message says which."""


@dataclass
class Ceiling:
    lo: float
    hi: float
    mid: float  # median where measured; the midpoint for published ranges

    @classmethod
    def of(cls, values: list[float]) -> "Ceiling":
        return cls(min(values), max(values), statistics.median(values))


@dataclass
class Roofline:
    metric: str
    unit: str          # base unit: ops/s or bytes/s
    client: Ceiling
    server: Ceiling
    source: str = ""
    #: Node-saturated client ceiling (per client process, node full), if measured.
    client_node: Ceiling | None = None
    #: Why a measured client-node ceiling is not used ("" when it is, or none).
    client_node_rejected: str = ""

    @property
    def client_bound(self) -> Ceiling:
        """The client ceiling the model uses: the lower of the isolated and
        the node-saturated one, bound by bound."""
        c, n = self.client, self.client_node
        if n is None:
            return c
        return Ceiling(min(c.lo, n.lo), min(c.hi, n.hi), min(c.mid, n.mid))

    @property
    def node_binds(self) -> bool:
        """Whether the client-node ceiling is lower than the isolated one."""
        return self.client_node is not None and self.client_node.mid < self.client.mid

    def without_client_node(self) -> "Roofline":
        return Roofline(self.metric, self.unit, self.client, self.server, self.source)

    def rate(self, x: float, bound: str = "mid") -> float:
        c, s = getattr(self.client_bound, bound), getattr(self.server, bound)
        return min(c, x * s)

    @property
    def ridge(self) -> Ceiling:
        """x* where x * server = client, as a range."""
        c = self.client_bound
        return Ceiling(c.lo / self.server.hi, c.hi / self.server.lo, c.mid / self.server.mid)

    def binding(self, x: float) -> str:
        return "server" if x * self.server.mid < self.client_bound.mid else "client"

    def recommended(self) -> dict:
        """The smallest ratio whose predicted rate reaches the client ceiling
        (the ridge, with its range), and the smallest practical ratio, '1
        server per k clients' or 'm servers per client', whose predicted
        rate is within 5 % of it (a ridge of 1.002 is 1:1, not 2:1)."""
        r = self.ridge
        target = r.mid / (1 + PRACTICAL_TOLERANCE)
        if target <= 1:
            servers, clients = 1, max(1, math.floor(1 / target + 1e-9))
        else:
            servers, clients = math.ceil(target - 1e-9), 1
        return {"x": r.mid, "x_range": [r.lo, r.hi], "servers": servers, "clients": clients,
                "reaches": self.rate(servers / clients) / self.client_bound.mid}


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
    without_node: "Evaluation | None" = None

    def median_abs_error(self, binding: str | None = None) -> float | None:
        errs = [abs(c.error_pct) for c in self.checks if binding is None or c.binding == binding]
        return statistics.median(errs) if errs else None

    def to_dict(self) -> dict:
        r = self.roofline
        return {
            "metric": r.metric, "unit": r.unit, "source": r.source,
            "client": {"min": r.client.lo, "median": r.client.mid, "max": r.client.hi},
            "server": {"min": r.server.lo, "median": r.server.mid, "max": r.server.hi},
            "client_node": ({"min": r.client_node.lo, "median": r.client_node.mid,
                             "max": r.client_node.hi, "binds": r.node_binds}
                            if r.client_node else None),
            "client_node_rejected": r.client_node_rejected or None,
            "ridge": {"min": r.ridge.lo, "median": r.ridge.mid, "max": r.ridge.hi},
            "recommended": r.recommended(),
            "validation": [{"x": c.x, "server_nodes": c.server_nodes, "client_nodes": c.client_nodes,
                            "measured": c.measured, "predicted": c.predicted,
                            "predicted_range": [c.predicted_lo, c.predicted_hi],
                            "error_pct": c.error_pct, "binding": c.binding,
                            "efficiency": c.efficiency, "above_roofline": c.above_roofline}
                           for c in self.checks],
            "median_abs_error_pct": {"server_bound": self.median_abs_error("server"),
                                     "client_bound": self.median_abs_error("client"),
                                     "all": self.median_abs_error()},
            "median_abs_error_pct_without_client_node": (
                {"server_bound": self.without_node.median_abs_error("server"),
                 "client_bound": self.without_node.median_abs_error("client"),
                 "all": self.without_node.median_abs_error()} if self.without_node else None),
        }


def evaluate(roofline: Roofline, samples: list[dict]) -> Evaluation:
    """Validation samples (store rows of stage 'validate') against the model
    (and, when it has a client-node ceiling, against the model without it)."""
    ev = Evaluation(roofline)
    if roofline.client_node is not None:
        ev.without_node = evaluate(roofline.without_client_node(), samples)
    for s in samples:
        if s.get("status") != "ok" or s.get("metric") != roofline.metric:
            continue
        x = s["x"]
        ev.checks.append(Check(x, s["per_client"], roofline.rate(x), roofline.rate(x, "lo"),
                               roofline.rate(x, "hi"), roofline.binding(x),
                               len(s.get("server_nodes") or []), len(s.get("client_nodes") or [])))
    ev.checks.sort(key=lambda c: (c.x, c.measured))
    return ev


def from_run(samples: list[dict], metric: str, source: str = "",
             exclude_nodes: list[int] = ()) -> Roofline:
    """Ceilings from a run's stored samples: client peak per client process
    (every node pair and sample), server peak per server process.
    exclude_nodes: client peak pairs that include these nodes are left out
    (flagged outlier nodes)."""
    out = set(exclude_nodes)
    client = [s["per_client"] for s in samples
              if s["stage"] == "client_peak" and s["metric"] == metric and s["status"] == "ok"
              and not (out and out & set(s["server_nodes"] + s["client_nodes"]))]
    server = [s["per_server"] for s in samples
              if s["stage"] == "server_peak" and s["metric"] == metric and s["status"] == "ok"]
    node_rows = [s for s in samples
                 if s["stage"] == "client_node" and s["metric"] == metric and s["status"] == "ok"]
    node = [s["per_client"] for s in node_rows]
    if not client or not server:
        missing = "client peak" if not client else "server peak"
        raise ModelError(f"{metric}: the run has no successful {missing} samples "
                         f"(run 'rooftop collect' with both stages)")
    unit = "ops/s" if metric == "rpc" else "bytes/s"
    r = Roofline(metric, unit, Ceiling.of(client), Ceiling.of(server), source)
    if node:
        # Only a client-bound measurement is a client ceiling: with too few
        # servers (x * server ceiling near what each client got) the
        # servers were the limit, as on a 2-node machine (x = 1).
        x = statistics.median(s["x"] for s in node_rows)
        cn = Ceiling.of(node)
        if cn.mid >= SERVER_BOUND * x * r.server.mid:
            from rooftop.ui import fmt_rate

            r.client_node_rejected = (
                f"the client-node stage was server-bound: x = {x:.3g} server processes per client "
                f"give at most {fmt_rate(x * r.server.mid, unit)} per client and each got "
                f"{fmt_rate(cn.mid, unit)}; more server nodes are needed to saturate a client node")
        else:
            r.client_node = cn
    return r


#: Ceilings in a parameters file, in base units (ops/s, bytes/s): beyond
#: these a value is a typo (or 1e400), and ridge ratios would overflow.
PARAM_RANGE = (1e-3, 1e18)


def _ceiling(v, factor: float, unit: str, where: str) -> Ceiling:
    """A positive number or [min, max] in unit, as a Ceiling in base units."""
    vals = v if isinstance(v, list) else [v]
    if not vals or len(vals) > 2 or not all(isinstance(a, (int, float)) and not isinstance(a, bool)
                                            for a in vals):
        raise ModelError(f"{where}: expected a positive number or [min, max], got {_short(v)}")
    try:
        base = [float(a) * factor for a in vals]
    except OverflowError:
        base = [math.inf]
    lo_ok, hi_ok = PARAM_RANGE
    if not all(math.isfinite(b) and lo_ok <= b <= hi_ok for b in base):
        raise ModelError(f"{where}: {_short(v)} {unit} is not a usable ceiling (finite, between "
                         f"{lo_ok:g} and {hi_ok:g} in {UNITS[unit][0]})")
    return Ceiling(min(base), max(base), (min(base) + max(base)) / 2)


def _short(v) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def load_params(path: str | Path) -> dict[str, Roofline]:
    """A parameters file: published or hand-written ceilings, e.g.

    {"name": "Aurora (seed 000, Table 2)",
     "metrics": {"rpc": {"unit": "K ops/s", "client": [148, 173], "server": [524, 530]},
                 "bw":  {"unit": "GiB/s",   "client": [20.2, 20.5], "server": [1.7, 1.8]}}}

    A ceiling is [min, max] or a single number; units: see UNITS. An
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
        raise ModelError(f"{path}: expected {{\"name\": ..., \"metrics\": {{\"rpc\": {{...}}}}}}")
    name = str(data.get("name") or path.stem)
    out = {}
    for metric, m in data["metrics"].items():
        where = f"{path}: metrics.{metric}"
        if metric not in ("rpc", "bw"):
            raise ModelError(f"{where}: unknown metric (rpc or bw)")
        if not isinstance(m, dict):
            raise ModelError(f"{where}: expected an object with unit, client, server")
        unit = m.get("unit")
        if not isinstance(unit, str) or unit not in UNITS:
            raise ModelError(f"{where}.unit: {_short(unit)} is not one of {', '.join(UNITS)}")
        base, factor = UNITS[unit]
        if (metric == "rpc") != (base == "ops/s"):
            raise ModelError(f"{where}.unit: {unit} does not measure {metric}")
        ceilings = {}
        for side in ("client", "server", "client_node"):
            v = m.get(side)
            if side == "client_node" and v is None:
                ceilings[side] = None
                continue
            ceilings[side] = _ceiling(v, factor, unit, f"{where}.{side}")
        out[metric] = Roofline(metric, base, ceilings["client"], ceilings["server"], name,
                               ceilings["client_node"])
    return out
