"""Huge pages for the tests of --buffer-pages huge (tests/engine/
test_buffer_pages.py, tests/audit/, tests/storage/): what /proc/meminfo
says, and a reservation (/proc/sys/vm/nr_hugepages, root) given back
whatever happens."""

from __future__ import annotations

import contextlib
from pathlib import Path

NR = Path("/proc/sys/vm/nr_hugepages")


def meminfo(field: str) -> int:
    """A /proc/meminfo number (Hugepagesize is in kB, HugePages_* in pages)."""
    line = next(l for l in Path("/proc/meminfo").read_text().splitlines() if l.startswith(field + ":"))
    return int(line.split()[1])


def page_bytes() -> int:
    return meminfo("Hugepagesize") * 1024


def free() -> int:
    return meminfo("HugePages_Free")


@contextlib.contextmanager
def reserved(n: int):
    """n more huge pages, given back after (n off the count then, so a
    reservation made meanwhile stays): yields whether the kernel reserved
    them all (with memory too fragmented it may not)."""
    free0 = free()
    NR.write_text(str(int(NR.read_text()) + n))
    try:
        yield free() >= free0 + n
    finally:
        NR.write_text(str(max(0, int(NR.read_text()) - n)))
