"""Outlier nodes from the client pair matrix (seed 000's Polaris lesson:
eleven slow pairs that all shared one node).

A node's score compares the median rate of the pairs that include it with
the median of every node's median, in units of a robust spread:

    s_i   = median over partners j of rate(i, j)
    m     = median over nodes of s_i
    scale = max(1.4826 * MAD(s), FLOOR * m)
    z_i   = (s_i - m) / scale

Node medians, not pair rates: one slow node drags down N-1 of the
N(N-1)/2 pairs (half of them with 4 nodes), which would move a pair-level
median, but only its own node median. The floor keeps ordinary noise on a
quiet, uniform machine from being called an outlier. A node with z below
-THRESHOLD is flagged slow (above +THRESHOLD: fast, reported, not removed).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

#: |z| beyond this flags a node (a common robust cut-off, Iglewicz-Hoaglin 3.5).
THRESHOLD = 3.5
#: The spread is at least this share of the typical node median (5 %).
FLOOR = 0.05
#: Fewer nodes than this give no meaningful node medians.
MIN_NODES = 3


@dataclass
class NodeScore:
    node: int
    median: float          # median rate of the pairs that include the node
    z: float
    pairs: list[tuple[tuple[int, int], float]]   # the node's pairs, slowest first

    @property
    def flagged(self) -> str | None:
        if self.z < -THRESHOLD:
            return "slow"
        if self.z > THRESHOLD:
            return "fast"
        return None

    def to_dict(self) -> dict:
        return {"node": self.node, "median": self.median, "z": self.z, "flag": self.flagged,
                "pairs": [{"pair": list(p), "rate": r} for p, r in self.pairs]}


def score_nodes(rates: dict[tuple[int, int], float]) -> list[NodeScore]:
    """rates: (node a, node b) -> median client rate of that pair."""
    nodes = sorted({n for pair in rates for n in pair})
    if len(nodes) < MIN_NODES:
        return []
    per = {n: sorted(((p, r) for p, r in rates.items() if n in p), key=lambda pr: pr[1]) for n in nodes}
    med = {n: statistics.median(r for _, r in per[n]) for n in nodes}
    m = statistics.median(med.values())
    mad = statistics.median(abs(v - m) for v in med.values())
    scale = max(1.4826 * mad, FLOOR * m)
    if scale <= 0:
        return [NodeScore(n, med[n], 0.0, per[n]) for n in nodes]
    return [NodeScore(n, med[n], (med[n] - m) / scale, per[n]) for n in nodes]


def flagged(scores: list[NodeScore], kind: str = "slow") -> list[int]:
    return [s.node for s in scores if s.flagged == kind]
