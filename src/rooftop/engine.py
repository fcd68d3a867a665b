"""Drive rooftop-engine processes from Python.

Locates the engine binary, starts servers and waits until each one is
really ready (address file published *and* a successful ping), runs client
loads, and stops everything it started -- also on errors and Ctrl-C.

The one implementation of server readiness (wait_published), of
stopping processes (reap, terminate) and of leases (Leases: every engine a
rooftop command starts stops by itself once that command is gone):
engine.Group, the campaign's Runner and benchmarks/ all use these.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ENGINE_ENV = "ROOFTOP_ENGINE"
#: The engine also takes its shutdown token from this variable (never argv).
TOKEN_ENV = "ROOFTOP_TOKEN"
#: A group directory's token file (read by the servers and by shutdown).
TOKEN_FILE = "token"

#: A group directory's lease file (Leases; the engines' --lease).
LEASE_FILE = "lease"
#: Seconds an engine runs on after its lease was last renewed (engine.lease).
DEFAULT_LEASE = 10.0

#: Engine exit codes (see ``rooftop-engine --help``).
EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_UNREACHABLE = 0, 1, 2, 3


class EngineError(RuntimeError):
    """An engine command failed; carries its exit code and JSON document."""

    def __init__(self, message: str, returncode: int | None = None, doc: dict | None = None, stderr: str = ""):
        super().__init__(message)
        self.returncode = returncode
        self.doc = doc
        self.stderr = stderr


def engine_path() -> str:
    """Path of the rooftop-engine executable.

    Order: $ROOFTOP_ENGINE, next to this Python (a venv's bin/), then PATH.
    """
    env = os.environ.get(ENGINE_ENV)
    if env:
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            raise EngineError(f"${ENGINE_ENV}={env} is not an executable file")
        return env
    sibling = Path(sys.executable).parent / "rooftop-engine"
    if sibling.is_file() and os.access(sibling, os.X_OK):
        return str(sibling)
    found = shutil.which("rooftop-engine")
    if found:
        return found
    raise EngineError(
        f"rooftop-engine not found: install the package (pip install .), put it on PATH, or set ${ENGINE_ENV}"
    )


def private_dir(path: Path) -> Path:
    """Creates path (and parents) and makes it 0700: its files (addresses,
    token, documents) are then out of other users' reach even on a shared
    file system."""
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o700)
    return path


def write_private(path: Path, text: str) -> Path:
    """Writes text to path with mode 0600 (also if the file existed)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as f:
        os.fchmod(fd, 0o600)
        f.write(text)
    return path


def write_token(directory: Path, token: str) -> Path:
    """The group's token file (0600), to pass as --token-file."""
    return write_private(Path(directory) / TOKEN_FILE, token + "\n")


def _parse_doc(text: str) -> dict | None:
    text = text.strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def run_engine(
    args: list[str], timeout: float, check: bool = True, env: dict[str, str] | None = None, guard: bool = False
) -> dict:
    """Runs one engine command to completion and returns its JSON document.

    env: variables added to this process's environment for it.
    guard: for a command that takes no --lease (storage) and may run long:
    it runs in a session of its own, which a guard process (rooftop.guard)
    kills once this process is gone.
    Raises EngineError if it fails (when check) or does not finish in time.
    """
    cmd = [engine_path(), *args]
    try:
        if guard:
            p = _run_guarded(cmd, timeout, {**os.environ, **env} if env else None)
        else:
            p = subprocess.run(
                cmd, capture_output=True, text=True, timeout=timeout, env={**os.environ, **env} if env else None
            )
    except subprocess.TimeoutExpired as e:
        raise EngineError(f"'{' '.join(cmd)}' did not finish within {timeout:g} s") from e
    doc = _parse_doc(p.stdout)
    if check and p.returncode != 0:
        errors = (doc or {}).get("errors") or [p.stderr.strip() or "no output"]
        raise EngineError(
            f"rooftop-engine {args[0]} failed (exit {p.returncode}): " + "; ".join(errors), p.returncode, doc, p.stderr
        )
    if doc is None:
        raise EngineError(
            f"rooftop-engine {args[0]} printed no JSON document (exit {p.returncode}): {p.stderr.strip()}",
            p.returncode,
            None,
            p.stderr,
        )
    return doc


class Leases:
    """Lease files (one per group folder) a thread rewrites every period/5
    s: engines started with --lease (and load workers) stop once theirs is
    removed or left unchanged for the period, so none outlives a killed
    rooftop command (a campaign's Runner, an engine.Group)."""

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
        tmp = path.with_name(LEASE_FILE + ".new")
        try:
            write_private(tmp, f"{os.getpid()} {self._n}\n")  # group files are 0600
            os.replace(tmp, path)  # readers see the old or the new content, never none
        except OSError:
            tmp.unlink(missing_ok=True)  # a full disk: no half-written file left behind
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


def _run_guarded(cmd: list[str], timeout: float, env) -> subprocess.CompletedProcess:
    """subprocess.run in a session of its own, under a guard; on any
    exception (a timeout, Ctrl-C) the command is killed, as run() does."""
    from rooftop import guard

    with subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True
    ) as p:
        g = guard.start(p.pid)
        try:
            out, err = p.communicate(timeout=timeout)
        except BaseException:
            _signal_proc(p, signal.SIGKILL)
            p.wait()
            raise
        finally:
            g.kill()
            g.wait()
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


def _signal_proc(p: subprocess.Popen, sig: int) -> None:
    """Sends sig to p's process group when p leads one (campaigns start
    every engine in its own session, so a launcher's children go too),
    else to p alone."""
    try:
        if os.getpgid(p.pid) == p.pid:
            os.killpg(p.pid, sig)
        else:
            p.send_signal(sig)
    except ProcessLookupError:
        pass  # already gone (its exit status is still ours to reap)


def reap(procs: Sequence[subprocess.Popen], timeout: float, grace: float | None = None) -> list[subprocess.Popen]:
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
            time.sleep(0.05)
    killed = []
    for p in procs:
        try:
            p.wait(timeout=max(0.05, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _signal_proc(p, signal.SIGKILL)
            p.wait()
            killed.append(p)
    return killed


def terminate(procs: Sequence[subprocess.Popen], grace: float = 5.0) -> list[subprocess.Popen]:
    """SIGTERM to every live one of procs (their process groups, for
    leaders), then reap them: SIGKILL after grace seconds. Returns the
    processes that had to be killed."""
    live = [p for p in procs if p.poll() is None]
    for p in live:
        _signal_proc(p, signal.SIGTERM)
    return reap(live, grace)


class NotReady(EngineError):
    """Servers did not publish their address files. index is None when
    time ran out; else the index (in the list given to wait_published) of
    the process that exited first, with its exit code and log tail. missing:
    the ranks (of that process, or all) without an address file."""

    def __init__(
        self, message: str, missing: list[int], index: int | None = None, returncode: int | None = None, log: str = ""
    ):
        super().__init__(message, returncode)
        self.missing, self.index, self.log = missing, index, log


def published(directory: Path, rank: int, pid: int | None = None) -> bool:
    """<directory>/<rank>.addr exists (and, given pid, names it: a file a
    dead server left behind does not count)."""
    addr = Path(directory) / f"{rank}.addr"
    if pid is None:
        return addr.exists()
    try:
        return f"\npid={pid}\n" in addr.read_text()
    except OSError:
        return False


def wait_published(
    directory: Path,
    started: Sequence[tuple[subprocess.Popen, Sequence[int], Path | None]],
    timeout: float,
    own_pid: bool = False,
) -> None:
    """Waits until every server rank has published <directory>/<rank>.addr,
    which a server does once its endpoint is up and its receives posted.

    started: each process started, the ranks it runs (a launcher line may
    start several) and its log (or None). own_pid: each process is the
    engine itself (not a launcher), and its file must carry its pid.
    Raises NotReady naming the first process that exited before all of its
    ranks published (with the tail of its log), or, after timeout, the
    ranks still missing. No sleeps beyond a 5 ms poll."""
    deadline = time.monotonic() + timeout
    missing = {r for _, ranks, _ in started for r in ranks}
    while True:
        missing = {r for r in missing if not published(directory, r, _pid_of(started, r) if own_pid else None)}
        if not missing:
            return
        for i, (p, ranks, log) in enumerate(started):
            lost = sorted(set(ranks) & missing)
            if lost and p.poll() is not None:
                tail = _tail(log)
                raise NotReady(
                    f"server rank(s) {lost} exited (code {p.returncode}) before publishing "
                    f"an address in {directory}: {tail}",
                    lost,
                    i,
                    p.returncode,
                    tail,
                )
        if time.monotonic() > deadline:
            where = ", ".join(f"rank {r}" for r in sorted(missing)[:8])
            raise NotReady(
                f"servers not ready within {timeout:g} s: {where} published no address in {directory}", sorted(missing)
            )
        time.sleep(0.005)


def _pid_of(started, rank: int) -> int:
    return next(p.pid for p, ranks, _ in started if rank in ranks)


def _tail(log: Path | None, chars: int = 800) -> str:
    try:
        return log.read_text().strip()[-chars:] if log is not None else ""
    except OSError:
        return ""


@dataclass
class Server:
    """One running server process."""

    rank: int
    proc: subprocess.Popen
    output: Path
    stderr_path: Path
    args: list[str]
    doc: dict | None = None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stderr(self) -> str:
        try:
            return self.stderr_path.read_text().strip()
        except OSError:
            return ""

    def stop(self, timeout: float = 5.0) -> dict | None:
        """SIGTERM, wait (SIGKILL after timeout), and read its document."""
        terminate([self.proc], timeout)
        if self.doc is None and self.output.exists():
            self.doc = _parse_doc(self.output.read_text())
        return self.doc


@dataclass
class Group:
    """A group of engine servers sharing a group directory.

    Use as a context manager: every server started is stopped on exit.
    Every server and client it starts holds the directory's lease (lease:
    its period in seconds; leases: a Leases to share, else its own), so a
    killed caller leaves none running once the period has passed.
    """

    fabric: str = "ofi+tcp"
    directory: Path | None = None
    token: str = field(default_factory=lambda: secrets.token_hex(16))
    servers: list[Server] = field(default_factory=list)
    token_file: Path | None = field(default=None, init=False)  # 0600, in directory
    _tmp: tempfile.TemporaryDirectory | None = None
    lease: float = DEFAULT_LEASE
    leases: Leases | None = None
    _own_leases: bool = field(default=False, init=False)

    def __post_init__(self):
        if self.directory is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="rooftop-group-")
            self.directory = Path(self._tmp.name)
        self.directory = private_dir(Path(self.directory))
        self.token_file = write_token(self.directory, self.token)
        if self.leases is None:
            self.leases, self._own_leases = Leases(self.lease), True
        self.leases.add(self.directory)

    def __enter__(self) -> Group:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start_server(
        self,
        rank: int,
        cpus: str | None = None,
        progress: str = "busy",
        extra: list[str] | None = None,
        wait: bool = True,
        timeout: float = 10.0,
    ) -> Server:
        out = self.directory / f"server-{rank}.json"
        err = self.directory / f"server-{rank}.stderr"
        args = [
            "serve",
            "--fabric",
            self.fabric,
            "--group-dir",
            str(self.directory),
            "--rank",
            str(rank),
            "--progress",
            progress,
            "--token-file",
            str(self.token_file),
            "--output",
            str(out),
            *self.leases.args(self.directory),
        ]
        if cpus is not None:
            args += ["--cpus", cpus]
        args += extra or []
        write_private(err, "")
        with open(err, "w") as ef:
            proc = subprocess.Popen([engine_path(), *args], stdout=subprocess.DEVNULL, stderr=ef)
        s = Server(rank, proc, out, err, args)
        self.servers.append(s)
        if wait:
            self.wait_ready(s, timeout)
        return s

    def wait_ready(self, server: Server, timeout: float = 10.0) -> None:
        """Waits for its own address file (wait_published), then pings;
        raises naming the server."""
        addr = self.directory / f"{server.rank}.addr"
        deadline = time.monotonic() + timeout
        try:
            wait_published(self.directory, [(server.proc, [server.rank], server.stderr_path)], timeout, own_pid=True)
        except NotReady as e:
            if e.index is None:
                raise EngineError(f"server rank {server.rank} did not publish {addr} within {timeout:g} s") from None
            raise EngineError(
                f"server rank {server.rank} exited (code {e.returncode}) before publishing {addr}: {e.log}",
                e.returncode,
            ) from None
        left = max(1.0, deadline - time.monotonic())
        run_engine(
            [
                "ping",
                "--fabric",
                self.fabric,
                "--group-dir",
                str(self.directory),
                "--rank",
                str(server.rank),
                "--count",
                "1",
                "--timeout",
                f"{left:.3f}",
            ],
            timeout=left + 5,
        )

    def load(
        self,
        *,
        op: str = "noop",
        duration: float = 2.0,
        warmup: float = 0.5,
        cpus: str | None = None,
        rank: int = 0,
        extra: list[str] | None = None,
        timeout: float | None = None,
        check: bool = True,
    ) -> dict:
        """Runs one client process and returns its document."""
        args = [
            "load",
            "--fabric",
            self.fabric,
            "--group-dir",
            str(self.directory),
            "--op",
            op,
            "--duration",
            str(duration),
            "--warmup",
            str(warmup),
            "--rank",
            str(rank),
            *self.leases.args(self.directory),
        ]
        if cpus is not None:
            args += ["--cpus", cpus]
        args += extra or []
        return run_engine(args, timeout=timeout or (duration + warmup + 30), check=check)

    def close(self) -> list[dict | None]:
        docs = [s.stop() for s in self.servers]
        self.leases.drop(self.directory)
        if self._own_leases:
            self.leases.close()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
        return docs
