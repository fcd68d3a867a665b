"""One background-load process: `python -m rooftop.interference.loads.worker LOAD
--units FILE [LOAD's options] --rank R --cpus C` (the launchers append
--rank and --cpus as they do for engines; mpiexec and srun give
--rank FIRST --rank-from-env).

It pins itself to --cpus, then runs LOAD's fixed units of work until
SIGTERM or SIGINT, appending one JSON line per finished unit (the
first, a warm-up, excepted) to FILE
({rank} replaced): {"t0", "t1", "work"} (wall-clock seconds, work in the
load's unit). A unit cut short by the stop is not recorded. At the end it
prints one JSON document on stdout: {"load", "rank", "units", "work",
"seconds", "rate", "cpu_affinity", "pid", ...LOAD's own fields}.
Children it starts (net: engines; numio: its ranks; cmd: the command) are
in its process group, stopped with it.

With --lease FILE it stops as on SIGTERM once FILE is removed or left
unchanged for --lease-timeout seconds: the campaign rewrites it while it
lives (rooftop.engine.leases.Leases), so a load outlives no killed campaign
(engines watch theirs the same way).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import sys
import threading
import time

from rooftop.engine.leases import wait_until_lapsed

#: Environment variables an MPI or Slurm launcher gives each process's rank in.
RANK_ENV = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID")


def _cpus(text: str) -> set[int]:
    out: set[int] = set()
    for part in text.split(","):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


class Recorder:
    """Appends each finished unit to the units file, and sums them."""

    def __init__(self, path: str):
        self.path, self.units, self.work, self.busy = path, 0, 0.0, 0.0
        self.first: float | None = None
        self.last: float | None = None

    def __call__(self, t0: float, t1: float, work: float) -> None:
        with open(self.path, "a") as f:
            f.write(json.dumps({"t0": t0, "t1": t1, "work": work}) + "\n")
        self.units += 1
        self.work += work
        self.busy += t1 - t0
        self.first = t0 if self.first is None else self.first
        self.last = t1

    def seconds(self) -> float:
        """From the first unit's start to the last one's end (0 with none)."""
        return 0.0 if self.first is None or self.last is None else self.last - self.first


def repeat(unit, stopping: threading.Event, record: Recorder) -> None:
    """Runs unit() (returns its work, or None when cut short) until stopped.
    The first unit warms up (imports, page faults, cold caches: a cpu unit
    takes 30 times longer) and is not recorded."""
    first = True
    while not stopping.is_set():
        t0 = time.time()
        work = unit()
        if work is None or stopping.is_set():
            break
        if not first:
            record(t0, time.time(), work)
        first = False


#: Seconds a worker whose lease ended has to stop on its own before its
#: process group is sent SIGTERM, then SIGKILL as long again later.
LEASE_GRACE = 5.0


def _end_group(grace: float) -> None:
    """What stop() did not end: the worker's own process group (it leads
    one when the campaign started it; a command's grandchildren are in it
    too) gets SIGTERM, then SIGKILL. A worker leading no group (started by
    mpiexec or srun) exits, leaving its children to those launchers."""
    me = os.getpid()
    if os.getpgid(0) != me:
        os._exit(1)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(me, sig)
        except ProcessLookupError:
            return
        time.sleep(grace)


def watch_lease(path: str, timeout: float, stop, grace: float = LEASE_GRACE) -> threading.Thread:
    """Calls stop() once path is gone or unchanged for timeout seconds; if
    the worker is still running grace seconds later, ends its process group."""

    def run():
        wait_until_lapsed(path, timeout)
        stop()
        time.sleep(grace)
        _end_group(grace)

    t = threading.Thread(target=run, name="rooftop-load-lease", daemon=True)
    t.start()
    return t


def parse(argv: list[str]):
    p = argparse.ArgumentParser(prog="rooftop.interference.loads.worker")
    p.add_argument("load")
    p.add_argument("--units", required=True)
    p.add_argument("--rank", type=int, default=0)
    p.add_argument("--rank-from-env", action="store_true")
    p.add_argument("--cpus")
    p.add_argument("--lease")
    p.add_argument("--lease-timeout", type=float, default=10.0)
    args, rest = p.parse_known_args(argv)
    if args.rank_from_env:
        args.rank += next((int(os.environ[v]) for v in RANK_ENV if v in os.environ), 0)
    rest = [a.replace("{rank}", str(args.rank)) for a in rest]
    return args, rest


def main(argv: list[str] | None = None) -> int:
    args, rest = parse(sys.argv[1:] if argv is None else argv)
    if args.cpus:
        os.sched_setaffinity(0, _cpus(args.cpus))
    module = importlib.import_module(f"rooftop.interference.loads.{args.load}")
    stopping = threading.Event()

    def stop() -> None:
        stopping.set()
        module.on_stop()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda n, f: stop())
    if args.lease:
        watch_lease(args.lease, args.lease_timeout, stop)
    record = Recorder(args.units.replace("{rank}", str(args.rank)))
    start = time.time()
    extra = module.run(rest, stopping, record, args.rank) or {}
    seconds = record.seconds()
    doc = {
        "load": args.load,
        "rank": args.rank,
        "units": record.units,
        "work": record.work,
        "seconds": seconds,
        "busy_seconds": record.busy,
        "started": start,
        "rate": record.work / record.busy if record.busy > 0 else 0.0,
        "cpu_affinity": sorted(os.sched_getaffinity(0)),
        "pid": os.getpid(),
        **extra,
    }
    print(json.dumps(doc), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
