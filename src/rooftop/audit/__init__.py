"""rooftop audit: the Dark Side of Microbenchmarking talk's five benchmark pitfalls, and a sixth found
here (buffer pages), measured on this machine as deltas, each with both
settings side by side.

One file per pitfall (the table below is the extension point: a new pitfall
is a file with a PITFALL and a line here). base.py says what a pitfall is
and how its repeats become a verdict; run.py measures and stores them as a
run; show.py renders the table, the report and the figure.

The pitfalls, a file each: completion (2: busy-polling or blocking on the
completion queue), binding (3: the launcher's core binding), cache (4:
O_DIRECT and O_SYNC), allocation (5: file space preallocated, appended or
wrapped) and buffer (buffer pages); keys declares the `audit` config keys.
"""

from __future__ import annotations

from rooftop.audit import allocation, binding, buffer, cache, completion, pages
from rooftop.audit.base import Pitfall

#: Every pitfall, in the order of the table.
PITFALLS: dict[str, Pitfall] = {
    p.name: p
    for p in (buffer.PITFALL, completion.PITFALL, binding.PITFALL, cache.PITFALL, allocation.PITFALL, pages.PITFALL)
}


def select(only: str | None) -> list[Pitfall]:
    """--only's pitfalls (comma-separated names), all by default."""
    if not only:
        return list(PITFALLS.values())
    names = [n.strip() for n in only.split(",") if n.strip()]
    unknown = [n for n in names if n not in PITFALLS]
    if unknown:
        raise ValueError(f"--only: unknown pitfall(s) {', '.join(unknown)}; choose from {', '.join(PITFALLS)}")
    return [PITFALLS[n] for n in names]
