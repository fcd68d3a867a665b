"""Ground truth for the local storage mode (issue 15, item 5): the page
cache against a throttled device. A cgroup v1 blkio throttle
(blkio.throttle.write_bps_device) on a fresh loop-mounted ext4 caps what
reaches the device: O_DIRECT writes must measure at most the throttle
(small tolerance: the throttle's slice lets a little through early), while
buffered writes land in the page cache (its writeback is not charged to the
cgroup in v1) and must measure well above it. Needs root and cgroup v1's
blkio controller (cgroup v2 has io.max instead): skipped otherwise, saying
why."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from rooftop.engine.base import engine_path

BLKIO = Path("/sys/fs/cgroup/blkio")
THROTTLE = 16 << 20  # bytes/s
TOLERANCE = 1.10


def _skip_unless_possible() -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a loop image and creating a cgroup need root")
    if not (BLKIO / "blkio.throttle.write_bps_device").exists():
        pytest.skip(f"no cgroup v1 blkio controller at {BLKIO} (cgroup v2 throttles with io.max instead)")
    for tool in ("losetup", "mount", "umount", "mkfs.ext4"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (Debian: e2fsprogs, mount)")


@contextlib.contextmanager
def throttled_ext4():
    """(mount point, cgroup dir): a 128 MiB ext4 image on a loop device whose
    writes the cgroup caps at THROTTLE; everything removed afterwards."""
    _skip_unless_possible()
    with tempfile.TemporaryDirectory(prefix="rooftop-throttle-") as tmp:
        image, mnt = Path(tmp) / "image", Path(tmp) / "mnt"
        mnt.mkdir()
        with open(image, "wb") as f:
            f.truncate(128 << 20)
        subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True)
        dev = subprocess.run(
            ["losetup", "--find", "--show", str(image)], check=True, capture_output=True, text=True
        ).stdout.strip()
        cg = BLKIO / f"rooftop-test-{os.getpid()}"
        try:
            subprocess.run(["mount", "-t", "ext4", dev, str(mnt)], check=True)
            cg.mkdir()
            rdev = os.stat(dev).st_rdev
            (cg / "blkio.throttle.write_bps_device").write_text(f"{os.major(rdev)}:{os.minor(rdev)} {THROTTLE}\n")
            yield mnt, cg
        finally:
            subprocess.run(["umount", str(mnt)], check=False)
            subprocess.run(["losetup", "-d", dev], check=False)
            if cg.exists():
                cg.rmdir()


def put_run(mnt: Path, cg: Path, io_mode: str) -> dict:
    """1 MiB sequential puts from a process inside the cgroup: its result."""
    d = mnt / io_mode
    d.mkdir()
    argv = [
        engine_path(),
        "storage",
        "--op",
        "put",
        "--size",
        "1MiB",
        "--pattern",
        "seq",
        "--io-mode",
        io_mode,
        "--allocation",
        "preallocate",
        "--file-size",
        "48MiB",
        "--storage-dir",
        str(d),
        "--duration",
        "1",
        "--warmup",
        "0.3",
    ]
    # The shell joins the cgroup, then becomes the engine: every write it makes is charged there.
    p = subprocess.run(
        ["sh", "-c", f'echo $$ > {cg}/cgroup.procs && exec "$@"', "sh", *argv],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr + p.stdout
    doc = json.loads(p.stdout)
    assert doc["result"]["storage"]["o_direct_honoured"] is True
    return doc["result"]


def write_ms(result: dict) -> float:
    """The device's mean time for one write (result storage.device_s)."""
    st = result["storage"]
    return st["device_s"]["write"] / st["counts"]["puts"] * 1e3


def test_o_direct_is_capped_by_the_throttle_and_buffered_is_not():
    with throttled_ext4() as (mnt, cg):
        d, b = put_run(mnt, cg, "direct"), put_run(mnt, cg, "buffered")
    direct, buffered = d["bytes_per_sec"], b["bytes_per_sec"]
    assert direct <= THROTTLE * TOLERANCE, (
        f"O_DIRECT {direct / 2**20:.1f} MiB/s above the {THROTTLE >> 20} MiB/s throttle"
    )
    assert direct >= THROTTLE * 0.5, f"O_DIRECT {direct / 2**20:.1f} MiB/s: far below the throttle, not bound by it"
    assert buffered > THROTTLE * 1.5, f"buffered {buffered / 2**20:.1f} MiB/s: not above the throttle (page cache?)"
    # device_s holds the device's time: a throttled 1 MiB write waits about
    # 1 MiB / THROTTLE (62 ms) in the write call, a buffered one returns
    # once copied to the page cache.
    per_write = (1 << 20) / THROTTLE * 1e3
    assert write_ms(d) >= 0.5 * per_write, f"O_DIRECT write {write_ms(d):.1f} ms: the throttle's wait not counted"
    assert write_ms(b) < 0.25 * per_write, f"buffered write {write_ms(b):.1f} ms: not the page cache's"


def wait_for_puts(g, n: int, timeout: float = 30.0) -> None:
    """Until server 0 has answered n puts (its stat RPC)."""
    from rooftop.engine.commands import run_engine

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        doc = run_engine(["stat", "--fabric", g.fabric, "--group-dir", str(g.directory), "--timeout", "5"], timeout=20)
        if doc["result"]["bulk"] >= n:  # bulk operations served: here puts
            return
        time.sleep(0.05)
    raise AssertionError(f"server 0 did not answer {n} puts within {timeout:g} s")


def test_an_inline_server_answers_while_the_device_writes():
    """--io-threads 0 with O_DIRECT: a put's write is submitted with Linux
    AIO and completed later, so the server's one thread answers a noop
    client while the throttled device writes (a 1 MiB write: 62 ms). Were
    the write waited for in the loop, a noop would wait for it: half a
    write at the median."""
    from rooftop.engine.servers import Group

    per_write = (1 << 20) / THROTTLE * 1e3
    with throttled_ext4() as (mnt, cg), Group() as g:
        (mnt / "inline").mkdir()
        server = g.start_server(
            0,
            extra=[
                "--storage-dir",
                str(mnt / "inline"),
                "--io-mode",
                "direct",
                "--io-threads",
                "0",
                "--io-async",
                "--file-size",
                "48MiB",
            ],
        )
        (cg / "cgroup.procs").write_text(f"{server.proc.pid}\n")  # its writes are charged there
        puts = {}
        t = threading.Thread(
            target=lambda: puts.update(
                g.load(op="put", duration=2.0, warmup=0.3, extra=["--size", "1MiB", "--concurrency", "2"])
            )
        )
        t.start()
        wait_for_puts(g, 3)  # past the client's warmup: its puts are back to back
        noop = g.load(op="noop", duration=0.6, warmup=0.1, extra=["--progress", "block"])
        t.join(timeout=60)
        doc = g.close()[0]
    res = doc["result"]
    assert doc["errors"] == [] and "Linux AIO" in res["io_threads_why"], res["io_threads_why"]
    st = res["storage"]
    assert puts["result"]["ops"] > 0 and res["requests"]["put"] == st["counts"]["puts"]
    # The device's time was the throttle's, counted from submission to completion.
    assert write_ms(res) >= 0.5 * per_write, f"a write {write_ms(res):.1f} ms: the throttle's wait not counted"
    assert puts["result"]["bytes_per_sec"] <= THROTTLE * TOLERANCE
    # The noops were answered meanwhile, not after the writes: waited for,
    # every write would hold the noop that arrived during it (half of them:
    # a write's time on average, whatever the median).
    mean_ms = noop["result"]["latency_us"]["mean"] / 1e3
    assert noop["result"]["ops"] > 0 and mean_ms < 0.1 * per_write, (
        f"noop mean {mean_ms:.2f} ms while {per_write:.0f} ms writes ran: the loop waited for the device"
    )
