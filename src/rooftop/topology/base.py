"""What a topology is here: each node's switch and group, and the class of a
node pair (same switch, same group, across groups)."""

from __future__ import annotations

from dataclasses import dataclass, field

from rooftop.keys import ConfigError

#: Pair classes, nearest first, with how reports name them ("all": the
#: topology is unknown, every pair one class).
CLASSES = {"switch": "same switch", "group": "same group", "global": "across groups", "all": "any two nodes"}


class TopologyError(ConfigError):
    """A topology source cannot say where the nodes are (names the source,
    the file and line, or the node)."""


@dataclass
class Topology:
    """switch[i], group[i]: node i's leaf switch and group (any names; a
    group holds one or more switches). source: where it was read
    (slurm, file, emulated, probe, or none: unknown, one class)."""

    source: str
    switch: list[str]
    group: list[str]
    #: How it was found, one line (the source's command, file or probe).
    note: str = ""
    #: The probe's round-trip times: [[node a, node b, microseconds], ...].
    rtt: list = field(default_factory=list)

    def __post_init__(self):
        if len(self.switch) != len(self.group):
            raise ValueError("a topology needs a switch and a group for every node")

    @property
    def n(self) -> int:
        return len(self.switch)

    def klass(self, a: int, b: int) -> str:
        """The class of the pair (a, b): switch, group or global (all: unknown)."""
        if self.source == "none":
            return "all"
        if self.switch[a] == self.switch[b]:
            return "switch"
        return "group" if self.group[a] == self.group[b] else "global"

    def sizes(self) -> dict[str, int]:
        """How many node pairs each class holds (classes without any left out)."""
        per_switch: dict[str, int] = {}
        per_group: dict[str, int] = {}
        for s, g in zip(self.switch, self.group):
            per_switch[s] = per_switch.get(s, 0) + 1
            per_group[g] = per_group.get(g, 0) + 1
        pairs = lambda k: k * (k - 1) // 2
        same_switch = sum(pairs(k) for k in per_switch.values())
        same_group = sum(pairs(k) for k in per_group.values()) - same_switch
        out = {"switch": same_switch, "group": same_group, "global": pairs(self.n) - same_switch - same_group}
        if self.source == "none":
            out = {"all": pairs(self.n)}
        return {c: k for c, k in out.items() if k > 0}

    def members(self) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
        """(switch -> its nodes, group -> its nodes), in node order."""
        sw: dict[str, list[int]] = {}
        gr: dict[str, list[int]] = {}
        for i, (s, g) in enumerate(zip(self.switch, self.group)):
            sw.setdefault(s, []).append(i)
            gr.setdefault(g, []).append(i)
        return sw, gr

    def describe(self) -> str:
        """'3 groups, 3 switches (emulated: ...)'."""
        sw, gr = self.members()
        return f"{len(gr)} group(s), {len(sw)} switch(es) from {self.source}" + (f" ({self.note})" if self.note else "")

    def to_dict(self) -> dict:
        """As a run's config records it ("topology")."""
        d = {
            "source": self.source,
            "note": self.note,
            "nodes": [{"index": i, "switch": s, "group": g} for i, (s, g) in enumerate(zip(self.switch, self.group))],
        }
        if self.rtt:
            d["rtt_us"] = self.rtt
        return d

    @classmethod
    def from_dict(cls, d: dict) -> Topology:
        nodes = sorted(d["nodes"], key=lambda n: n["index"])
        return cls(
            d.get("source", "?"),
            [str(n["switch"]) for n in nodes],
            [str(n["group"]) for n in nodes],
            d.get("note", ""),
            list(d.get("rtt_us") or []),
        )

    @classmethod
    def flat(cls, n: int, source: str = "none", note: str = "") -> Topology:
        """Every node on one switch: one class."""
        return cls(source, ["all"] * n, ["all"] * n, note)

    @classmethod
    def even(cls, n: int, groups: int, switches_per_group: int = 1) -> Topology:
        """n nodes split into `groups` groups of consecutive nodes, each of
        `switches_per_group` switches (what 'rooftop plan' assumes for a
        group count)."""
        if not 1 <= groups <= max(1, n) or switches_per_group < 1:
            raise TopologyError(f"{groups} group(s) of {switches_per_group} switch(es) do not fit {n} nodes")
        group = [i * groups // n for i in range(n)]
        first: dict[int, int] = {}
        size: dict[int, int] = {}
        for i, g in enumerate(group):  # (one pass: not one per group)
            first.setdefault(g, i)
            size[g] = size.get(g, 0) + 1
        switch = [f"g{g}s{(i - first[g]) * switches_per_group // size[g]}" for i, g in enumerate(group)]
        return cls("groups", switch, [f"g{g}" for g in group], f"{groups} even groups")


def of_config(cfg: dict) -> Topology | None:
    """The topology a run recorded (None: none, or not for its nodes)."""
    d = cfg.get("topology")
    if not isinstance(d, dict) or not d.get("nodes"):
        return None
    t = Topology.from_dict(d)
    return t if t.n == len(cfg.get("nodes") or []) else None


class Unavailable(Exception):
    """A source has nothing to say here (not under Slurm, no file, no
    groups): the next source is asked. The message says why."""


@dataclass
class Context:
    """What a source may look at: the resolved config (its nodes), their
    host names, and the launcher (the probe starts engines with it; None:
    nothing may be started, a dry run)."""

    cfg: dict
    hosts: list[str]
    launcher: object = None
