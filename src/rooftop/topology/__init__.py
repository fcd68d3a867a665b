"""Where the nodes are in the network: each node's switch and group, and so
the class of a node pair -- same switch, same group, or across groups --
that the client ceiling depends on (Carns et al., CUG 2025, found the
roofline "more sensitive to network topology factors than we anticipated").

Sources, a file each and one table (SOURCES, in the order collect.topology
= auto asks them): slurm (Slurm's switch tree, 'scontrol show topology',
under Slurm), file (collect.topology_file: host switch [group] per line,
or Slurm's topology.conf), emulated (the groups of 'rooftop cluster up
--groups G') and probe (pings.py: a short latency probe that clusters the
nodes by their ping times; not `rooftop probe`, the quick answer on one
machine).
What a topology is (Topology, Context, the classes): base.
A source that has nothing to say here raises Unavailable and the next is
asked; none: one class (the topology is unknown). The topology found is
recorded in the run's config ("topology": Topology.to_dict()), so the model
classifies its pairs without asking again.
"""

from __future__ import annotations

from rooftop.keys import Key
from rooftop.topology import emulated, file, pings, slurm
from rooftop.topology.base import CLASSES, Context, Topology, TopologyError, Unavailable, of_config

__all__ = ["CLASSES", "KEYS", "SOURCES", "Context", "Topology", "TopologyError", "Unavailable", "discover", "of_config"]

#: Every source, in the order auto asks them.
SOURCES = {s.NAME: s for s in (slurm, file, emulated, pings)}

KEYS = [
    Key(
        "collect.topology",
        "choice",
        "auto",
        "where collect --pairs sample reads the nodes' switches and groups: auto (the first of "
        + ", ".join(SOURCES)
        + " that knows them), one of them: "
        + "; ".join(f"{s.NAME}: {s.HELP}" for s in SOURCES.values())
        + "; or none (one class)",
        ("auto", *SOURCES, "none"),
    ),
    Key(
        "collect.topology_file",
        "str",
        None,
        "a file mapping hosts to switches and groups: 'HOST SWITCH [GROUP]' per line (HOST may be a "
        "Slurm host list, e.g. nid[0001-0064]), or Slurm's topology.conf (SwitchName= lines); default: none",
        nullable=True,
    ),
]


def discover(cfg: dict, launcher=None) -> Topology:
    """The topology of a resolved config's nodes, from collect.topology's
    source (auto: the first that knows it; none of them: one class, the
    note saying why). launcher: the probe's (None: a dry run, no probe)."""
    nodes = cfg["nodes"]
    choice = cfg["collect"]["topology"]
    if choice == "none":
        return Topology.flat(len(nodes), "none", "collect.topology = none")
    ctx = Context(cfg, [n["host"] for n in nodes], launcher)
    why = []
    for name in list(SOURCES) if choice == "auto" else [choice]:
        try:
            return SOURCES[name].find(ctx)
        except Unavailable as e:
            why.append(f"{name}: {e}")
    if choice != "auto":
        raise TopologyError(f"collect.topology = {choice}: {why[0].split(': ', 1)[1]}")
    return Topology.flat(len(nodes), "none", "; ".join(why))
