"""A roofline's ceilings (rooftop.model): a range of rates with the interval of its
mean (Student t), and the practical ratios a ridge is rounded to."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from rooftop.units import fmt_ratio

#: The practical ratio may fall short of the client ceiling by this much.
PRACTICAL_TOLERANCE = 0.05

#: A client-node sample reaching this share of its servers' capacity
#: (x * server ceiling) measured the servers, not the client node.
SERVER_BOUND = 0.8


#: Confidence of each ceiling's interval.
CONFIDENCE = 0.95
#: Student t quantiles t(0.975, df), df = 1..30.
_T975 = (
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
)


class ModelError(ValueError):
    """Bad or missing roofline parameters; the message says which."""


def t975(df: int) -> float:
    """The 97.5 % quantile of Student's t with df degrees of freedom (a
    table to 30, then the Cornish-Fisher expansion, within 1e-3)."""
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959964
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def t_interval(values: list[float]) -> tuple[float, float] | None:
    """95 % interval of the mean: mean +- t(0.975, n-1) s / sqrt(n), the
    lower end at least 0; None for fewer than 2 values."""
    n = len(values)
    if n < 2:
        return None
    mean = statistics.fmean(values)
    half = t975(n - 1) * statistics.stdev(values) / math.sqrt(n)
    return max(0.0, mean - half), mean + half


@dataclass
class Ceiling:
    """A range [lo, hi] and the central value the model draws (centre):
    from samples (Ceiling.of) their median; for a range given without
    samples (Ceiling.span) its midpoint; for a ratio of ceilings (the
    ridge) the ratio of their centres."""

    lo: float
    hi: float
    centre: float
    #: 95 % interval of the mean of its samples (None: fewer than 2).
    ci: tuple[float, float] | None = None
    #: How many samples (0: a published or hand-written range).
    n: int = 0
    #: The store keys of its samples: ceilings with the same keys are one measurement.
    keys: frozenset = frozenset()

    @classmethod
    def of(cls, values: list[float], keys=()) -> Ceiling:
        return cls(
            min(values), max(values), statistics.median(values), t_interval(values), len(values), frozenset(keys)
        )

    @classmethod
    def span(cls, lo: float, hi: float) -> Ceiling:
        """A published or hand-written range: no samples, centred on its midpoint."""
        return cls(lo, hi, (lo + hi) / 2)

    @property
    def median(self) -> float | None:
        """The median of its samples (None: a range given without samples)."""
        return self.centre if self.n else None

    @property
    def interval(self) -> tuple[float, float] | None:
        """What the verdict uses: the 95 % interval from samples; a range
        given without samples is its own interval; None from one sample."""
        return (self.lo, self.hi) if self.n == 0 else self.ci


def practical(x: float) -> tuple[int, int] | None:
    """(servers, clients): the smallest practical ratio, 1 server per k
    clients or m servers per client, within 5 % of the client ceiling when
    the ridge is x (a ridge of 1.002 is 1:1, not 2:1); None for x 0 or
    infinite."""
    if not 0 < x < math.inf:
        return None
    target = x / (1 + PRACTICAL_TOLERANCE)
    if target <= 1:
        return 1, max(1, math.floor(1 / target + 1e-9))
    return math.ceil(target - 1e-9), 1


def ratio_text(r: tuple[int, int] | None) -> str:
    """'1:4' (servers:clients, rooftop.units.fmt_ratio); '-' for none."""
    return "-" if r is None else fmt_ratio(*r)


def span_text(lo: tuple[int, int] | None, hi: tuple[int, int] | None) -> str:
    if lo is None and hi is None:
        return "any ratio"
    if lo is None:
        return f"any ratio up to {ratio_text(hi)}"
    if hi is None:
        return f"any ratio from {ratio_text(lo)} up"
    return f"any ratio from {ratio_text(lo)} to {ratio_text(hi)}"
