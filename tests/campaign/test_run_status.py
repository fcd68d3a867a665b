"""A run's status covers every stage asked for (issue 11, finding 8):
validating an interrupted run does not make it complete."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time

from campaign_util import rooftop


def interrupted_collect(res) -> str:
    """A real collect, SIGINT once its first round is stored (rpc; bw is left)."""
    args = [
        sys.executable,
        "-m",
        "rooftop",
        "collect",
        "--metrics",
        "rpc,bw",
        "--duration",
        "0.4",
        "--warmup",
        "0.1",
        "--windows",
        "2",
        "--results",
        str(res),
    ]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while True:
        assert time.monotonic() < deadline and p.poll() is None
        try:
            n = sqlite3.connect(res / "rooftop.db").execute("SELECT COUNT(*) FROM samples").fetchone()[0]
        except sqlite3.OperationalError:
            n = 0
        if n >= 1:
            break
        time.sleep(0.05)
    p.send_signal(signal.SIGINT)
    p.communicate(timeout=60)
    assert p.returncode == 130
    return sqlite3.connect(res / "rooftop.db").execute("SELECT id FROM runs").fetchone()[0]


def run_row(res, run) -> dict:
    return {r["id"]: r for r in json.loads(rooftop("runs", "--json", "--results", str(res)).stdout)}[run]


def test_validate_on_an_interrupted_run_does_not_complete_it(tmp_path):
    res = tmp_path / "res"
    run = interrupted_collect(res)
    quick = ["--duration", "0.3", "--warmup", "0.1", "--windows", "1", "--results", str(res)]
    rooftop("validate", run, "--server-nodes", "1", "--client-nodes", "1", *quick)
    row = run_row(res, run)
    assert row["status"] == "interrupted", row
    assert "collect:" in row["note"] and f"collect --resume {run}" in row["note"]
    rooftop("collect", "--resume", run, "--results", str(res))
    row = run_row(res, run)
    assert row["status"] == "complete" and not row["note"], row  # every stage's samples stored
