"""Meters: quantities measured alongside a client round, one table
(METERS). Each is started just before a round's clients and stopped once
they are reaped.

- A *column* meter (foreign_cpu) gives one value per round, stored with
  every sample of the round in the sample column of its name.
- A *series* meter (cpu, power) records a time series every
  `series_interval` seconds while the round runs, stored in the store's
  `series` table (round, source: the meter, t, quantity, value, unit) and
  exported with `rooftop export RUN --series`. Series meters are chosen with the
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
class Meter:
    #: Its sample column (column meters) or its name in `series.source`.
    name: str
    #: Unit of its value (column meters) or of its main quantity.
    unit: str
    help: str
    #: start(campaign, placement, measurement) -> a handle, just before a
    #: round's clients start (campaign: what the round runs on, its .cfg,
    #: .launcher and .nodes: the campaign.RoundMeasurer; measurement: the
    #: round's, a stages.Measurement).
    start: Callable[[Any, Any, Any], Any]
    #: stop(handle) -> its value over the round (None: not measurable here;
    #: series meters: None, their rows are the handle's `rows`).
    stop: Callable[[Any], float | None]
    #: True: a sample column, always measured; False: a series, chosen with `series`.
    column: bool = True


class Series:
    """A background thread calling probe() every interval seconds; rows:
    (t seconds since start, quantity, value, unit)."""

    def __init__(self, probe: Callable[[], list[tuple[str, float, str]]], interval: float):
        self.probe, self.interval, self.rows = probe, interval, []
        self.t0 = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rooftop-meter", daemon=True)
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
    """A series meter with nothing to measure here (rows empty; why: note)."""

    def __init__(self, note: str = ""):
        self.rows, self.note = [], note

    def stop(self) -> None:
        return None


def _round_cores(campaign, placement, measurement) -> set[int]:
    nodes = set(placement.server_nodes) | set(measurement.client_nodes)
    return {c for n in campaign.nodes if n.index in nodes for c in n.cores}


def cpu_series(campaign, placement, measurement):
    """CPU of the round's cores (user and system, in cores) and the
    machine's context switches and interrupts per second, from /proc/stat."""
    if campaign.launcher.name not in ON_THIS_MACHINE:
        return Nothing("engines run on other hosts")
    cores = _round_cores(campaign, placement, measurement)
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

    return Series(probe, campaign.cfg["series_interval"])


def power_series(campaign, placement, measurement):
    """Package power (watts, every package) and energy so far (joules), from
    RAPL; nothing (with the reason) where RAPL is absent or unreadable."""
    if campaign.launcher.name not in ON_THIS_MACHINE:
        return Nothing("engines run on other hosts")
    try:
        meter = power.PowerMeter(power.package_zones())
    except power.PowerUnavailable as e:
        return Nothing(str(e))
    return Series(
        lambda: [("power", meter.watts(), "W"), ("energy", meter.joules, "J")], campaign.cfg["series_interval"]
    )


METERS: tuple[Meter, ...] = (
    Meter(
        "foreign_cpu",
        "cores",
        "CPU other processes used on the round's cores while it ran (1.0: a whole core); "
        "measured for launchers on this machine only",
        start=foreign.meter,
        stop=lambda meter: meter.stop(),
    ),
    Meter(
        "cores_busy",
        "1",
        "busy share of the round's cores' time while it ran, anyone's work and interrupts included "
        "(0.25: a quarter); where nodes share cores, it decides whether their processes time-sliced "
        "them (rooftop.model.exclude); measured for launchers on this machine only",
        start=foreign.busy_meter,
        stop=lambda meter: meter.stop(),
    ),
    Meter(
        "cpu",
        "cores",
        "time series: CPU (user, system) of the round's cores, context switches and interrupts per second",
        start=cpu_series,
        stop=lambda s: s.stop(),
        column=False,
    ),
    Meter(
        "power",
        "W",
        "time series: package power from RAPL (powercap) and energy; nothing where "
        "RAPL is absent (most VMs) or root-only",
        start=power_series,
        stop=lambda s: s.stop(),
        column=False,
    ),
)

SERIES = tuple(s.name for s in METERS if not s.column)

#: Config keys of the meters (config.KEYS lists them).
KEYS = (
    Key(
        "series",
        "list[choice]",
        [],
        "time series recorded during every round: "
        + "; ".join(f"{s.name}: {s.help.split(': ', 1)[1]}" for s in METERS if not s.column)
        + " (default: none)",
        SERIES,
    ),
    Key("series_interval", "float", 1.0, "seconds between two points of a time series (default 1.0)", maximum=3600),
)


def start_all(campaign, placement, measurement) -> dict[str, Any]:
    """Every meter of the round started: column meters always, series
    meters chosen in the config's `series`. Name -> handle."""
    chosen = set(campaign.cfg["series"] or ())
    return {s.name: s.start(campaign, placement, measurement) for s in METERS if s.column or s.name in chosen}


def stop_all(running: dict[str, Any]) -> dict[str, float | None]:
    """Every meter stopped: column name -> value (series rows stay on their handles)."""
    out = {}
    for s in METERS:
        if s.name in running:
            value = s.stop(running[s.name])
            if s.column:
                out[s.name] = value
    return out


def series_rows(running: dict[str, Any]) -> dict[str, list[tuple]]:
    """Series meter name -> its rows (t, quantity, value, unit), after stop_all."""
    return {name: h.rows for name, h in running.items() if hasattr(h, "rows")}


def notes(running: dict[str, Any]) -> list[str]:
    """Why a chosen series meter recorded nothing ('power: no RAPL ...')."""
    return [f"{name}: {h.note}" for name, h in running.items() if getattr(h, "note", "")]
