#!/usr/bin/env python3
"""The service barrier's own cost, and the presets' efficiency tables.

`rooftop service` starts every client process under a wrapper
(python -m rooftop.service.barrier client ...): it waits at the barrier,
then runs the client, and for the redis preset stays its parent, reading
its output line by line for progress lines. Issue 29 asks that a client
under the wrapper reach at least 0.98x the same client started by hand.

    python3 benchmarks/service_barrier.py [--pairs 10] [--requests 200000]
        [--how progress|exec] [--server-core 0] [--client-core 1]

One redis-server (persistence off, pinned to --server-core) on loopback;
then --pairs adjacent pairs of one redis-benchmark GET client (one
connection, no pipelining, a fixed request count: -n N -c 1 -P 1), pinned
to --client-core, started once by hand and once under the wrapper with
the arguments rooftop.service.run gives it (the lease kept alive, released
once it is at the barrier), in alternating order (hand first in even
pairs, wrapper first in odd ones). Each client's rate is its own final
"GET: R requests per second". Prints each pair's ratio (wrapper / hand)
and their median (the target: >= 0.98). --how progress (default) is the
redis preset's path (--progress: the wrapper stays the parent, reading the
client's output); --how exec is a spec without --progress or
--stop-after (the wrapper execs the client: nothing of it stays).

    python3 benchmarks/service_barrier.py --tables --results DIR --run RUN

prints the efficiency tables of the run's services (redis, memcached, ...)
as `rooftop model RUN --json` has them. To make them on this machine:

    RUN=$(rooftop collect --metrics rpc --duration 2 --windows 3 --results DIR | tail -1)
    rooftop validate $RUN --results DIR
    rooftop service $RUN --preset redis --results DIR
    rooftop service $RUN --preset memcached --results DIR
    rooftop model $RUN --results DIR          # the same tables, and the roofline

(on the emulated cluster: `rooftop cluster up --nodes 3` as root, then
`collect --launcher netns`; docs/services.md).

Needs redis-server, redis-cli and redis-benchmark (Debian: redis-server,
redis-tools). Python 3.10+, standard library and rooftop's own modules,
imported from this checkout's src/ when rooftop is not installed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

try:
    import rooftop  # (installed: .venv/bin/python)
except ImportError:  # python3 from a checkout: its src/
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
    import rooftop
from rooftop.engine.leases import Leases
from rooftop.engine.reaping import terminate
from rooftop.service.run import WRAPPER

RATE = re.compile(r"GET: ([0-9.]+) requests per second")
PROGRESS = r"GET: rps=([0-9.]+)"
#: Seconds any one step may take before the benchmark gives up.
TIMEOUT = 300.0
#: The environment of the wrapper and of rooftop: this rooftop importable.
ENV = dict(
    os.environ,
    PYTHONPATH=os.pathsep.join(
        filter(None, [str(Path(rooftop.__file__).resolve().parents[1]), os.environ.get("PYTHONPATH")])
    ),
)


def pinned(core: int):
    return lambda: os.sched_setaffinity(0, {core})


def start_server(port: int, core: int, folder: Path) -> subprocess.Popen:
    argv = [
        "redis-server", "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no",
        "--dir", str(folder), "--logfile", str(folder / "redis.log"), "--daemonize", "no", "--protected-mode", "no",
    ]  # fmt: skip
    srv = subprocess.Popen(argv, preexec_fn=pinned(core), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 15
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            if srv.poll() is not None or time.monotonic() > deadline:
                terminate([srv], 3.0)
                raise SystemExit(
                    f"redis-server did not listen on 127.0.0.1:{port} (see {folder / 'redis.log'})"
                ) from None
            time.sleep(0.05)
    # the key redis-benchmark's GET reads (as the preset's ready rule sets it)
    subprocess.run(
        ["redis-cli", "-p", str(port), "SET", "key:__rand_int__", "xxx"], check=True, capture_output=True, timeout=10
    )
    return srv


def client_argv(port: int, requests: int) -> list[str]:
    return ["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-c", "1", "-P", "1", "-d", "3", "-t", "get",
            "-n", str(requests), "-q"]  # fmt: skip


def rate_of(out: Path) -> float:
    found = RATE.findall(out.read_text(errors="replace"))
    if not found:
        raise SystemExit(f"no 'GET: R requests per second' in {out}")
    return float(found[-1])


def by_hand(port: int, requests: int, core: int, folder: Path) -> float:
    out = folder / "hand.out"
    with open(out, "wb") as f:
        subprocess.run(client_argv(port, requests), stdout=f, stderr=subprocess.STDOUT, preexec_fn=pinned(core),
                       timeout=TIMEOUT, check=True)  # fmt: skip
    return rate_of(out)


def wrapped(port: int, requests: int, core: int, folder: Path, how: str, leases: Leases) -> float:
    """The client as rooftop.service.run.ServiceRun.client_launches starts it (local
    launcher: --rank and --cpus appended), released once at the barrier."""
    sdir = Path(tempfile.mkdtemp(prefix="sample-", dir=folder))
    cmd = " ".join(client_argv(port, requests)).replace(f"-p {port}", "-p {server_port}")
    cmd = cmd.replace("-h 127.0.0.1", "-h {server_address}")
    argv = [
        *WRAPPER, "client", "--command", cmd, "--servers", f"127.0.0.1:{port}", "--folder", str(sdir),
        "--release-timeout", "35", "--env", "{}", *leases.args(folder),
    ]  # fmt: skip
    if how == "progress":
        argv += ["--progress", PROGRESS]
    argv += ["--rank", "0", "--cpus", str(core)]
    with open(sdir / "wrapper.log", "wb") as log:
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log, env=ENV)
    try:
        deadline = time.monotonic() + 30
        while not (sdir / "ready-0").exists():
            if p.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the wrapper never reached the barrier (see {sdir / 'wrapper.log'})")
            time.sleep(0.005)
        (sdir / "release").write_text(f"{time.time()}\n")
        rc = p.wait(timeout=TIMEOUT)
    finally:
        terminate([p], 3.0)
    if rc != 0:
        raise SystemExit(f"the wrapped client exited {rc} (see {sdir})")
    return rate_of(sdir / "client-0.out")


def barrier_cost(a: argparse.Namespace) -> int:
    missing = [p for p in ("redis-server", "redis-cli", "redis-benchmark") if shutil.which(p) is None]
    if missing:
        raise SystemExit(f"{', '.join(missing)} not found (Debian: apt-get install redis-server redis-tools)")
    folder = Path(tempfile.mkdtemp(prefix="rooftop-barrier-"))
    leases = Leases(10.0)
    leases.add(folder)
    srv = start_server(a.port, a.server_core, folder)
    ratios = []
    try:
        print(f"redis-benchmark GET -n {a.requests} -c 1 -P 1 on core {a.client_core}, redis-server on core "
              f"{a.server_core}; wrapper: {a.how}")  # fmt: skip
        print(f"{'pair':>4} {'order':>13} {'hand ops/s':>12} {'wrapper ops/s':>14} {'ratio':>7}")
        for i in range(a.pairs):
            order = ("hand", "wrapper") if i % 2 == 0 else ("wrapper", "hand")
            got = {}
            for who in order:
                if who == "hand":
                    got[who] = by_hand(a.port, a.requests, a.client_core, folder)
                else:
                    got[who] = wrapped(a.port, a.requests, a.client_core, folder, a.how, leases)
            ratios.append(got["wrapper"] / got["hand"])
            print(f"{i:>4} {'-'.join(order):>13} {got['hand']:>12,.0f} {got['wrapper']:>14,.0f} {ratios[-1]:>7.3f}",
                  flush=True)  # fmt: skip
    finally:
        terminate([srv], 5.0)
        leases.close()
        shutil.rmtree(folder, ignore_errors=True)
    med = statistics.median(ratios)
    print(f"median ratio (wrapper / hand) over {len(ratios)} pairs: {med:.3f} (target >= 0.98: "
          f"{'met' if med >= 0.98 else 'NOT met'})")  # fmt: skip
    return 0


def tables(a: argparse.Namespace) -> int:
    if not a.run:
        raise SystemExit("--tables needs --run RUN (and --results DIR)")
    p = subprocess.run(
        [sys.executable, "-m", "rooftop", "model", a.run, "--results", a.results, "--json"],
        capture_output=True, text=True, timeout=TIMEOUT, env=ENV,
    )  # fmt: skip
    if p.returncode != 0:
        raise SystemExit(f"rooftop model {a.run}: {p.stderr.strip()}")
    services = json.loads(p.stdout).get("services") or []
    if not services:
        print(f"run {a.run} has no service points (rooftop service {a.run} --preset redis)")
        return 1
    for s in services:
        print(f"\n{s['headline']}  [{s['metric']}, {s['unit']}; roofline: {s['roofline_source']}]")
        print(f"{'x':>6} {'S x C':>7} {'samples':>7} {'measured':>12} {'aggregate':>12} {'r(x)':>12} "
              f"{'efficiency':>10} binds")  # fmt: skip
        for r in s["placements"]:
            print(f"{r['x']:>6.3g} {str(r['server_procs']) + ' x ' + str(r['client_procs']):>7} {r['samples']:>7} "
                  f"{r['measured']:>12,.0f} {r['aggregate']:>12,.0f} {r['roofline']:>12,.0f} "
                  f"{r['efficiency'] * 100:>9.0f}% {r['binding']}")  # fmt: skip
        for x in s["left_out"]:
            print(f"  left out: {x['server_procs']} x {x['client_procs']} sample {x['sample']}: {x['why']}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=10, help="adjacent hand/wrapper pairs (default %(default)s)")
    ap.add_argument("--requests", type=int, default=200000, help="redis-benchmark -n (default %(default)s)")
    ap.add_argument("--how", choices=("progress", "exec"), default="progress",
                    help="the wrapper's path: progress (the redis preset's) or exec (default %(default)s)")  # fmt: skip
    ap.add_argument("--port", type=int, default=16999)
    ap.add_argument("--server-core", type=int, default=0)
    ap.add_argument("--client-core", type=int, default=1)
    ap.add_argument("--tables", action="store_true", help="print the efficiency tables of --run instead")
    ap.add_argument("--results", default="./rooftop-results")
    ap.add_argument("--run")
    a = ap.parse_args()
    if a.pairs < 1 or a.requests < 1:
        raise SystemExit("--pairs and --requests must be 1 or more")
    return tables(a) if a.tables else barrier_cost(a)


if __name__ == "__main__":
    sys.exit(main())
