"""What a pair strategy is: how the client peak stage picks and schedules
its node pairs (PairStrategy)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rooftop.config.keys import Key
from rooftop.stages.base import PairRound, Placement


@dataclass(frozen=True)
class PairStrategy:
    #: Its collect.pairs value.
    name: str
    #: One line: what it measures and how (the key's help).
    help: str
    #: The client peak placements under a resolved config.
    plan: Callable[[dict], list[Placement]]
    #: expected(n_nodes, topology, cfg) -> (pairs, rounds): what it measures
    #: for n nodes without an allocation (rooftop plan). topology: a
    #: rooftop.topology.Topology, a group count, or None (one group).
    expected: Callable[[int, object, dict], tuple[int, int]]
    #: Config keys of its own (declared in its file, gathered by config.KEYS).
    keys: tuple[Key, ...] = ()
    #: It draws pairs as the campaign goes (rooftop.campaign.sampling asks
    #: it for more after each batch, from what was measured).
    adaptive: bool = False


def placements(rounds: list[PairRound], cfg: dict) -> list[Placement]:
    """Client peak placements measuring rounds of disjoint pairs at once:
    one server on each pair's first node, one client on its second, client
    i loading server i. A round of one pair is stored as a serial pair is."""
    return [
        Placement([a for a, _ in pairs], 1).measure(
            "client_peak", cfg, "collect", [b for _, b in pairs], 1, pairs=pairs
        )
        for pairs in rounds
    ]


def known_cores(cfg: dict) -> dict[int, set] | None:
    """node -> its cores where the launcher runs engines on this machine
    (local, netns) and every node lists its cores; else None."""
    from rooftop.launchers import on_this_machine

    if not on_this_machine(cfg.get("launcher", {}).get("type", "")):
        return None
    cores = {n["index"]: set(n.get("cores") or ()) for n in cfg["nodes"]}
    return cores if all(cores.values()) else None
