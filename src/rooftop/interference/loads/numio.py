"""numio: a numio-like job (Fuchs et al., ISPDC 2024): a 2-D Jacobi stencil split into
`ranks` row blocks, one process each, exchanging halo rows with their
neighbours every sweep (pipes), and every `write_every` sweeps each rank
writes its block to a file of its own, in one of Fuchs et al.'s (ISPDC 2024) overlap modes:

- sync+imm: a blocking write, then fsync at once; compute waits for both;
- sync: a blocking write that also starts the kernel's write-back
  (posix_fadvise DONTNEED); its fsync is deferred to just before the next
  write, so the write-back runs while the job computes;
- async: the write and fsync run on an I/O thread, started at the write
  point and waited for at the next one (at the end of the compute phase).

One unit = one whole job (`sweeps` sweeps): its runtime. Its document
adds, per unit summed over rank 0, `compute_s`, `io_blocked_s` (time the
compute loop was stopped by I/O: the calls, or waiting for the I/O
thread) and `io_work_s` (time the I/O calls themselves took, wherever they
ran); `io_hidden` = 1 - io_blocked_s / io_work_s (0: none of the I/O time
was hidden behind compute; near 1: nearly all)."""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import threading
import time

from rooftop.interference.loads.base import Load, knob
from rooftop.interference.loads.worker import repeat
from rooftop.stencil import sweep

MODES = ("sync+imm", "sync", "async")


class _IO:
    """One rank's periodic writes in one overlap mode."""

    def __init__(self, path: str, mode: str):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        self.path, self.mode = path, mode
        self.blocked = self.work = 0.0
        self.pending: threading.Thread | None = None
        self.dirty = False

    def _write(self, data: bytes) -> None:
        t = time.perf_counter()
        os.pwrite(self.fd, data, 0)
        if self.mode == "sync":  # start the write-back now, without waiting for it
            os.posix_fadvise(self.fd, 0, 0, os.POSIX_FADV_DONTNEED)
        else:
            os.fsync(self.fd)
        self.work += time.perf_counter() - t

    def point(self, data: bytes) -> None:
        """A write point: finish the previous write as the mode says, start this one."""
        t = time.perf_counter()
        if self.pending is not None:
            self.pending.join()
        if self.mode == "sync" and self.dirty:
            t1 = time.perf_counter()
            os.fsync(self.fd)
            self.work += time.perf_counter() - t1
        if self.mode == "async":
            self.pending = threading.Thread(target=self._write, args=(data,))
            self.pending.start()
        else:
            self._write(data)
        self.dirty = True
        self.blocked += time.perf_counter() - t

    def close(self) -> None:
        t = time.perf_counter()
        if self.pending is not None:
            self.pending.join()
        if self.mode == "sync":
            t1 = time.perf_counter()
            os.fsync(self.fd)
            self.work += time.perf_counter() - t1
        self.blocked += time.perf_counter() - t
        os.close(self.fd)
        os.unlink(self.path)


def rank_job(r: int, a, up, down, out) -> None:
    """One rank: its rows plus two halo rows; returns its times through out."""
    import numpy as np

    rows = a.size // a.ranks
    grid = np.zeros((rows + 2, a.size))
    if r == 0:
        grid[0, :] = 1.0
    scratch = grid.copy()
    io = _IO(os.path.join(a.dir, f"numio-{os.getpid()}-{r}.dat"), a.mode)
    t0 = time.perf_counter()
    for i in range(1, a.sweeps + 1):
        sweep(grid, scratch)
        grid, scratch = scratch, grid
        if up is not None:  # halo exchange: send my edge rows, receive theirs
            up.send_bytes(grid[1].tobytes())
            grid[0] = np.frombuffer(up.recv_bytes())
        if down is not None:
            down.send_bytes(grid[-2].tobytes())
            grid[-1] = np.frombuffer(down.recv_bytes())
        if i % a.write_every == 0:
            io.point(np.repeat(grid[1:-1], a.inflate, axis=0).tobytes())
    io.close()
    runtime = time.perf_counter() - t0
    out.send({"runtime": runtime, "io_blocked_s": io.blocked, "io_work_s": io.work, "compute_s": runtime - io.blocked})


def job(a) -> dict | None:
    """One whole numio job: its ranks as processes; rank 0's times."""
    ctx = mp.get_context("fork")
    links = [ctx.Pipe() for _ in range(a.ranks - 1)]
    outs = [ctx.Pipe(duplex=False) for _ in range(a.ranks)]
    procs = []
    for r in range(a.ranks):
        up = links[r - 1][1] if r > 0 else None
        down = links[r][0] if r < a.ranks - 1 else None
        procs.append(ctx.Process(target=rank_job, args=(r, a, up, down, outs[r][1])))
    for p in procs:
        p.start()
    _Ranks.procs = procs
    docs = []
    for (recv, _), p in zip(outs, procs):
        docs.append(recv.recv() if recv.poll(a.timeout) else None)
        p.join()
    _Ranks.procs = []
    return docs[0] if all(docs) else None


class _Ranks:
    procs: list = []


def run(argv, stopping, record, rank):
    p = argparse.ArgumentParser(prog="rooftop.interference.loads.worker numio")
    p.add_argument("--mode", choices=MODES, default="sync")
    p.add_argument("--dir", required=True)
    for name, default in (
        ("ranks", 2),
        ("size", 256),
        ("sweeps", 200),
        ("write-every", 20),
        ("inflate", 8),
        ("timeout", 600),
    ):
        p.add_argument(f"--{name}", type=int, default=default)
    a = p.parse_args(argv)
    os.makedirs(a.dir, exist_ok=True)
    totals = {"runtime": 0.0, "io_blocked_s": 0.0, "io_work_s": 0.0, "compute_s": 0.0}

    def unit():
        doc = job(a)
        if doc is None:
            return None
        for k in totals:
            totals[k] += doc[k]
        return 1.0

    repeat(unit, stopping, record)
    hidden = min(1.0, max(0.0, 1 - totals["io_blocked_s"] / totals["io_work_s"])) if totals["io_work_s"] > 0 else None
    return {
        "mode": a.mode,
        "ranks": a.ranks,
        "size": a.size,
        "sweeps": a.sweeps,
        "write_every": a.write_every,
        **totals,
        "io_hidden": hidden,
    }


def on_stop() -> None:
    for p in _Ranks.procs:  # the ranks stop with the worker (its process group gets it too)
        if p.is_alive():
            p.terminate()


def _args(ctx):
    k = ctx.knobs
    if k["mode"] not in MODES:
        raise ValueError(f"numio.mode '{k['mode']}': one of {', '.join(MODES)}")
    where = k["dir"] or os.path.join(ctx.folder, "data")
    return [
        "--mode",
        k["mode"],
        "--dir",
        where,
        "--ranks",
        str(k["ranks"]),
        "--size",
        str(k["size"]),
        "--sweeps",
        str(k["sweeps"]),
        "--write-every",
        str(k["write_every"]),
        "--inflate",
        str(k["inflate"]),
    ]


LOAD = Load(
    "numio",
    "a numio-like job: Jacobi stencil ranks with halo exchange and periodic writes (modes sync+imm, sync, async)",
    "CPU cores, memory and storage",
    (
        knob("numio", "mode", "str", "sync", "overlap mode: sync+imm, sync or async (Fuchs et al., ISPDC 2024)"),
        knob("numio", "ranks", "int", 2, "processes of one job (row blocks exchanging halos)", minimum=1),
        knob("numio", "size", "int", 256, "grid points per side", minimum=3),
        knob("numio", "sweeps", "int", 200, "sweeps per job (one unit)", minimum=1),
        knob("numio", "write_every", "int", 20, "sweeps between writes", minimum=1),
        knob(
            "numio",
            "inflate",
            "int",
            8,
            "each rank writes its block this many times over (more data per write)",
            minimum=1,
        ),
        knob("numio", "dir", "str", "", "folder written to (default: the load's folder under the run)", executes=True),
    ),
    "jobs/s",
    procs=lambda ctx, cores: 1,
    args=_args,
    on_cores="CPU, memory and storage",
)
