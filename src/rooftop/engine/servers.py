"""Engine servers (Server) and a group of them (Group): the processes
started, waited for until really ready (address file published and a
successful ping: wait_published), stopped. What a campaign's server groups
serve and how a campaign runs them: rooftop.campaign.groups."""

from __future__ import annotations

import secrets
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rooftop.engine import enginedoc
from rooftop.engine.base import (
    DEFAULT_FABRIC,
    DEFAULT_LEASE,
    EngineError,
    EngineUnreachable,
    engine_path,
    private_dir,
    write_private,
    write_token,
)
from rooftop.engine.commands import run_engine
from rooftop.engine.leases import Leases
from rooftop.engine.reaping import terminate


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
            self.doc = enginedoc.parse(self.output.read_text())
        return self.doc


class Group:
    """A group of engine servers sharing a group directory.

    Use as a context manager: every server started is stopped on exit.
    Every server and client it starts holds the directory's lease (lease:
    its period in seconds; leases: a Leases to share, else its own), so a
    killed caller leaves none running once the period has passed.

    Without a directory, a private one (0700, unguessable name) is made
    under `under` and removed on exit: give the command's results folder,
    so that a killed command leaves its group folder (and token) there,
    not in $TMPDIR where nothing would remove it (only without `under`).
    """

    def __init__(
        self,
        fabric: str = DEFAULT_FABRIC,
        directory: Path | None = None,
        token: str | None = None,
        *,
        lease: float = DEFAULT_LEASE,
        under: Path | None = None,
        leases: Leases | None = None,
    ):
        self.fabric, self.lease, self.under = fabric, lease, under
        self.token = token or secrets.token_hex(16)
        self.servers: list[Server] = []
        self._tmp: tempfile.TemporaryDirectory | None = None
        if directory is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="rooftop-group-", dir=under)
            directory = Path(self._tmp.name)
        self.directory = private_dir(Path(directory))
        self.token_file = write_token(self.directory, self.token)  # 0600, in directory
        self._own_leases = leases is None
        self.leases = Leases(lease) if leases is None else leases
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
        out = self.directory / enginedoc.SERVER_DOCUMENT.format(rank=rank)
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
                raise EngineUnreachable(
                    f"server rank {server.rank} did not publish {addr} within {timeout:g} s"
                ) from None
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
