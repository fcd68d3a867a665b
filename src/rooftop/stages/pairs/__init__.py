"""Pair strategies: how the client peak stage picks and schedules its node
pairs, one file each and one table (STRATEGIES; collect.pairs names one):
serial (every pair, one at a time), rounds (every pair, disjoint pairs at
once) and sample (pairs drawn by topology class until each class's client
ceiling is known well enough). Each entry carries its plan and its
expected(n_nodes, topology, cfg) -> (pairs, rounds) for planning a run
without an allocation (rooftop plan)."""

from __future__ import annotations

from rooftop.stages.pairs import rounds, sample, serial
from rooftop.stages.pairs.base import PairStrategy

__all__ = ["KEYS", "STRATEGIES", "PairStrategy", "get"]

STRATEGIES: dict[str, PairStrategy] = {s.name: s for s in (serial.STRATEGY, rounds.STRATEGY, sample.STRATEGY)}

#: Every strategy's own keys, in table order (config.KEYS gathers them).
KEYS = [k for s in STRATEGIES.values() for k in s.keys]


def get(name: str) -> PairStrategy:
    """The strategy of that name; KeyError names the known ones."""
    try:
        return STRATEGIES[name]
    except KeyError:
        raise KeyError(f"unknown pair strategy {name!r} (known: {', '.join(STRATEGIES)})") from None
