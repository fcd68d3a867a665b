"""server_peak: the server ceiling (Carns et al., CUG 2025, section 4.3). Node 0 runs S
server processes (one per usable core), every other node C clients; the
rate per server process is aggregate / S."""

from rooftop.stages.base import Placement, Stage


def plan(cfg: dict) -> list[Placement]:
    c = cfg["collect"]
    others = list(range(1, len(cfg["nodes"])))
    return [Placement([0], c["servers_per_node"]).measure("server_peak", cfg, "collect", others, c["clients_per_node"])]


STAGE = Stage(
    name="server_peak",
    help="one node runs S servers, every other node C clients: aggregate / S per server process",
    label="server peak (per server process)",
    legend="server peak",
    colour="#d62728",
    role="server",
    rate="per_server",
    phase="collect",
    plan=plan,
    switch="collect.server_peak",
    shared=True,
    saturates=True,
)
