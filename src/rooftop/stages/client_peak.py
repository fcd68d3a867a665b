"""client_peak: the client ceiling (Carns et al., CUG 2025, section 4.3). One client
process against one idle server process on another node, for every
unordered node pair: which pairs and how they are scheduled is the pair
strategy's (collect.pairs: one file each under rooftop/stages/pairs/):
one pair at a time (serial), or in pair rounds of disjoint pairs measured
at once (rounds)."""

from __future__ import annotations

from rooftop.stages import pairs
from rooftop.stages.base import Placement, Stage
from rooftop.stages.pairs.rounds import apart_by_cores, pair_rounds, round_robin

__all__ = ["STAGE", "apart_by_cores", "pair_rounds", "plan", "round_robin"]


def plan(cfg: dict) -> list[Placement]:
    return pairs.get(cfg["collect"]["pairs"]).plan(cfg)


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
