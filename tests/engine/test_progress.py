"""Progress modes: each serves correctly; idle CPU from the engine's own accounting."""

from __future__ import annotations

import time

import pytest

from rooftop.engine import Group, run_engine

MODES = ["busy", "block", "adaptive", "spindown", "spindown:2"]


@pytest.mark.parametrize("mode", MODES)
def test_mode_serves_and_idles(mode, cores, validate):
    server_cpu, client_cpu = cores
    with Group() as g:
        s = g.start_server(0, cpus=server_cpu, progress=mode)
        doc = g.load(op="noop", duration=0.3, warmup=0.1, cpus=client_cpu,
                     extra=["--progress", mode])
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
    else:
        assert idle_median < 0.05, idle  # sleeps on the CQ's fd
        assert server["engine"]["progress"]["wait_object"] == "fd"
    assert stat["result"]["ops"] >= doc["result"]["ops"]
    assert stat["result"]["cpu"]["utilization"] >= 0


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
