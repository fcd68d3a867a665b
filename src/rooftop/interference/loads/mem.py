"""mem: a memory-bandwidth streamer. One unit = `copies` copies of an
array of `size` MiB into another (numpy, one thread); work counts the
bytes read and written, so its rate is in GB/s as STREAM's copy counts."""

from __future__ import annotations

import argparse

from rooftop.interference.loads.base import Load, knob
from rooftop.interference.loads.worker import repeat


def run(argv, stopping, record, rank):
    import numpy as np

    p = argparse.ArgumentParser(prog="rooftop.interference.loads.worker mem")
    p.add_argument("--size-mib", type=int, default=64)
    p.add_argument("--copies", type=int, default=4)
    a = p.parse_args(argv)
    src = np.ones(a.size_mib * 2**20 // 8)
    dst = np.empty_like(src)

    def unit():
        for _ in range(a.copies):
            if stopping.is_set():
                return None
            np.copyto(dst, src)
        return 2 * src.nbytes * a.copies / 1e9

    repeat(unit, stopping, record)
    return {"size_mib": a.size_mib, "copies": a.copies}


def on_stop() -> None:
    pass  # a copy lasts milliseconds: the loop checks between copies


LOAD = Load(
    "mem",
    "a memory-bandwidth streamer (numpy copy of a large array), repeated",
    "memory bandwidth",
    (
        knob("mem", "procs", "int", 1, "processes per node (0: one per core of the node)", minimum=0),
        knob("mem", "size_mib", "int", 64, "array size in MiB (two arrays per process)", minimum=1),
        knob("mem", "copies", "int", 4, "copies per unit", minimum=1),
    ),
    "GB/s",
    procs=lambda ctx, cores: ctx.knobs["procs"] or cores,
    args=lambda ctx: ["--size-mib", str(ctx.knobs["size_mib"]), "--copies", str(ctx.knobs["copies"])],
    on_cores="CPU and memory bandwidth",
)
