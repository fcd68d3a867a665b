"""python -m rooftop.engine.guard PARENT PGID: ends process group PGID (SIGKILL)
once process PARENT is gone, and exits once that group is empty.

For helper processes that are not engines (and so hold no --lease) and
run in a session of their own, where a SIGKILLed rooftop cannot stop them:
the neighbour job of `rooftop bursts --neighbour`. It ignores SIGHUP,
SIGINT and SIGTERM (a closed terminal or Ctrl-C reaches rooftop's process
group, this one included: the guard must outlive rooftop to act); rooftop
kills it when it stops the group itself (Job.stop).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

#: Seconds between two looks at the parent and the group.
POLL = 0.5


def start(pgid: int) -> subprocess.Popen:
    """A guard of process group pgid for this process."""
    return subprocess.Popen(
        [sys.executable, "-m", "rooftop.engine.guard", str(os.getpid()), str(pgid)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def main(argv: list[str]) -> int:
    for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    parent, pgid = int(argv[0]), int(argv[1])
    while _group_alive(pgid):
        if os.getppid() != parent:  # rooftop is gone (we were reparented): end what it left
            try:
                os.killpg(pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            return 0
        time.sleep(POLL)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
