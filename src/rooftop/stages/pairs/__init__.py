"""Pair strategies: how the client ceiling (stages/client_peak.py) picks and
schedules its node pairs, one file each and one table (PAIRS, the
collect.pairs choices in the order help lists them).

Each entry plans the client ceiling's placements and says what it is
expected to measure on N nodes (PairsExpected: pairs, rounds, placements,
pairs per topology class and, for a strategy that stops at an interval
width, that width). `rooftop plan` prices that before any allocation, and
the dry run prints it; a strategy whose pairs are drawn while it measures
gives its expected counts here. Adding one: a file with its STRATEGY, and
its line in PAIRS."""

from __future__ import annotations

from rooftop.stages.pairs import rounds, serial
from rooftop.stages.pairs.base import Groups, PairsExpected, PairStrategy, all_pairs, by_class

__all__ = ["PAIRS", "Groups", "PairStrategy", "PairsExpected", "all_pairs", "by_class", "get"]

PAIRS: dict[str, PairStrategy] = {s.name: s for s in (serial.STRATEGY, rounds.STRATEGY)}


def get(name: str) -> PairStrategy:
    """The pair strategy of that name; KeyError names the known ones."""
    try:
        return PAIRS[name]
    except KeyError:
        raise KeyError(f"unknown pair strategy {name!r} (known: {', '.join(PAIRS)})") from None
