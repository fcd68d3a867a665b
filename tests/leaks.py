"""Processes a test leaves running (issue 42: one leaked busy process failed
every later campaign test without naming itself). tests/conftest.py uses
no_leaked_processes on every test: the processes started while the test
and its function fixtures ran that still run after their teardown are
killed, and the test fails naming each (pid, command line).

Which processes are the test's: new since its function fixtures' setup
(the /proc listing then and after their teardown) and either in this
pytest's process tree or carrying the test's own mark in their environment
(MARK, set anew for each test: every subprocess inherits it, so one that
double-forked away from the tree is still known, and a daemon started
before the test carries an older one). Not the test's: a process whose
nearest older ancestor is another older process (a session's or module's
daemon: a Slurm slurmd, a cluster fixture's), or in the session of one (a
daemon's helpers that it reparented), nor another user's or another
pytest's. Fixtures of wider scope are set up before a function-scoped
autouse fixture and torn down after it, so their processes are older
than the test. The cost: two listings of /proc per test, and a read of
/proc/PID/stat per new process; a grace of GRACE_S only when a process of
the test is still running (one that is exiting).
"""

from __future__ import annotations

import itertools
import os
import signal
import time
import uuid

import pytest

MARK = "ROOFTOP_TESTS_MARK"
_SESSION = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
_tests = itertools.count()
#: How long the test's processes may take to finish exiting.
GRACE_S = 0.75


def listing() -> set[int]:
    return {int(n) for n in os.listdir("/proc") if n.isdigit()}


def stat_of(pid: int) -> tuple[str, int, int] | None:
    """(state, parent, session) of a process; None: gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    fields = raw[raw.rindex(b")") + 2 :].split()
    return fields[0].decode(), int(fields[1]), int(fields[3])


def _marked(pid: int, mark: str) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = f.read().split(b"\0")
    except OSError:
        return False
    return f"{MARK}={mark}".encode() in env


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip() or "?"
    except OSError:
        return "?"


def _ancestors(pid: int) -> set[int]:
    out = set()
    while pid > 1 and (s := stat_of(pid)) is not None:
        pid = s[1]
        out.add(pid)
    return out


def running(before: set[int], mark: str) -> list[int]:
    """This test's processes still running: new since `before` (a listing),
    not zombies, in this pytest's process tree or marked with `mark`, and
    not a process (or in the session) of an older one."""
    me = os.getpid()
    mine = _ancestors(me) | {0, 1}  # where orphans of this tree go
    new = listing() - before
    stats = {pid: stat_of(pid) for pid in new}
    out = []
    for pid, s in stats.items():
        if s is None or s[0] in "ZX":
            continue
        if s[2] in before and s[2] != os.getsid(me):
            continue  # an older daemon's session
        up = s[1]
        while up in new and (p := stats.get(up)) is not None:
            up = p[1]
        if up == me or (up in mine or up in new) and _marked(pid, mark):
            out.append(pid)
    return sorted(out)


def stop(before: set[int], mark: str) -> list[str]:
    """Waits up to GRACE_S for the test's processes to end, kills those
    still running (SIGKILL) and names them: ['pid 123: sleep 60', ...]."""
    left = running(before, mark)
    end = time.monotonic() + GRACE_S
    while left and time.monotonic() < end:
        time.sleep(0.02)
        left = running(before, mark)
    named = [f"pid {pid}: {cmdline(pid)}" for pid in left]
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return named


#: The marker of a test whose processes are meant to outlive it: daemons it
#: (re)starts for a fixture of wider scope, e.g. `cluster up --slurm` again
#: restarting the module's Slurm and munge daemons. Named, never implied.
KEEPS = "keeps_processes"


@pytest.fixture(autouse=True)
def no_leaked_processes(request):
    """Fails the test that leaves a process running, naming and killing it
    (not a test marked KEEPS: its daemons belong to a wider fixture)."""
    mark = os.environ[MARK] = f"{_SESSION}-{next(_tests)}"
    before = listing()
    yield
    if request.node.get_closest_marker(KEEPS) is not None:
        return
    named = stop(before, mark)
    if named:
        pytest.fail(f"the test left {len(named)} process(es) running (killed now): " + "; ".join(named), False)
