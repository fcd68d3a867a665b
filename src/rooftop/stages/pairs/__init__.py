"""Pair strategies: how the client ceiling (stages/client_peak.py) picks and
schedules its node pairs, one file each and one table (PAIRS, the
collect.pairs choices in the order help lists them): serial (every pair,
one at a time), rounds (every pair, disjoint pairs at once) and sample
(pairs drawn by topology class until each class's client ceiling is known
well enough).

Each entry plans the client ceiling's placements and says what it is
expected to measure on N nodes in a topology (expected(cfg, topology) ->
PairsExpected: pairs, rounds, placements, pairs per topology class and, for
a strategy that stops at an interval width, that width and the width each
class is expected to reach). `rooftop plan` prices that before any
allocation, and the dry run prints it. Adding one: a file with its STRATEGY
(and its keys), and its line in PAIRS.

base says what a pair strategy is (PairStrategy, PairsExpected)."""

from __future__ import annotations

from rooftop.stages.pairs import rounds, sample, serial
from rooftop.stages.pairs.base import PairsExpected, PairStrategy, all_pairs, by_class

__all__ = ["KEYS", "PAIRS", "PairStrategy", "PairsExpected", "all_pairs", "by_class", "get"]

PAIRS: dict[str, PairStrategy] = {s.name: s for s in (serial.STRATEGY, rounds.STRATEGY, sample.STRATEGY)}

#: Every strategy's own keys, in table order (config.KEYS gathers them).
KEYS = [k for s in PAIRS.values() for k in s.keys]


def get(name: str) -> PairStrategy:
    """The pair strategy of that name; KeyError names the known ones."""
    try:
        return PAIRS[name]
    except KeyError:
        raise KeyError(f"unknown pair strategy {name!r} (known: {', '.join(PAIRS)})") from None
