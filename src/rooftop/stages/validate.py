"""validate: the validation grid, server nodes x client nodes; each sample
stores x = server processes / client processes and is checked against the
model (rooftop validate)."""

from rooftop.stages.base import Placement, Stage


def plan(cfg: dict) -> list[Placement]:
    v = cfg["validate"]
    n = len(cfg["nodes"])
    out = []
    for s in v["server_nodes"]:
        p = Placement(list(range(s)), v["servers_per_node"])
        for c in v["client_nodes"] or list(range(1, n - s + 1)):
            if s + c <= n:
                p.measure("validate", cfg, "validate", list(range(s, s + c)), v["clients_per_node"])
        if p.samples:
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
