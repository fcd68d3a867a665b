"""serial: every node pair, one at a time (Carns et al., CUG 2025): node a's
server against one client on each node b > a, one client round per pair."""

from __future__ import annotations

from rooftop.stages.base import Placement
from rooftop.stages.pairs.base import PairsExpected, PairStrategy, all_pairs, by_class, pair_windows
from rooftop.topology.base import Topology


def plan(cfg: dict) -> list[Placement]:
    n = len(cfg["nodes"])
    out = []
    for a in range(n - 1):
        p = Placement([a], 1)
        for b in range(a + 1, n):
            p.measure("client_peak", cfg, "collect", [b], 1, windows=pair_windows(cfg))
        out.append(p)
    return out


def expected(cfg: dict, topology: Topology | None = None) -> PairsExpected:
    """N(N-1)/2 pairs, each its own round; N-1 placements (node a's server
    for every b > a)."""
    n = len(cfg["nodes"])
    return PairsExpected(
        pairs=all_pairs(n), rounds=all_pairs(n), placements=n - 1, server_nodes=n - 1, by_class=by_class(n, topology)
    )


STRATEGY = PairStrategy("serial", "every node pair, one at a time, as Carns et al. (CUG 2025)", plan, expected)
