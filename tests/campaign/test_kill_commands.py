"""SIGKILL of any rooftop command that starts engines (issue 27, item 5):
probe, audit, bursts (with a neighbour job), tune and interfere (with a
background load) each leave nothing running once their lease has passed.
Every process of the command is found by a marker in its environment
(inherited by every child, also those in sessions of their own) or in its
command line (the test's folder)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

LEASE = 2.0
MARK = "ROOFTOP_KILL_TEST"
#: After the lease: the engine's watchdog (1.2 s), a load worker's grace (5 s).
MARGIN = 10.0


def processes(marker: str, folder: Path) -> dict[int, str]:
    """Live processes (pid -> command line) with marker in their
    environment or folder in their command line."""
    out = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
            environ = (d / "environ").read_bytes()
        except OSError:
            continue
        if state != "Z" and (f"{MARK}={marker}".encode() in environ or str(folder) in cmd):
            out[int(d.name)] = cmd
    return out


def _neighbour(tmp: Path) -> str:
    """Done at once alone (the baseline), then runs on for two minutes
    beside the server (a grandchild in the job's own session)."""
    return f"sh -c 'if [ -e {tmp}/once ]; then sleep 120; else touch {tmp}/once; fi'"


LONG = ["--duration", "30", "--warmup", "0.2"]
COMMANDS = {
    "probe": (
        lambda t: [
            "probe",
            "--fabric",
            "ofi+tcp",
            "--compare",
            "",
            "--duration",
            "30",
            "--repeats",
            "1",
            "--lease",
            str(LEASE),
        ],
        [],
    ),
    "audit": (
        lambda t: [
            "audit",
            "--only",
            "completion",
            "--repeats",
            "1",
            *LONG,
            "--lease",
            str(LEASE),
            "--wait-lock",
            "120",
        ],
        [],
    ),
    # The local storage mode (no server, no client; no --lease): its guard.
    "audit-storage": (lambda t: ["audit", "--only", "allocation", "--repeats", "1", *LONG, "--wait-lock", "120"], None),
    "bursts": (
        lambda t: [
            "bursts",
            "--progress",
            "busy",
            "--bursts",
            "1",
            "--on",
            "30",
            "--off",
            "0.5",
            "--interval",
            "0.5",
            "--neighbour",
            _neighbour(t),
            "--set",
            f"engine.lease={LEASE}",
        ],
        ["sleep 120"],
    ),
    "tune": (lambda t: ["tune", "--budget", "3", "--repeats", "1", *LONG, "--set", f"engine.lease={LEASE}"], []),
    "interfere": (
        lambda t: [
            "interfere",
            "--loads",
            "cpu",
            "--load-nodes",
            "0,1",
            "--stages",
            "client_peak",
            "--metrics",
            "rpc",
            "--windows",
            "1",
            "--duration",
            "3",
            "--warmup",
            "0.2",
            "--load-warmup",
            "0.3",
            "--set",
            f"engine.lease={LEASE}",
        ],
        ["rooftop.interference.loads.worker"],
    ),
}


def _running(procs: dict[int, str], wanted: list[str] | None) -> bool:
    """A server, a client and every other wanted process at once (None:
    the engine's storage mode)."""
    cmds = list(procs.values())
    wanted = ["rooftop-engine storage"] if wanted is None else ["rooftop-engine serve", "rooftop-engine load", *wanted]
    return all(any(w in c for c in cmds) for w in wanted)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_sigkill_of_a_command_leaves_nothing_behind(command, tmp_path):
    marker = uuid.uuid4().hex
    argv, wanted = COMMANDS[command]
    env = {
        **os.environ,
        MARK: marker,
        "TMPDIR": str(tmp_path),
        "ROOFTOP_CORES_LOCK": os.environ.get("ROOFTOP_CORES_LOCK", str(tmp_path / "cores.lock")),
    }
    p = subprocess.Popen(
        [sys.executable, "-m", "rooftop", *argv(tmp_path), "--results", str(tmp_path / "res")],
        stdout=subprocess.DEVNULL,
        stderr=open(tmp_path / "stderr", "w"),
        env=env,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not _running(processes(marker, tmp_path), wanted):
            assert p.poll() is None, f"{command} ended ({p.returncode}): {(tmp_path / 'stderr').read_text()[-2000:]}"
            assert time.monotonic() < deadline, (
                f"{command}: no server, client and {wanted} at once: {processes(marker, tmp_path)}"
            )
            time.sleep(0.1)
        os.kill(p.pid, signal.SIGKILL)  # the command alone, as the kernel's OOM killer would
        p.wait(timeout=10)
        deadline = time.monotonic() + LEASE + MARGIN
        while processes(marker, tmp_path) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert processes(marker, tmp_path) == {}, f"{command}: still running {LEASE + MARGIN:g} s after SIGKILL"
        # Its group folders (their token) are in the results folder, private, never left in $TMPDIR (issue 42).
        assert not list(tmp_path.glob("rooftop-group-*")), f"{command}: left {list(tmp_path.glob('rooftop-*'))}"
        if command in ("probe", "audit"):
            assert list((tmp_path / "res").rglob("rooftop-group-*/token")), f"{command}: no group folder in res"
        for token in (tmp_path / "res").rglob("token"):
            assert token.stat().st_mode & 0o077 == 0 and token.parent.stat().st_mode & 0o077 == 0, token
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        for pid in processes(marker, tmp_path):  # a failed test leaves nothing busy either
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
