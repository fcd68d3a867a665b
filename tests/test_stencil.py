"""The stencil kernel: fixed work, a JSON document, stops cleanly on SIGTERM."""

import json
import os
import signal
import subprocess
import sys
import time

from rooftop import stencil


def test_fixed_work_and_deterministic_result():
    a = stencil.run(size=64, iterations=20)
    b = stencil.run(size=64, iterations=20)
    assert a["completed"] and a["iterations"] == 20
    assert a["points"] == 62 * 62 * 20
    assert a["checksum"] == b["checksum"] > 0  # same work, same answer
    assert a["seconds"] > 0 and a["points_per_sec"] > 0


def test_command_prints_one_document():
    """The bursts neighbour's command runs the stencil with rooftop's own
    interpreter (`python -m rooftop.stencil`): nothing on PATH is needed
    (no rooftop-stencil script is installed)."""
    from rooftop.bursts import neighbour

    argv = neighbour.command("stencil", 32, 5)
    assert argv[:3] == [sys.executable, "-m", "rooftop.stencil"]
    env = dict(os.environ, PATH="", PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True, env=env)
    doc = json.loads(out.stdout)
    assert doc["kernel"] == "stencil" and doc["size"] == 32
    assert doc["cpu_affinity"] == sorted(os.sched_getaffinity(0))


def test_bad_size_is_an_error():
    out = subprocess.run(
        [sys.executable, "-m", "rooftop.stencil", "--size", "2"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 2 and "size must be >= 3" in out.stderr


def _wait_catches_sigterm(pid: int, timeout: float = 60.0) -> None:
    """Waits until the process has its SIGTERM handler (SigCgt in /proc)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/status") as f:
            caught = next(int(line.split()[1], 16) for line in f if line.startswith("SigCgt:"))
        if caught & (1 << (signal.SIGTERM - 1)):
            return
        time.sleep(0.05)
    raise AssertionError("the stencil never installed its SIGTERM handler")


def test_sigterm_stops_between_sweeps_and_reports_partial_work():
    proc = subprocess.Popen(
        [sys.executable, "-m", "rooftop.stencil", "--size", "256", "--iterations", "10000000"],
        stdout=subprocess.PIPE,
        text=True,
    )
    _wait_catches_sigterm(proc.pid)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    doc = json.loads(out)
    assert proc.returncode == 1 and doc["completed"] is False
    assert 0 < doc["iterations"] < 10000000
