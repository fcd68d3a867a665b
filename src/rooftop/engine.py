"""Drive rooftop-engine processes from Python.

Locates the engine binary, starts servers and waits until each one is
really ready (address file published *and* a successful ping), runs client
loads, and stops everything it started -- also on errors and Ctrl-C.
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
import time
from dataclasses import dataclass, field
from pathlib import Path

ENGINE_ENV = "ROOFTOP_ENGINE"
#: The engine also takes its shutdown token from this variable (never argv).
TOKEN_ENV = "ROOFTOP_TOKEN"
#: A group directory's token file (read by the servers and by shutdown).
TOKEN_FILE = "token"

#: Engine exit codes (see ``rooftop-engine --help``).
EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_UNREACHABLE = 0, 1, 2, 3


class EngineError(RuntimeError):
    """An engine command failed; carries its exit code and JSON document."""

    def __init__(self, message: str, returncode: int | None = None, doc: dict | None = None,
                 stderr: str = ""):
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
        "rooftop-engine not found: install the package (pip install .), "
        f"put it on PATH, or set ${ENGINE_ENV}")


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


def run_engine(args: list[str], timeout: float, check: bool = True,
               env: dict[str, str] | None = None) -> dict:
    """Runs one engine command to completion and returns its JSON document.

    env: variables added to this process's environment for it.
    Raises EngineError if it fails (when check) or does not finish in time.
    """
    cmd = [engine_path(), *args]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           env={**os.environ, **env} if env else None)
    except subprocess.TimeoutExpired as e:
        raise EngineError(f"'{' '.join(cmd)}' did not finish within {timeout:g} s") from e
    doc = _parse_doc(p.stdout)
    if check and p.returncode != 0:
        errors = (doc or {}).get("errors") or [p.stderr.strip() or "no output"]
        raise EngineError(f"rooftop-engine {args[0]} failed (exit {p.returncode}): "
                          + "; ".join(errors), p.returncode, doc, p.stderr)
    if doc is None:
        raise EngineError(f"rooftop-engine {args[0]} printed no JSON document "
                          f"(exit {p.returncode}): {p.stderr.strip()}", p.returncode, None, p.stderr)
    return doc


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
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.doc is None and self.output.exists():
            self.doc = _parse_doc(self.output.read_text())
        return self.doc


@dataclass
class Group:
    """A group of engine servers sharing a group directory.

    Use as a context manager: every server started is stopped on exit.
    """

    fabric: str = "ofi+tcp"
    directory: Path | None = None
    token: str = field(default_factory=lambda: secrets.token_hex(16))
    servers: list[Server] = field(default_factory=list)
    token_file: Path | None = field(default=None, init=False)  # 0600, in directory
    _tmp: tempfile.TemporaryDirectory | None = None

    def __post_init__(self):
        if self.directory is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="rooftop-group-")
            self.directory = Path(self._tmp.name)
        self.directory = private_dir(Path(self.directory))
        self.token_file = write_token(self.directory, self.token)

    def __enter__(self) -> "Group":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start_server(self, rank: int, cpus: str | None = None, progress: str = "busy",
                     extra: list[str] | None = None, wait: bool = True,
                     timeout: float = 10.0) -> Server:
        out = self.directory / f"server-{rank}.json"
        err = self.directory / f"server-{rank}.stderr"
        args = ["serve", "--fabric", self.fabric, "--group-dir", str(self.directory),
                "--rank", str(rank), "--progress", progress,
                "--token-file", str(self.token_file), "--output", str(out)]
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
        """Waits for the address file, then pings; raises naming the server."""
        addr = self.directory / f"{server.rank}.addr"
        deadline = time.monotonic() + timeout
        while not self._published_by(addr, server):
            if not server.alive():
                raise EngineError(f"server rank {server.rank} exited (code {server.proc.returncode}) "
                                  f"before publishing {addr}: {server.stderr()}")
            if time.monotonic() > deadline:
                raise EngineError(f"server rank {server.rank} did not publish {addr} "
                                  f"within {timeout:g} s")
            time.sleep(0.005)
        left = max(1.0, deadline - time.monotonic())
        run_engine(["ping", "--fabric", self.fabric, "--group-dir", str(self.directory),
                    "--rank", str(server.rank), "--count", "1", "--timeout", f"{left:.3f}"],
                   timeout=left + 5)

    @staticmethod
    def _published_by(addr: Path, server: Server) -> bool:
        """The address file exists and is this server's (not a stale one)."""
        try:
            return f"\npid={server.proc.pid}\n" in addr.read_text()
        except OSError:
            return False

    def load(self, *, op: str = "noop", duration: float = 2.0, warmup: float = 0.5,
             cpus: str | None = None, rank: int = 0, extra: list[str] | None = None,
             timeout: float | None = None, check: bool = True) -> dict:
        """Runs one client process and returns its document."""
        args = ["load", "--fabric", self.fabric, "--group-dir", str(self.directory),
                "--op", op, "--duration", str(duration), "--warmup", str(warmup),
                "--rank", str(rank)]
        if cpus is not None:
            args += ["--cpus", cpus]
        args += extra or []
        return run_engine(args, timeout=timeout or (duration + warmup + 30), check=check)

    def close(self) -> list[dict | None]:
        docs = [s.stop() for s in self.servers]
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
        return docs
