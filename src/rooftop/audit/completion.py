"""Pitfall 2, completion: a server that busy-polls its completion queue owns
a core; one that blocks on the queue's fd shares it but pays a wakeup per
event (“The Dark Side of Microbenchmarking”, case 2: 3x the round-trip latency with fd completion)."""

from rooftop.audit.base import INDISTINGUISHABLE, Pitfall, Setting


def meaning(comps: list[dict]) -> str:
    c = comps[0]
    if not c["measurable"]:
        return c["verdict"]
    if c["verdict"] == INDISTINGUISHABLE:
        return (
            "within the noise of these repeats blocking completion costs no RPC rate here: a server may "
            "sleep on its fd and share its core"
        )
    if c["ratio"] >= 1:
        return (
            f"a server blocking on its completion fd serves {c['ratio']:.2f}x fewer RPCs than a busy-polling "
            f"one: give each server a core of its own, or budget for the blocking rate"
        )
    return (
        f"busy polling serves {1 / c['ratio']:.2f}x fewer RPCs than blocking here (its polling competes "
        f"for the core): let the server block"
    )


PITFALL = Pitfall(
    name="completion",
    title="server completion: busy vs block",
    target="network",
    op="noop",
    args=(),
    unit="ops/s",
    settings=(Setting("busy", progress="busy"), Setting("block", progress="block")),
    comparisons=(("busy", "block"),),
    rationale=(
        "the server polls its completion queue without pause (busy: a core used even when idle) or "
        "sleeps on its fd until an event arrives (block: a context switch per wakeup); “The Dark Side of Microbenchmarking” "
        "measured 3x the round-trip latency with fd completion (fi_msg_pingpong)"
    ),
    meaning=meaning,
)
