"""client_node: the node-saturated client ceiling (Carns et al., CUG 2025, section 5.2:
a lone client outruns a busy node). The last node full of client
processes against the servers of every other node."""

from rooftop.stages.base import Placement, Stage


def plan(cfg: dict) -> list[Placement]:
    c = cfg["collect"]
    n = len(cfg["nodes"])
    return [
        Placement(list(range(n - 1)), c["servers_per_node"]).measure(
            "client_node", cfg, "collect", [n - 1], c["clients_per_node"]
        )
    ]


STAGE = Stage(
    name="client_node",
    help="the last node full of clients against the servers of every other node",
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
