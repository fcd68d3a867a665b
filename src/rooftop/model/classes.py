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
        }


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
            f"{c.pairs} of {c.of} pairs)"
        )
    return out
