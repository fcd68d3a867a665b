"""Physical limits a sample cannot exceed.

On the emulated cluster every node's link is shaped to a known rate (tc
tbf, both directions), so the traffic between server nodes and client
nodes can be no more than the smaller of the two sides' summed link rates
(a node with several NICs, each shaped to the rate, counts each of them).
A measured aggregate above that (by more than TOLERANCE: tbf's burst and
timer granularity) is a measurement error, never a sample.
"""

from __future__ import annotations

from rooftop.units import fmt_pct, fmt_rate

#: How far above a link's rate a measured aggregate may be before it is an error.
TOLERANCE = 0.03


def _side(nodes, indices: list[int]) -> float | None:
    """Summed link rate of these nodes in bytes/s (None if any is unshaped)."""
    total = 0.0
    for i in indices:
        emulation = (nodes[i].emulation or {}) if i < len(nodes) else {}
        bits = emulation.get("link_rate_bits")
        if not bits:
            return None
        total += bits / 8.0 * max(1, len(emulation.get("nics") or []))
    return total


def link_limit(nodes, server_nodes: list[int], client_nodes: list[int]) -> float | None:
    """Bytes/s the links between these server and client nodes carry at most,
    or None when no link on either side is known."""
    known = [v for v in (_side(nodes, server_nodes), _side(nodes, client_nodes)) if v is not None]
    return min(known) if known else None


def above_limit(aggregate: float, limit: float | None) -> str:
    """'' when aggregate is within the limit, else why it is an error."""
    if limit is None or aggregate <= limit * (1 + TOLERANCE):
        return ""
    return (
        f"measurement error: {fmt_rate(aggregate, 'bytes/s')} is {fmt_pct(aggregate / limit - 1)} above the "
        f"{fmt_rate(limit, 'bytes/s')} its links carry (emulated link rates; tolerance {fmt_pct(TOLERANCE)})"
    )
