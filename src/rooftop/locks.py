"""One campaign at a time: a lock per results folder and one per machine's cores.

Two campaigns measuring at once on one machine each see a fraction of the
real rate, and nothing in their samples would say so. A campaign (collect,
validate, collect --resume) therefore takes, with fcntl.flock:

  RESULTS/.lock              always (any launcher)
  the machine's cores lock   local and netns launchers only (their engines
                             run on this machine's cores); mpiexec and srun
                             run on other hosts: only the results folder
                             lock applies there

The machine lock is ROOFTOP_CORES_LOCK if set, else /run/lock/rooftop-cores.lock
(/tmp/rooftop-cores.lock where /run/lock does not exist): one path for every
user of the machine. It is created 0644, so another user's campaign can open
it read-only and still lock it (flock needs no write access); only the
creator's campaigns can write their name into it, so for the others the
holder's pid comes from /proc/locks. A lock held by a dead process is
released by the kernel: no stale lock to clean up.

A busy lock: the campaign waits up to --wait-lock seconds (default 0), then
refuses, naming the holder (run id, pid, host, user). --allow-concurrent runs
anyway: it takes the locks shared when it can (so a later exclusive campaign
is refused while it runs) and every sample it stores is marked concurrent.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import pwd
import socket
import time
from collections.abc import Callable
from pathlib import Path

ADVICE = (
    "wait for it with '--wait-lock SECONDS', or run anyway with '--allow-concurrent' "
    "(every sample is then marked concurrent and the report warns)"
)


class LockBusy(RuntimeError):
    """A lock is held by another campaign (the message names it)."""


def machine_lock_path() -> Path:
    env = os.environ.get("ROOFTOP_CORES_LOCK")
    if env:
        return Path(env)
    run_lock = Path("/run/lock")
    return (run_lock if run_lock.is_dir() else Path("/tmp")) / "rooftop-cores.lock"


def _open(path: Path) -> tuple[int, bool]:
    """(fd, writable). Never O_CREAT on an existing file: in a sticky
    world-writable folder (/tmp, /run/lock) fs.protected_regular refuses
    that for another user's file. Never through a symbolic link (LockBusy
    naming it)."""
    try:
        return _open_file(path)
    except OSError as e:
        if e.errno != errno.ELOOP:
            raise
        if not os.path.islink(path):  # a loop of links above it
            raise LockBusy(f"lock file {path} cannot be opened: {e.strerror}") from None
        raise LockBusy(
            f"lock file {path} is a symbolic link (to {os.readlink(path)}): rooftop never opens a lock "
            f"through a link; remove it (a campaign creates the file again)"
        ) from None


def _open_file(path: Path) -> tuple[int, bool]:
    flags = os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(path, os.O_RDWR | flags), True
    except FileNotFoundError:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | flags, 0o644)
        except FileExistsError:
            return _open_file(path)
        os.fchmod(fd, 0o644)  # whatever the umask: every user's campaign must see it
        return fd, True
    except PermissionError:
        pass
    try:
        return os.open(path, os.O_RDONLY | flags), False
    except PermissionError:
        st = path.stat()
        raise LockBusy(
            f"lock file {path} (owner uid {st.st_uid}, mode {st.st_mode & 0o777:o}) "
            f"cannot be opened: its owner must make it readable (chmod 644) or "
            f"remove it"
        ) from None


def _lock_pids(fd: int) -> list[int]:
    """Pids holding a lock on fd's file, from /proc/locks (this host only)."""
    st = os.fstat(fd)
    ident = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    pids = []
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        f = line.split()
        if len(f) >= 6 and f[1] != "->" and f[5] == ident and f[4].isdigit():
            pids.append(int(f[4]))
    return [p for p in dict.fromkeys(pids) if p != os.getpid()]


def _user_of(pid: int) -> str:
    try:
        return pwd.getpwuid(os.stat(f"/proc/{pid}").st_uid).pw_name
    except (OSError, KeyError):
        return "?"


def held_by_anyone(path: Path) -> bool:
    """Whether some process (of any host sharing the file system, where it
    passes flock on) holds the lock file at path; a missing file is free.
    Creates nothing: a read-only look, for a run's status."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    except OSError:
        return True  # cannot tell: the careful answer
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except OSError:
        return True  # held (EWOULDBLOCK), or cannot tell
    finally:
        os.close(fd)  # releases the flock if it was taken


class Lock:
    """One lock file, opened once; acquire() tries until a deadline."""

    def __init__(self, path: Path, what: str):
        self.path, self.what = Path(path), what
        self.fd, self.writable = _open(self.path)
        self.held: str | None = None  # "exclusive" or "shared"

    def acquire(self, until: float, shared: bool = False) -> bool:
        op = (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB
        while True:
            try:
                fcntl.flock(self.fd, op)
                self.held = "shared" if shared else "exclusive"
                return True
            except OSError as e:
                if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise
            if time.monotonic() >= until:
                return False
            time.sleep(0.1)

    def write_holder(self, run_id: str) -> None:
        """Who holds it, for the message another campaign gets."""
        if not (self.held and self.writable):
            return
        doc = {
            "run": run_id,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "user": _user_of(os.getpid()),
            "since": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "mode": self.held,
        }
        data = (json.dumps(doc) + "\n").encode()
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, data, 0)

    def holder(self) -> str:
        """'run R (pid P on host H, user U, since T)' for every holder found."""
        try:
            doc = json.loads(os.pread(self.fd, 4096, 0) or b"{}")
        except (OSError, ValueError):
            doc = {}
        pids, host = _lock_pids(self.fd), socket.gethostname()
        named = doc if doc.get("pid") and (doc.get("pid") in pids or doc.get("host") != host) else None
        out = [
            f"run {d.get('run', '?')} (pid {d.get('pid')} on host {d.get('host')}, user "
            f"{d.get('user', '?')}, since {d.get('since', '?')}"
            + (", --allow-concurrent" if d.get("mode") == "shared" else "")
            + ")"
            for d in ([named] if named else [])
        ]
        out += [
            f"pid {p} on host {host} (user {_user_of(p)}; run unknown)"
            for p in pids
            if not named or p != named.get("pid")
        ]
        return ", ".join(out) or "another campaign (holder unknown)"

    def release(self) -> None:
        if self.held == "exclusive" and self.writable:
            os.ftruncate(self.fd, 0)
        os.close(self.fd)  # releases the flock
        self.held = None


class CampaignLocks:
    """The locks of one campaign, held for as long as it measures (a with block)."""

    def __init__(
        self,
        results_dir: Path,
        on_this_machine: bool,
        wait_s: float = 0.0,
        allow_concurrent: bool = False,
        say: Callable[[str], None] | None = None,
    ):
        self.wanted = [(Path(results_dir) / ".lock", f"results folder {results_dir}")]
        if on_this_machine:  # the launcher's engines run on this machine's cores
            self.wanted.append((machine_lock_path(), "this machine's cores"))
        self.wait_s, self.concurrent = max(0.0, wait_s), allow_concurrent
        self.say = say or (lambda m: None)
        self.locks: list[Lock] = []
        self.run_id = "(starting)"

    def __enter__(self) -> CampaignLocks:
        until = time.monotonic() + self.wait_s
        try:
            for path, what in self.wanted:
                lock = Lock(path, what)
                self.locks.append(lock)
                self._take(lock, until)
        except BaseException:
            self.release()
            raise
        return self

    def _take(self, lock: Lock, until: float) -> None:
        if self.concurrent:
            if not lock.acquire(time.monotonic(), shared=True):
                self.say(
                    f"the lock of {lock.what} is held by {lock.holder()}: running alongside it "
                    f"(--allow-concurrent; every sample is marked)"
                )
            lock.write_holder(self.run_id)
            return
        if lock.acquire(time.monotonic()):
            lock.write_holder(self.run_id)
            return
        if self.wait_s > 0:
            self.say(
                f"the lock of {lock.what} is held by {lock.holder()}: waiting up to "
                f"{max(0.0, until - time.monotonic()):.0f} s (--wait-lock)"
            )
        if not lock.acquire(until):
            waited = f" after waiting {self.wait_s:g} s" if self.wait_s > 0 else ""
            raise LockBusy(f"the lock of {lock.what} is held by {lock.holder()}{waited} ({lock.path}): {ADVICE}")
        lock.write_holder(self.run_id)

    def name_run(self, run_id: str) -> None:
        self.run_id = run_id
        for lock in self.locks:
            lock.write_holder(run_id)

    def release(self) -> None:
        for lock in reversed(self.locks):
            lock.release()
        self.locks = []

    def __exit__(self, *exc) -> None:
        self.release()
