"""validate: the validation grid, server nodes x client nodes; each sample
stores x = server processes / client processes and is checked against the
model (rooftop validate)."""

from rooftop.stages.base import Placement, Stage

#: The default grid's client nodes one by one (Carns et al.'s 1..16); beyond, doubling.
ONE_BY_ONE = 16


def default_client_nodes(left: int) -> list[int]:
    """validate.client_nodes' default beside a server count that leaves
    `left` nodes: 1..16 (Carns et al., CUG 2025), then doubling (32, 64,
    ...) up to every node left -- the whole allocation in log2(N) more
    placements, not N (1,000 nodes: 22 client counts, not 996)."""
    out = list(range(1, min(ONE_BY_ONE, left) + 1))
    c = 2 * ONE_BY_ONE
    while c < left:
        out.append(c)
        c *= 2
    return out + ([left] if left > ONE_BY_ONE else [])


def plan(cfg: dict) -> list[Placement]:
    v = cfg["validate"]
    n = len(cfg["nodes"])
    out = []
    for s in v["server_nodes"]:
        p = Placement(list(range(s)), v["servers_per_node"])
        for c in v["client_nodes"] or default_client_nodes(n - s):
            if s + c <= n:
                p.measure("validate", cfg, "validate", list(range(s, s + c)), v["clients_per_node"])
        if p.measurements:
            out.append(p)
    return out


STAGE = Stage(
    name="validate",
    help="server nodes x client nodes grid; x = S / C",
    label="validation (per client process)",
    legend="validation",
    colour="#ff7f0e",
    role="validation",
    rate="per_client",
    phase="validate",
    plan=plan,
)
