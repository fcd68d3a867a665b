"""Ending processes rooftop started: the one implementation of signalling
(signal_proc), reaping (reap: wait, then kill what is late) and terminating
(terminate: SIGTERM, then SIGKILL). Which processes a campaign started, and
signals deferred while it registers one: rooftop.campaign.processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Protocol, TypeVar

#: Seconds a process is waited for after SIGKILL: one that has not ended by
#: then is stuck in the kernel, and no wait of rooftop's is without an end.
KILL_WAIT = 10.0
#: Seconds between two looks at processes being reaped: a round's end waits
#: for its clients this way, so half of it is, on average, part of every
#: round's fixed cost (a look is a waitpid, or a file an agent writes).
POLL_S = 0.01


class Proc(Protocol):
    """A process as reaping uses it: a subprocess.Popen, or a process an
    agent started (rooftop.engine.agents.AgentProc), which has these as
    Popen has them."""

    @property
    def pid(self) -> int: ...

    @property
    def args(self) -> object: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def send_signal(self, sig: int) -> None: ...


P = TypeVar("P", bound=Proc)


def command(p: Proc) -> str:
    """p's command line as one string (Popen's args may be one string)."""
    args = p.args
    return " ".join(map(str, args)) if isinstance(args, (list, tuple)) else str(args)


def signal_proc(p: Proc, sig: int) -> None:
    """Sends sig to p's process group when p leads one (campaigns start
    every engine in its own session, so a launcher's children go too),
    else to p alone. A process an agent started (rooftop.engine.agents.
    AgentProc) gets it from its agent, to its group."""
    if not isinstance(p, subprocess.Popen):
        p.send_signal(sig)
        return
    try:
        if os.getpgid(p.pid) == p.pid:
            os.killpg(p.pid, sig)
        else:
            p.send_signal(sig)
    except ProcessLookupError:
        pass  # already gone (its exit status is still ours to reap)


def reap(procs: Sequence[P], timeout: float, grace: float | None = None) -> list[P]:
    """Waits for procs until timeout, then kills what is left (with its
    process group, if it leads one); returns the processes that had to be
    killed. grace: once one of them has failed, the others get at most this
    long (a client stuck before the start barrier is not waited for in
    full)."""
    deadline = time.monotonic() + timeout
    if grace is not None:
        while time.monotonic() < deadline and any(p.poll() is None for p in procs):
            if any(p.poll() not in (None, 0) for p in procs):
                deadline = min(deadline, time.monotonic() + grace)
            time.sleep(POLL_S)
    killed: list[P] = []
    for p in procs:
        try:
            p.wait(timeout=max(0.05, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            signal_proc(p, signal.SIGKILL)
            try:
                p.wait(timeout=KILL_WAIT)
            except subprocess.TimeoutExpired:  # in the kernel (uninterruptible I/O): said, not waited for
                print(
                    f"rooftop: warning: process {p.pid} ({command(p)[:120]}) did not end {KILL_WAIT:g} s after SIGKILL",
                    file=sys.stderr,
                    flush=True,
                )
            killed.append(p)
    return killed


def terminate(procs: Sequence[P], grace: float = 5.0) -> list[P]:
    """SIGTERM to every live one of procs (their process groups, for
    leaders), then reap them: SIGKILL after grace seconds. Returns the
    processes that had to be killed."""
    live = [p for p in procs if p.poll() is None]
    for p in live:
        signal_proc(p, signal.SIGTERM)
    return reap(live, grace)
