"""sweep_servers: one server node's aggregate as its server processes grow
1..max (Carns et al., CUG 2025, Figures 9-10); drawn by plots/sweep.py."""

from rooftop.stages.base import Placement, Stage


def plan(cfg: dict) -> list[Placement]:
    c = cfg["collect"]
    others = list(range(1, len(cfg["nodes"])))
    return [
        Placement([0], s).measure("sweep_servers", cfg, "collect", others, c["clients_per_node"])
        for s in range(1, c["servers_per_node"] + 1)
    ]


STAGE = Stage(
    name="sweep_servers",
    help="node 0 runs S = 1..max servers: the node aggregate per S",
    label="server sweep (node aggregate)",
    legend="server sweep",
    colour="#8c564b",
    role="other",
    rate="aggregate",
    phase="collect",
    plan=plan,
    switch="collect.sweep_servers",
    latency=False,
    figure="sweep",
)
