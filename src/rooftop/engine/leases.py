"""Leases: every engine a rooftop command starts stops by itself once that
command is gone (the engines' --lease)."""

from __future__ import annotations

import errno
import os
import threading
import time
from pathlib import Path

from rooftop.engine.base import LEASE_FILE, write_private


class Leases:
    """Lease files (one per group folder) a thread rewrites every period/5
    s: engines started with --lease (and load workers) stop once theirs is
    removed or left unchanged for the period, so none outlives a killed
    rooftop command (a campaign's Runner, an engine.servers.Group)."""

    def __init__(self, period: float):
        self.period = period
        self.paths: set[Path] = set()
        self._n = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, gdir: Path) -> Path:
        path = gdir / LEASE_FILE
        with self._lock:
            self.paths.add(path)
            self._renew(path)
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="rooftop-lease", daemon=True)
            self._thread.start()
        return path

    def drop(self, gdir: Path) -> None:
        with self._lock:
            self.paths.discard(gdir / LEASE_FILE)
        (gdir / LEASE_FILE).unlink(missing_ok=True)

    def args(self, gdir: Path) -> list[str]:
        """An engine's options to hold gdir's lease."""
        return ["--lease", str(gdir / LEASE_FILE), "--lease-timeout", str(self.period)]

    def _renew(self, path: Path) -> None:
        self._n += 1
        text = f"{os.getpid()} {self._n}\n"
        try:
            # Group files are 0600; readers see the old or the new content,
            # never none, and a failed write leaves no half-written file.
            write_private(path, text)
        except OSError as e:
            # A full disk: the lease is rewritten in place (it is the same
            # size or one digit longer), so the engines do not stop on it.
            if e.errno not in (errno.ENOSPC, errno.EDQUOT) or not _rewrite(path, text):
                raise

    def _run(self) -> None:
        while not self._stop.wait(self.period / 5):
            with self._lock:
                for path in list(self.paths):
                    try:
                        self._renew(path)
                    except OSError:
                        pass  # the next renewal tries again

    def close(self) -> None:
        self._stop.set()


def wait_until_lapsed(path: str | Path, timeout: float) -> None:
    """Returns once the lease file at path is gone or has not changed for
    timeout seconds: what a process that is not an engine (a load worker,
    a service's wrapper) watches, as the engine watches its --lease."""
    last: str | None = None
    since = time.monotonic()
    while True:
        time.sleep(min(0.5, timeout / 4))
        now: str | None
        try:
            now = Path(path).read_text()
        except FileNotFoundError:
            return
        except OSError:
            now = last
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since > timeout:
            return


def _rewrite(path: Path, text: str) -> bool:
    """A full disk: the lease rewritten in place, in the block it already
    has (a new file needs one), so that its engines keep measuring until
    the campaign stops them: what they measure meanwhile is in their
    documents or window logs. A reader sees new content (the lease lives)
    whatever it reads mid-write. False when that fails too."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        data = text.encode()
        return os.pwrite(fd, data, 0) == len(data)  # (the count only grows: nothing left past the end)
    except OSError:
        return False
    finally:
        os.close(fd)
