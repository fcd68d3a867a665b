"""What a pair strategy is (PairStrategy): the placements of the client
ceiling it plans, and what it is expected to measure on N nodes
(PairsExpected), which `rooftop plan` reports before any allocation."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from rooftop.stages.base import Placement

#: Nodes by topology group: each group's node indices (None: one group).
Groups = list[list[int]] | None


@dataclass(frozen=True)
class PairsExpected:
    """What a pair strategy is expected to measure, per metric and sample
    (every metric measures the same pairs, each sample a window of each)."""

    #: Node pairs measured.
    pairs: int
    #: Client rounds: pairs measured at once in one round (serial: one each).
    rounds: int
    #: Server groups started (placements).
    placements: int
    #: Server node launches over those placements (one server process each).
    server_nodes: int
    #: Pairs per topology class ("within a group", "across groups"); empty
    #: without groups.
    by_class: dict[str, int] = field(default_factory=dict)
    #: The relative half-width (0.05: +-5 %) of the client ceiling interval
    #: the strategy stops at, when it stops at one (None: it measures a fixed
    #: set of pairs).
    interval: float | None = None

    @property
    def most_at_once(self) -> int:
        """The most pairs one round measures at once (rounds spread evenly)."""
        return -(-self.pairs // self.rounds) if self.rounds else 0


@dataclass(frozen=True)
class PairStrategy:
    """One collect.pairs choice."""

    name: str
    #: Its collect.pairs help, one sentence.
    help: str
    #: The client ceiling's placements under a resolved config.
    plan: Callable[[dict], list[Placement]]
    #: What it is expected to measure on the config's nodes, in these groups.
    expected: Callable[[dict, Groups], PairsExpected]


def all_pairs(n: int) -> int:
    """Unordered pairs of n nodes: n(n-1)/2."""
    return n * (n - 1) // 2


def by_class(n: int, groups: Groups) -> dict[str, int]:
    """Every unordered pair of n nodes, counted by topology class: within a
    group, across groups (empty without groups)."""
    if not groups:
        return {}
    within = sum(all_pairs(len(g)) for g in groups)
    return {"within a group": within, "across groups": all_pairs(n) - within}
