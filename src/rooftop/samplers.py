"""Samplers: quantities measured alongside a client round (a time series
sampled while its clients run), one table (SAMPLERS). Each is started just
before a round's clients and stopped once they are reaped; its value is
stored with every sample of the round, in the sample column of its name.

The first is the foreign-CPU meter (rooftop.foreign); power and CPU
samplers are to follow. Adding one: docs/extending.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from rooftop import foreign


@dataclass(frozen=True)
class Sampler:
    #: Its sample column (rooftop.store.SAMPLE_COLUMNS).
    name: str
    #: Unit of its value.
    unit: str
    help: str
    #: start(runner, placement, spec) -> a handle, just before a round's
    #: clients start (runner: the campaign.Runner; spec: the round's first).
    start: Callable[[Any, Any, Any], Any]
    #: stop(handle) -> its value over the round (None: not measurable here).
    stop: Callable[[Any], float | None]


SAMPLERS: tuple[Sampler, ...] = (
    Sampler("foreign_cpu", "cores",
            "CPU other processes used on the round's cores while it ran (1.0: a whole core); "
            "measured for launchers on this machine only",
            start=foreign.meter, stop=lambda meter: meter.stop()),
)


def start_all(runner, placement, spec) -> dict[str, Any]:
    """Every sampler started for one round: name -> handle."""
    return {s.name: s.start(runner, placement, spec) for s in SAMPLERS}


def stop_all(running: dict[str, Any]) -> dict[str, float | None]:
    """Every sampler stopped: name -> value."""
    return {s.name: s.stop(running[s.name]) for s in SAMPLERS if s.name in running}
