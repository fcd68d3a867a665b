"""Units of rate, and how rooftop writes every number (issue 43): one table
(UNITS), each entry a base unit with its named scales, the scales text and
figure axes read in, and what a parameters file may write. Every rate
rooftop prints, plots or reads goes through here. And sizes (parse_size):
every transfer or buffer size a config, a load or a mix names is read
here, as the engine reads it.

One way to write a number, in the CLI, the report, the figures and the
text fields of the exports (their numbers stay raw, in base units):
- a rate in the scale its value reaches, 3 significant digits: fmt_rate
  '148 M ops/s', '1.82 TiB/s', '950 ops/s' (never '148,000.0 K ops/s');
- a range with an en dash and its unit once: fmt_range '148–173 M ops/s',
  fmt_span for plain numbers and ratios '0.654–0.68';
- a plain number, 3 significant digits, never an exponent: fmt_num;
- a share as a percentage with a space: fmt_pct '55 %', '+32 %' (an
  efficiency too, never 0.55);
- a ratio of server to client processes: fmt_ratio '1:4' (servers:clients).

Adding a unit: one Unit entry in UNITS (its scales, and the ones shown);
a metric then names it (rooftop.metrics), and tests/test_registries.py
checks that every metric's unit is here.
"""

from __future__ import annotations

import math
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
    """A figure axis in `label` when its largest value reaches `at` (base units)."""

    label: str
    at: float


@dataclass(frozen=True)
class Unit:
    name: str  # the base unit, as stored: ops/s, bytes/s
    help: str
    scales: tuple[Scale, ...]  # every named scale, the base unit included
    #: Text (tables, sentences): the scales a value may read in, smallest
    #: first; a value reads in the largest it reaches (fmt_rate).
    shown: tuple[str, ...]
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
            scales=(
                Scale("ops/s", 1.0),
                Scale("K ops/s", 1e3),
                Scale("M ops/s", 1e6),
                Scale("G ops/s", 1e9),
                Scale("T ops/s", 1e12),
            ),
            shown=("ops/s", "K ops/s", "M ops/s", "G ops/s", "T ops/s"),
            axis=(
                Show("T ops/s", 1e12),
                Show("G ops/s", 1e9),
                Show("M ops/s", 1e6),
                Show("K ops/s", 1e3),
                Show("ops/s", 0.0),
            ),
        ),
        Unit(
            "bytes/s",
            "bytes per second (KiB, MiB, GiB, TiB binary; MB, GB decimal)",
            scales=(
                Scale("bytes/s", 1.0),
                Scale("KiB/s", 2.0**10),
                Scale("MiB/s", 2.0**20),
                Scale("GiB/s", 2.0**30),
                Scale("TiB/s", 2.0**40),
                Scale("MB/s", 1e6),
                Scale("GB/s", 1e9),
            ),
            shown=("bytes/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s"),
            axis=(
                Show("TiB/s", 2.0**39),
                Show("GiB/s", 2.0**29),
                Show("MiB/s", 2.0**19),
                Show("KiB/s", 2.0**9),
                Show("bytes/s", 0.0),
            ),
        ),
    )
}

#: Every scale a parameters file may name -> (base unit, factor to it).
PARAM_UNITS: dict[str, tuple[str, float]] = {s.label: (u.name, s.factor) for u in UNITS.values() for s in u.scales}

#: Significant digits of every number rooftop writes.
DIGITS = 3


def _round(v: float) -> float:
    """v to DIGITS significant digits."""
    return float(f"{v:.{DIGITS}g}")


def fmt_sig(v: float) -> str:
    """v with DIGITS significant digits, trailing zeros kept so a column
    reads alike, thousands separated, never an exponent: '1.80', '35.2',
    '148', '0.977', '1,230'."""
    if v == 0 or not math.isfinite(v):
        return f"{v:g}"
    r = _round(v)
    decimals = max(0, DIGITS - 1 - math.floor(math.log10(abs(r))))
    return f"{r:,.{decimals}f}"


def scale_for(v: float, unit: str) -> tuple[str, float]:
    """(label, factor) of the scale a rate reads in: the largest shown scale
    it reaches, one up when its rounded value would read 1,000 or more
    ('1.00 M ops/s', not '1,000 K ops/s'; '0.977 MiB/s', not '1,000 KiB/s')."""
    u = UNITS[unit]
    shown = [(label, u.factor(label)) for label in u.shown]
    i = max((k for k, (_, f) in enumerate(shown) if abs(v) >= f), default=0)
    if i + 1 < len(shown) and abs(_round(v / shown[i][1])) >= 1000:
        i += 1
    return shown[i]


def fmt_rate(v: float | None, unit: str) -> str:
    """'35.2 K ops/s', '148 M ops/s', '1.75 GiB/s', '1.82 TiB/s'; '-' for no value."""
    if v is None:
        return "-"
    label, factor = scale_for(v, unit)
    return f"{fmt_sig(v / factor)} {label}"


def fmt_range(lo: float, hi: float, unit: str) -> str:
    """'32.6–39.9 K ops/s', '148–173 M ops/s': an en dash, one scale (the
    upper end's) and its unit once; one value when both ends read the same
    ('1.62 GiB/s', not '1.62–1.62 GiB/s'); each end with its own unit when
    the lower one would read below 0.1 of the upper's scale
    ('90.0 ops/s – 39.9 K ops/s')."""
    label, factor = scale_for(max(abs(lo), abs(hi)), unit)
    if abs(lo) < 0.1 * factor <= abs(hi) and scale_for(lo, unit)[0] != label:
        return f"{fmt_rate(lo, unit)} – {fmt_rate(hi, unit)}"
    return fmt_span(lo, hi, label, factor)


def rate_scale(unit: str, top: float) -> tuple[float, str]:
    """(divisor, label) so a figure's axis up to `top` reads in the scale
    the value reaches: ops/s, K, M, G or T ops/s; bytes/s, KiB/s, MiB/s,
    GiB/s or TiB/s."""
    u = UNITS[unit]
    show = next((s for s in u.axis if top >= s.at), u.axis[-1])
    return u.factor(show.label), show.label


def fmt_num(v: float) -> str:
    """A plain number (a figure's tick, a ratio x): 3 significant digits and
    never an exponent: '0.0123', '1.5', '148', '1,040', '52,400'."""
    if v == 0:
        return "0"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.3g}" if abs(v) >= 1e-3 else f"{v:.2e}"


def fmt_span(lo: float, hi: float, label: str = "", scale: float = 1.0) -> str:
    """A range with an en dash and its unit once, one value when both ends
    read the same. With a label, a range of rates in that scale (scale: its
    divisor; lo and hi in base units), each end as fmt_rate writes it:
    '148–173 K ops/s', '1.04 M ops/s', '0.867–0.880 GiB/s'. Without, a
    range of plain numbers or ratios x, each end as fmt_num: '0.654–0.68'."""
    num = fmt_sig if label else fmt_num
    a, b = num(lo / scale), num(hi / scale)
    text = a if a == b else f"{a}–{b}"
    return f"{text} {label}" if label else text


def fmt_pct(share: float | None, digits: int = 0, sign: bool = False) -> str:
    """A share as a percentage, with a space before the sign: 0.55 -> '55 %';
    sign=True: '+32 %', '-1 %'; '-' for no value. Efficiencies, errors,
    changes and overheads are all written so (never 0.55, never '55%')."""
    if share is None or not math.isfinite(share):
        return "-"
    return f"{share * 100:{'+' if sign else ''}.{digits}f} %"


def fmt_ratio(servers: int, clients: int) -> str:
    """A ratio of server to client processes, servers first: '1:4', '2:1'
    (the verdict's '1:4 (servers:clients)')."""
    return f"{servers}:{clients}"


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
