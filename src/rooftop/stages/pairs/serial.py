"""collect.pairs = serial: every unordered node pair, one at a time (as
Carns et al., CUG 2025, measures the client ceiling)."""

from __future__ import annotations

from rooftop.stages.base import Placement
from rooftop.stages.pairs.base import PairStrategy


def plan(cfg: dict) -> list[Placement]:
    n = len(cfg["nodes"])
    out = []
    for a in range(n - 1):
        p = Placement([a], 1)
        for b in range(a + 1, n):
            p.measure("client_peak", cfg, "collect", [b], 1)
        out.append(p)
    return out


def expected(n: int, topology=None, cfg: dict | None = None) -> tuple[int, int]:
    pairs = n * (n - 1) // 2
    return pairs, pairs


STRATEGY = PairStrategy("serial", "every node pair, one at a time, as Carns et al. (CUG 2025)", plan, expected)
