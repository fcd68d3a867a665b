"""Pitfall 4, cache modes: O_DIRECT bypasses the page cache, O_SYNC writes
through every cache; whether direct I/O helps depends on O_SYNC (“The Dark Side of Microbenchmarking”,
case 4: the answer inverted)."""

from rooftop.audit.base import INDISTINGUISHABLE, Pitfall, Setting

DIRECT = ("direct", "direct+sync")


def _one(c: dict, without: str) -> str:
    if not c["measurable"]:
        return f"{without}: {c['verdict']}"
    if c["verdict"] == INDISTINGUISHABLE:
        return f"{without}: O_DIRECT makes no difference"
    return f"{without}: O_DIRECT gives {c['ratio']:.2f}x the writes/s"


def meaning(comps: list[dict]) -> str:
    plain, synced = comps
    if not plain["measurable"] and not synced["measurable"]:
        return plain["verdict"]
    text = f"{_one(plain, 'without O_SYNC')}; {_one(synced, 'with O_SYNC')}"
    inverted = (
        plain.get("winner") and synced.get("winner") and (plain["winner"] in DIRECT) != (synced["winner"] in DIRECT)
    )
    return text + (
        ": the answer inverts with durability, so benchmark with the flags your service uses"
        if inverted
        else ": benchmark with the flags your service uses"
    )


PITFALL = Pitfall(
    name="cache",
    title="cache mode: buffered vs O_DIRECT, +/- O_SYNC",
    target="storage",
    op="put",
    args=("--size", "4KiB", "--pattern", "rand", "--allocation", "preallocate", "--file-size", "16MiB"),
    unit="ops/s",
    settings=tuple(Setting(m, client=("--io-mode", m)) for m in ("buffered", "direct", "sync", "direct+sync")),
    comparisons=(("direct", "buffered"), ("direct+sync", "sync")),
    rationale=(
        "4 KiB random writes through the page cache (buffered: nothing need reach the device), around "
        "it (O_DIRECT), written through (O_SYNC) or both; “The Dark Side of Microbenchmarking” found direct I/O helped or hurt "
        "depending on O_SYNC"
    ),
    meaning=meaning,
    needs_direct=DIRECT,
)
