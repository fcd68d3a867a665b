"""The run kinds table: runs that are not campaigns, each with its own
report and figure (one file per kind; rooftop.kinds.base documents the
fields). `report`, `plot` and `model` look a run up here; a run no entry
recognises is a campaign run with a roofline.

The kinds: audit (`rooftop audit`'s runs), bursts (`rooftop bursts`'s) and
tune (`rooftop tune`'s); base (what a run kind is: RunKind) and sections
(the report sections table: what studies add to a campaign run's results,
report and figures)."""

from __future__ import annotations

from rooftop.kinds import audit, bursts, tune
from rooftop.kinds.base import RunKind

KINDS: tuple[RunKind, ...] = (audit.KIND, tune.KIND, bursts.KIND)


def of(store, run) -> RunKind | None:
    """The kind of a stored run, or None for a campaign run."""
    return next((k for k in KINDS if k.recognises(store, run)), None)
