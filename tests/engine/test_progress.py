"""Progress modes: each serves correctly; idle CPU from the engine's own accounting."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import time

import pytest

from rooftop.engine.commands import run_engine
from rooftop.engine.servers import Group

MODES = ["busy", "block", "adaptive", "spindown", "spindown:2", "spindown:0.25"]


@pytest.mark.parametrize("mode", MODES)
def test_mode_serves_and_idles(mode, cores, validate):
    server_cpu, client_cpu = cores
    with Group() as g:
        s = g.start_server(0, cpus=server_cpu, progress=mode)
        doc = g.load(op="noop", duration=0.3, warmup=0.1, cpus=client_cpu, extra=["--progress", mode])
        assert doc["complete"] and doc["result"]["ops"] > 0
        assert doc["engine"]["progress"]["requested"] == (mode if mode != "spindown" else "spindown:10")
        time.sleep(1.2)  # idle
        stat = run_engine(["stat", "--group-dir", str(g.directory), "--rank", "0"], timeout=15)
        server = validate(s.stop())
    r = server["result"]
    assert server["complete"] and r["stop_reason"] == "signal SIGTERM"
    # Idle part of the server's life: the full intervals after the load (the
    # last one is cut short by the stop). Median, as the machine is shared.
    idle = sorted(i["cpu_utilization"] for i in r["intervals"][-8:-1])
    idle_median = idle[len(idle) // 2]
    if mode == "busy":
        # Spins: about a core, less when another process shares the core.
        assert idle_median > 0.3, idle
        assert server["engine"]["progress"]["wait_object"] == "none"
    elif mode.startswith("spindown"):
        assert idle_median < 0.05, idle  # sleep-polls, 20 us doubling to 1 ms, then 10 ms
        # No wait object: in a burst it polls exactly as busy does.
        assert server["engine"]["progress"]["wait_object"] == "none"
        assert server["engine"]["progress"]["effective"] == doc["engine"]["progress"]["requested"]
    else:
        assert idle_median < 0.05, idle  # sleeps on the CQ's fd
        assert server["engine"]["progress"]["wait_object"] == "fd"
    assert stat["result"]["ops"] >= doc["result"]["ops"]
    assert stat["result"]["cpu"]["utilization"] >= 0


@pytest.mark.parametrize(
    "bad",
    [
        "spindown:-1",
        "spindown:.5",
        "spindown:1.",
        "spindown:0.0001",
        "spindown:1e3",
        "spindown:nan",
        "spindown:99999999",
    ],
)
def test_bad_spindown_time_is_refused(bad, tmp_path):
    p = subprocess.run(
        [_engine(), "serve", "--group-dir", str(tmp_path), "--progress", bad],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert p.returncode == 2 and f"--progress '{bad}': spindown time must be milliseconds >= 0" in p.stderr


def _engine() -> str:
    from rooftop.engine.base import engine_path

    return str(engine_path())


def test_shm_without_fd_records_its_fallback(cores):
    server_cpu, _ = cores
    with Group(fabric="ofi+shm") as g:
        s = g.start_server(0, cpus=server_cpu, progress="block")
        time.sleep(0.8)
        doc = s.stop()
    p = doc["engine"]["progress"]
    assert p["wait_object"] == "none"
    assert "fd" in p["fallback"] and "sleep" in p["fallback"]
    assert "fallback" in p["effective"]
    # The fallback backs off while idle: far from a busy core.
    assert doc["result"]["cpu"]["utilization"] < 0.3


def strace_counts(path) -> dict[str, int]:
    """syscall name -> calls, from an `strace -c` summary."""
    counts = {}
    for line in path.read_text().splitlines():
        m = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$", line)
        if m and m.group(2) != "total":
            counts[m.group(2)] = int(m.group(1))
    return counts


@pytest.mark.parametrize("mode", ["busy", "spindown"])
def test_burst_polls_without_epoll(mode, cores, tmp_path):
    """In a burst, spindown spins as busy does: fi_cq_read on a CQ without a
    wait object, one poll() of the tcp provider per empty read. A CQ opened
    with an fd wait object (as spindown did before) makes every spin an
    epoll_wait on sockets registered in nested epoll sets, whose wake-up
    callbacks cost every message ~5 % of a round trip. Counts, not times:
    rxm's connection progress adds one epoll_wait per 10 ms at most, while
    the spinning server makes thousands of reads per second even on a
    loaded machine."""
    if shutil.which("strace") is None:
        pytest.skip("strace not installed (scripts/setup.sh --test installs it)")
    server_cpu, client_cpu = cores
    out = tmp_path / "strace.txt"
    with Group() as g:
        s = g.start_server(0, cpus=server_cpu, progress=mode)
        tracer = subprocess.Popen(
            ["strace", "-f", "-c", "-o", str(out), "-p", str(s.proc.pid)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        time.sleep(0.5)  # attached (or refused)
        if tracer.poll() is not None:
            pytest.skip(f"strace cannot attach here: {tracer.stderr.read().decode()[-200:]}")
        doc = g.load(op="noop", duration=0.5, warmup=0.1, cpus=client_cpu)
        tracer.send_signal(signal.SIGINT)
        tracer.wait(timeout=15)
        s.stop()
    assert doc["result"]["ops"] > 0
    calls = strace_counts(out)
    polls, epolls = calls.get("poll", 0), calls.get("epoll_wait", 0) + calls.get("epoll_pwait", 0)
    assert polls > doc["result"]["ops"], calls  # spins: at least one empty read per op
    assert epolls * 10 < polls, calls
