"""finish(p): a rooftop command's output once it ends; one that does not end
in time is asked where it is stuck ('kill -USR1': rooftop prints each
thread's stack), killed with every process it started, and the test fails
showing those stacks, so that one stuck command fails one test, not every
test after it that needs the cores it still holds."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path


def descendants(pid: int) -> list[int]:
    """Every live process below pid (children first found, then theirs)."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def finish(p: subprocess.Popen, timeout: float) -> tuple[str, str]:
    try:
        return p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        pass
    try:
        p.send_signal(signal.SIGUSR1)
        time.sleep(2)
    except ProcessLookupError:
        pass
    below = descendants(p.pid)
    p.kill()
    for pid in below:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    out, err = p.communicate(timeout=30)
    raise AssertionError(
        f"{p.args} did not end within {timeout} s; killed with {len(below)} process(es) "
        f"it started; where it was:\n{(err or '')[-6000:]}"
    )
