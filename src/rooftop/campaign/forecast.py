"""A campaign planned before any allocation (`rooftop plan`): N planned
nodes of C cores each, optionally in topology groups, the config resolved
on them as collect resolves it on the launcher's nodes, and the estimate
of each phase (collect, then validate) by rooftop.campaign.estimate, the
dry run's own.

The phases are planned as the campaign plans them (rooftop.campaign.plan),
so a dry run on an allocation of N nodes prints the same figures, except
where the client ceiling has more rows than LIST_ROWS (all pairs of 1,000
nodes): its pair strategy's expected counts stand for them then (equal to
the listed plan's; tests/campaign/test_plan.py compares both). Nodes that
share cores (an oversubscribed emulated cluster) get more pair rounds than
planned: the dry run counts them."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path

from rooftop import stages
from rooftop.campaign.costs import CONSTANTS, launch_mode
from rooftop.campaign.estimate import Estimate, Work, count, estimate, fmt_duration, pair_work
from rooftop.campaign.plan import plan_collect, plan_validate
from rooftop.config.files import load_file, merge, set_key
from rooftop.config.resolve import resolve
from rooftop.launchers import Node
from rooftop.stages import Placement, pairs
from rooftop.stages.pairs import Groups, PairsExpected

#: A client ceiling of more rows than this (metrics x samples x pairs) is
#: not listed row by row: its pair strategy's expected counts stand for it.
LIST_ROWS = 200_000


class PlanError(ValueError):
    """What to plan for is not given or not possible (names the option or file)."""


def planned_nodes(n: int, cores: int, hosts: list[str] | None = None) -> list[Node]:
    """n nodes of `cores` cores each, sharing none (hosts: their names;
    default node0, node1, ...)."""
    return [Node(i, hosts[i] if hosts else f"node{i}", tuple(range(i * cores, (i + 1) * cores))) for i in range(n)]


def even_groups(n: int, g: int) -> list[list[int]]:
    """Nodes 0..n-1 in g groups of consecutive nodes, sizes differing by one at most."""
    if not 1 <= g <= n:
        raise PlanError(f"--groups {g}: must be 1..{n} (the nodes planned for)")
    size, extra = divmod(n, g)
    out, first = [], 0
    for i in range(g):
        k = size + (1 if i < extra else 0)
        out.append(list(range(first, first + k)))
        first += k
    return out


def read_topology(path: str) -> list[tuple[str, list[str]]]:
    """The leaf switches of a Slurm topology.conf (topology/tree): each
    SwitchName= line with Nodes=, and its hosts in file order; each is a
    group. Lines of switches above them (Switches=) and comments are read
    past; anything else is an error naming its line."""
    from rooftop.launchers.hostlist import HostlistError, expand

    p = Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise PlanError(f"--topology {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise PlanError(f"--topology {path}: cannot read it ({e})") from None
    out: list[tuple[str, list[str]]] = []
    seen: dict[str, str] = {}
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = dict(re.findall(r"(\w+)=(\S+)", line))
        if "SwitchName" not in fields or re.sub(r"\w+=\S+", "", line).strip():
            raise PlanError(
                f"--topology {path}, line {no}: not a topology.conf switch line "
                f"(SwitchName=NAME Nodes=HOSTLIST or Switches=LIST): {raw.strip()!r}"
            )
        if "Nodes" not in fields:
            continue
        try:
            hosts = expand(fields["Nodes"])
        except HostlistError as e:
            raise PlanError(f"--topology {path}, line {no}: Nodes={fields['Nodes']}: {e}") from None
        for h in hosts:
            if h in seen:
                raise PlanError(f"--topology {path}, line {no}: {h} is already under switch {seen[h]}")
            seen[h] = fields["SwitchName"]
        out.append((fields["SwitchName"], hosts))
    if not out:
        raise PlanError(f"--topology {path}: no switch with Nodes= (a Slurm topology.conf names each leaf's hosts)")
    return out


def default_cores(launcher: str, n: int) -> int:
    """Cores per planned node when the config does not say: the local
    launcher's split of this machine into n nodes, else this machine's
    cores (what srun and mpiexec assume without better knowledge)."""
    from rooftop.launchers.local import usable_cores

    cores = len(usable_cores())
    return max(1, cores // n) if launcher == "local" else cores


@dataclass
class Forecast:
    """A campaign's expected time on planned nodes, phase by phase."""

    cfg: dict
    groups: Groups
    #: Phase ("collect", "validate") -> its estimate.
    phases: dict[str, Estimate] = field(default_factory=dict)
    #: Whether the client ceiling was listed row by row (else: its pair
    #: strategy's expected counts).
    listed: bool = True

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
        mode = launch_mode(self.cfg)
        groups = f", {len(self.groups)} groups ({_sizes(self.groups)} nodes)" if self.groups else ""
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
            "constants: "
            + ", ".join(f"{c.name} {c.value:g}" for c in CONSTANTS.values())
            + " (rooftop.campaign.costs; docs/measurement.md)",
        ]
        if not self.listed:
            out.append("the client ceiling's pairs are counted by its pair strategy, not listed one by one")
        return out

    def as_dict(self) -> dict:
        mode = launch_mode(self.cfg)
        return {
            "nodes": self.nodes,
            "cores_per_node": self.cores_per_node,
            "groups": [len(g) for g in self.groups] if self.groups else None,
            "launcher": self.cfg["launcher"]["type"],
            "launch_mode": mode.name,
            "metrics": self.cfg["metrics"],
            "constants": {c.name: c.value for c in CONSTANTS.values()},
            "phases": {p: e.as_dict() for p, e in self.phases.items()},
            "total_s": round(self.total_s, 3),
            "launches": self.launches,
            "listed": self.listed,
        }


def _sizes(groups: list[list[int]]) -> str:
    sizes = sorted({len(g) for g in groups})
    return " or ".join(map(str, sizes))


def resolve_planned(
    config_file: str | None, overrides: dict, groups: int | None = None, topology: str | None = None
) -> tuple[dict, Groups]:
    """The config of a campaign on planned nodes (as collect resolves it),
    and their groups: launcher.nodes of them (--nodes; default: the
    topology file's hosts), of launcher.cores_per_node cores (default:
    default_cores), in --groups even groups or the topology file's."""
    merged = merge(load_file(config_file) if config_file else None, overrides, ())
    switches = read_topology(topology) if topology else None
    hosts = [h for _, hs in switches for h in hs] if switches else None
    n = merged["launcher"]["nodes"]
    if n is None and hosts is None:
        raise PlanError("--nodes N: how many nodes to plan for (or --topology FILE, whose hosts it counts)")
    if n is None:
        n = len(hosts or ())
    if n < 2:
        raise PlanError(f"--nodes {n}: a campaign needs at least 2 nodes (a server node and a client node)")
    if hosts is not None and n != len(hosts):
        raise PlanError(f"--nodes {n}: the topology file {topology} names {len(hosts)} nodes")
    merged["launcher"]["nodes"] = n
    cores = merged["launcher"]["cores_per_node"]
    if cores is None:
        cores = default_cores(merged["launcher"]["type"], n)
    if cores < 1:
        raise PlanError(f"--cores-per-node {cores}: a node needs at least 1 core")
    cfg = resolve(merged, planned_nodes(n, cores, hosts))
    if switches:
        first = 0
        found: list[list[int]] = []
        for _, hs in switches:
            found.append(list(range(first, first + len(hs))))
            first += len(hs)
        return cfg, found
    return cfg, even_groups(n, groups) if groups else None


def client_pairs(cfg: dict, groups: Groups) -> PairsExpected | None:
    """The client ceiling's pairs as its pair strategy expects them (None:
    the config measures no client ceiling)."""
    if not stages.of_role("client").enabled(cfg):
        return None
    return pairs.get(cfg["collect"]["pairs"]).expected(cfg, groups)


def _measures_client_ceiling(placements: list[Placement]) -> bool:
    name = stages.of_role("client").name
    return any(name == sp.stage or name in sp.also for pl in placements for sp in pl.samples)


def of_placements(cfg: dict, placements: list[Placement], groups: Groups = None) -> Estimate:
    """The estimate of placements about to run (the dry run; a listed plan)."""
    x = client_pairs(cfg, groups) if _measures_client_ceiling(placements) else None
    return estimate(cfg, count(cfg, placements), x)


def forecast(cfg: dict, groups: Groups = None, list_rows: int = LIST_ROWS) -> Forecast:
    """The estimate of collect, then validate, on the config's (planned)
    nodes; a client ceiling of more than list_rows rows is counted by its
    pair strategy."""
    out = Forecast(cfg, groups)
    x = client_pairs(cfg, groups)
    rows = x.pairs * len(cfg["metrics"]) * cfg["collect"]["samples"] if x else 0
    if rows <= list_rows:
        out.phases["collect"] = of_placements(cfg, plan_collect(cfg), groups)
    else:
        out.listed = False
        out.phases["collect"] = estimate(cfg, _with_pairs(cfg, x), x)
    out.phases["validate"] = of_placements(cfg, plan_validate(cfg), groups)
    return out


def _with_pairs(cfg: dict, x: PairsExpected | None) -> dict[str, Work]:
    """collect's work with the client ceiling's from its pair strategy's
    expected counts, in stage order. Its measurement is never measured once
    with another stage's here: that takes a pair of the only 2 nodes, a plan
    listed row by row."""
    client = stages.of_role("client")
    other = copy.deepcopy(cfg)
    if client.switch:
        set_key(other, client.switch, False)
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
]
