"""`rooftop plan`: a campaign planned before any allocation (of the three time
modules: costs prices, estimate counts and prices, forecast plans `rooftop
plan`), then estimated. N planned nodes of C cores each, optionally in a
topology (rooftop.topology.Topology: --groups G even groups of one switch
each, or --topology FILE read by the topology package's file source), the
config resolved on them as collect resolves it on the launcher's nodes, the
topology recorded in it as a run records it, and the estimate of each phase
(collect, then validate) by rooftop.campaign.estimate, the dry run's own.

The phases are planned as the campaign plans them (rooftop.campaign.plan),
so a dry run on an allocation of N nodes prints the same figures, except
where the client ceiling has more rows than LIST_ROWS (all pairs of 1,000
nodes): its pair strategy's expected counts stand for them then (equal to
the listed plan's; tests/campaign/test_plan.py compares both). Nodes that
share cores (an oversubscribed emulated cluster) get more pair rounds than
planned: the dry run counts them."""

from __future__ import annotations

from dataclasses import dataclass, field

from rooftop import stages
from rooftop.campaign import simulate
from rooftop.campaign.costs import LaunchMode, calibrated, launch_mode
from rooftop.campaign.estimate import Estimate, Work, count, estimate, fmt_duration, pair_work
from rooftop.campaign.plan import plan_collect, plan_validate
from rooftop.campaign.simulate import Power
from rooftop.config.files import load_file, merge, set_key
from rooftop.config.resolve import resolve
from rooftop.engine import machine
from rooftop.launchers import Node, on_this_machine, spec
from rooftop.launchers.local import usable_cores
from rooftop.stages import Placement, pairs
from rooftop.stages.pairs import PairsExpected
from rooftop.stages.pairs.base import bulk
from rooftop.topology import Topology, TopologyError, of_config
from rooftop.topology import file as topology_file

#: A client ceiling of more rows than this (metrics x samples x pairs) is
#: not listed row by row: its pair strategy's expected counts stand for it.
LIST_ROWS = 200_000


class PlanError(ValueError):
    """What to plan for is not given or not possible (names the option or file)."""


def planned_nodes(n: int, cores: int, hosts: list[str] | None = None, one_machine: bool = True) -> list[Node]:
    """n nodes of `cores` cores each, sharing none (hosts: their names;
    default node0, node1, ...): on one machine (one_machine: a launcher that
    runs its engines here) cores numbered apart, else each node its own
    machine, numbering its cores from 0 (one tuple for all: 100,000 nodes of
    64 cores are not 6.4 million numbers)."""
    own = tuple(range(cores))
    return [
        Node(i, hosts[i] if hosts else f"node{i}", tuple(range(i * cores, (i + 1) * cores)) if one_machine else own)
        for i in range(n)
    ]


def even_groups(n: int, g: int) -> Topology:
    """Nodes 0..n-1 in g groups of consecutive nodes (sizes differing by
    one at most), each group one switch."""
    if not 1 <= g <= n:
        raise PlanError(f"--groups {g}: must be 1..{n} (the nodes planned for)")
    return Topology.even(n, g)


def read_topology(path: str) -> tuple[list[str], dict[str, tuple[str, str]]]:
    """The hosts of a topology file in file order, and each one's (switch,
    group), as collect.topology = file reads it (rooftop.topology.file:
    Slurm's topology.conf or 'HOST SWITCH [GROUP]' lines)."""
    try:
        where = topology_file.read(path, "--topology")
    except TopologyError as e:
        raise PlanError(str(e)) from None
    return list(where), where


def default_cores(launcher: str, n: int) -> int:
    """Cores per planned node when the config does not say: a split of this
    machine into n nodes under a launcher of logical nodes (local), else
    this machine's cores (what srun and mpiexec assume without better
    knowledge)."""
    cores = len(usable_cores())
    return max(1, cores // n) if spec(launcher).logical_nodes else cores


@dataclass
class Forecast:
    """A campaign's expected time on planned nodes, phase by phase."""

    cfg: dict
    #: The planned nodes' topology (None: unknown, one class).
    topology: Topology | None
    #: Phase ("collect", "validate") -> its estimate.
    phases: dict[str, Estimate] = field(default_factory=dict)
    #: Whether the client ceiling was listed row by row (else: its pair
    #: strategy's expected counts).
    listed: bool = True
    #: The launch mode it prices with (None: the config's, with the
    #: constants measured here; calibrate() puts a run's own in).
    mode: LaunchMode | None = None
    #: --pairs sample: the search's power, simulated on the planned nodes
    #: (quote_power(); None: not asked, or not a sampled client ceiling).
    power: Power | None = None
    #: Why the power is not quoted where it was asked ("": quoted, or not asked).
    power_note: str = ""

    @property
    def launch(self) -> LaunchMode:
        return self.mode or launch_mode(self.cfg)

    def quote_power(self, noise: dict[str, float] | None = None) -> None:
        """--pairs sample: the power of its search on these nodes and this
        topology (rooftop.campaign.simulate.quote; noise: a stored run's
        per class, default the plan's spread), quoted by lines() and
        as_dict()."""
        if self.cfg["collect"]["pairs"] != "sample" or not stages.of_role("client").enabled(self.cfg):
            return
        if self.nodes > simulate.PLAN_MAX_NODES:
            self.power_note = (
                f"search power: not simulated on more than {simulate.PLAN_MAX_NODES:,} nodes (a simulated run "
                "takes tens of seconds there; rooftop.campaign.simulate.power runs it)"
            )
            return
        self.power = simulate.quote(self.cfg, self.topology, noise)

    def calibrate(self, mode: LaunchMode) -> None:
        """Prices every phase with `mode` (a run's own fixed costs)."""
        self.mode = mode
        for e in self.phases.values():
            e.mode = mode

    @property
    def nodes(self) -> int:
        return len(self.cfg["nodes"])

    @property
    def cores_per_node(self) -> int:
        return min(len(n["cores"]) for n in self.cfg["nodes"])

    @property
    def total_s(self) -> float:
        return sum(e.total_s for e in self.phases.values())

    @property
    def launches(self) -> int:
        return sum(e.launches for e in self.phases.values())

    def lines(self) -> list[str]:
        mode = self.launch
        groups = f", {_where(self.topology)}" if self.topology else ""
        out = [
            f"{self.nodes} nodes of {self.cores_per_node} core(s){groups}; launcher {self.cfg['launcher']['type']}, "
            f"launch mode {mode.name}; metrics {', '.join(self.cfg['metrics'])}"
        ]
        for phase, e in self.phases.items():
            out += ["", f"{phase}: {e.line()}", *(f"  {line}" for line in e.lines())]
        parts = " + ".join(f"{p} {fmt_duration(e.total_s)}" for p, e in self.phases.items())
        out += [
            "",
            f"total: {fmt_duration(self.total_s)} ({parts}), {self.launches} launches",
            f"constants of launch mode {mode.name} (seconds; rooftop.campaign.costs, docs/measurement.md), "
            "each with where it was measured" + (" and the run that calibrated it:" if self.mode else ":"),
            *(f"  {c.name} {c.value:g}: {c.measured}" for c in mode.constants()),
        ]
        if self.cfg["launcher"]["type"] not in mode.measured_with:
            out.append(
                f"note: these constants were measured with the {' and '.join(mode.measured_with)} launcher(s)"
                + ("" if self.mode else " on a 2-core VM")
                + f", not with {self.cfg['launcher']['type']}: its own start-up and teardown costs may differ; "
                "a first short run there tells ('rooftop plan --from RUN' then prices with that run's own)"
            )
        if not self.listed:
            out.append("the client ceiling's pairs are counted by its pair strategy, not listed one by one")
        if self.power is not None:
            out.append(f"search power: {self.power.line()}")
        if self.power_note:
            out.append(self.power_note)
        return out

    def as_dict(self) -> dict:
        mode = self.launch
        return {
            "nodes": self.nodes,
            "cores_per_node": self.cores_per_node,
            "groups": [len(g) for g in self.topology.members()[1].values()] if self.topology else None,
            "launcher": self.cfg["launcher"]["type"],
            "launch_mode": mode.name,
            "metrics": self.cfg["metrics"],
            "constants": {c.name: c.value for c in mode.constants()},
            "constants_measured": {c.name: c.measured for c in mode.constants()},
            "constants_launchers": list(mode.measured_with),
            "phases": {p: e.as_dict() for p, e in self.phases.items()},
            "total_s": round(self.total_s, 3),
            "launches": self.launches,
            "listed": self.listed,
            "power": None if self.power is None else self.power.as_dict(),
            "power_note": self.power_note,
        }


def _where(topo: Topology) -> str:
    """'3 groups (6 or 5 nodes)', '2 groups of 4 switches (...)'."""
    switches, groups = topo.members()
    sizes = " or ".join(map(str, sorted({len(g) for g in groups.values()}, reverse=True)))
    of = f" of {len(switches)} switches" if len(switches) != len(groups) else ""
    return f"{len(groups)} groups{of} ({sizes} nodes)"


def resolve_planned(
    config_file: str | None, overrides: dict, groups: int | None = None, topology: str | None = None
) -> tuple[dict, Topology | None]:
    """The config of a campaign on planned nodes (as collect resolves it),
    and their topology (also recorded in the config as a run records it):
    launcher.nodes of them (--nodes; default: the topology file's hosts),
    of launcher.cores_per_node cores (default: default_cores), in --groups
    even groups or as the topology file places them. More nodes than this
    machine's cores with no launcher named (the config file's or
    --launcher) is refused: the default, local, would plan them as logical
    nodes sharing this machine's cores, which is not what a cluster's plan
    asks."""
    loaded = load_file(config_file) if config_file else None
    merged = merge(loaded, overrides, ())
    hosts, where = read_topology(topology) if topology else (None, None)
    n = merged["launcher"]["nodes"]
    if n is None and hosts is None:
        raise PlanError("--nodes N: how many nodes to plan for (or --topology FILE, whose hosts it counts)")
    if n is None:
        n = len(hosts or ())
    if n < 2:
        raise PlanError(f"--nodes {n}: a campaign needs at least 2 nodes (a server node and a client node)")
    if hosts is not None and n != len(hosts):
        raise PlanError(f"--nodes {n}: the topology file {topology} names {len(hosts)} nodes")
    named = "launcher.type" in overrides or "type" in ((loaded or {}).get("launcher") or {})
    kind = merged["launcher"]["type"]
    if not named and spec(kind).logical_nodes:
        here = len(usable_cores())
        if n > here:
            raise PlanError(
                f"--nodes {n}: more nodes than this machine's {here} cores, and no launcher named: the default "
                f"({kind}) would plan {n} logical nodes sharing them. Name the launcher of the nodes planned: "
                f"--launcher srun or --launcher mpiexec (with --cores-per-node C), --launcher netns for the "
                f"emulated cluster, or --launcher local for logical nodes of this machine"
            )
    merged["launcher"]["nodes"] = n
    cores = merged["launcher"]["cores_per_node"]
    if cores is None:
        cores = default_cores(merged["launcher"]["type"], n)
    if cores < 1:
        raise PlanError(f"--cores-per-node {cores}: a node needs at least 1 core")
    with bulk():  # (100,000 nodes described: no cycle among them)
        cfg = resolve(merged, planned_nodes(n, cores, hosts, on_this_machine(merged["launcher"]["type"])))
    topo = None
    if hosts and where and topology:
        topo = topology_file.of_hosts(where, hosts, topology)
    elif groups:
        topo = even_groups(n, groups)
    if topo is not None:
        cfg["topology"] = topo.to_dict()
    return cfg, topo


def client_pairs(cfg: dict, topo: Topology | None = None) -> PairsExpected | None:
    """The client ceiling's pairs as its pair strategy expects them in this
    topology (default: the one the config records; None: the config
    measures no client ceiling)."""
    if not stages.of_role("client").enabled(cfg):
        return None
    return pairs.get(cfg["collect"]["pairs"]).expected(cfg, topo or of_config(cfg))


def _measures_client_ceiling(placements: list[Placement]) -> bool:
    name = stages.of_role("client").name
    return any(name == m.stage or name in m.also for pl in placements for m in pl.measurements)


def of_placements(cfg: dict, placements: list[Placement], topo: Topology | None = None) -> Estimate:
    """The estimate of placements about to run (the dry run; a listed plan)."""
    x = client_pairs(cfg, topo) if _measures_client_ceiling(placements) else None
    return estimate(cfg, count(cfg, placements), x)


def forecast(cfg: dict, topo: Topology | None = None, list_rows: int = LIST_ROWS) -> Forecast:
    """The estimate of collect, then validate, on the config's (planned)
    nodes in this topology (default: the one the config records); a client
    ceiling of more than list_rows rows is counted by its pair strategy."""
    with bulk():  # (100,000 nodes' pairs and placements: no cycle among them)
        topo = topo or of_config(cfg)
        out = Forecast(cfg, topo)
        x = client_pairs(cfg, topo)
        rows = x.pairs * len(cfg["metrics"]) * cfg["collect"]["windows"] if x else 0
        if rows <= list_rows:
            out.phases["collect"] = of_placements(cfg, plan_collect(cfg), topo)
        else:
            out.listed = False
            out.phases["collect"] = estimate(cfg, _with_pairs(cfg, x), x)
        out.phases["validate"] = of_placements(cfg, plan_validate(cfg), topo)
        return out


def calibration(run) -> LaunchMode:
    """The launch mode of a stored run (rooftop.store.records.Run), its
    constants scaled to the fixed costs that run measured: its time outside
    windows (wall_s less the windows, warmups and settles its plan asks for)
    over what the constants gave for its own plan. `rooftop plan --from RUN`."""
    if run.status != "complete":
        raise PlanError(f"--from {run.id}: the run is {run.status}; its time is that of a complete run only")
    own = forecast(run.config)
    phases = [own.phases[p] for p in run.config.get("stages") or ["collect"] if p in own.phases]
    fixed = sum(e.overhead_s for e in phases)
    rest = sum(e.total_s - e.overhead_s for e in phases)
    outside = run.wall_s - rest
    if fixed <= 0 or run.wall_s <= 0 or outside <= 0:
        raise PlanError(
            f"--from {run.id}: its time ({run.wall_s:.1f} s) does not exceed its windows, warmups and "
            f"settles ({rest:.1f} s): no fixed cost to calibrate with"
        )
    k = outside / fixed
    launcher = run.config["launcher"]["type"]
    source = (
        f"calibrated on run {run.id} ({launcher}, {len(run.config.get('nodes') or [])} nodes, machine "
        f"{m['identity'] if (m := machine.of_environment(run.environment)) else 'not recorded'}, "
        f"{run.created[:10]}): its {outside:.1f} s outside windows were "
        f"{k:.2f} x the {fixed:.1f} s these constants gave for it"
    )
    return calibrated(launch_mode(run.config), k, source, launcher)


def _with_pairs(cfg: dict, x: PairsExpected | None) -> dict[str, Work]:
    """collect's work with the client ceiling's from its pair strategy's
    expected counts, in stage order. Its measurement is never measured once
    with another stage's here: that takes a pair of the only 2 nodes, a plan
    listed row by row."""
    client = stages.of_role("client")
    other = _with_key(cfg, client.switch, False) if client.switch else cfg
    work = count(other, plan_collect(other))
    if x is None:
        return work
    out: dict[str, Work] = {}
    for label, w in work.items():
        if client.name not in out and stages.order(label.split("+")[0]) > stages.order(client.name):
            out[client.name] = pair_work(cfg, x)
        out[label] = w
    out.setdefault(client.name, pair_work(cfg, x))
    return out


def _with_key(cfg: dict, path: str, value) -> dict:
    """A copy of cfg with one dotted key set: only the sections on its path
    are copied (not a deep copy of 100,000 nodes' cores, which took most of
    `rooftop plan` at that size); the rest is shared, read only."""
    out = dict(cfg)
    d = out
    parts = path.split(".")
    for part in parts[:-1]:
        d[part] = dict(d.get(part) or {})
        d = d[part]
    set_key(d, parts[-1], value)
    return out


__all__ = [
    "LIST_ROWS",
    "Forecast",
    "PlanError",
    "client_pairs",
    "default_cores",
    "even_groups",
    "forecast",
    "of_placements",
    "planned_nodes",
    "read_topology",
    "resolve_planned",
    "calibration",
]
