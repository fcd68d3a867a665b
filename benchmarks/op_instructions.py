#!/usr/bin/env python3
"""Instructions per sequential noop RPC over ofi+shm, engine against fi_pingpong.

Where the engine's time per operation goes, counted rather than timed (the
count does not depend on the machine's load; perf's hardware counters are
not available in every VM): one side of the pair runs under valgrind's
callgrind, the other natively, server on core 0 and client on core 1, both
busy polling. The engine is counted while its client measures: callgrind's
counters are zeroed when the client's window log says measuring began and
dumped halfway through, and the operations are the calls of the function
that completes one (client) or handles one request (server). fi_pingpong
runs a short and a 3x longer run, and its figures are the difference of
the two over the difference in iterations (start-up cancels). Printed per
operation: the total, per object (the engine or fi_pingpong, libfabric,
libc), the engine's calls into libfabric (fi_cq_read through
Endpoint::poll, fi_inject, fi_recv) with their calls per operation, the
clock reads, and the engine's own code (everything else). Empty polls are
counted too, as they happen: under callgrind the measured side is ~50x
slower than its peer, so it rarely polls in vain.

    python3 benchmarks/op_instructions.py --engine build/engine/rooftop-engine [--json FILE]

Needs valgrind; fi_pingpong (libfabric-bin) for its rows. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

# Engine functions whose inclusive cost per operation is shown (substrings
# of the demangled names), in this order.
CALLS = [
    ("Endpoint::poll", "fi_cq_read (Endpoint::poll)"),
    ("Endpoint::post_inject", "fi_inject"),
    ("Endpoint::post_recv", "fi_recv"),
    ("rooftop::now_ns", "clock reads"),
    ("wire::decode", "decode"),
    ("wire::encode_", "encode"),
    ("Histogram::record", "latency histogram"),
    ("Load::count", "counting a completed op"),
    ("ClientCore::repost", "posting a receive buffer again"),
    ("Server::repost", "posting a receive buffer again"),
    ("Load::complete", "completing an op (it issues the next)"),
    ("Server::handle_rx", "handling a request"),
]
LIBFABRIC_CALLS = CALLS[:3]


def callgrind(out: Path) -> list[str]:
    return ["valgrind", "--tool=callgrind", "--quiet", f"--callgrind-out-file={out}"]


def parse(path: Path) -> dict:
    """Self cost per (object, function), calls and inclusive cost per called function."""
    names: dict[str, dict[str, str]] = {"ob": {}, "fl": {}, "fn": {}}
    self_: Counter = Counter()
    calls: Counter = Counter()
    incl: Counter = Counter()
    ob = fn = "?"
    cfn = None
    after_calls = False

    def name(kind: str, v: str) -> str:
        table = names[kind]
        m = re.match(r"\((\d+)\)(?:\s+(.*))?", v)
        if not m:
            return v
        if m.group(2) is not None:
            table[m.group(1)] = m.group(2)
        return table.get(m.group(1), "?")

    for line in path.read_text(errors="replace").splitlines():
        if not line:
            continue
        m = re.match(r"^(c?)(ob|fl|fi|fe|fn)=(.*)", line)
        if m:
            called, kind, v = m.groups()
            kind = "fl" if kind in ("fi", "fe") else kind
            n = name(kind, v)
            if called:
                cfn = n if kind == "fn" else cfn
            elif kind == "ob":
                ob = n
            elif kind == "fn":
                fn = n
            continue
        if line.startswith("calls="):
            calls[cfn] += int(line.split("=")[1].split()[0])
            after_calls = True
            continue
        if line[0].isdigit() or line[0] in "+-*":
            parts = line.split()
            cost = int(parts[1]) if len(parts) > 1 else 0
            if after_calls:
                incl[cfn] += cost
                after_calls = False
            else:
                self_[(ob.rsplit("/", 1)[-1], fn)] += cost
    return {"self": self_, "calls": calls, "incl": incl}


def per_op(short: dict, long: dict, dops: int, program: str) -> dict:
    """Differences long - short, per operation."""
    d_self = Counter(long["self"])
    d_self.subtract(short["self"])
    total = sum(d_self.values()) / dops
    objects: Counter = Counter()
    for (obj, _fn), c in d_self.items():
        objects[obj] += c / dops
    out = {"total": total, "objects": dict(objects.most_common()), "calls": {}}
    for key, label in CALLS:
        inc = sum(c for f, c in long["incl"].items() if f and key in f) - sum(
            c for f, c in short["incl"].items() if f and key in f
        )
        n = sum(c for f, c in long["calls"].items() if f and key in f) - sum(
            c for f, c in short["calls"].items() if f and key in f
        )
        if n:
            out["calls"][label] = {"instructions": inc / dops, "calls": n / dops}
    provider = sum(out["calls"].get(label, {}).get("instructions", 0) for _k, label in LIBFABRIC_CALLS)
    if provider:
        out["engine_own"] = total - provider
    own = [(fn, c / dops) for (obj, fn), c in d_self.items() if obj == program and c > 0]
    out["top"] = sorted(own, key=lambda x: -x[1])[:12]
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port: int) -> bool:
    for f in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            for ln in Path(f).read_text().splitlines()[1:]:
                p = ln.split()
                if len(p) > 3 and p[3] == "0A" and int(p[1].rsplit(":", 1)[1], 16) == port:
                    return True
        except OSError:
            pass
    return False


def stop(p: subprocess.Popen, timeout: float = 60) -> None:
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(10)


def callgrind_control(pid: int, what: str) -> None:
    subprocess.run(
        ["callgrind_control", what, str(pid)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
        timeout=60,
    )


def run_engine(engine: str, side: str, seconds: float, g: Path) -> tuple[dict, int]:
    """One pair, `side` under callgrind: its costs while the client measures, and
    the operations they were spent on."""
    out = g / "cg.out"
    vg = callgrind(out)
    wlog = g / "windows.log"
    srv = subprocess.Popen(
        (vg if side == "server" else [])
        + [engine, "serve", "--fabric", "ofi+shm", "--progress", "busy", "--group-dir", str(g)]
        + ["--rank", "0", "--cpus", "0", "--output", str(g / "server.json")],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        end = time.monotonic() + 120
        while not (g / "0.addr").exists():
            if srv.poll() is not None or time.monotonic() > end:
                raise SystemExit(f"engine server did not publish its address (rc {srv.poll()})")
            time.sleep(0.1)
        cli = subprocess.Popen(
            (vg if side == "client" else [])
            + [engine, "load", "--fabric", "ofi+shm", "--group-dir", str(g), "--rank", "0", "--server", "0"]
            + ["--op", "noop", "--progress", "busy", "--duration", f"{seconds:g}", "--warmup", "0.5"]
            + ["--cpus", "1", "--window-log", str(wlog), "--output", str(g / "client.json")],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            end = time.monotonic() + 300
            while not (wlog.exists() and '"measure"' in wlog.read_text()):
                if cli.poll() is not None or time.monotonic() > end:
                    raise SystemExit(f"engine client did not start measuring (rc {cli.poll()})")
                time.sleep(0.05)
            measured = cli.pid if side == "client" else srv.pid
            callgrind_control(measured, "--zero")
            time.sleep(seconds / 2)
            callgrind_control(measured, "--dump")
            if cli.wait(seconds + 300) != 0:
                raise SystemExit(f"engine client failed (rc {cli.returncode})")
        finally:
            stop(cli)
    finally:
        stop(srv)
    dumps = sorted(g.glob("cg.out.*"))  # the dump taken halfway (the one at exit is cg.out)
    if not dumps:
        raise SystemExit("callgrind wrote no dump (callgrind_control --dump)")
    costs = parse(dumps[0])
    per = "Load::complete" if side == "client" else "Server::handle_rx"
    return costs, sum(c for f, c in costs["calls"].items() if f and per in f)


def run_pingpong(side: str, iters: int, size: int, g: Path) -> tuple[dict, int]:
    out = g / "cg.out"
    vg = callgrind(out)
    port = free_port()
    base = ["fi_pingpong", "-p", "shm", "-e", "rdm", "-S", str(size), "-I", str(iters)]
    srv = subprocess.Popen(
        ["taskset", "-c", "0"] + (vg if side == "server" else []) + base + ["-B", str(port)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        end = time.monotonic() + 120
        while not listening(port):
            if srv.poll() is not None or time.monotonic() > end:
                raise SystemExit(f"fi_pingpong server did not listen (rc {srv.poll()})")
            time.sleep(0.1)
        subprocess.run(
            ["taskset", "-c", "1"] + (vg if side == "client" else []) + base + ["-P", str(port), "localhost"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=True,
            timeout=600,
        )
        srv.wait(120)
    finally:
        stop(srv)
    return parse(out), iters


def measure(kind: str, side: str, a: argparse.Namespace) -> dict:
    runs = []
    for scale in (1, 3) if kind == "fi_pingpong" else (1,):
        g = Path(tempfile.mkdtemp(prefix="rooftop-opi-"))
        try:
            if kind == "engine":
                runs.append(run_engine(a.engine, side, a.seconds, g))
            else:
                runs.append(run_pingpong(side, a.iters * scale, a.msg_size, g))
        finally:
            shutil.rmtree(g, ignore_errors=True)
    if kind == "engine":
        (c, n) = runs[0]
        if n < 1000:
            raise SystemExit(f"engine {side}: only {n} operations in the counted window")
        empty = {"self": Counter(), "calls": Counter(), "incl": Counter()}
        return {"what": f"engine {side}", "ops": [n], **per_op(empty, c, n, "rooftop-engine")}
    (c1, n1), (c2, n2) = runs
    return {"what": f"fi_pingpong {side}", "ops": [n1, n2], **per_op(c1, c2, n2 - n1, "fi_pingpong")}


def show(rows: list[dict]) -> None:
    for r in rows:
        print(
            f"== {r['what']}: {r['total']:.0f} instructions per operation (operations {', '.join(map(str, r['ops']))})"
        )
        for obj, v in r["objects"].items():
            if abs(v) >= 1:
                print(f"   {v:8.1f}  {obj}")
        for label, c in r["calls"].items():
            print(f"   {c['instructions']:8.1f}  {label} (inclusive; {c['calls']:.2f} calls per op)")
        if "engine_own" in r:
            print(f"   {r['engine_own']:8.1f}  the engine's own code (total minus its fi_cq_read, fi_inject, fi_recv)")
        for fn, v in r["top"]:
            print(f"   {v:8.1f}    self: {fn[:100]}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engine", required=True, help="rooftop-engine binary (built with -g for readable names)")
    ap.add_argument(
        "--seconds", type=float, default=4.0, help="engine client's --duration; the first half is counted (default 4)"
    )
    ap.add_argument("--iters", type=int, default=50_000, help="fi_pingpong -I, short run (long: 3x; default 50000)")
    ap.add_argument("--msg-size", type=int, default=64, help="fi_pingpong -S (default 64, as engine_vs_reference.py)")
    ap.add_argument("--sides", default="client,server", help="which sides to measure (default client,server)")
    ap.add_argument("--no-pingpong", action="store_true", help="engine only")
    ap.add_argument("--json", metavar="FILE", help="also write every figure here")
    a = ap.parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("op_instructions: valgrind is needed (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    sides = [s for s in a.sides.split(",") if s]
    if any(s not in ("client", "server") for s in sides):
        ap.error("--sides: client and/or server")
    rows = [measure("engine", s, a) for s in sides]
    if not a.no_pingpong and shutil.which("fi_pingpong"):
        rows += [measure("fi_pingpong", s, a) for s in sides]
    show(rows)
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
