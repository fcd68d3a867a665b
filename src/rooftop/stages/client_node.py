"""client_node: the node-saturated client ceiling (Carns et al., CUG 2025, section 5.2:
a lone client outruns a busy node). The last node full of client
processes against the servers of every other node -- where the run knows
its topology (collect --pairs sample), of the other nodes of the client
node's own switch (else of its group) when there are two or more: servers
across groups would load the group links, and the ceiling would be
theirs, not the node's."""

from rooftop.stages.base import Placement, Stage
from rooftop.topology import of_config


def server_nodes(cfg: dict) -> list[int]:
    """The servers' nodes: every node but the last (the client node), or
    under a known topology the nearest of them: its switch's, else its
    group's, else every other node -- at least two nodes (ample servers;
    one node's would be a client ceiling pair, and could bind the servers)."""
    n = len(cfg["nodes"])
    client, others = n - 1, list(range(n - 1))
    # A run records its topology with --pairs sample ('rooftop plan'
    # records one for every strategy: only sample's is collect's).
    topo = of_config(cfg) if cfg["collect"]["pairs"] == "sample" else None
    if topo is None or not others:
        return others
    for near in (("switch",), ("switch", "group")):
        mates = [i for i in others if topo.klass(i, client) in near]
        if len(mates) >= 2:
            return mates
    return others


def plan(cfg: dict) -> list[Placement]:
    c = cfg["collect"]
    n = len(cfg["nodes"])
    return [
        Placement(server_nodes(cfg), c["servers_per_node"]).measure(
            "client_node", cfg, "collect", [n - 1], c["clients_per_node"]
        )
    ]


STAGE = Stage(
    name="client_node",
    help=(
        "the last node full of clients against the servers of every other node (under a known topology: "
        "of its own switch, else group)"
    ),
    label="client node (per client process, node full)",
    legend="client node full",
    colour="#9467bd",
    role="node",
    rate="per_client",
    phase="collect",
    plan=plan,
    switch="collect.client_node",
    shared=True,
)
