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
metric's durable default). The image is written with zeros first
(`--sparse-image` not to), so the host file system allocates nothing during
the runs, and the loop device writes it with O_DIRECT (`--host-cache` not
to): otherwise the "device" is the host's page cache, and its dirty-page
writeback throttles whichever part runs after a fast one (a put measured
at a tenth of the storage part that ran just before it). `--device-rate
MIB_S` puts the image in RAM instead and caps the loop device's writes
with a blkio throttle: a steady device instead of the host disk.

Placement: the server (and the storage part) runs on the CPU that takes
the host disk's interrupts, the client on another (`--server-cpu`,
`--client-cpu`; default auto). The kernel finishes a write on the core its
interrupt arrived at; a busy-polling client there, which on a real cluster
runs on another node, delays that work by a scheduler slice (an O_DSYNC
put at 0.6x the storage part with the client there, 0.8x without).
`--io-async` has the server submit its writes with Linux AIO (serve
--io-async), overlapping the next put's transfer with this one's write.
With one put in flight (`--concurrency 1`) nothing can overlap: the table
also prints that serial bound.

The buffers that are written (the server's bulk slots, the storage part's
buffer) are in huge pages (`--buffer-pages huge`, reserved here and given
back; `--buffer-pages base` not to): from base pages a 1 MiB O_DIRECT write
reaches the host disk as one request or two, whichever pages the process
drew (storage_vs_fio.py says why), so each run drew one of two speeds.

Each part that writes also reports the device's side, from its document's
`storage.device_s`: the mean time of one write alone and during the put,
and the share of the put's time the device spent writing. Near 1 means the
engine kept the device busy, and what the put lost, the writes lost.

Python 3.10+, standard library only. Progress to stderr, table to stdout.
"""

from __future__ import annotations

import argparse
import contextlib
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
from storage_vs_fio import BenchError, exit_on_sigterm, loop_ext4, reserved_huge_pages  # noqa: E402  (the same ext4 image)

GOAL = 0.9
MiB = 1 << 20
PARTS = ("network", "storage", "put")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def storage_args(a, d: Path) -> list[str]:
    return [
        "--storage-dir",
        str(d),
        "--io-mode",
        a.io_mode,
        "--file-size",
        str(a.file_size),
        "--allocation",
        "preallocate",
    ]


def checked(doc: dict) -> dict:
    if not doc.get("complete"):
        raise RuntimeError(f"engine run not complete: {doc.get('error') or doc.get('result', {}).get('stop_reason')}")
    return doc


def write_time(doc: dict) -> float:
    """Mean seconds of one data-file write (with its fsync) in a document
    holding storage: how long the device took per put in that run."""
    st = doc["result"]["storage"]
    return st["device_s"]["write"] / max(1, st["counts"]["puts"])


def timed(a) -> list[str]:
    return ["--size", "1MiB", "--duration", str(a.duration), "--warmup", str(a.warmup)]


def in_cgroup(argv: list[str], cg: Path | None) -> list[str]:
    """argv run from inside the blkio cgroup cg (its writes throttled), if any:
    the shell joins, then becomes the command (same pid)."""
    return ["sh", "-c", f'echo $$ > {cg}/cgroup.procs && exec "$@"', "sh", *argv] if cg else argv


def local_storage(a, d: Path, cg: Path | None) -> tuple[float, float]:
    argv = [
        a.engine,
        "storage",
        "--op",
        "put",
        "--pattern",
        "seq",
        "--cpus",
        a.server_cpu,
        "--buffer-pages",
        a.buffer_pages,
        *timed(a),
        *storage_args(a, d),
    ]
    doc = checked(
        json.loads(
            subprocess.run(
                in_cgroup(argv, cg), capture_output=True, text=True, check=True, timeout=a.duration + a.warmup + 120
            ).stdout
        )
    )
    return float(doc["result"]["bytes_per_sec"]), write_time(doc)


def over_network(a, d: Path | None, op: str, cg: Path | None) -> tuple[float, float | None]:
    """A server (with storage when d) and one client running op: the
    client's rate and, with storage, the server's mean write time."""
    with tempfile.TemporaryDirectory(prefix="rooftop-put-") as g:
        out = Path(g) / "server.json"
        serve = [
            a.engine,
            "serve",
            "--fabric",
            a.fabric,
            "--group-dir",
            g,
            "--progress",
            a.server_progress,
            "--io-threads",
            str(a.io_threads),
            "--cpus",
            a.server_cpu,
            "--output",
            str(out),
            "--buffer-pages",
            a.buffer_pages,
            *(["--io-async"] if a.io_async and d else []),
        ]
        serve += storage_args(a, d) if d else []
        server = subprocess.Popen(
            in_cgroup(serve, cg if d else None), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        try:
            deadline = time.monotonic() + 60
            while not (Path(g) / "0.addr").exists():
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"server did not start: {server.stderr.read()[-500:]}")
                time.sleep(0.05)
            load = [
                a.engine,
                "load",
                "--fabric",
                a.fabric,
                "--group-dir",
                g,
                "--op",
                op,
                "--progress",
                a.client_progress,
                "--cpus",
                a.client_cpu,
                "--concurrency",
                str(a.concurrency),
                *timed(a),
            ]
            doc = checked(
                json.loads(
                    subprocess.run(
                        load, capture_output=True, text=True, check=True, timeout=a.duration + a.warmup + 120
                    ).stdout
                )
            )
        finally:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        return float(doc["result"]["bytes_per_sec"]), write_time(json.loads(out.read_text())) if d else None


def one(part: str, a, mnt: Path, i: int, cg: Path | None) -> tuple[float, float | None]:
    d = mnt / f"{part}-{i}"
    d.mkdir()
    try:
        if part == "storage":
            return local_storage(a, d, cg)
        return over_network(a, d if part == "put" else None, "write" if part == "network" else "put", cg)
    finally:
        subprocess.run(["rm", "-rf", str(d)], check=False)


def triples(a, mnt: Path, cg: Path | None) -> list[dict]:
    out = []
    for i in range(a.triples):
        order = PARTS[i % 3 :] + PARTS[: i % 3]
        t, w = {}, {}
        for p in order:
            t[p], w[p] = one(p, a, mnt, i, cg)
        t["ratio"] = t["put"] / min(t["network"], t["storage"])
        # One put at a time cannot overlap its transfer with its write: the
        # best it can do is their serial sum, as a share of the smaller part.
        t["serial_bound"] = 1 / (1 / t["network"] + 1 / t["storage"]) / min(t["network"], t["storage"])
        t["binds"] = "network" if t["network"] <= t["storage"] else "storage"
        # The device's side: its mean write time alone and during the put,
        # and the share of the put's time it spent writing (1: the engine
        # kept it busy, so what the put lost, the device lost).
        t["write_ms_alone"], t["write_ms_in_put"] = w["storage"] * 1e3, w["put"] * 1e3
        t["device_busy"] = t["put"] / MiB * w["put"]
        log(
            f"triple {i + 1}/{a.triples} ({', '.join(order)}): network {t['network'] / MiB:,.0f}, "
            f"storage {t['storage'] / MiB:,.0f}, put {t['put'] / MiB:,.0f} MiB/s: ratio {t['ratio']:.3f}; "
            f"a write took {t['write_ms_alone']:.2f} ms alone, {t['write_ms_in_put']:.2f} ms in the put, "
            f"busy {t['device_busy']:.2f}"
        )
        out.append(t)
    return out


@contextlib.contextmanager
def throttled(dev: str, rate: int):
    """A blkio cgroup capping writes to dev at rate bytes/s (cgroup v1)."""
    root = Path("/sys/fs/cgroup/blkio")
    if not (root / "blkio.throttle.write_bps_device").exists():
        raise SystemExit(f"put_vs_parts: --device-rate needs cgroup v1's blkio controller at {root}")
    cg = root / f"rooftop-put-{os.getpid()}"
    cg.mkdir()
    try:
        rdev = os.stat(dev).st_rdev
        (cg / "blkio.throttle.write_bps_device").write_text(f"{os.major(rdev)}:{os.minor(rdev)} {rate}\n")
        yield cg
    finally:
        for _ in range(50):  # its processes have exited; the kernel may take a moment to let go
            try:
                cg.rmdir()
                break
            except OSError:
                time.sleep(0.1)


def disk_irq_cpu(path: str) -> int | None:
    """The CPU that took most of the interrupts of the disk holding path
    (its PCI function's MSI-X vectors in /proc/interrupts), or None."""
    src = subprocess.run(["findmnt", "-no", "SOURCE", "-T", path], capture_output=True, text=True).stdout.strip()
    blk = Path("/sys/class/block") / Path(src).name
    if not blk.exists():
        return None
    if (blk / "partition").exists():
        blk = blk.resolve().parent
    node = (blk / "device").resolve()
    while node != node.parent and not (node / "msi_irqs").is_dir():
        node = node.parent
    irqs = {d.name for d in (node / "msi_irqs").iterdir()} if (node / "msi_irqs").is_dir() else set()
    lines = Path("/proc/interrupts").read_text().splitlines()
    ncpu = len(lines[0].split())
    per_cpu = [0] * ncpu
    for line in lines[1:]:
        f = line.split()
        if f and f[0].rstrip(":") in irqs:
            for c in range(ncpu):
                per_cpu[c] += int(f[1 + c]) if f[1 + c].isdigit() else 0
    return max(range(ncpu), key=per_cpu.__getitem__) if any(per_cpu) else None


def place(a, image_dir: str | None) -> None:
    """--server-cpu auto: the CPU taking the host disk's interrupts, so the
    client (another node's process, emulated here on this one) does not
    poll the core where the kernel finishes the server's writes; --client-cpu
    auto: another CPU."""
    cpus = sorted(os.sched_getaffinity(0))
    a.placement = "given"
    if a.server_cpu == "auto":
        irq = None if a.device_rate else disk_irq_cpu(image_dir or tempfile.gettempdir())
        a.server_cpu = str(irq if irq in cpus else cpus[0])
        a.placement = (
            "server on the CPU taking the host disk's interrupts"
            if irq in cpus
            else "server on the first CPU (the disk's interrupts not found)"
        )
    if a.client_cpu == "auto":
        a.client_cpu = str(next((c for c in cpus if str(c) != a.server_cpu), cpus[0]))


def device(a) -> str:
    if a.device_rate:
        return f"loop device on a RAM image, writes capped at {a.device_rate:g} MiB/s (blkio)"
    return (
        "loop device on a "
        + ("sparse" if a.sparse_image else "written")
        + " image on the host disk"
        + (", through the host's page cache" if a.host_cache else " (O_DIRECT)")
    )


def render(rows: list[dict], a, took: float) -> str:
    med = {p: statistics.median(r[p] for r in rows) for p in PARTS}
    ratios = [r["ratio"] for r in rows]
    ratio = statistics.median(ratios)
    binds = max({r["binds"] for r in rows}, key=[r["binds"] for r in rows].count)
    verdict = "met" if ratio >= GOAL else ("indistinguishable" if max(ratios) >= GOAL else "MISSED")
    return "\n".join(
        [
            f"put_vs_parts {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  {os.cpu_count()} cpus  "
            f"kernel {platform.release()}",
            f"{a.fabric}, 1 MiB sequential, --io-mode {a.io_mode}, {device(a)}, server --progress {a.server_progress} "
            f"--io-threads {a.io_threads}{' --io-async' if a.io_async else ''}, client --progress {a.client_progress}, "
            f"client concurrency {a.concurrency}, written buffers in {a.buffer_pages} pages, {a.triples} triples, {a.duration:g} s + "
            f"{a.warmup:g} s warmup, server cpu {a.server_cpu} ({a.placement}), client cpu {a.client_cpu}, "
            f"took {took:.0f} s, "
            f"load avg {os.getloadavg()[0]:.2f}",
            "",
            f"network (load --op write)      {med['network'] / MiB:10,.1f} MiB/s (median)",
            f"storage (storage --op put)     {med['storage'] / MiB:10,.1f} MiB/s (median)",
            f"put (load --op put, storage)   {med['put'] / MiB:10,.1f} MiB/s (median)",
            f"put / min(network, storage)    {ratio:10.3f}  (triples {min(ratios):.3f}..{max(ratios):.3f}; "
            f"goal >= {GOAL}: {verdict}; the smaller part: {binds})",
            f"one put at a time, at best     {statistics.median(r['serial_bound'] for r in rows):10.3f}  "
            f"(transfer then write, no overlap: 1 / (1/network + 1/storage), over the smaller)",
            "",
            f"one 1 MiB write, alone          {statistics.median(r['write_ms_alone'] for r in rows):10.2f} ms (median)",
            f"one 1 MiB write, in the put     {statistics.median(r['write_ms_in_put'] for r in rows):10.2f} ms (median)",
            f"device busy during the put      {statistics.median(r['device_busy'] for r in rows):10.2f}  "
            f"(1: the engine kept the device writing; what the put lost, the writes lost)",
        ]
    )


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--engine",
        default=str(Path(sys.executable).parent / "rooftop-engine"),
        help="the engine binary (default: next to this Python, as the .venv has it)",
    )
    p.add_argument("--fabric", default="ofi+tcp")
    p.add_argument("--io-mode", default="direct+dsync")
    p.add_argument("--triples", type=int, default=5)
    p.add_argument("--duration", type=float, default=2.0)
    p.add_argument("--warmup", type=float, default=0.5)
    p.add_argument("--file-size", default=str(256 * MiB), help="bytes of each data file (default 256 MiB)")
    p.add_argument(
        "--server-progress",
        default="spindown",
        help="the server's progress mode (default spindown, the servers' default)",
    )
    p.add_argument("--client-progress", default="busy", help="the client's progress mode (default busy)")
    p.add_argument(
        "--io-threads",
        type=int,
        default=-1,
        help="the server's storage threads (0: inline on the progress thread; default -1: the engine's auto)",
    )
    p.add_argument(
        "--concurrency",
        type=int,
        default=1,
        help="the client's operations in flight, for the network and put parts (default 1: "
        "sequential; 2 lets a server with an I/O thread pull the next put while it writes this one)",
    )
    p.add_argument(
        "--io-async",
        action="store_true",
        help="the server submits its writes with Linux AIO (serve --io-async; needs --io-threads 0 or "
        "a server bound to one CPU)",
    )
    p.add_argument(
        "--server-cpu",
        default="auto",
        help="the server's CPU, also the storage part's (default auto: the CPU that takes the host "
        "disk's interrupts, else the first)",
    )
    p.add_argument("--client-cpu", default="auto", help="the client's CPU (default auto: another CPU)")
    p.add_argument(
        "--image-dir",
        default=None,
        help="where the ext4 image goes (default: a temporary dir; /dev/shm with --device-rate)",
    )
    p.add_argument(
        "--sparse-image",
        action="store_true",
        help="leave the image sparse (default: written with zeros first, so the file system under it "
        "allocates no block during the runs)",
    )
    p.add_argument(
        "--host-cache",
        action="store_true",
        help="let the loop device write its image through the host's page cache (default: O_DIRECT, "
        "losetup --direct-io, so the device is the host's disk)",
    )
    p.add_argument(
        "--device-rate",
        type=float,
        default=None,
        metavar="MIB_S",
        help="cap the loop device's writes at this many MiB/s (a cgroup v1 blkio throttle; the image "
        "then lives in RAM, so the cap is the device's only limit: a steady device instead of the "
        "host disk's). A token bucket: time the device is idle earns credit, unlike a disk's "
        "fixed write time",
    )
    p.add_argument(
        "--buffer-pages",
        default="huge",
        choices=("base", "huge"),
        help="the written buffers (server bulk slots, the storage part's): huge (default; reserved "
        "here) or base pages, whose physical layout varies run to run",
    )
    p.add_argument("--json", default=None, help="write every triple and the summary here")
    return p.parse_args(argv)


def main(argv=None) -> int:
    a = parse_args(argv)
    exit_on_sigterm()
    if not Path(a.engine).exists():
        print(f"put_vs_parts: no engine at {a.engine} (--engine)", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    image_dir = a.image_dir or ("/dev/shm" if a.device_rate else None)
    place(a, image_dir)
    try:
        rows = measure(a, image_dir)
    except BenchError as e:
        print(f"put_vs_parts: {e}", file=sys.stderr)
        return 1
    text = render(rows, a, time.monotonic() - t0)
    print(text)
    if a.json:
        Path(a.json).write_text(json.dumps({"triples": rows, "summary": text, "args": vars(a)}, indent=1))
    return 0


def measure(a, image_dir: str | None) -> list[dict]:
    with contextlib.ExitStack() as stack:
        if a.buffer_pages == "huge":  # a server's slots (--max-size 16 MiB x 4) and the storage part's MiB
            stack.enter_context(reserved_huge_pages(40))
        mnt, dev = stack.enter_context(
            loop_ext4(
                4 * int(a.file_size) + 256 * MiB,
                image_dir,
                written=not a.sparse_image and not a.device_rate,
                direct_io=not a.host_cache and not a.device_rate,
            )
        )
        cg = stack.enter_context(throttled(dev, int(a.device_rate * MiB))) if a.device_rate else None
        return triples(a, Path(mnt), cg)


if __name__ == "__main__":
    sys.exit(main())
