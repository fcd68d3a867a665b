"""client_peak: the client ceiling (seed 000, section 4.3). One client
process against one idle server process on another node, for every
unordered node pair: one pair at a time (collect.pairs = serial), or in
pair rounds of disjoint pairs measured at once (rounds)."""

from __future__ import annotations

from rooftop.stages.base import PairRound, Placement, Stage


def round_robin(n: int) -> list[PairRound]:
    """Round-robin tournament (circle method) over nodes 0..n-1: n-1 pair
    rounds (n odd: n rounds, one node resting) of disjoint pairs covering
    every unordered pair once. Pairs are (lower, higher)."""
    nodes = list(range(n)) + ([None] if n % 2 else [])
    m = len(nodes)
    rounds = []
    for _ in range(m - 1):
        pairs = []
        for i in range(m // 2):
            a, b = nodes[i], nodes[m - 1 - i]
            if a is not None and b is not None:
                pairs.append((min(a, b), max(a, b)))
        rounds.append(sorted(pairs))
        nodes = [nodes[0], nodes[-1], *nodes[1:-1]]
    return rounds


def plan(cfg: dict) -> list[Placement]:
    n = len(cfg["nodes"])
    if cfg["collect"]["pairs"] == "rounds":
        # Disjoint pairs measured at once: one server on each pair's first
        # node, one client on its second, client i loading server i.
        return [Placement([a for a, _ in pairs], 1).measure("client_peak", cfg, "collect",
                                                            [b for _, b in pairs], 1, pairs=pairs)
                for pairs in round_robin(n)]
    out = []
    for a in range(n - 1):
        p = Placement([a], 1)
        for b in range(a + 1, n):
            p.measure("client_peak", cfg, "collect", [b], 1)
        out.append(p)
    return out


STAGE = Stage(
    name="client_peak",
    help="one client process against one idle server process on another node, every node pair",
    label="client peak (per client process)",
    legend="client peak (lone pair)",
    colour="#1f77b4",
    role="client",
    rate="per_client",
    phase="collect",
    plan=plan,
    switch="collect.client_peak",
    shared=True,
)
