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
with z below -THRESHOLD is flagged slow (above +THRESHOLD: fast,
reported, not removed).

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

A slow node also lowers each partner's median by one slow pair, which
with few partners (3 on 6 nodes whose same-core pairs are left out) can
push a healthy partner past the cut-off too. So slow nodes are named one
at a time, the lowest score first: once a node is named, the pairs that
include it say nothing more about its partners, and the other nodes are
scored again without them (against the typical node of the first pass
when too few remain to set their own baseline), until no score is below
-THRESHOLD. A partner is named too only when its other pairs are slow.

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


@dataclass
class NodeScore:
    node: int
    median: float  # median rate of the pairs that include the node
    z: float
    pairs: list[tuple[tuple[int, int], float]]  # the node's pairs, slowest first

    @property
    def flagged(self) -> str | None:
        if self.z < -THRESHOLD:
            return "slow"
        if self.z > THRESHOLD:
            return "fast"
        return None

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


def median_noise(per: dict[int, list[float]]) -> dict[int, float]:
    """How far each node's median may wander by its pairs' noise alone, in
    log units: 1.2533 * sigma / sqrt(k) for a node of k pairs, sigma the
    typical spread of a node's own log pair rates (the median over nodes of
    1.4826 * MAD: one slow partner among a node's pairs does not move it)."""
    logs = {n: [_log(v) for v in vs] for n, vs in per.items()}
    spread = [_spread(vs) for vs in logs.values() if vs]
    sigma = statistics.median(spread) if spread else 0.0
    return {n: 1.2533 * sigma / len(vs) ** 0.5 if vs else 0.0 for n, vs in logs.items()}


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
    when fewer than MIN_NODES nodes have enough (cannot_tell). Slow nodes
    are named one at a time (the module's docstring): a named node's pairs
    are left out of its partners' scores."""
    per_all: dict[int, list] = {}
    for p, r in rates.items():  # (one pass: not one over every pair per node, quadratic at 10,000 nodes)
        for n in p:
            per_all.setdefault(n, []).append((p, r))
    nodes = sorted(n for n, prs in per_all.items() if len(prs) >= MIN_PAIRS)
    if len(nodes) < MIN_NODES:
        return []
    norm = normalized(rates, classes)
    per = {n: sorted(per_all[n], key=lambda pr: norm[pr[0]]) for n in nodes}
    first = {n: statistics.median(norm[p] for p, _ in per[n]) for n in nodes}
    noise = median_noise({n: [norm[p] for p, _ in per[n]] for n in nodes})
    z = dict(zip(nodes, robust_z(list(first.values()), least=[noise[n] for n in nodes])))
    med = {n: statistics.median(r for _, r in per[n]) for n in nodes}
    slow: list[int] = []
    while True:
        worst = min((n for n in nodes if n not in slow), key=lambda n: z[n], default=None)
        if worst is None or z[worst] >= -THRESHOLD:
            break
        slow.append(worst)
        # The others again, without the pairs of the nodes named so far.
        rest = {n: [(p, r) for p, r in per[n] if not set(p) & set(slow)] for n in nodes if n not in slow}
        rest = {n: prs for n, prs in rest.items() if prs}
        s = {n: statistics.median(norm[p] for p, _ in prs) for n, prs in rest.items()}
        base = list(s.values()) if len(s) >= MIN_NODES else [first[n] for n in nodes if n not in slow]
        noise = median_noise({n: [norm[p] for p, _ in prs] for n, prs in rest.items()})
        z.update(zip(s, robust_z(list(s.values()), base, [noise[n] for n in s])))
        med.update({n: statistics.median(r for _, r in prs) for n, prs in rest.items()})
    return [NodeScore(n, med[n], z[n], per[n]) for n in nodes]


def cannot_tell(rates: dict[tuple[int, int], float], nodes=()) -> str:
    """Why the usable pairs cannot tell an outlier node ('' when they can
    score every node). nodes: every node of the run."""
    count = dict.fromkeys(nodes, 0)
    for pair in rates:
        for n in pair:
            count[n] = count.get(n, 0) + 1
    short = sorted(n for n, k in count.items() if k < MIN_PAIRS)
    scored = len(count) - len(short)
    if scored >= MIN_NODES and not short:
        return ""
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


def flagged(scores: list[NodeScore], kind: str = "slow") -> list[int]:
    return [s.node for s in scores if s.flagged == kind]
