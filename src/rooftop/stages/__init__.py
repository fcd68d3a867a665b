"""Stages: what a campaign measures for the model, one file each and one
table (STAGES, in the order plans, summaries and figures list them).

Each entry carries its label, colour, role in the model, rate column and
plan (rooftop.stages.base.Stage); the campaign, ui, plots, results, model
and report iterate this table or ask it for a role, and name no stage.
Adding one: docs/extending.md.

The stages: server_peak (the server ceiling), client_peak (the client
ceiling; its pair strategies under pairs), client_node (the node-saturated
client ceiling), sweep_servers (one server node's aggregate as its processes
grow) and validate (the validation grid); base says what a stage is (Stage).
"""

from __future__ import annotations

from rooftop.stages import client_node, client_peak, server_peak, sweep_servers, validate
from rooftop.stages.base import ROLES, Measurement, PairRound, Placement, Stage, measurement_key, sample_key

__all__ = [
    "ROLES",
    "STAGES",
    "Measurement",
    "PairRound",
    "Placement",
    "Stage",
    "get",
    "names",
    "of_phase",
    "of_role",
    "measurement_key",
    "order",
    "sample_key",
]

STAGES: dict[str, Stage] = {
    s.name: s for s in (server_peak.STAGE, client_peak.STAGE, client_node.STAGE, sweep_servers.STAGE, validate.STAGE)
}


def get(name: str) -> Stage:
    """The stage of that name; KeyError names the known ones."""
    try:
        return STAGES[name]
    except KeyError:
        raise KeyError(f"unknown stage {name!r} (known: {', '.join(STAGES)})") from None


def names() -> list[str]:
    return list(STAGES)


def of_phase(phase: str) -> list[Stage]:
    """The stages one command plans, in table order."""
    return [s for s in STAGES.values() if s.phase == phase]


def of_role(role: str) -> Stage:
    """The one stage playing a model role (server, client, node, validation)."""
    found = [s for s in STAGES.values() if s.role == role]
    if len(found) != 1:
        raise LookupError(f"{len(found)} stages have the role {role!r}; the model needs exactly one")
    return found[0]


def order(name: str) -> int:
    """A stage's place in the table (unknown stages last), to sort by."""
    return list(STAGES).index(name) if name in STAGES else len(STAGES)
