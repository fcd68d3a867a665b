#!/usr/bin/env python3
"""Syscalls per operation of a rooftop-engine server in each progress mode.

A load-independent view of what each --progress mode costs in a burst: one
server (core 0) and one sequential noop client (core 1, busy) over ofi+tcp;
`perf stat` counts the server's system calls by kind while the client runs,
and the server's own op count divides them. The calls made per op (recvfrom,
sendto, the provider's signal write/read) do not depend on the machine's
load; the polling calls (poll or epoll_wait, one per empty CQ read) do: they
fill whatever time the server waits, and are printed per op for their kind,
not their number. Needs perf and permission to trace the server's syscalls
(root, or kernel.perf_event_paranoid <= 1 with tracefs readable).

    python3 benchmarks/progress_syscalls.py --engine build/.../rooftop-engine
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CALLS = ["recvfrom", "sendto", "write", "read", "poll", "epoll_wait", "clock_nanosleep"]


def wait_for(path: Path, proc: subprocess.Popen, timeout: float) -> None:
    end = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > end:
            raise SystemExit(f"server did not publish {path} (rc {proc.poll()})")
        time.sleep(0.05)


def measure(engine: str, mode: str, seconds: float) -> dict:
    """Counts of the server's syscalls per op during one sequential burst."""
    g = Path(tempfile.mkdtemp(prefix="rooftop-sys-"))
    srv = subprocess.Popen(
        [
            "taskset",
            "-c",
            "0",
            engine,
            "serve",
            "--fabric",
            "ofi+tcp",
            "--progress",
            mode,
            "--group-dir",
            str(g),
            "--rank",
            "0",
            "--output",
            str(g / "server.json"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(g / "0.addr", srv, 15)
        events = ",".join(["raw_syscalls:sys_enter"] + [f"syscalls:sys_enter_{c}" for c in CALLS])
        perf = subprocess.Popen(
            ["perf", "stat", "-x", ",", "-e", events, "-p", str(srv.pid), "-o", str(g / "perf.csv")]
        )
        time.sleep(0.3)
        subprocess.run(
            [
                "taskset",
                "-c",
                "1",
                engine,
                "load",
                "--fabric",
                "ofi+tcp",
                "--group-dir",
                str(g),
                "--rank",
                "0",
                "--server",
                "0",
                "--op",
                "noop",
                "--progress",
                "busy",
                "--duration",
                str(seconds),
                "--warmup",
                "0.2",
                "--output",
                str(g / "client.json"),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        perf.send_signal(signal.SIGINT)
        perf.wait(15)
        srv.send_signal(signal.SIGTERM)
        srv.wait(15)
        doc = json.loads((g / "server.json").read_text())
        ops = doc["result"]["ops"]
        counts = {}
        for line in (g / "perf.csv").read_text().splitlines():
            f = line.split(",")
            if len(f) > 2 and f[0].strip().isdigit():
                counts[f[2].split("sys_enter_", 1)[1] if "sys_enter_" in f[2] else "all"] = int(f[0])
        return {
            "mode": mode,
            "ops": ops,
            "wait_object": doc["engine"]["progress"]["wait_object"],
            "per_op": {k: v / ops for k, v in counts.items()} if ops else {},
        }
    finally:
        if srv.poll() is None:
            srv.kill()
        shutil.rmtree(g, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engine", required=True, help="rooftop-engine binary")
    ap.add_argument("--modes", default="busy,spindown,adaptive,block")
    ap.add_argument("--seconds", type=float, default=2.0, help="burst length per mode (default 2)")
    ap.add_argument("--json", metavar="FILE", help="also write the numbers here")
    a = ap.parse_args()
    rows = [measure(a.engine, m, a.seconds) for m in a.modes.split(",")]
    print(f"{'mode':10} {'ops':>7} {'wait':>5} " + " ".join(f"{c:>10}" for c in ["all"] + CALLS))
    for r in rows:
        print(
            f"{r['mode']:10} {r['ops']:7d} {r['wait_object']:>5} "
            + " ".join(f"{r['per_op'].get(c, 0):10.3f}" for c in ["all"] + CALLS)
        )
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
