"""io: a storage flood, dd-style: one unit writes `block_mib` MiB in 1 MiB
writes to a file of its own in `dir` (default: the load's folder, on the
results folder's file system) and fsyncs it; the file starts again empty
past `file_mib`, so a long run never fills the file system. Rate in MB/s."""

from __future__ import annotations

import argparse
import os

from rooftop.interference.loads.base import Load, knob
from rooftop.interference.loads.worker import repeat

CHUNK = 2**20


def run(argv, stopping, record, rank):
    p = argparse.ArgumentParser(prog="rooftop.interference.loads.worker io")
    p.add_argument("--dir", required=True)
    p.add_argument("--block-mib", type=int, default=8)
    p.add_argument("--file-mib", type=int, default=256)
    a = p.parse_args(argv)
    os.makedirs(a.dir, exist_ok=True)
    path = os.path.join(a.dir, f"io-{rank}-{os.getpid()}.dat")
    data = os.urandom(CHUNK)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    written = 0

    def unit():
        nonlocal written
        if written + a.block_mib * CHUNK > a.file_mib * CHUNK:
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            written = 0
        for _ in range(a.block_mib):
            if stopping.is_set():
                return None
            os.write(fd, data)
        os.fsync(fd)
        written += a.block_mib * CHUNK
        return a.block_mib * CHUNK / 1e6

    try:
        repeat(unit, stopping, record)
    finally:
        os.close(fd)
        os.unlink(path)  # nothing left behind
    return {"dir": a.dir, "block_mib": a.block_mib, "file_mib": a.file_mib}


def on_stop() -> None:
    pass


def _args(ctx):
    where = ctx.knobs["dir"] or os.path.join(ctx.folder, "data")
    return ["--dir", where, "--block-mib", str(ctx.knobs["block_mib"]), "--file-mib", str(ctx.knobs["file_mib"])]


LOAD = Load(
    "io",
    "a storage flood: fsynced 1 MiB writes to a file, repeated",
    "storage",
    (
        knob("io", "procs", "int", 1, "processes per node (0: one per core of the node)", minimum=0),
        knob("io", "dir", "str", "", "folder written to (default: the load's folder under the run)", executes=True),
        knob("io", "block_mib", "int", 8, "MiB written and fsynced per unit", minimum=1),
        knob("io", "file_mib", "int", 256, "file size at which the file starts again empty", minimum=1),
    ),
    "MB/s",
    procs=lambda ctx, cores: ctx.knobs["procs"] or cores,
    args=_args,
    on_cores="CPU and storage",
)
