"""The client ceiling per topology class (same switch, same group, across
groups: rooftop.topology), where a run knows its topology: a ceiling over
the class's node pairs (each pair's median rate; the interval of the mean
of the pairs, 95 %), and what a deployment would see.

A deployment whose clients and servers sit under one switch sees the
same-switch ceiling; one spread over groups mixes every class it spans,
down to the across-groups one. So the model names the class when there is
one, and the range from the lowest class to the highest otherwise."""

from __future__ import annotations

from dataclasses import dataclass

from rooftop.model.ceilings import Ceiling
from rooftop.model.suspects import links_of
from rooftop.topology import CLASSES
from rooftop.units import fmt_pct, fmt_range, fmt_rate


@dataclass
class ClassCeiling:
    #: The class: switch, group or global (rooftop.topology.CLASSES).
    klass: str
    #: How reports name it: "same switch".
    label: str
    #: Over the class's usable pairs (each pair's median rate).
    ceiling: Ceiling
    #: Pairs of the class the topology holds (measured or not).
    of: int
    #: While its pairs were measured (pair rounds): the most pairs measured
    #: at once beside one of them, and the most of those crossing a switch
    #: uplink or group link it crossed too (None: not known).
    at_once: int | None = None
    through_same: int | None = None

    @property
    def pairs(self) -> int:
        return self.ceiling.n

    @property
    def width(self) -> float | None:
        """Half the interval over the mean (0.05: +-5 %); None without one."""
        ci = self.ceiling.ci
        if ci is None:
            return None
        mid = (ci[0] + ci[1]) / 2
        return (ci[1] - ci[0]) / 2 / mid if mid else None

    def to_dict(self) -> dict:
        c = self.ceiling
        return {
            "class": self.klass,
            "label": self.label,
            "pairs": c.n,
            "of": self.of,
            "min": c.lo,
            "max": c.hi,
            "median": c.centre,
            "ci": list(c.ci) if c.ci else None,
            "width": self.width,
            "at_once": self.at_once,
            "through_same_links": self.through_same,
        }

    @property
    def concurrency(self) -> str:
        return concurrency_text(self.at_once, self.through_same)


def concurrency_text(at_once: int | None, through_same: int | None) -> str:
    """While a class was measured: 'up to 3 other pair(s) at once, none
    through the same switch uplink or group link' ('' when not known)."""
    if at_once is None:
        return ""
    if not at_once:
        return "each pair measured alone"
    shared = (
        f"{through_same} through the same link" if through_same else "none through the same switch uplink or group link"
    )
    return f"up to {at_once} other pair(s) at once, {shared}"


def class_ceilings(rates: dict[tuple[int, int], float], topo) -> list[ClassCeiling]:
    """Per class present among the pairs (nearest first): its ceiling."""
    sizes = topo.sizes()
    by: dict[str, list[tuple[tuple[int, int], float]]] = {}
    for p, r in rates.items():
        by.setdefault(topo.klass(*p), []).append((p, r))
    return [
        ClassCeiling(c, label, Ceiling.of([r for _, r in by[c]], [f"{a}-{b}" for (a, b), _ in by[c]]), sizes.get(c, 0))
        for c, label in CLASSES.items()
        if c in by
    ]


def concurrency(classes: list[ClassCeiling], beside: dict, topo) -> None:
    """Fills each class's at_once and through_same from the pairs measured
    at once (beside: pair -> the pairs beside it, as the rounds recorded
    them; results.PairMatrix.beside): the classes' ceilings are their
    own only if no other pair shared their links while they were measured."""
    links = links_of(topo)
    for c in classes:
        at_once = through = 0
        for p, others in beside.items():
            if topo.klass(*p) != c.klass:
                continue
            mine = [lk for lk in links if lk.carries(topo, *p)]
            at_once = max(at_once, len(others))
            through = max(through, sum(any(lk.carries(topo, *q) for lk in mine) for q in others))
        c.at_once, c.through_same = at_once, through


def placement_class(server_nodes, client_nodes, topo) -> str | None:
    """The farthest class any of a placement's server nodes is from any of
    its client nodes (a client loads every server): the class whose
    ceiling its clients can reach at best. None: no pair to classify."""
    order = list(CLASSES)  # nearest first
    seen = {topo.klass(a, b) for a in server_nodes for b in client_nodes if a != b}
    return max(seen, key=order.index) if seen else None


def deployment_text(classes: list[ClassCeiling], fmt) -> str:
    """What a deployment would see: the one class, or the range."""
    if not classes:
        return ""
    if len(classes) == 1:
        c = classes[0]
        where = "the topology is unknown" if c.klass == "all" else f"every measured pair is {c.label}"
        return f"{where}: a deployment sees about {fmt(c.ceiling.centre)} per client process"
    near, far = classes[0], classes[-1]
    return (
        f"a deployment within one switch sees about {fmt(near.ceiling.centre)} per client process ({near.label}); "
        f"one spread {far.label} about {fmt(far.ceiling.centre)}; spread over both, between the two"
    )


def lines(classes: list[ClassCeiling], unit: str) -> list[str]:
    """One line per class: 'same switch: a–b U (median m; 95 % interval
    c–d U, +-w %; n of N pairs)'."""
    out = []
    for c in classes:
        e = c.ceiling
        ci = (
            f"; 95 % interval {fmt_range(*e.ci, unit)}, +-{fmt_pct(c.width, 1)}" if e.ci and c.width is not None else ""
        )
        out.append(
            f"{c.label}: {fmt_range(e.lo, e.hi, unit)} (median {fmt_rate(e.centre, unit)}{ci}; "
            f"{c.pairs} of {c.of} pairs" + (f"; {c.concurrency}" if c.concurrency else "") + ")"
        )
    return out
