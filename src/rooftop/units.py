"""Units of rate: one table (UNITS), each entry a base unit with its named
scales, how text and figure axes show it, and what a parameters file may
write. Every rate rooftop prints, plots or reads goes through here. And
sizes (parse_size): every transfer or buffer size a config, a load or a
mix names is read here, as the engine reads it.

Adding a unit: one Unit entry in UNITS (its scales largest first); a metric
then names it (rooftop.metrics), and tests/test_registries.py checks that
every metric's unit is here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from rooftop.keys import ConfigError, short


@dataclass(frozen=True)
class Scale:
    """A named multiple of a base unit: label and factor (base units per one)."""

    label: str
    factor: float


@dataclass(frozen=True)
class Show:
    """One way a value is displayed: in `label` from `at` (base units) up,
    with the format spec `digits` (text only)."""

    label: str
    at: float
    digits: str = ""


@dataclass(frozen=True)
class Unit:
    name: str  # the base unit, as stored: ops/s, bytes/s
    help: str
    scales: tuple[Scale, ...]  # every named scale, the base unit included
    #: Text (tables, warnings): the first whose `at` the value reaches, else the last.
    text: tuple[Show, ...]
    #: Figure axes: the first whose `at` the largest value reaches, else the last.
    axis: tuple[Show, ...]

    def factor(self, label: str) -> float:
        return next(s.factor for s in self.scales if s.label == label)


UNITS: dict[str, Unit] = {
    u.name: u
    for u in (
        Unit(
            "ops/s",
            "operations per second",
            scales=(Scale("ops/s", 1.0), Scale("K ops/s", 1e3), Scale("M ops/s", 1e6)),
            text=(Show("K ops/s", 1e4, ",.1f"), Show("ops/s", 0.0, ",.0f")),
            axis=(Show("M ops/s", 2e6), Show("K ops/s", 2e3), Show("ops/s", 0.0)),
        ),
        Unit(
            "bytes/s",
            "bytes per second (KiB, MiB, GiB binary; MB, GB decimal)",
            scales=(
                Scale("bytes/s", 1.0),
                Scale("KiB/s", 2.0**10),
                Scale("MiB/s", 2.0**20),
                Scale("GiB/s", 2.0**30),
                Scale("MB/s", 1e6),
                Scale("GB/s", 1e9),
            ),
            text=(Show("GiB/s", 2.0**30, ".2f"), Show("MiB/s", 2.0**20, ".1f"), Show("KiB/s", 0.0, ".1f")),
            axis=(Show("GiB/s", 2.0**29), Show("MiB/s", 0.0)),
        ),
    )
}

#: Every scale a parameters file may name -> (base unit, factor to it).
PARAM_UNITS: dict[str, tuple[str, float]] = {s.label: (u.name, s.factor) for u in UNITS.values() for s in u.scales}


def _pick(shows: tuple[Show, ...], value: float) -> Show:
    return next((s for s in shows if value >= s.at), shows[-1])


def fmt_rate(v: float | None, unit: str) -> str:
    """'35.2 K ops/s', '1.75 GiB/s'; '-' for no value."""
    if v is None:
        return "-"
    u = UNITS[unit]
    show = _pick(u.text, v)
    return fmt_in(v, show.label, show.digits)


def fmt_in(v: float, label: str, digits: str) -> str:
    """v (in base units) in one named scale with a format spec: fmt_in(v,
    'GiB/s', '>10.2f') -> '      1.75 GiB/s'."""
    return f"{v / PARAM_UNITS[label][1]:{digits}} {label}"


def fmt_range(lo: float, hi: float, unit: str) -> str:
    """'32.6-39.9 K ops/s': one unit for both ends; one value when both
    ends read the same ('1.62 GiB/s', not '1.62-1.62 GiB/s')."""
    a, b = fmt_rate(lo, unit).split(" ", 1), fmt_rate(hi, unit).split(" ", 1)
    if a == b:
        return fmt_rate(hi, unit)
    if a[1] == b[1]:
        return f"{a[0]}-{b[0]} {b[1]}"
    return f"{fmt_rate(lo, unit)}-{fmt_rate(hi, unit)}"


def rate_scale(unit: str, top: float) -> tuple[float, str]:
    """(divisor, label) so a figure's axis up to `top` reads in ops/s,
    K ops/s, M ops/s, MiB/s or GiB/s."""
    u = UNITS[unit]
    show = _pick(u.axis, top)
    return u.factor(show.label), show.label


def fmt_num(v: float) -> str:
    """A number on a figure, 3 significant digits and never an exponent:
    '0.0123', '1.5', '148', '1,040', '52,400'."""
    if v == 0:
        return "0"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.3g}" if abs(v) >= 1e-3 else f"{v:.2e}"


def fmt_span(lo: float, hi: float, label: str, scale: float = 1.0) -> str:
    """A range on a figure with its unit, one value when both ends read the
    same: '148–173 K ops/s', '1,040 K ops/s' (never '1.04e+03–1.04e+03').
    lo and hi are in base units; scale is the divisor of `label`."""
    a, b = fmt_num(lo / scale), fmt_num(hi / scale)
    return f"{a} {label}" if a == b else f"{a}–{b} {label}"


def parse(label: str) -> tuple[str, float]:
    """A scale's label -> (base unit, factor); KeyError if unknown."""
    return PARAM_UNITS[label]


# Sizes -------------------------------------------------------------------

#: Largest transfer or buffer size accepted (the engine's own limit is lower).
MAX_SIZE = 1 << 40

_SIZE = re.compile(r"^(\d+)\s*([kmgt]i?b?|b)?$", re.I)


def parse_size(text: Any, key: str = "size") -> int:
    """Sizes as the engine reads them: 4096, 64KiB, 4MiB, 1GiB (binary), 4MB (decimal)."""
    if isinstance(text, bool):
        raise ConfigError(f"{key}: expected a size such as 4MiB, got {text!r}")
    if isinstance(text, int):
        if text < 1:
            raise ConfigError(f"{key}: must be at least 1 byte, got {short(text)}")
        return _size_at_most(text, key)
    m = _SIZE.match(str(text).strip())
    if not m:
        raise ConfigError(f"{key}: '{text}' is not a size (e.g. 4096, 64KiB, 4MiB, 1GiB)")
    n, unit = int(m.group(1)), (m.group(2) or "").lower()
    mult = {
        "": 1,
        "b": 1,
        "k": 1 << 10,
        "kib": 1 << 10,
        "m": 1 << 20,
        "mib": 1 << 20,
        "g": 1 << 30,
        "gib": 1 << 30,
        "t": 1 << 40,
        "tib": 1 << 40,
        "kb": 1000,
        "mb": 10**6,
        "gb": 10**9,
        "tb": 10**12,
    }.get(unit)
    if mult is None:
        raise ConfigError(f"{key}: unknown unit in '{text}' (use KiB, MiB, GiB)")
    if n < 1:
        raise ConfigError(f"{key}: must be at least 1 byte, got '{text}'")
    return _size_at_most(n * mult, key)


def _size_at_most(n: int, key: str) -> int:
    if n > MAX_SIZE:
        raise ConfigError(f"{key}: more than {MAX_SIZE >> 40} TiB ({short(n)} bytes)")
    return n
