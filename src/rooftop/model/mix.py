"""Combined rooflines: a workload mix over several metric rooflines.

A mix file (TOML, or JSON by extension; docs/storage.md) says what one
operation of a service costs in each metric's work, e.g. a key-value put
is one RPC and one 4 KiB durable write, a checkpoint step 1 MiB written:

    name = "kv put"
    [operations.put]
    rpc = 1          # ops of an "ops" metric
    iops = 1
    [operations.get]
    share = 3        # weight of this operation in the mix (default 1)
    rpc = 1
    bw = "4KiB"      # bytes of a "bytes" metric (a size, or a number)

Per mix operation, metric m is asked for d_m = sum over operations of
share_i / sum(shares) x amount_i,m of its work. Its roofline r_m(x) =
min(c_m, x s_m) (per client process, in its own unit) then allows
r_m(x) / d_m mix operations per second, and the mix gets the lowest:

    R(x) = min_m r_m(x) / d_m = min(C, x S),  C = min_m c_m / d_m,  S = min_m s_m / d_m

so the mix has a roofline of its own: below its ridge x* = C / S the
servers' resource argmin s_m / d_m binds, above it the clients' argmin
c_m / d_m. This takes the resources as independent (a server process
overlaps its RPCs with its storage writes); a process that does them one
after the other is slower, at 1 / sum_m (d_m / r_m(x)) (given beside).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import tomllib

from rooftop import metrics
from rooftop.keys import ConfigError
from rooftop.model.ceilings import Ceiling, ModelError
from rooftop.model.roofline import Roofline
from rooftop.units import fmt_num, fmt_rate, parse_size


class MixError(ModelError):
    """A mix file that cannot be used: the message names the file and key."""


@dataclass
class Mix:
    name: str
    path: str
    #: Work per mix operation per metric (ops or bytes).
    demand: dict[str, float]
    #: {operation: {"share": normalised share, metric: amount}} as read.
    operations: dict[str, dict[str, float]] = field(default_factory=dict)


def _amount(value, metric: str, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise MixError(f"{where}: {value!r} is not a number or a size")
    if isinstance(value, str):
        if metrics.get(metric).work != "bytes":
            raise MixError(f"{where}: {metric} counts operations, give a number (not {value!r})")
        try:
            value = parse_size(value, where)
        except ConfigError as e:
            raise MixError(str(e)) from None
    if not math.isfinite(value) or value < 0:
        raise MixError(f"{where}: {value!r} must be a finite number >= 0")
    return float(value)


def _read(path: Path) -> dict:
    try:
        text = path.read_text()
    except OSError as e:
        raise MixError(f"{path}: {e.strerror}") from None
    try:
        return json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as e:
        raise MixError(f"{path}: not valid {'JSON' if path.suffix == '.json' else 'TOML'}: {e}") from None


def load_mix(path: str | Path) -> Mix:
    """Reads and checks a mix file; MixError names the file and the key."""
    path = Path(path)
    data = _read(path)
    if not isinstance(data, dict):
        raise MixError(f"{path}: expected a table with 'operations'")
    extra = sorted(set(data) - {"name", "operations"})
    if extra:
        raise MixError(f"{path}: {extra[0]}: unknown key (a mix has 'name' and 'operations')")
    ops = data.get("operations")
    if not isinstance(ops, dict) or not ops:
        raise MixError(f"{path}: operations: give at least one operation, e.g. [operations.put] rpc = 1")
    shares: dict = {}
    amounts: dict = {}
    for op, body in ops.items():
        where = f"{path}: operations.{op}"
        if not isinstance(body, dict):
            raise MixError(f"{where}: expected a table of metric = amount")
        share = body.get("share", 1)
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not share > 0:
            raise MixError(f"{where}.share: {share!r} must be a number > 0")
        shares[op] = float(share)
        amounts[op] = {}
        for m, v in body.items():
            if m == "share":
                continue
            if m not in metrics.METRICS:
                raise MixError(f"{where}.{m}: unknown metric (known: {', '.join(metrics.METRICS)})")
            amounts[op][m] = _amount(v, m, f"{where}.{m}")
    total = sum(shares.values())
    demand: dict[str, float] = {}
    for op, per in amounts.items():
        for m, v in per.items():
            demand[m] = demand.get(m, 0.0) + shares[op] / total * v
    demand = {m: d for m, d in demand.items() if d > 0}
    if not demand:
        raise MixError(f"{path}: operations: no operation uses any metric (give e.g. rpc = 1)")
    name = data.get("name", path.stem)
    if not isinstance(name, str):
        raise MixError(f"{path}: name: {name!r} is not a string")
    return Mix(name, str(path), demand, {op: {"share": shares[op] / total, **amounts[op]} for op in amounts})


def _scaled(c: Ceiling, d: float) -> Ceiling:
    ci = (c.ci[0] / d, c.ci[1] / d) if c.ci else None
    return Ceiling(c.lo / d, c.hi / d, c.centre / d, ci, c.n, c.keys)


def _lowest(cs: list[Ceiling]) -> Ceiling:
    """The lower of several ceilings, bound by bound (as Roofline.client_bound)."""
    ci = None
    intervals = [i for c in cs if (i := c.interval)]
    if len(intervals) == len(cs):
        ci = (min(i[0] for i in intervals), min(i[1] for i in intervals))
    return Ceiling(
        min(c.lo for c in cs),
        min(c.hi for c in cs),
        min(c.centre for c in cs),
        ci,
        max(c.n for c in cs) if ci else min(c.n for c in cs),
    )


@dataclass
class Component:
    """One metric of a mix: its roofline in mix operations per second."""

    metric: str
    demand: float
    client: Ceiling
    server: Ceiling

    def rate(self, x: float) -> float:
        return min(self.client.centre, x * self.server.centre)


@dataclass
class Combined:
    mix: Mix
    components: list[Component]
    roofline: Roofline  # unit ops/s: mix operations per second

    @property
    def client_metric(self) -> str:
        return min(self.components, key=lambda c: c.client.centre).metric

    @property
    def server_metric(self) -> str:
        return min(self.components, key=lambda c: c.server.centre).metric

    def binding(self, x: float) -> tuple[str, str]:
        """(metric, "server" or "client") binding the mix at x."""
        side = self.roofline.binding(x)
        return (self.server_metric if side == "server" else self.client_metric), side

    def serial_rate(self, x: float) -> float:
        """Mix operations per second per client when a process does each
        resource's work one after the other (no overlap)."""
        return 1 / sum(1 / c.rate(x) for c in self.components)

    def lines(self) -> list[str]:
        """What binds where, in words."""
        r = self.roofline
        ridge = r.ridge.centre
        s, c = self.server_metric, self.client_metric
        out = [
            f"mix {self.mix.name}: "
            + ", ".join(f"{m.metric} {work_text(m.metric, m.demand)}" for m in self.components)
            + " per operation"
        ]
        out.append(
            f"below x = {fmt_num(ridge)} (server/client processes) the servers' {s} binds: "
            f"{_ops(r.server.centre)} per server process"
        )
        out.append(f"above x = {fmt_num(ridge)} the clients' {c} binds: {_ops(r.client.centre)} per client process")
        for m in self.components:
            out.append(
                f"  {m.metric}: client {_ops(m.client.centre)}, server {_ops(m.server.centre)} per "
                f"process (its ceilings / {work_text(m.metric, m.demand)})"
            )
        out.append(
            f"without overlap (one resource after the other) at x = {fmt_num(ridge)}: "
            f"{_ops(self.serial_rate(ridge))} per client process"
        )
        return out

    def to_dict(self) -> dict:
        r = self.roofline
        return {
            "name": self.mix.name,
            "file": self.mix.path,
            "unit": "ops/s",
            "demand": self.mix.demand,
            "operations": self.mix.operations,
            "client": r.client.centre,
            "server": r.server.centre,
            "ridge": r.ridge.centre,
            "binds": {"server": self.server_metric, "client": self.client_metric},
            "components": [
                {"metric": c.metric, "demand": c.demand, "client": c.client.centre, "server": c.server.centre}
                for c in self.components
            ],
        }


def _ops(v: float) -> str:
    """A rate of mix operations: '154 mix ops/s'."""
    return fmt_rate(v, "ops/s").replace("ops/s", "mix ops/s")


def work_text(metric: str, d: float) -> str:
    if metrics.get(metric).work == "bytes":
        return fmt_rate(d, "bytes/s").replace("/s", "")
    return f"{d:g} op" + ("" if d == 1 else "s")


def combine(mix: Mix, rooflines: dict[str, Roofline], source: str = "") -> Combined:
    """The mix's roofline from the metrics' ones; MixError names a metric
    of the mix the rooflines lack."""
    missing = [m for m in mix.demand if m not in rooflines]
    if missing:
        have = ", ".join(sorted(rooflines)) or "none"
        raise MixError(
            f"{mix.path}: operations use {missing[0]}, which has no ceilings here "
            f"(measured: {have}; rooftop collect --metrics {','.join(mix.demand)})"
        )
    comps = [
        Component(m, d, _scaled(rooflines[m].client_bound, d), _scaled(rooflines[m].server, d))
        for m, d in mix.demand.items()
    ]
    roof = Roofline(
        f"mix {mix.name}", "ops/s", _lowest([c.client for c in comps]), _lowest([c.server for c in comps]), source
    )
    return Combined(mix, comps, roof)


def combine_files(paths, rooflines: dict[str, Roofline]) -> list[Combined]:
    """The combined roofline of each mix file (rooftop model and report --mix)."""
    return [combine(load_mix(p), rooflines) for p in paths or ()]
