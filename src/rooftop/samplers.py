"""Samplers: quantities measured alongside a client round, one table
(SAMPLERS). Each is started just before a round's clients and stopped once
they are reaped.

- A *column* sampler (foreign_cpu) gives one value per round, stored with
  every sample of the round in the sample column of its name.
- A *series* sampler (cpu, power) records a time series every
  `series_interval` seconds while the round runs, stored in the store's
  `series` table (round, sampler, t, quantity, value, unit) and exported
  with `rooftop export RUN --series`. Series samplers are chosen with the
  `series` key (`--series cpu,power`); they measure this machine, so with
  launchers whose engines run elsewhere they record nothing.

Adding one: docs/extending.md.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rooftop import foreign, power
from rooftop.keys import Key
from rooftop.launchers import ON_THIS_MACHINE


@dataclass(frozen=True)
class Sampler:
    #: Its sample column (column samplers) or its name in `series.sampler`.
    name: str
    #: Unit of its value (column samplers) or of its main quantity.
    unit: str
    help: str
    #: start(runner, placement, spec) -> a handle, just before a round's
    #: clients start (runner: the campaign.Runner; spec: the round's first).
    start: Callable[[Any, Any, Any], Any]
    #: stop(handle) -> its value over the round (None: not measurable here;
    #: series samplers: None, their rows are the handle's `rows`).
    stop: Callable[[Any], float | None]
    #: True: a sample column, always measured; False: a series, chosen with `sample`.
    column: bool = True


class Series:
    """A background thread calling probe() every interval seconds; rows:
    (t seconds since start, quantity, value, unit)."""

    def __init__(self, probe: Callable[[], list[tuple[str, float, str]]], interval: float):
        self.probe, self.interval, self.rows = probe, interval, []
        self.t0 = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rooftop-sampler", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._tick()

    def _tick(self) -> None:
        t = round(time.monotonic() - self.t0, 3)
        self.rows.extend((t, q, v, u) for q, v, u in self.probe())

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        if time.monotonic() - self.t0 > self.interval / 2:
            self._tick()  # the last partial interval


class Nothing:
    """A series sampler with nothing to measure here (rows empty; why: note)."""

    def __init__(self, note: str = ""):
        self.rows, self.note = [], note

    def stop(self) -> None:
        return None


def _round_cores(runner, placement, spec) -> set[int]:
    nodes = set(placement.server_nodes) | set(spec.client_nodes)
    return {c for n in runner.nodes if n.index in nodes for c in n.cores}


def cpu_series(runner, placement, spec):
    """CPU of the round's cores (user and system, in cores) and the
    machine's context switches and interrupts per second, from /proc/stat."""
    if runner.launcher.name not in ON_THIS_MACHINE:
        return Nothing("engines run on other hosts")
    cores = _round_cores(runner, placement, spec)
    last = [foreign.cpu_times(cores), time.monotonic()]

    def probe():
        now, t = foreign.cpu_times(cores), time.monotonic()
        (u0, s0, c0, i0), t0 = last
        u1, s1, c1, i1 = now
        dt = max(t - t0, 1e-6)
        last[:] = [now, t]
        return [
            ("cpu_user", (u1 - u0) / dt, "cores"),
            ("cpu_sys", (s1 - s0) / dt, "cores"),
            ("context_switches", (c1 - c0) / dt, "1/s"),
            ("interrupts", (i1 - i0) / dt, "1/s"),
        ]

    return Series(probe, runner.cfg["series_interval"])


def power_series(runner, placement, spec):
    """Package power (watts, every package) and energy so far (joules), from
    RAPL; nothing (with the reason) where RAPL is absent or unreadable."""
    if runner.launcher.name not in ON_THIS_MACHINE:
        return Nothing("engines run on other hosts")
    try:
        meter = power.PowerMeter(power.package_zones())
    except power.PowerUnavailable as e:
        return Nothing(str(e))
    return Series(lambda: [("power", meter.watts(), "W"), ("energy", meter.joules, "J")], runner.cfg["series_interval"])


SAMPLERS: tuple[Sampler, ...] = (
    Sampler(
        "foreign_cpu",
        "cores",
        "CPU other processes used on the round's cores while it ran (1.0: a whole core); "
        "measured for launchers on this machine only",
        start=foreign.meter,
        stop=lambda meter: meter.stop(),
    ),
    Sampler(
        "cores_busy",
        "1",
        "busy share of the round's cores' time while it ran, anyone's work and interrupts included "
        "(0.25: a quarter); where nodes share cores, it decides whether their processes time-sliced "
        "them (rooftop.model.exclude); measured for launchers on this machine only",
        start=foreign.busy_meter,
        stop=lambda meter: meter.stop(),
    ),
    Sampler(
        "cpu",
        "cores",
        "time series: CPU (user, system) of the round's cores, context switches and interrupts per second",
        start=cpu_series,
        stop=lambda s: s.stop(),
        column=False,
    ),
    Sampler(
        "power",
        "W",
        "time series: package power from RAPL (powercap) and energy; nothing where "
        "RAPL is absent (most VMs) or root-only",
        start=power_series,
        stop=lambda s: s.stop(),
        column=False,
    ),
)

SERIES = tuple(s.name for s in SAMPLERS if not s.column)

#: Config keys of the samplers (config.KEYS lists them).
KEYS = (
    Key(
        "series",
        "list[choice]",
        [],
        "time series recorded during every round: "
        + "; ".join(f"{s.name}: {s.help.split(': ', 1)[1]}" for s in SAMPLERS if not s.column)
        + " (default: none)",
        SERIES,
    ),
    Key("series_interval", "float", 1.0, "seconds between two points of a time series (default 1.0)", maximum=3600),
)


def start_all(runner, placement, spec) -> dict[str, Any]:
    """Every sampler of the round started: column samplers always, series
    samplers chosen in the config's `series`. Name -> handle."""
    chosen = set(runner.cfg.get("series") or ())
    return {s.name: s.start(runner, placement, spec) for s in SAMPLERS if s.column or s.name in chosen}


def stop_all(running: dict[str, Any]) -> dict[str, float | None]:
    """Every sampler stopped: column name -> value (series rows stay on their handles)."""
    out = {}
    for s in SAMPLERS:
        if s.name in running:
            value = s.stop(running[s.name])
            if s.column:
                out[s.name] = value
    return out


def series_rows(running: dict[str, Any]) -> dict[str, list[tuple]]:
    """Series sampler name -> its rows (t, quantity, value, unit), after stop_all."""
    return {name: h.rows for name, h in running.items() if hasattr(h, "rows")}


def notes(running: dict[str, Any]) -> list[str]:
    """Why a chosen series sampler recorded nothing ('power: no RAPL ...')."""
    return [f"{name}: {h.note}" for name, h in running.items() if getattr(h, "note", "")]
