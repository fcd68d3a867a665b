"""What a pair strategy is (PairStrategy): the placements of the client
ceiling it plans, and what it is expected to measure on N nodes in a
topology (PairsExpected), which `rooftop plan` and the dry run report
before anything runs."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field

from rooftop.keys import Key
from rooftop.launchers import on_this_machine
from rooftop.stages.base import PairRound, Placement
from rooftop.topology.base import CLASSES, Topology


@dataclass(frozen=True)
class PairsExpected:
    """What a pair strategy is expected to measure, per metric and sample
    (every metric measures the same pairs, each sample a window of each)."""

    #: Node pairs measured (a strategy that draws more as it goes: its first batch).
    pairs: int
    #: Client rounds: pairs measured at once in one round (serial: one each).
    rounds: int
    #: Server groups started (placements).
    placements: int
    #: Server node launches over those placements (one server process each).
    server_nodes: int
    #: Pairs measured per topology class, by the name reports give it
    #: (rooftop.topology.CLASSES: "same switch", "same group", "across
    #: groups"); empty without a topology.
    by_class: dict[str, int] = field(default_factory=dict)
    #: The relative half-width (0.05: +-5 %) of each class's client ceiling
    #: interval the strategy draws pairs until (None: it measures a fixed set
    #: of pairs).
    interval: float | None = None
    #: The spread of pair rates within a class (standard deviation over the
    #: mean) that `widths` assume.
    spread: float | None = None
    #: Per class: the half-width its interval would have after the planned
    #: pairs at that spread (None: too few pairs for an interval). Within
    #: `interval`: the first batch is likely the last for that class.
    widths: dict[str, float | None] = field(default_factory=dict)
    #: The most pairs one of its rounds measures at once, where the strategy
    #: schedules them itself (None: its rounds hold the pairs evenly).
    widest: int | None = None
    #: The follow-up batch a suspect adds before it is named (a strategy that
    #: re-measures suspects): pairs per suspect node and per suspect link.
    follow_up: dict[str, int] = field(default_factory=dict)

    @property
    def most_at_once(self) -> int:
        """The most pairs one round measures at once."""
        if self.widest is not None:
            return self.widest
        return -(-self.pairs // self.rounds) if self.rounds else 0


@dataclass(frozen=True)
class PairStrategy:
    """One collect.pairs choice."""

    #: Its collect.pairs value.
    name: str
    #: Its collect.pairs help, one sentence.
    help: str
    #: The client ceiling's placements under a resolved config.
    plan: Callable[[dict], list[Placement]]
    #: expected(cfg, topology): what it is expected to measure on the
    #: config's nodes (topology: a rooftop.topology.Topology of them, or
    #: None: unknown, one class).
    expected: Callable[[dict, Topology | None], PairsExpected]
    #: Config keys of its own (declared in its file, gathered by config.KEYS).
    keys: tuple[Key, ...] = ()
    #: It draws pairs as the campaign goes (rooftop.campaign.sampling asks
    #: it for more after each batch, from what was measured).
    adaptive: bool = False


def all_pairs(n: int) -> int:
    """Unordered pairs of n nodes: n(n-1)/2."""
    return n * (n - 1) // 2


def by_class(n: int, topology: Topology | None) -> dict[str, int]:
    """Every unordered pair of n nodes, counted by topology class, by the
    name reports give it (empty without a topology)."""
    if topology is None:
        return {}
    return {CLASSES[c]: k for c, k in topology.sizes().items()}


def placements(rounds: list[PairRound], cfg: dict) -> list[Placement]:
    """Client peak placements measuring rounds of disjoint pairs at once:
    one server on each pair's first node, one client on its second, client
    i loading server i. A round of one pair is stored as a serial pair is."""
    return [
        Placement([a for a, _ in pairs], 1).measure(
            "client_peak", cfg, "collect", [b for _, b in pairs], 1, pairs=pairs, windows=pair_windows(cfg)
        )
        for pairs in rounds
    ]


def pair_windows(cfg: dict) -> int:
    """Engine windows per node pair: collect.pair_windows, else collect.windows."""
    c = cfg["collect"]
    return c.get("pair_windows") or c["windows"]


def shares_cores(cfg: dict) -> bool:
    """collect.pairs_share_cores: pairs whose nodes share cores may be
    measured at once, every process blocking for its completions (the
    config checks that: rooftop.config.resolve), so none holds a core while
    it waits; what their cores' busy share was while they ran decides
    whether they time-sliced them (the exclusion rule, rooftop.model.exclude)."""
    return bool(cfg["collect"]["pairs_share_cores"])


@contextlib.contextmanager
def bulk() -> Iterator[None]:
    """Builds many small objects that hold no reference cycle (pairs,
    rounds, counts) without the cyclic garbage collector: on 100,000 nodes
    its passes over every object already made took a third of the time."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def first_fit(pairs: Iterable[tuple[int, int]], uses: Callable[[int, int], Iterable[Hashable]]) -> list[PairRound]:
    """The pairs, in order, each put in the first round none of whose pairs
    uses anything it uses (uses(a, b): its nodes, links, cores...), else in
    a new round; each round sorted.

    That round is the lowest index free for every resource of the pair.
    Each resource keeps its taken rounds as a forest pointing past them
    (find: its lowest free round from i on, with path compression), and the
    pair's round is where those agree, so a pair looks at its own
    resources, not at every round: 100,000 nodes schedule in seconds."""
    with bulk():
        return _first_fit(pairs, uses)


def _first_fit(pairs: Iterable[tuple[int, int]], uses: Callable[[int, int], Iterable[Hashable]]) -> list[PairRound]:
    rounds: list[PairRound] = []
    after: dict[Hashable, dict[int, int]] = {}  # resource -> its taken rounds -> a later round to try

    def free(nxt: dict[int, int], i: int) -> int:
        """The lowest round from i on that is not in nxt (compressing the path)."""
        j = i
        while j in nxt:
            j = nxt[j]
        while nxt.get(i, j) != j:
            nxt[i], i = j, nxt[i]
        return j

    for a, b in pairs:
        taken = [after.setdefault(r, {}) for r in set(uses(a, b))]
        i, moved = 0, True
        while moved:  # until no resource has i taken
            moved = False
            for nxt in taken:
                if i in nxt:
                    i, moved = free(nxt, i), True
        if i == len(rounds):
            rounds.append([])
        rounds[i].append((a, b))
        for nxt in taken:
            nxt[i] = i + 1
    return [sorted(r) for r in rounds]


def shared_cores(cores: dict[int, set] | None) -> dict[int, set]:
    """node -> those of its cores another node also has. Only these can keep
    two pairs apart that their nodes do not already keep apart: a core of
    one node alone is taken exactly when that node is."""
    owners: dict = {}
    for cs in (cores or {}).values():
        for c in cs:
            owners[c] = owners.get(c, 0) + 1
    return {node: {c for c in cs if owners[c] > 1} for node, cs in (cores or {}).items()}


def known_cores(cfg: dict) -> dict[int, set] | None:
    """node -> its cores where the launcher runs engines on this machine
    (local, netns) and every node lists its cores, for pair rounds that
    must not share a core; else None (also under collect.pairs_share_cores:
    shares_cores)."""
    if shares_cores(cfg) or not on_this_machine(cfg["launcher"]["type"]):
        return None
    cores = {n["index"]: set(n.get("cores") or ()) for n in cfg["nodes"]}
    return cores if all(cores.values()) else None
