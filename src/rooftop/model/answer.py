"""One answer per metric, computed once (issue 43): the verdict, the
ceilings with their intervals, the ridge or the reason there is none, and
what the validation tested. `model`, `size`, `report`, the figures,
`history`, `check`, `export`, `compare` and the ReFrame check read it; none
derives a ridge or an accuracy of its own.

The ridge is *located* only where the verdict stands behind a ratio (kind
'ratio' or 'range'). Where it says the ceilings cannot be told apart
('indistinguishable') or cannot tell at all ('cannot_tell'), the ridge has
a reason instead of a position, and nothing shows one: no ridge line or
band in a figure, no "ridge x*" in a table or an export, no ratio in the
history.

The validation's accuracy counts only the placements that test the model:
a validation sample at the ceilings' own placement (as many server and
client nodes and processes as a ceiling sample) measures the ceilings'
repeatability, not the model, and is labelled so (Check.tests_model).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from rooftop.model.ceilings import Ceiling
from rooftop.model.evaluation import Evaluation
from rooftop.model.roofline import Roofline, finite_pair

#: Verdict kinds that locate the ridge.
LOCATED = ("ratio", "range")

#: What to do when no validation point tests the model.
UNTESTED_TODO = (
    "validate placements other than the ceilings' own (more server or client processes or nodes: "
    "rooftop validate RUN on 3 or more nodes)"
)


@dataclass(frozen=True)
class Ridge:
    """x* = client / server where the verdict locates it; else the reason."""

    located: bool
    reason: str = ""
    lo: float | None = None
    centre: float | None = None
    hi: float | None = None
    #: The 95 % interval (each end the extreme ratio of the ceilings'
    #: intervals; None: a ceiling without one, or not located).
    interval: tuple[float, float] | None = None

    def to_dict(self) -> dict:
        return {
            "located": self.located,
            "reason": self.reason or None,
            "min": self.lo,
            "median": self.centre,
            "max": self.hi,
            "ci95": finite_pair(self.interval),
        }


def ridge_of(r: Roofline, verdict: dict | None = None) -> Ridge:
    v = verdict or r.verdict()
    if v["kind"] not in LOCATED:
        return Ridge(False, unlocated_reason(r, v))
    g = r.ridge
    return Ridge(True, "", g.lo, g.centre, g.hi, r.ridge_interval)


def unlocated_reason(r: Roofline, v: dict) -> str:
    """Why the verdict locates no ridge, in a clause."""
    if v["kind"] == "cannot_tell":
        return v["text"].removeprefix("cannot tell: ")
    if r.one_measurement:
        return "the client and server ceilings are one measurement (the same placement)"
    return "the ceilings' intervals overlap: " + v["text"].removeprefix("the ceilings are not distinguishable here: ")


@dataclass(frozen=True)
class Accuracy:
    """What the validation tested: the median |error| over the placements
    that test the model (None: none did), and the repeatability of the
    ceilings' own placement measured again."""

    tested: int = 0
    error_pct: float | None = None
    #: Per binding side (server, client): (median |error| %, placements).
    by_binding: dict = field(default_factory=dict)
    repeats: int = 0
    repeat_error_pct: float | None = None

    @property
    def text(self) -> str:
        """One sentence: the accuracy and what it covers, or 'not tested'."""
        rep = (
            f"; {self.repeats} point(s) at the ceilings' own placement repeat them within {self.repeat_error_pct:.0f} %"
            if self.repeats and self.repeat_error_pct is not None
            else ""
        )
        if not self.tested:
            return f"not tested: no validation placement differs from the ceilings' own{rep}; {UNTESTED_TODO}"
        return f"median |error| {self.error_pct:.0f} % over {self.tested} placement(s) that test the model{rep}"

    def to_dict(self) -> dict:
        return {
            "tested": self.tested,
            "median_abs_error_pct": self.error_pct,
            "by_binding": {
                side: {"median_abs_error_pct": e, "placements": n} for side, (e, n) in sorted(self.by_binding.items())
            },
            "repeats": self.repeats,
            "repeat_median_abs_error_pct": self.repeat_error_pct,
            "text": self.text,
        }


def accuracy_of(ev: Evaluation | None) -> Accuracy:
    if ev is None:
        return Accuracy()
    tests = [c for c in ev.checks if c.tests_model]
    repeats = [c for c in ev.checks if not c.tests_model]
    med = lambda cs: statistics.median(abs(c.error_pct) for c in cs) if cs else None  # noqa: E731
    by = {side: (med(cs), len(cs)) for side in ("server", "client") if (cs := [c for c in tests if c.binding == side])}
    return Accuracy(len(tests), med(tests), by, len(repeats), med(repeats))


@dataclass(frozen=True)
class Answer:
    """A metric's one answer (module docstring)."""

    metric: str
    unit: str
    roofline: Roofline
    verdict: dict
    ridge: Ridge
    accuracy: Accuracy

    @property
    def client(self) -> Ceiling:
        """The client ceiling the model uses (the lower of the isolated and the node-full one)."""
        return self.roofline.client_bound

    @property
    def server(self) -> Ceiling:
        return self.roofline.server

    @property
    def located(self) -> bool:
        return self.ridge.located

    @property
    def ratio(self) -> tuple[int, int] | None:
        """(servers, clients) to deploy; None where the verdict gives none."""
        return tuple(self.verdict["ratio"]) if self.located and self.verdict.get("ratio") else None

    def to_dict(self) -> dict:
        """The verdict, the ridge (located, or why not), the recommended
        ratio (None where the verdict gives none) and the accuracy."""
        return {
            "verdict": self.verdict,
            "ridge": self.ridge.to_dict(),
            "recommended": self.roofline.recommended() if self.located else None,
            "accuracy": self.accuracy.to_dict(),
        }


def answer(r: Roofline, ev: Evaluation | None = None) -> Answer:
    """The answer of one roofline (and its validation, when it has one)."""
    v = r.verdict()
    return Answer(r.metric, r.unit, r, v, ridge_of(r, v), accuracy_of(ev))


def answer_of(ev: Evaluation, res=None) -> Answer:
    """A metric's one answer: the run's own (res.answers, res: the run's
    results, rooftop.results) when ev is the run's evaluation, else the
    answer of ev's roofline (a parameters file's)."""
    m = ev.roofline.metric
    return res.answers[m] if res is not None and res.evaluations.get(m) is ev else answer(ev.roofline, ev)
