"""Outlier nodes from the client pair matrix (the CUG 2025 roofline paper's Polaris lesson:
eleven slow pairs that all shared one node).

A node's score compares the median rate of the pairs that include it with
the median of every node's median, in units of a robust spread, on a log
scale (rates vary by factors: a node at a tenth of the others is as far
below them as one at ten times is above, and a rate cannot go below 0):

    s_i   = median over partners j of rate(i, j)
    m     = median over nodes of log s_i
    scale = max(1.4826 * MAD(log s), log(1 + FLOOR))
    z_i   = (log s_i - m) / scale

Node medians, not pair rates: one slow node drags down N-1 of the
N(N-1)/2 pairs (half of them with 4 nodes), which would move a pair-level
median, but only its own node median. The floor keeps ordinary noise on a
quiet, uniform machine (within 5 %) from being called an outlier. A node
with z below -THRESHOLD is flagged slow. A node is never flagged fast: a
pair runs at the pace of the slower of its nodes and links, so a node's
pairs can be no faster than its partners and paths allow, and a node
whose pairs are faster than the others' says that the others' were held
back (CI, 2026-11-29: a healthy node at +4.0, its rpc pairs across groups
1.2 to 1.7 times a class median set by a slow group link's pairs, too
little slower than the noise to name the link for rpc). Its score stays
in the table.

A node's median is that of only k pairs (3 to 6 where pairs are sampled),
so it wanders with the noise of its pairs, by about 1.2533 sigma / sqrt(k)
for pairs whose log rates spread by sigma: where the pairs are noisy (a
machine whose rates drift by +-30 % from one pair to the next), the node
medians of a dozen nodes can sit close together by chance, and a healthy
node with two unlucky pairs of four would fall 4 spreads below them. So
each node's scale is at least that: sigma is the typical spread of a
node's own pairs (the median over nodes of 1.4826 * MAD of each node's
log pair rates: one slow partner among a node's pairs does not move it).
A node at a tenth of the others stays named on such a machine (issue 27's
six capped nodes in CI: healthy pairs from 22.8k to 40.1k ops/s, the
capped node's at a tenth: z -9.0).

Pairs of different topology classes (same switch, across groups:
rooftop.topology) differ by design, so where a run knows its topology each
pair's rate is first divided by the median of its class (normalized): a
node is slow against pairs of its own classes, not for having more pairs
across groups than another node. The scores' medians stay rates.

A slow node also lowers each partner's median by one slow pair. With 2
or 3 partners per node (4 nodes, two per core, whose same-core pairs are
left out) that pair is a third to a half of every partner's pairs: the
partners' medians fall towards the slow node's, their own spreads widen,
and the slow node hides among them (issue 45: node 3 capped to 20 % of a
core, its rpc pairs at 11.9k, 0.05k and 12.4k ops/s against 60-73k for
every other pair, scored -2.3, and nobody was named). So each node is
also scored against the others as if it were not there: its partners'
medians and spreads without their pair with it (leave one out; for the
LOO_NODES lowest nodes, where at least MIN_NODES others are left and its
partners are a twentieth of the nodes or more: among more nodes they
barely move the others' median), and the
lower of the two scores counts. Node 3 above scores -12 so (bw: 20 against
35 MB/s, -11). The leave-one-out score only ever lowers a score: a node
that lifts its partners is judged by the plain one.

Slow nodes are named one at a time, the lowest score first: once a node
is named, the pairs that include it say nothing more about its partners,
and the other nodes are scored again without them, until no score is
below -THRESHOLD. A partner is named too only when its other pairs are
slow, and at least MIN_PAIRS of them are left.

Where a node sits below the others by more than THRESHOLD of their spread
but not of what a median of its few pairs wanders by, it is not named and
cannot_tell says so: too few pairs to tell, never a silent nothing.

Only pairs whose samples may feed a ceiling count (rooftop.model.exclusion:
not nodes sharing cores, not --allow-concurrent, not invalid): a pair
left out says nothing about its nodes. A node needs MIN_PAIRS usable pairs
to be scored, and MIN_NODES scored nodes are needed to score any: with
fewer, the matrix cannot tell a slow node, and nobody is named.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

#: |z| beyond this flags a node (a common robust cut-off, Iglewicz-Hoaglin 3.5).
THRESHOLD = 3.5
#: The spread is at least this share of the typical node median (5 %).
FLOOR = 0.05
#: Fewer nodes than this give no meaningful node medians.
MIN_NODES = 3
#: A node with fewer usable pairs than this gets no score: one pair slow
#: implicates both of its nodes equally.
MIN_PAIRS = 2
#: The lowest this many nodes are scored against the others without their own
#: pairs, one by one; among more nodes one node's pairs barely move the others.
LOO_NODES = 64
#: ... and only where its pairs are at least 1/SMALL_SHARE of the nodes.
SMALL_SHARE = 20


@dataclass
class NodeScore:
    node: int
    median: float  # median rate of the pairs that include the node
    z: float
    pairs: list[tuple[tuple[int, int], float]]  # the node's pairs, slowest first
    #: Below the others by more than THRESHOLD of their spread, but not of
    #: what a median of its few pairs wanders by: too few pairs to tell.
    unsure: bool = False

    @property
    def flagged(self) -> str | None:
        """'slow' or None (never 'fast': the module's docstring)."""
        return "slow" if self.z < -THRESHOLD else None

    def to_dict(self) -> dict:
        return {
            "node": self.node,
            "median": self.median,
            "z": self.z,
            "flag": self.flagged,
            "pairs": [{"pair": list(p), "rate": r} for p, r in self.pairs],
        }


def _log(v: float) -> float:
    return math.log(v) if v > 0 else math.log(1e-300)


def _spread(logs: list[float]) -> float:
    """1.4826 * MAD: a robust standard deviation."""
    m = statistics.median(logs)
    return 1.4826 * statistics.median(abs(v - m) for v in logs)


def robust_z(values: list[float], baseline: list[float] | None = None, least: list[float] | None = None) -> list[float]:
    """Each value's distance from the baseline's median (default: the values
    themselves), both rates, on a log scale, in robust spreads:
    max(1.4826 * MAD, log(1 + FLOOR)) of the baseline's logs, and at least
    least[i] for value i (a node median's own noise, in log units)."""
    base = [_log(v) for v in (baseline if baseline else values)]
    m = statistics.median(base)
    scale = max(_spread(base), math.log1p(FLOOR))
    scales = [max(scale, least[i]) if least else scale for i in range(len(values))]
    return [(_log(v) - m) / sc for v, sc in zip(values, scales)]


def normalized(rates: dict[tuple[int, int], float], classes: dict | None = None) -> dict[tuple[int, int], float]:
    """Each pair's rate over the median rate of its class (classes: pair ->
    its topology class); the rates themselves with one class or none."""
    if not classes or len({classes.get(p) for p in rates}) < 2:
        return dict(rates)
    by: dict = {}
    for p, r in rates.items():
        by.setdefault(classes.get(p), []).append(r)
    med = {c: statistics.median(v) for c, v in by.items()}
    return {p: (r / med[classes.get(p)] if med[classes.get(p)] else r) for p, r in rates.items()}


def score_nodes(rates: dict[tuple[int, int], float], classes: dict | None = None) -> list[NodeScore]:
    """rates: (node a, node b) -> median client rate of that pair (usable
    pairs only); classes: pair -> its topology class (scored on normalized
    rates). Nodes with fewer than MIN_PAIRS pairs get no score; none at all
    when fewer than MIN_NODES nodes have enough (cannot_tell). Each node is
    scored against the others without its own pairs, and slow nodes are
    named one at a time (the module's docstring): a named node's pairs are
    left out of its partners' scores."""
    per_all: dict[int, list[tuple[tuple[int, int], float]]] = {}
    for p, r in rates.items():  # (one pass: not one per node)
        for n in p:
            per_all.setdefault(n, []).append((p, r))
    nodes = sorted(n for n, prs in per_all.items() if len(prs) >= MIN_PAIRS)
    if len(nodes) < MIN_NODES:
        return []
    norm = normalized(rates, classes)
    per = {n: sorted(per_all[n], key=lambda pr: norm[pr[0]]) for n in nodes}
    logs = {p: _log(v) for p, v in norm.items()}
    slow: list[int] = []
    z = dict.fromkeys(nodes, (0.0, 0.0))  # (z, z against the others' spread alone)
    while True:
        z.update(_scores([n for n in nodes if n not in slow], per, logs, set(slow)))
        # A node named after another needs MIN_PAIRS pairs of its own without the named ones.
        left = [n for n in nodes if n not in slow and sum(not set(p) & set(slow) for p, _ in per[n]) >= MIN_PAIRS]
        worst = min(left, key=lambda n: z[n][0], default=None)
        if worst is None or z[worst][0] >= -THRESHOLD:
            break
        slow.append(worst)
    med = {}
    for n in nodes:
        prs = [r for p, r in per[n] if n in slow or not set(p) & set(slow)]
        med[n] = statistics.median(prs or [r for _, r in per[n]])
    return [NodeScore(n, med[n], z[n][0], per[n], z[n][0] >= -THRESHOLD > z[n][1]) for n in nodes]


def _scores(
    nodes: list[int], per: dict, logs: dict[tuple[int, int], float], out: set[int]
) -> dict[int, tuple[float, float]]:
    """Each node's z without the pairs of the nodes in out (the module's
    docstring): against every node, and, for the LOO_NODES lowest, also
    against the other nodes without its own pairs (its partners' levels
    without their pair with it, where MIN_NODES others are left and its
    partners are 1/SMALL_SHARE of the nodes or more): the lower of the
    two. Nodes with no pair left get no score here."""
    mine = {n: [logs[p] for p, _ in per[n] if not set(p) & out] for n in nodes}
    mine = {n: v for n, v in mine.items() if v}
    level = {n: statistics.median(v) for n, v in mine.items()}
    spread = {n: _spread(v) for n, v in mine.items() if len(v) >= 2}
    every = _base(level, spread)  # (the same for every node: once)
    z = {n: _z(level[n], every, len(mine[n])) for n in level}
    for n in sorted(level, key=level.__getitem__)[:LOO_NODES]:
        if len(per[n]) * SMALL_SHARE < len(level):  # its partners' medians barely move the others'
            continue
        lv = {j: v for j, v in level.items() if j != n}
        sp = {j: v for j, v in spread.items() if j != n}
        for p, _ in per[n]:
            j = p[0] if p[1] == n else p[1]
            rest = [logs[q] for q, _ in per[j] if not set(q) & (out | {n})] if j in lv else []
            lv.pop(j, None)
            sp.pop(j, None)
            if rest:
                lv[j] = statistics.median(rest)
            if len(rest) >= 2:
                sp[j] = _spread(rest)
        if len(lv) >= MIN_NODES:
            z[n] = min(z[n], _z(level[n], _base(lv, sp), len(mine[n])))
    return z


def _base(levels: dict[int, float], spreads: dict[int, float]) -> tuple[float, float, float]:
    """(median of the levels, max(1.4826 * MAD of them, log(1 + FLOOR)),
    sigma: the median of the nodes' own spreads (spreads: nodes of two
    pairs or more; none: the levels')."""
    base = list(levels.values())
    sigma = statistics.median(spreads.values()) if spreads else _spread(base)
    return statistics.median(base), max(_spread(base), math.log1p(FLOOR)), sigma


def _z(value: float, base: tuple[float, float, float], k: int) -> tuple[float, float]:
    """A node's level (log median of its k pairs) against the others'
    (_base): its distance from their median in max(their spread,
    1.2533 * sigma / sqrt(k)); and that distance in their spread alone."""
    m, scale, sigma = base
    d = value - m
    return d / max(scale, 1.2533 * sigma / k**0.5), d / scale


def cannot_tell(
    rates: dict[tuple[int, int], float], nodes=(), classes: dict | None = None, scores: list[NodeScore] | None = None
) -> str:
    """Why the usable pairs cannot tell an outlier node ('' when they can
    score every node and each score is clear). nodes: every node of the
    run; classes: as score_nodes; scores: score_nodes(rates, classes)
    where the caller has them (else scored here). A node below the others by more than
    THRESHOLD of their spread, left unnamed only because a median of its
    few pairs may wander that far, is said: too few pairs to tell."""
    count = dict.fromkeys(nodes, 0)
    for pair in rates:
        for n in pair:
            count[n] = count.get(n, 0) + 1
    short = sorted(n for n, k in count.items() if k < MIN_PAIRS)
    scored = len(count) - len(short)
    if scored >= MIN_NODES and not short:
        unsure = [s for s in (score_nodes(rates, classes) if scores is None else scores) if s.unsure]
        return (
            "cannot tell whether "
            + ", ".join(f"n{s.node} ({len(s.pairs)} pairs)" for s in unsure)
            + (" are" if len(unsure) > 1 else " is")
            + " slow: below the other nodes by more than their spread, but not by more than "
            "the median of so few pairs may wander where pairs vary as much as here; more pairs would tell"
            if unsure
            else ""
        )
    few = ", ".join(f"n{n} ({count[n]})" for n in short)
    if scored < MIN_NODES:
        return (
            f"cannot tell an outlier node: {scored} node(s) have {MIN_PAIRS} or more usable pairs, "
            f"{MIN_NODES} are needed" + (f"; too few usable pairs: {few}" if few else "")
        )
    return f"no score for {few}: fewer than {MIN_PAIRS} usable pairs (cannot tell)"


def slow_pairs(
    rates: dict[tuple[int, int], float], flagged_nodes=(), classes: dict | None = None
) -> list[tuple[tuple[int, int], float]]:
    """The pairs that are outliers by the same rule as nodes: a pair whose
    rate is below the typical pair by more than THRESHOLD robust spreads,
    the typical pair taken among those of unflagged nodes (a slow node's
    pairs would otherwise set the baseline); classes: as score_nodes.
    Slowest first; none with fewer than MIN_NODES pairs, where nothing is
    typical."""
    if len(rates) < MIN_NODES:
        return []
    norm = normalized(rates, classes)
    pairs = list(rates.items())
    base = [norm[p] for p, _ in pairs if not set(p) & set(flagged_nodes)]
    z = robust_z([norm[p] for p, _ in pairs], base)
    return sorted(((p, r) for (p, r), zi in zip(pairs, z) if zi < -THRESHOLD), key=lambda pr: norm[pr[0]])


def flagged(scores: list[NodeScore]) -> list[int]:
    """The nodes flagged slow."""
    return [s.node for s in scores if s.flagged]
