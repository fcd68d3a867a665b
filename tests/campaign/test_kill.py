"""A campaign stopped by a signal (issue 11, findings 1 and 2): the windows
measured before Ctrl-C are stored; a SIGKILLed campaign leaves no engine
running (their lease lapses), its run reads as interrupted, and --resume
finishes it with every sample stored once."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from campaign_util import engine_processes, rooftop, samples

LEASE = 2.0


def start_collect(res: Path, *extra: str) -> subprocess.Popen:
    args = [
        sys.executable,
        "-m",
        "rooftop",
        "collect",
        "--metrics",
        "rpc",
        "--results",
        str(res),
        "--set",
        f"engine.lease={LEASE}",
        *extra,
    ]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_round(res: Path, p: subprocess.Popen, timeout: float = 60) -> Path:
    """The raw folder of the first round, once its clients started."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert p.poll() is None, p.communicate()
        logs = list(res.glob("*/raw/*/launch-0.log"))
        if logs:
            return logs[0].parent
        time.sleep(0.05)
    raise AssertionError("no round started")


def run_row(res: Path, run: str) -> dict:
    return {r["id"]: r for r in json.loads(rooftop("runs", "--json", "--results", str(res)).stdout)}[run]


def only_run(res: Path) -> str:
    return json.loads(rooftop("runs", "--json", "--results", str(res)).stdout)[0]["id"]


def wait_no_engines(marker: str, within: float) -> None:
    deadline = time.monotonic() + within
    while engine_processes(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not engine_processes(marker), f"engines still running {within:g} s on"


def test_sigint_stores_the_windows_measured_and_resume_measures_the_rest(tmp_path):
    res = tmp_path / "res"
    p = start_collect(res, "--duration", "0.5", "--warmup", "0.1", "--windows", "12")
    raw = wait_for_round(res, p)
    time.sleep(3.2)  # some windows measured, the round not over
    p.send_signal(signal.SIGINT)
    p.communicate(timeout=60)
    assert p.returncode == 130
    docs = [json.loads(f.read_text()) for f in raw.glob("client-*.json")]
    assert docs and all(not d["complete"] for d in docs)
    full = min(d["result"]["full_windows"] for d in docs)
    assert 2 <= full < 12, full
    run = only_run(res)
    stored = samples(res, run)
    # Every full window is stored, as ok; the cut one is not.
    assert len(stored) == full and all(s["status"] == "ok" for s in stored), stored
    assert sorted(s["window"] for s in stored) == list(range(full))
    assert run_row(res, run)["status"] == "interrupted"
    rooftop("collect", "--resume", run, "--results", str(res))
    after = samples(res, run)
    assert run_row(res, run)["status"] == "complete"
    assert sorted(s["window"] for s in after) == list(range(12))
    before = {s["key"]: (s["id"], s["aggregate"], s["created"]) for s in stored}
    assert {s["key"]: (s["id"], s["aggregate"], s["created"]) for s in after if s["key"] in before} == before


def test_sigkill_leaves_no_engine_and_the_run_reads_interrupted(tmp_path):
    res = tmp_path / "res"
    p = start_collect(res, "--duration", "0.4", "--warmup", "0.1", "--windows", "10")
    wait_for_round(res, p)
    t_round = time.monotonic()
    time.sleep(1.0)
    assert engine_processes(str(res))
    p.kill()
    ran = time.monotonic() - t_round  # of the killed command's time, at least this much
    p.communicate(timeout=10)
    run = only_run(res)
    row = run_row(res, run)
    assert row["status"] == "interrupted" and f"collect --resume {run}" in row["note"], row
    wait_no_engines(str(res), LEASE + 4)  # servers and clients: their lease lapsed
    server_docs = [json.loads(f.read_text()) for f in res.glob(f"{run}/groups/*/server-*.json")]
    assert server_docs and all("lease" in d["result"]["stop_reason"] for d in server_docs)
    done = rooftop("collect", "--resume", run, "--results", str(res))
    out = done.stdout + done.stderr
    row = run_row(res, run)
    assert row["status"] == "complete"
    assert sorted(s["window"] for s in samples(res, run)) == list(range(10))
    # The killed command's time is in the run's (taken from its progress
    # log and window logs): never fewer seconds than windows.
    events = [json.loads(line) for line in (res / run / "progress.jsonl").read_text().splitlines()]
    ends = [e for e in events if e["event"] == "end"]
    assert [bool(e.get("recovered")) for e in ends] == [True, False], ends
    assert ends[0]["wall_s"] >= ran, (ends, ran)
    assert row["wall_s"] >= ends[0]["wall_s"] + ends[1]["wall_s"] - 0.01, (row, ends)
    assert row["wall_s"] >= row["measured_s"] and row["overhead"] is not None, row
    assert "added for an earlier collect" in out, out


def test_sigkill_at_random_points(tmp_path):
    """20 trials, seeded delays in [0.2, 3] s."""
    rng = random.Random(11)
    for trial in range(20):
        res = tmp_path / f"res{trial}"
        p = start_collect(res, "--duration", "0.3", "--warmup", "0.1", "--windows", "2")
        time.sleep(rng.uniform(0.2, 3.0))
        p.kill()
        p.communicate(timeout=10)
        # Killed before the results folder existed: `runs` says there is none (exit 2).
        runs = json.loads(rooftop("runs", "--json", "--results", str(res)).stdout) if res.exists() else []
        if not runs:  # killed before the run existed
            wait_no_engines(str(res), LEASE + 4)
            continue
        run = runs[0]["id"]
        assert runs[0]["status"] in ("interrupted", "complete"), (trial, runs[0])
        if runs[0]["status"] == "interrupted":
            # At once: the dead campaign's engines are stopped by the resume.
            rooftop("collect", "--resume", run, "--results", str(res))
        wait_no_engines(str(res), LEASE + 4)
        assert run_row(res, run)["status"] == "complete", trial
        stored = samples(res, run)
        assert sorted(s["window"] for s in stored) == [0, 1], (trial, stored)
        assert all(s["status"] == "ok" for s in stored), (trial, stored)
