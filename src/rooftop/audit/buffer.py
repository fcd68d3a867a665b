"""Pitfall 1, buffer reuse: osu_bw-style benchmarks move every transfer from
one buffer, a data service walks through its memory (“The Dark Side of Microbenchmarking”, case 1: 40 %
less on Summit once the buffer was 1 GiB)."""

from rooftop.audit.base import INDISTINGUISHABLE, Pitfall, Setting, pct

STREAM = "256MiB"


def meaning(comps: list[dict]) -> str:
    c = comps[0]
    if not c["measurable"]:
        return c["verdict"]
    if c["verdict"] == INDISTINGUISHABLE:
        return (
            "within the noise of these repeats bulk rates do not depend on buffer reuse here: a benchmark's "
            "numbers hold for a service streaming through memory"
        )
    return (
        f"a benchmark reusing one buffer reports {pct(c['ratio'])} than a service walking {STREAM} of "
        f"client memory: plan capacity with the stream rate"
    )


PITFALL = Pitfall(
    name="buffer",
    title="bulk buffer: reuse vs stream",
    target="network",
    op="read",
    args=("--size", "4MiB"),
    unit="bytes/s",
    settings=(
        Setting("reuse", client=("--buffer", "reuse")),
        Setting("stream", client=("--buffer", "stream", "--stream-size", STREAM)),
    ),
    comparisons=(("reuse", "stream"),),
    rationale=(
        "every 4 MiB read lands in the same buffer (reuse: caches and TLB stay warm, as osu_bw) "
        f"or walks {STREAM} (stream: as a data service); “The Dark Side of Microbenchmarking” measured 40 % less with a 1 GiB "
        "buffer on Summit"
    ),
    meaning=meaning,
)
