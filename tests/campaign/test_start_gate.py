"""The campaign's start barrier and validity gate, with real processes: a
client stopped (SIGSTOP) during its warmup is waited for by the barrier; on
the clock it measures apart from the others, and the round is measured
again or stored invalid; a client that never arrives fails the sample in
time, naming it, and leaves nothing behind."""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import pytest
from campaign_util import engine_processes, rooftop, samples

BASE = [
    "--metrics",
    "rpc",
    "--set",
    "collect.client_peak=false",
    "--set",
    "collect.client_node=false",
    "--binding",
    "none",
    "--set",
    "collect.clients_per_node=2",
    "--duration",
    "0.5",
    "--windows",
    "2",
]


def stop_client(marker: str, rank: int, seconds: float | None) -> threading.Thread:
    """Stops client `rank` as soon as it runs, for `seconds` (None: for good)."""

    def run():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for pid in engine_processes(marker):
                try:
                    cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
                except OSError:
                    continue
                if b"load" in cmd and cmd[cmd.index(b"--rank") + 1] == str(rank).encode():
                    os.kill(pid, signal.SIGSTOP)
                    if seconds is not None:
                        time.sleep(seconds)
                        os.kill(pid, signal.SIGCONT)
                    return
            time.sleep(0.005)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_the_barrier_waits_for_a_stopped_client(tmp_path):
    res = tmp_path / "res"
    t = stop_client(str(res), 1, 1.5)
    run = rooftop("collect", *BASE, "--warmup", "0.3", "--results", str(res)).stdout.strip().splitlines()[-1]
    t.join()
    rows = samples(res, run)
    assert len(rows) == 2 and all(r["status"] == "ok" and r["attempt"] == 1 for r in rows), rows
    for r in rows:
        assert r["barrier_s"] > 1.0  # the other client waited for the stopped one
        assert r["overlap"] >= 0.95 and r["skew_s"] < 0.025
        docs = [json.loads(open(f"{r['raw_dir']}/client-{i}.json").read()) for i in range(2)]
        starts = [d["result"]["measure_start_s"] for d in docs]
        assert r["skew_s"] == pytest.approx(max(starts) - min(starts), abs=1e-6)


CLOCK = ["--set", "engine.start=clock", "--set", "engine.start_lead=1.0", "--warmup", "0.5"]


def test_clients_apart_on_the_clock_are_stored_invalid_and_unused(tmp_path):
    res = tmp_path / "res"
    t = stop_client(str(res), 1, 2.5)
    p = rooftop("collect", *BASE, *CLOCK, "--set", "engine.retries=0", "--results", str(res), check=False)
    t.join()
    run = p.stdout.strip().splitlines()[-1]
    rows = samples(res, run)
    assert len(rows) == 2 and all(r["status"] == "invalid" for r in rows), rows
    for r in rows:
        assert r["error"].startswith("clients measured together for") and "engine.min_overlap" in r["error"]
        assert r["overlap"] < 0.95 and r["skew_s"] > 0.5
    listed = json.loads(rooftop("runs", "--json", "--results", str(res)).stdout)
    assert listed[0]["invalid"] == 2
    # Invalid samples feed no ceiling: the model has nothing to build on, and says why.
    m = rooftop("model", run, "--results", str(res), check=False)
    assert m.returncode != 0 and "Traceback" not in m.stderr
    from rooftop import results
    from rooftop.store.db import Store

    warnings = results.load(Store(res), run).warnings
    assert any("2 invalid sample(s) are not used" in w and "did not measure together" in w for w in warnings)


def test_an_invalid_round_is_measured_again(tmp_path):
    res = tmp_path / "res"
    t = stop_client(str(res), 1, 2.5)
    run = (
        rooftop("collect", *BASE, *CLOCK, "--set", "engine.retries=1", "--results", str(res))
        .stdout.strip()
        .splitlines()[-1]
    )
    t.join()
    rows = samples(res, run)
    assert len(rows) == 2 and all(r["status"] == "ok" and r["attempt"] == 2 for r in rows), rows
    assert all(r["overlap"] >= 0.95 for r in rows)
    # The invalid attempt's documents and window logs stay on record beside the valid ones.
    kept = sorted(os.listdir(os.path.join(rows[0]["raw_dir"], "attempt-1")))
    assert kept == ["client-0.json", "client-1.json", "windows-0.jsonl", "windows-1.jsonl"]


def test_a_client_that_never_arrives_fails_the_sample_in_time(tmp_path):
    res = tmp_path / "res"
    t = stop_client(str(res), 1, None)
    t0 = time.monotonic()
    p = rooftop(
        "collect", *BASE, "--warmup", "0.3", "--set", "engine.barrier_timeout=3", "--results", str(res), check=False
    )
    took = time.monotonic() - t0
    t.join()
    assert p.returncode == 1 and took < 60, (took, p.stderr)
    run = p.stdout.strip().splitlines()[-1]
    rows = samples(res, run)
    assert len(rows) == 2 and all(r["status"] == "failed" for r in rows)
    assert all("start barrier: never ready: rank 1 on node 1" in r["error"] for r in rows), rows[0]["error"]
    assert engine_processes(str(res)) == []
