"""client_peak: the client ceiling (Carns et al., CUG 2025, section 4.3). One client
process against one idle server process on another node, for node pairs
picked and scheduled by the pair strategy collect.pairs names
(rooftop.stages.pairs): every pair one at a time (serial), every pair in
rounds of disjoint pairs measured at once (rounds), or pairs sampled by
topology class (sample)."""

from __future__ import annotations

from rooftop.stages import pairs
from rooftop.stages.base import Placement, Stage


def plan(cfg: dict) -> list[Placement]:
    return pairs.get(cfg["collect"]["pairs"]).plan(cfg)


STAGE = Stage(
    name="client_peak",
    help="one client process against one idle server process on another node, every node pair "
    "(or pairs sampled by topology: collect.pairs = sample)",
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
