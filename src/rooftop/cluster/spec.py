"""What 'rooftop cluster up' is asked for: nodes, cores, link rates, CPU caps.

Parsing and validation only (no system calls), so errors name the bad part
before anything is built.

Rates (--link-rate, --node I:rate=R) are link bandwidths, stored in bit/s:

  bits per second   bit, kbit, mbit, gbit, tbit (decimal, any case: 500Mbit),
                    kibit, mibit, gibit (binary), optionally followed by /s
  bytes per second  B/s, kB/s, MB/s, GB/s (decimal), KiB/s, MiB/s, GiB/s
                    (binary); the B must be upper case
  none              the link is not shaped (a veth pair: tens of Gbit/s,
                    bounded by the CPU)

"Mb/s", "mbps" and bare numbers are refused: tc reads "bps" as *bytes* per
second, and the difference is a factor of 8.

Node options (--node, repeatable; several keys may share one option):

  I:rate=R      node I's link rate, both directions (overrides --link-rate;
                with --nics-per-node K, the rate of each of its K NICs)
  I:cpu=P%      node I may use P % of its cores' time (0 < P <= 100),
                enforced by the CPU controller (CFS quota / cpu.max)
  I:rate=R,cpu=P%

Groups (--groups G, --group-link-rate R2): the nodes split into G groups of
consecutive nodes (sizes differ by at most one), each group on a switch of
its own (a bridge), the groups joined through a top switch by one link per
group shaped to R2 (default: the node link rate). Traffic between two nodes
of one group crosses their two node links; between groups, also both
groups' links to the top switch.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass, field

#: Default link rate: a gigabit Ethernet.
DEFAULT_RATE = "1gbit"
#: Addresses: the bridge is .1, node I is .(10 + I).
MAX_NODES = 64
#: NICs per node (rails): rail k is the subnet 10.231.<k>.0/24.
MAX_NICS = 8


class ClusterError(RuntimeError):
    """The emulated cluster cannot do what was asked (names the reason).
    The launchers that read the cluster (netns, and mpiexec and srun on its
    nodes) turn it into their own LauncherError."""


_BIT_UNITS = {
    "bit": 1,
    "kbit": 10**3,
    "mbit": 10**6,
    "gbit": 10**9,
    "tbit": 10**12,
    "kibit": 2**10,
    "mibit": 2**20,
    "gibit": 2**30,
}
_BYTE_UNITS = {
    "B": 1,
    "kB": 10**3,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "KiB": 2**10,
    "MiB": 2**20,
    "GiB": 2**30,
}
RATE_FORMS = "e.g. 100mbit, 1gbit, 500Mbit, 10gbit, 125MB/s, 1GiB/s, or none"


def parse_rate(text: str, what: str = "rate") -> int | None:
    """A link rate in bit/s (None: unshaped). what names the option in errors."""
    s = str(text).strip()
    if s.lower() in ("none", "unlimited", "off"):
        return None
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([A-Za-z]+)(/s)?", s)
    if m:
        num, unit, per_s = float(m.group(1)), m.group(2), m.group(3)
        bits = None
        if unit.lower() in _BIT_UNITS:
            bits = num * _BIT_UNITS[unit.lower()]
        elif per_s and unit in _BYTE_UNITS:
            bits = num * _BYTE_UNITS[unit] * 8
        if bits is not None:
            if bits < 8000:
                raise ClusterError(f"{what} '{text}': below 8 kbit/s; tc cannot shape that slowly")
            return int(round(bits))
    raise ClusterError(
        f"{what} '{text}' is not a link rate ({RATE_FORMS}; 'bps' and 'Mb/s' are ambiguous between bits and bytes)"
    )


def format_rate(bits: int | None) -> str:
    """bit/s -> a short human form (the form tc would print)."""
    if bits is None:
        return "unshaped"
    for unit, f in (("Tbit", 10**12), ("Gbit", 10**9), ("Mbit", 10**6), ("Kbit", 10**3)):
        if bits >= f:
            v = bits / f
            return f"{v:.0f}{unit}" if abs(v - round(v)) < 1e-9 else f"{v:.3g}{unit}"
    return f"{bits}bit"


def parse_cpu(text: str, what: str) -> float:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*%", str(text).strip())
    if not m:
        raise ClusterError(
            f"{what}: '{text}' is not a percentage (e.g. cpu=50%: the node may use half of its cores' time)"
        )
    p = float(m.group(1))
    if not 0 < p <= 100:
        raise ClusterError(f"{what}: {p:g}% must be above 0 and at most 100")
    return p


@dataclass
class NodeSpec:
    index: int
    cores: list[int]
    link_rate: int | None  # bit/s, None: unshaped
    cpu_percent: float | None = None
    #: its group (its switch) with --groups; 0 otherwise
    group: int = 0


@dataclass
class ClusterSpec:
    nodes: list[NodeSpec] = field(default_factory=list)
    cores_per_node: int = 1
    #: the machine's cores the nodes were placed on
    machine_cores: list[int] = field(default_factory=list)
    #: NICs of every node, NIC k on rail k (each shaped to the node's link rate)
    nics_per_node: int = 1
    #: groups of nodes, each on a switch of its own (1: every node on one bridge)
    groups: int = 1
    #: rate of each group's link to the top switch, bit/s (None: unshaped)
    group_link_rate: int | None = None

    def to_dict(self) -> dict:
        """As recorded in the state (and compared by a second 'up'); a
        cluster without groups records no group fields, as before groups."""
        d = asdict(self)
        if self.groups == 1:
            del d["groups"], d["group_link_rate"]
            for n in d["nodes"]:
                del n["group"]
        return d

    def group_nodes(self, g: int) -> list[int]:
        return [n.index for n in self.nodes if n.group == g]

    def shared_with(self, i: int) -> list[int]:
        """Other nodes that share at least one core with node i."""
        mine = set(self.nodes[i].cores)
        return [n.index for n in self.nodes if n.index != i and mine & set(n.cores)]


def usable_cores() -> list[int]:
    return sorted(os.sched_getaffinity(0))


def place_cores(n: int, per: int | None, cores: list[int]) -> tuple[int, list[list[int]]]:
    """Cores of each of n nodes. Default: the machine split evenly (at least
    one core each; with more nodes than cores, nodes share cores round-robin).
    per: cores per node; consecutive blocks, wrapping around (so nodes share
    cores when n * per exceeds the machine)."""
    total = len(cores)
    if per is None:
        per = max(1, total // n)
    if per < 1:
        raise ClusterError(f"--cores-per-node {per}: must be at least 1")
    if per > total:
        raise ClusterError(
            f"--cores-per-node {per}: this machine has only {total} usable cores ({','.join(map(str, cores))})"
        )
    return per, [[cores[(i * per + k) % total] for k in range(per)] for i in range(n)]


def build_spec(
    nodes: int,
    cores_per_node: int | None = None,
    link_rate: str | None = None,
    node_opts: list[str] | None = None,
    cores: list[int] | None = None,
    nics_per_node: int = 1,
    groups: int = 1,
    group_link_rate: str | None = None,
) -> ClusterSpec:
    """Validates the options of 'cluster up' into a ClusterSpec."""
    if not isinstance(nodes, int) or nodes < 1:
        raise ClusterError(f"--nodes {nodes}: must be at least 1")
    if nodes > MAX_NODES:
        raise ClusterError(f"--nodes {nodes}: at most {MAX_NODES} nodes")
    if not isinstance(nics_per_node, int) or not 1 <= nics_per_node <= MAX_NICS:
        raise ClusterError(f"--nics-per-node {nics_per_node}: must be 1 to {MAX_NICS}")
    if not isinstance(groups, int) or not 1 <= groups <= nodes:
        raise ClusterError(f"--groups {groups}: must be 1 to the number of nodes ({nodes})")
    if groups > 1 and nics_per_node > 1:
        raise ClusterError(
            f"--groups {groups} with --nics-per-node {nics_per_node}: groups of nodes on switches of "
            f"their own are built for one NIC per node; use one or the other"
        )
    if group_link_rate is not None and groups == 1:
        raise ClusterError("--group-link-rate: applies to the links between groups; give --groups G (2 or more)")
    cores = list(cores) if cores is not None else usable_cores()
    rate = parse_rate(link_rate if link_rate is not None else DEFAULT_RATE, "--link-rate")
    trunk = parse_rate(group_link_rate, "--group-link-rate") if group_link_rate is not None else rate
    per, placement = place_cores(nodes, cores_per_node, cores)
    specs = [NodeSpec(i, placement[i], rate, group=i * groups // nodes) for i in range(nodes)]
    for i, opts in parse_node_options(nodes, node_opts or []).items():
        if "rate" in opts:
            specs[i].link_rate = opts["rate"]
        if "cpu" in opts:
            specs[i].cpu_percent = opts["cpu"]
    return ClusterSpec(specs, per, cores, nics_per_node, groups, trunk if groups > 1 else None)


#: What --node I:KEY=VALUE,... may set on one node.
NODE_KEYS = ("rate", "cpu")


def parse_node_options(nodes: int, node_opts: list[str], cpu_none: bool = False) -> dict[int, dict]:
    """--node I:rate=R,cpu=P% options of `cluster up` and `cluster reshape`:
    {node: {"rate": bits per second, "cpu": percent}} with only the keys
    given. cpu_none: cpu=none (or off) removes a cap (None; reshape)."""
    out: dict[int, dict] = {}
    for opt in node_opts:
        what = f"--node {opt}"
        m = re.fullmatch(r"\s*(\d+)\s*:(.+)", opt)
        if not m:
            raise ClusterError(f"{what}: expected I:rate=R or I:cpu=P% (I: node index 0..{nodes - 1})")
        i = int(m.group(1))
        if i >= nodes:
            raise ClusterError(f"{what}: node {i} does not exist (nodes are 0..{nodes - 1})")
        for item in m.group(2).split(","):
            key, eq, value = (x.strip() for x in item.partition("="))
            if not eq or not value:
                raise ClusterError(f"{what}: '{item}' is not KEY=VALUE (rate=R or cpu=P%)")
            if key not in NODE_KEYS:
                raise ClusterError(f"{what}: unknown key '{key}' (rate or cpu)")
            if key in out.get(i, {}):
                raise ClusterError(f"{what}: node {i}'s {key} is given twice")
            if key == "rate":
                out.setdefault(i, {})["rate"] = parse_rate(value, f"{what}: rate")
            elif cpu_none and value.lower() in ("none", "off"):
                out.setdefault(i, {})["cpu"] = None
            else:
                out.setdefault(i, {})["cpu"] = parse_cpu(value, f"{what}: cpu")
    return out
