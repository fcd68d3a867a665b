#!/usr/bin/env python3
"""Network + storage `put` against its two parts, measured in the same run.

Issue 15's goal: a 1 MiB `put` over the network (the client's buffer is
RMA-read by the server and written to its file) reaches at least 0.9 x
min(network bulk ceiling, local storage ceiling), both measured in the
same run on the same file system and cores:

- network: `load --op write --size 1MiB` against a server (RMA only, no file);
- storage: `rooftop-engine storage --op put --size 1MiB` (the same I/O path
  in-process, no network), on the server's core;
- put: `load --op put --size 1MiB` against a server with `--storage-dir`.

The three run in adjacent triples (the order rotates from triple to
triple); each triple's put is divided by the smaller of its two parts, and
the median of those ratios is the headline. The file system is a fresh
ext4 image on a loop device (root), as in storage_vs_fio.py; `--io-mode`
is the data file's cache and durability (default direct+dsync, the `sbw`
metric's durable default).

Python 3.10+, standard library only. Progress to stderr, table to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from storage_vs_fio import loop_ext4  # noqa: E402  (the same fresh ext4 image)

GOAL = 0.9
MiB = 1 << 20
PARTS = ("network", "storage", "put")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def storage_args(a, d: Path) -> list[str]:
    return ["--storage-dir", str(d), "--io-mode", a.io_mode, "--file-size", str(a.file_size),
            "--allocation", "preallocate"]


def bytes_per_sec(text: str) -> float:
    doc = json.loads(text)
    if not doc.get("complete"):
        raise RuntimeError(f"engine run not complete: {doc.get('error') or doc.get('result', {}).get('stop_reason')}")
    return float(doc["result"]["bytes_per_sec"])


def timed(a) -> list[str]:
    return ["--size", "1MiB", "--duration", str(a.duration), "--warmup", str(a.warmup)]


def local_storage(a, d: Path) -> float:
    argv = [a.engine, "storage", "--op", "put", "--pattern", "seq", "--cpus", a.server_cpu,
            *timed(a), *storage_args(a, d)]
    return bytes_per_sec(subprocess.run(argv, capture_output=True, text=True, check=True,
                                        timeout=a.duration + a.warmup + 120).stdout)


def over_network(a, d: Path | None, op: str) -> float:
    """A server (with storage when d) and one client running op."""
    with tempfile.TemporaryDirectory(prefix="rooftop-put-") as g:
        out = Path(g) / "server.json"
        serve = [a.engine, "serve", "--fabric", a.fabric, "--group-dir", g, "--progress", a.server_progress,
                 "--io-threads", str(a.io_threads), "--cpus", a.server_cpu, "--output", str(out)]
        serve += storage_args(a, d) if d else []
        server = subprocess.Popen(serve, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 60
            while not (Path(g) / "0.addr").exists():
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"server did not start: {server.stderr.read()[-500:]}")
                time.sleep(0.05)
            load = [a.engine, "load", "--fabric", a.fabric, "--group-dir", g, "--op", op,
                    "--progress", "busy", "--cpus", a.client_cpu, "--concurrency", str(a.concurrency),
                    *timed(a)]
            return bytes_per_sec(subprocess.run(load, capture_output=True, text=True, check=True,
                                                timeout=a.duration + a.warmup + 120).stdout)
        finally:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def one(part: str, a, mnt: Path, i: int) -> float:
    d = mnt / f"{part}-{i}"
    d.mkdir()
    try:
        if part == "storage":
            return local_storage(a, d)
        return over_network(a, d if part == "put" else None, "write" if part == "network" else "put")
    finally:
        subprocess.run(["rm", "-rf", str(d)], check=False)


def triples(a, mnt: Path) -> list[dict]:
    out = []
    for i in range(a.triples):
        order = PARTS[i % 3:] + PARTS[:i % 3]
        t = {p: one(p, a, mnt, i) for p in order}
        t["ratio"] = t["put"] / min(t["network"], t["storage"])
        t["binds"] = "network" if t["network"] <= t["storage"] else "storage"
        log(f"triple {i + 1}/{a.triples} ({', '.join(order)}): network {t['network'] / MiB:,.0f}, "
            f"storage {t['storage'] / MiB:,.0f}, put {t['put'] / MiB:,.0f} MiB/s: ratio {t['ratio']:.3f}")
        out.append(t)
    return out


def render(rows: list[dict], a, took: float) -> str:
    med = {p: statistics.median(r[p] for r in rows) for p in PARTS}
    ratios = [r["ratio"] for r in rows]
    ratio = statistics.median(ratios)
    binds = max(set(r["binds"] for r in rows), key=[r["binds"] for r in rows].count)
    verdict = "met" if ratio >= GOAL else ("indistinguishable" if max(ratios) >= GOAL else "MISSED")
    return "\n".join([
        f"put_vs_parts {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  {os.cpu_count()} cpus  "
        f"kernel {platform.release()}",
        f"{a.fabric}, 1 MiB sequential, --io-mode {a.io_mode}, server --progress {a.server_progress} "
        f"--io-threads {a.io_threads}, client concurrency {a.concurrency}, {a.triples} triples, {a.duration:g} s + "
        f"{a.warmup:g} s warmup, server cpu {a.server_cpu}, client cpu {a.client_cpu}, took {took:.0f} s, "
        f"load avg {os.getloadavg()[0]:.2f}",
        "",
        f"network (load --op write)      {med['network'] / MiB:10,.1f} MiB/s (median)",
        f"storage (storage --op put)     {med['storage'] / MiB:10,.1f} MiB/s (median)",
        f"put (load --op put, storage)   {med['put'] / MiB:10,.1f} MiB/s (median)",
        f"put / min(network, storage)    {ratio:10.3f}  (triples {min(ratios):.3f}..{max(ratios):.3f}; "
        f"goal >= {GOAL}: {verdict}; the smaller part: {binds})",
    ])


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--engine", default=str(Path(sys.executable).parent / "rooftop-engine"),
                   help="the engine binary (default: next to this Python, as the .venv has it)")
    p.add_argument("--fabric", default="ofi+tcp")
    p.add_argument("--io-mode", default="direct+dsync")
    p.add_argument("--triples", type=int, default=5)
    p.add_argument("--duration", type=float, default=2.0)
    p.add_argument("--warmup", type=float, default=0.5)
    p.add_argument("--file-size", default=str(256 * MiB), help="bytes of each data file (default 256 MiB)")
    p.add_argument("--server-progress", default="spindown",
                   help="the server's progress mode (default spindown, the servers' default)")
    p.add_argument("--io-threads", type=int, default=-1,
                   help="the server's storage threads (0: inline on the progress thread; default -1: the engine's auto)")
    p.add_argument("--concurrency", type=int, default=1,
                   help="the client's operations in flight, for the network and put parts (default 1: "
                        "sequential; 2 lets a server with an I/O thread pull the next put while it writes this one)")
    p.add_argument("--server-cpu", default="0")
    p.add_argument("--client-cpu", default="1")
    p.add_argument("--image-dir", default=None, help="where the ext4 image goes (default: a temporary dir)")
    p.add_argument("--json", default=None, help="write every triple and the summary here")
    return p.parse_args(argv)


def main(argv=None) -> int:
    a = parse_args(argv)
    if not Path(a.engine).exists():
        print(f"put_vs_parts: no engine at {a.engine} (--engine)", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    with loop_ext4(4 * int(a.file_size) + 256 * MiB, a.image_dir) as (mnt, _dev):
        rows = triples(a, Path(mnt))
    text = render(rows, a, time.monotonic() - t0)
    print(text)
    if a.json:
        Path(a.json).write_text(json.dumps({"triples": rows, "summary": text, "args": vars(a)}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
