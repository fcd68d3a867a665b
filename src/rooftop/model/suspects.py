"""What is slow on the platform, named from the pairs measured: nodes and
the links of the topology (the one entry point: name).

    name(rates, topology) -> Named(nodes, links, scores, cannot_tell)

rates: (node a, node b) -> the pair's rate (usable pairs only: those the
one exclusion rule lets feed a ceiling); topology: rooftop.topology's
Topology (None or a flat one: nodes only). Pure: the same rates and
topology give the same answer, nothing is read or written (a campaign,
its report and the search simulator all call it).

The links (rooftop.topology: a node's switch, a switch's group). A pair on
one switch crosses no link above its nodes; a pair of two switches of one
group crosses both switches' uplinks; a pair across groups crosses both
uplinks and both groups' links. Where a group has one switch, its uplink
and its group link carry the same pairs and are one link here (the
group's). A node's own link to its switch carries all of its pairs: it is
the node, as far as pairs can tell.

A link is named when the pairs through it are slow and the nodes at its
ends are fine elsewhere:

- the pairs through the link, each against the median of its class among
  the pairs not through the link (leave one out: a slow link's pairs are
  many of its class's), on a log scale, in robust spreads of those other
  pairs (at least log(1 + FLOOR) and what a median of k pairs wanders by,
  as rooftop.model.outliers); their median below -THRESHOLD;
- at least two of the nodes behind it (its switch's or group's) are slow
  through it, and at least half of those with pairs through it: one slow
  node behind a link is the node;
- each of those nodes has pairs not through the link (on its switch or in
  its group) and they are not slow: else the link cannot be told from its
  nodes, and cannot_tell says so (a confirmation round can tell).

Links are named one at a time, the lowest first (a slow group link makes
the other groups' links look slow by their pairs with it), each next one
scored without the pairs of those named (or left unsure). Then nodes are
named by rooftop.model.outliers from the pairs through no named or unsure
link: a node is slow through every path it has left. A node alone on its
switch has every pair through its uplink: named as the node, its uplink is
said as the other possibility. With two groups both group links carry the
same pairs: no pair tells one from the other or from the class itself:
neither is scored, and cannot_tell says so.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from rooftop.model.outliers import FLOOR, THRESHOLD, NodeScore, _log, _spread, cannot_tell, flagged, score_nodes
from rooftop.topology import CLASSES
from rooftop.topology.base import Topology

Pair = tuple[int, int]

#: A link whose pairs are under 1/SMALL_SHARE of those scored is compared
#: with every pair's class (its own barely move the median); above, with the
#: pairs not through it.
SMALL_SHARE = 20


@dataclass
class Link:
    """A link above the nodes: kind 'switch' (the uplink of switch `name`
    to its group) or 'group' (the link of group `name` to the others);
    nodes: the nodes behind it; pairs: the measured pairs through it,
    slowest first (rate, not normalized); z: its score (median pair)."""

    kind: str
    name: str
    group: str
    nodes: list[int]
    pairs: list[tuple[Pair, float]] = field(default_factory=list)
    z: float = 0.0
    #: Slow through it, but its nodes have no pair elsewhere to tell it from them.
    unsure: bool = False

    @property
    def label(self) -> str:
        """How a report names it."""
        if self.kind == "switch":
            return f"uplink of switch {self.name} (to group {self.group})"
        return f"link of group {self.name} (to the other groups)"

    @property
    def classes(self) -> list[str]:
        """The classes of the pairs it carries."""
        return ["group", "global"] if self.kind == "switch" else ["global"]

    def carries(self, topo: Topology, a: int, b: int) -> bool:
        """Whether the pair (a, b) crosses it."""
        inside = (a in self.nodes) != (b in self.nodes)
        if not inside:
            return False
        if self.kind == "switch":
            return topo.switch[a] != topo.switch[b]
        return topo.group[a] != topo.group[b]

    def to_dict(self) -> dict:
        return {
            "kind": self.kind,
            "name": self.name,
            "group": self.group,
            "label": self.label,
            "classes": [CLASSES[c] for c in self.classes],
            "nodes": self.nodes,
            "z": self.z,
            "pairs": [{"pair": list(p), "rate": r} for p, r in self.pairs],
        }


@dataclass
class Named:
    """What name found: the slow nodes, the slow links, every node's score
    (rooftop.model.outliers.NodeScore, on the pairs not through a named
    link), every link's, and why something cannot be told ('' when
    everything can)."""

    nodes: list[int]
    links: list[Link]
    scores: list[NodeScore] = field(default_factory=list)
    link_scores: list[Link] = field(default_factory=list)
    cannot_tell: str = ""

    def through_named(self, topo: Topology | None, a: int, b: int) -> bool:
        """Whether the pair crosses a named link (its rate is not its class's ceiling)."""
        return topo is not None and any(lk.carries(topo, a, b) for lk in self.links)


def links_of(topo: Topology) -> list[Link]:
    """The links above the nodes: each switch's uplink where its group has
    two switches or more, each group's link where there are two groups or
    more."""
    if topo.source == "none":
        return []
    sw, gr = topo.members()
    out = []
    for g, nodes in gr.items():
        switches = sorted({topo.switch[i] for i in nodes})
        if len(switches) > 1:
            out += [Link("switch", s, g, sw[s]) for s in switches]
    if len(gr) > 1:
        out += [Link("group", g, g, nodes) for g, nodes in gr.items()]
    return out


def name(rates: dict[Pair, float], topology: Topology | None = None) -> Named:
    """The slow nodes and links from the pairs' rates (the module's docstring)."""
    topo = topology
    links = links_of(topo) if topo is not None else []
    classes = {p: topo.klass(*p) for p in rates} if topo is not None else None
    named: list[Link] = []
    unsure: list[Link] = []
    through = _through(topo, links, rates)
    out: set[Pair] = set()
    while links and classes is not None:
        rest = {p: r for p, r in rates.items() if p not in out}
        every = _by_class(rest, classes)
        memo: dict = {}
        best: Link | None = None
        for lk in links:
            if any(lk is x for x in named + unsure):
                continue
            mine = [p for p in through.get((lk.kind, lk.name), []) if p not in out]
            lk.pairs = sorted(((p, rest[p]) for p in mine), key=lambda pr: pr[1])
            lk.z, verdict = _link(lk, mine, rest, classes, every, memo)
            lk.unsure = verdict == "unsure"
            if verdict in ("slow", "unsure") and (best is None or lk.z < best.z):
                best = lk
        if best is None:
            break
        (unsure if best.unsure else named).append(best)
        out.update(through.get((best.kind, best.name), []))
    rest = {p: r for p, r in rates.items() if p not in out}
    rest_classes = {p: c for p, c in (classes or {}).items() if p in rest} or None
    scores = score_nodes(rest, rest_classes)
    nodes = flagged(scores)
    why = [cannot_tell(rest, sorted({n for p in rates for n in p}), rest_classes, scores)]
    why += [
        f"pairs through the {lk.label} are slow, but its nodes have no pair elsewhere to tell the link from "
        f"them (cannot tell which)"
        for lk in unsure
    ]
    if topo is not None:
        sw, gr = topo.members()
        if len(gr) == 2 and "global" in (rest_classes or {}).values():
            why.append(
                "two groups: every pair across them crosses both group links, so a slow group link "
                "cannot be told from the across-groups ceiling (no pair tells them apart)"
            )
        why += [
            f"n{n} is alone on switch {topo.switch[n]}: every pair of it crosses the switch's uplink "
            f"(cannot tell the node from that link)"
            for n in nodes
            if len(sw[topo.switch[n]]) == 1 and len(set(topo.switch)) > 1
        ]
    return Named(nodes, named, scores, links, "; ".join(w for w in why if w))


def _through(topo: Topology | None, links: list[Link], rates: dict[Pair, float]) -> dict[tuple[str, str], list[Pair]]:
    """(kind, name) of each link -> the pairs that cross it (indexed once:
    one pass over the pairs, not one per link)."""
    through: dict[tuple[str, str], list[Pair]] = {}
    if topo is not None and links:
        have = {(lk.kind, lk.name) for lk in links}
        for p in rates:
            for key in _crossed(topo, *p):
                if key in have:
                    through.setdefault(key, []).append(p)
    return through


def _by_class(rates: dict[Pair, float], classes: dict[Pair, str]) -> dict[str, list[float]]:
    """Per class, the log rates of its pairs."""
    by: dict[str, list[float]] = {}
    for p, r in rates.items():
        by.setdefault(classes[p], []).append(_log(r))
    return by


def _without(rates: dict[Pair, float], n: int) -> dict[Pair, float]:
    """The pairs that do not have node n."""
    return {p: r for p, r in rates.items() if n not in p}


def _crossed(topo: Topology, a: int, b: int) -> list[tuple[str, str]]:
    """The links (kind, name) the pair (a, b) crosses, as links_of names
    them (a switch's uplink only where links_of has it)."""
    if topo.switch[a] == topo.switch[b]:
        return []
    out = [("switch", topo.switch[a]), ("switch", topo.switch[b])]
    if topo.group[a] != topo.group[b]:
        out += [("group", topo.group[a]), ("group", topo.group[b])]
    return out


def _reference(
    by: dict[str, list[float]], klasses: tuple[str, ...], memo: dict | None = None
) -> tuple[dict[str, float], int, float]:
    """What a link's pairs are scored against (by: log rates per class;
    klasses: the link's): each class's median, how many pairs, and the
    robust spread of their distances from their medians. memo: kept per
    `by` (every link scored against every pair's shares one)."""
    if memo is not None and klasses in memo:
        return memo[klasses]
    base = {c: statistics.median(v) for c, v in by.items() if c in klasses}
    ref = [v - base[c] for c, vals in by.items() if c in base for v in vals]
    out = (base, len(ref), _spread(ref) if len(ref) >= 2 else 0.0)
    if memo is not None:
        memo[klasses] = out
    return out


def _link(
    lk: Link,
    through: list[Pair],
    rates: dict[Pair, float],
    classes: dict[Pair, str],
    every: dict[str, list[float]],
    memo: dict,
) -> tuple[float, str]:
    """(the link's score, 'slow', 'unsure' or ''): its pairs (through)
    against their classes among the pairs not through it (rates: every
    pair still scored; every: their log rates per class, _by_class). Where
    its pairs are under 1/SMALL_SHARE of them, against every pair's (the
    same for every link of those classes: kept in memo, one per `every`)."""
    if len(through) < 2:
        return 0.0, ""
    gone = set(through)
    if len(through) * SMALL_SHARE < len(rates):  # its pairs barely move the others': every pair's
        by, others = every, rates
        base, ref_n, spread = _reference(every, tuple(lk.classes), memo)
    else:
        others = {p: r for p, r in rates.items() if p not in gone}
        by = _by_class(others, classes)
        base, ref_n, spread = _reference(by, tuple(lk.classes))
    resid = {p: _log(rates[p]) - base[classes[p]] for p in through if classes[p] in base}
    if len(resid) < 2 or ref_n < 2:
        return 0.0, ""
    sigma = max(spread, math.log1p(FLOOR))

    def z(vals: list[float]) -> float:
        return statistics.median(vals) / max(sigma, 1.2533 * spread / len(vals) ** 0.5)

    score = z(list(resid.values()))
    if score >= -THRESHOLD:
        return score, ""
    behind = {n: [v for p, v in resid.items() if n in p] for n in lk.nodes}
    behind = {n: v for n, v in behind.items() if v}
    slow = [n for n, v in behind.items() if z(v) < -THRESHOLD]
    if len(slow) < 2 or 2 * len(slow) < len(behind):
        return score, ""
    # Their pairs not through it, each against its class among the pairs
    # not through it and not of that node (its own would pull the median
    # towards it: a slow node would look fine elsewhere).
    fine = unknown = 0
    for n in slow:
        mine = {p: r for p, r in others.items() if n in p and p not in gone}
        if not mine:
            unknown += 1
            continue
        peers = {c: statistics.median(v) for c, v in _by_class(_without(others, n), classes).items()}
        vals = [_log(r) - peers[classes[p]] for p, r in mine.items() if classes[p] in peers]
        if not vals:
            unknown += 1
        elif z(vals) >= -THRESHOLD:
            fine += 1
    if fine >= 2:
        return score, "slow"
    return score, "unsure" if unknown and fine + unknown >= 2 else ""


def states(named: Named, confirm: list[dict]) -> dict[str, tuple[str, int | None]]:
    """Each suspect's standing after the run's follow-up batches (confirm:
    the run's "pair_sample" "confirm" records, each {"batch", "suspects"}):
    label ('n3', a link's label) -> ('confirmed', batch): named, and
    re-measured with fresh partners in that batch; ('suspicion', None):
    named from pairs measured once; ('cleared', batch): a suspect once,
    not named after its follow-up."""
    followed = {s: c["batch"] for c in confirm for s in c["suspects"]}
    out: dict[str, tuple[str, int | None]] = {}
    for label in [f"n{n}" for n in named.nodes] + [lk.label for lk in named.links]:
        out[label] = ("confirmed", followed[label]) if label in followed else ("suspicion", None)
    for label, batch in followed.items():
        out.setdefault(label, ("cleared", batch))
    return out


def state_text(label: str, state: tuple[str, int | None]) -> str:
    """How the report says a suspect's standing."""
    kind, batch = state[0], (state[1] or 0) + 1  # (batches are counted from 1 where said)
    if kind == "confirmed":
        return f"{label}: confirmed (re-measured with fresh partners in batch {batch}: still slow)"
    if kind == "cleared":
        return f"{label}: cleared (suspected, then re-measured with fresh partners in batch {batch}: not slow)"
    return f"{label}: a suspicion (named from pairs measured once, not re-measured)"
