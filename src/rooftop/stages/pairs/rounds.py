"""collect.pairs = rounds: every unordered node pair, in a round-robin
tournament of disjoint pairs measured at once (N-1 rounds of N/2 pairs,
about N/2 times faster than serial; pairs may then share a switch). On
launchers that know the nodes' cores (local, netns: engines on this
machine), no round runs two pairs whose nodes share a core: such pairs move
to rounds of their own (apart_by_cores), and the dry run and the time
estimate show those rounds."""

from __future__ import annotations

from rooftop.stages.base import PairRound, Placement
from rooftop.stages.pairs.base import (
    PairsExpected,
    PairStrategy,
    all_pairs,
    by_class,
    first_fit,
    known_cores,
    placements,
    shared_cores,
)
from rooftop.topology.base import Topology


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


def apart_by_cores(rounds: list[PairRound], cores: dict[int, set]) -> list[PairRound]:
    """The pairs of `rounds`, in order, each put in the first round whose
    pairs use none of its nodes and none of its nodes' cores (cores: node ->
    the cores its processes may run on). Without shared cores this is
    `rounds` itself (each round-robin round already covers every node but
    a resting one); pairs sharing cores get rounds of their own."""
    own = shared_cores(cores)
    none: set = set()
    return first_fit(
        (p for rnd in rounds for p in rnd),
        lambda a, b: (a, b, *(("core", c) for c in own.get(a, none) | own.get(b, none))),
    )


def pair_rounds(cfg: dict) -> list[PairRound]:
    """The pair rounds collect.pairs = rounds measures: round_robin, kept
    apart by cores where the launcher knows them (engines on this machine)."""
    rounds = round_robin(len(cfg["nodes"]))
    cores = known_cores(cfg)
    return apart_by_cores(rounds, cores) if cores else rounds


def plan(cfg: dict) -> list[Placement]:
    return placements(pair_rounds(cfg), cfg)


def expected(cfg: dict, topology: Topology | None = None) -> PairsExpected:
    """N(N-1)/2 pairs in N-1 rounds (N odd: N), a placement each, on nodes
    that share no core (nodes that do get more rounds: the dry run counts
    them)."""
    n = len(cfg["nodes"])
    rounds = n - 1 if n % 2 == 0 else n
    return PairsExpected(
        pairs=all_pairs(n), rounds=rounds, placements=rounds, server_nodes=all_pairs(n), by_class=by_class(n, topology)
    )


STRATEGY = PairStrategy(
    "rounds",
    "every node pair, in a round-robin tournament: N-1 rounds of N/2 disjoint pairs measured at once, "
    "about N/2 times faster; pairs may then share a switch",
    plan,
    expected,
)
