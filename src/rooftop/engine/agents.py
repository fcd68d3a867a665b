"""Agents (engine.launch = agents): one `rooftop-engine agent` per node for
a whole campaign, started once through the launcher (a process per node on
this machine or in each emulated node's namespace; one srun step; one
mpiexec). Each agent starts the engine commands the campaign asks for by
forking itself (the binary and libfabric load once per node, and no
launcher runs per placement), reports their pids and exit codes, and
delivers signals to them (engine/src/agent.cpp describes its files).

Agents: the campaign's side (start them, ask one to run a command, tell
whether one is gone, stop them); AgentProc: a process an agent started,
with the parts of subprocess.Popen that reap, terminate and the campaign
use. The agents hold a lease of their own (agents/<session>/lease, renewed
by the campaign's Leases): a killed campaign leaves no agent, and an
agent's children get SIGTERM when it is gone.

Their folders are the campaign's alone: agents/ is checked to be its
user's (not a link) and made 0700, a session's folder has a random part in
its name (it is on the agents' command lines only once they run), and the
campaign, like each agent, opens every node folder once and reads and
writes there through that descriptor (_Folder); the agents act only on
files of their own user. A folder removed or replaced under a running
campaign fails its processes naming it."""

from __future__ import annotations

import json
import os
import secrets
import shlex
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from rooftop.engine.base import EngineError, open_private_dir, private_dir, write_private
from rooftop.engine.leases import Leases
from rooftop.engine.reaping import reap
from rooftop.launchers.base import TITLE_ROOM, Launch, Launcher, Node

#: A campaign session's agents live in <run>/agents/<HHMMSS>-<pid>-<random>/.
AGENTS_DIR = "agents"
#: Seconds between two beats of an agent (its --beat).
BEAT_S = 1.0
#: An agent whose beat has not changed for this long is taken for gone,
#: where one launcher process starts several agents (srun, mpiexec: it may
#: outlive one of them); elsewhere the agent's own process says when it
#: ends. Generous: an agent shares its node's CPU (and an emulated node's
#: cap) with the engines it started.
SILENT_S = 30.0
#: Seconds an agent's children have after SIGTERM, once it stops (its --grace).
GRACE_S = 5.0
#: Seconds an agent's lease outlasts engine.lease: when the campaign is
#: killed, its engines stop on their own lease first (their documents say
#: so: the engine's watchdog acts within 1.2 s), then the agent stops
#: whatever is left.
LEASE_MARGIN_S = 2.0
#: How often a waiting campaign looks whether the agents still run.
CHECK_S = 0.5
#: The exit code of a process whose agent is gone (it got SIGTERM with it).
LOST_RC = 128 + signal.SIGTERM


def command_line(argv: list[str]) -> str:
    """argv as one shell line (shlex.join), the agents' TITLE_ROOM written
    as the shell expression that makes it: still exact, and readable."""
    room = f"\"$(printf '%{len(TITLE_ROOM)}s' '')\""
    return " ".join(room if a == TITLE_ROOM else shlex.quote(a) for a in argv)


class AgentsError(EngineError):
    """No agent could be started."""


class AgentProc:
    """A process an agent started: poll, wait, send_signal, pid, returncode
    and args, as subprocess.Popen has them. lost: why its agent is gone
    (None while it runs); the process then reads as exited (LOST_RC) and
    the reason is appended to its log."""

    def __init__(self, agents: Agents, node: Node, seq: int, argv: list[str], log: Path):
        self.agents, self.node, self.seq, self.args, self.log = agents, node, seq, argv, log
        self.dir = agents.held(node.index)
        self.returncode: int | None = None
        self.lost: str | None = None
        self._pid: int | None = None
        self._signals = 0

    @property
    def pid(self) -> int:
        """The process's pid on its node (0 until the agent has forked it)."""
        if self._pid is None:
            try:
                self._pid = int(self.dir.read(f"pid-{self.seq}").split()[0])
            except (OSError, ValueError, IndexError):
                return 0
        return self._pid

    def poll(self) -> int | None:
        if self.returncode is not None:
            return self.returncode
        try:  # "PID RC": the agent's pid file, completed and renamed
            pid, rc = map(int, self.dir.read(f"exit-{self.seq}").split())
        except (OSError, ValueError):
            why = self.agents.lost(self.node.index)
            if why:
                self.lose(why)
            return self.returncode
        self._pid = self._pid or pid or None
        self.dir.unlink(f"exit-{self.seq}")
        why = self.agents.lost(self.node.index, fresh=True) if rc else None
        if why:  # its agent stopped it on going (its folder removed): that is the cause
            self.lose(why)
            return self.returncode
        self.returncode = rc
        return rc

    def lose(self, why: str) -> None:
        self.lost, self.returncode = why, LOST_RC
        try:
            fd = os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "a") as f:
                f.write(f"rooftop: {why}\n")
        except OSError:
            pass

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (rc := self.poll()) is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
            time.sleep(0.01)
        return rc

    def send_signal(self, sig: int) -> None:
        """sig to the process's group (by its agent); nothing once it ended.
        An empty file names it (_Folder.wake): it needs no block of a full file
        system."""
        if self.poll() is not None:
            return
        self._signals += 1
        try:
            self.dir.wake(f"sig-{self.seq}-{self._signals}-{int(sig)}", os.O_EXCL)
        except OSError:
            pass  # not delivered: its agent stops it once the campaign ends (their lease)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class _Folder:
    """A folder of the agents, opened once (open_private_dir: this user's,
    0700, not a link) and used through its descriptor: what the campaign
    reads and writes goes to the folder it made, whatever becomes of its
    path; replaced() says when the path no longer names it."""

    def __init__(self, path: Path):
        self.path = path
        self.fd = open_private_dir(path)
        st = os.fstat(self.fd)
        self._id = (st.st_dev, st.st_ino)

    def read(self, name: str) -> str:
        """The text of the file name (no link followed). OSError."""
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=self.fd)
        with os.fdopen(fd, errors="replace") as f:
            return f.read()

    def tail(self, name: str, chars: int = 600) -> str:
        try:
            return " ".join(self.read(name).split())[-chars:]
        except OSError:
            return ""

    def wake(self, name: str, flags: int = 0) -> None:
        """Creates the empty file name (with flags, e.g. os.O_EXCL) and
        closes it. Opened for writing: its close wakes the agent watching
        the folder (inotify's IN_CLOSE_WRITE; a file only created would
        wait for the agent's --poll). OSError: not created."""
        os.close(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | flags, 0o600, dir_fd=self.fd))

    def publish(self, name: str, data: bytes) -> None:
        """Writes name whole (a temporary name, then renamed): an agent
        reads all of it or nothing; nothing is left on failure (OSError)."""
        tmp = f".{name}.tmp"
        try:
            fd = os.open(
                tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=self.fd
            )
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except OSError:
            self.unlink(tmp)
            raise

    def unlink(self, name: str) -> None:
        try:
            os.unlink(name, dir_fd=self.fd)
        except OSError:
            pass

    def replaced(self) -> str | None:
        """How the path changed since the folder was opened (None: it still
        names it)."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return "it is gone (removed, or a folder above it renamed)"
        except OSError as e:
            return f"its path cannot be looked at ({e.strerror})"
        if (st.st_dev, st.st_ino) != self._id:
            return "another folder has its name now (it or a folder above it was renamed or replaced)"
        return None

    def close(self) -> None:
        """Closes it: what is asked of it afterwards fails (OSError)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class Agents:
    """The agents of one campaign session: started on first use (start),
    one per node of the launcher; run() hands an agent a command."""

    def __init__(
        self,
        launcher: Launcher,
        engine: str,
        run_dir: Path,
        leases: Leases,
        timeout: float,
        log: Callable[[str], None] | None = None,
        fabric: str = "",
    ):
        self.launcher, self.engine, self.run_dir, self.leases = launcher, engine, run_dir, leases
        #: The campaign's fabric: the agent initialises its providers once,
        #: before forking, where that is safe (its --preinit).
        self.fabric = fabric
        #: Seconds every agent has to report ready once launched.
        self.timeout = timeout
        self.log = log or (lambda msg: None)
        self.nodes = launcher.nodes()
        self.folder: Path | None = None
        #: The session's folder and each node's, held (None, then node indexes).
        self._held: dict[int | None, _Folder] = {}
        self.launches: list[Launch] = []
        self.procs: list[subprocess.Popen] = []
        #: Node index -> why its agent is gone (never started, exited, silent).
        self.gone: dict[int, str] = {}
        self._seq: dict[int, int] = {}
        self._beats: dict[int, tuple[str, float]] = {}
        self._pids: dict[int, int] = {}
        self._checked = 0.0

    def node_dir(self, index: int) -> Path:
        assert self.folder is not None
        return self.folder / f"node-{index}"

    def held(self, index: int) -> _Folder:
        """The folder of node index's agent, held since start()."""
        return self._held[index]

    def argv(self, folder: Path) -> list[str]:
        """The agent command line, but its --rank (the launcher adds it)."""
        return [
            self.engine,
            "agent",
            "--dir",
            str(folder),
            "--lease",
            str(folder / "lease"),
            "--lease-timeout",
            f"{self.leases.period + LEASE_MARGIN_S:g}",
            "--beat",
            f"{BEAT_S:g}",
            "--grace",
            f"{GRACE_S:g}",
            "--output",
            str(folder / "node-{rank}" / "agent.json"),
            *(["--preinit", self.fabric] if self.fabric else []),
            TITLE_ROOM,
        ]

    def start(self) -> None:
        """Launches every node's agent and waits until each is ready (or
        gone: its node's processes then fail, naming why). None ready:
        AgentsError, and nothing is left running."""
        base = private_dir(self.run_dir.resolve() / AGENTS_DIR)
        folder = base / f"{time.strftime('%H%M%S')}-{os.getpid()}-{secrets.token_hex(8)}"
        folder.mkdir(mode=0o700)  # new: a name nobody could have made before
        self.folder = folder
        self._held[None] = _Folder(folder)
        for n in self.nodes:
            self.node_dir(n.index).mkdir(mode=0o700)
            self._held[n.index] = _Folder(self.node_dir(n.index))
        self.leases.add(self.folder)
        self.launches = self.launcher.agent_launches(self.nodes, self.argv(self.folder))
        for i, launch in enumerate(self.launches):
            self.log("start agents: " + command_line(launch.argv))
            log = write_private(self.folder / f"launch-{i}.log", "")
            with open(log, "w") as f:
                self.procs.append(
                    subprocess.Popen(
                        launch.argv,
                        stdout=f,
                        stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL,
                        env=dict(os.environ, **launch.env),
                        start_new_session=True,
                    )
                )
        self._wait_ready()
        if len(self.gone) == len(self.nodes):
            why = "; ".join(self.gone[n.index] for n in self.nodes[:4])
            self.stop()
            raise AgentsError(
                f"engine.launch = agents: no agent started ({why}); engine.launch = per-placement "
                f"starts the engines without agents"
            )
        self.log(f"agents ready on {len(self.nodes) - len(self.gone)} of {len(self.nodes)} node(s) in {self.folder}")

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.timeout
        waiting = {n.index: n for n in self.nodes}
        while waiting:
            for idx, node in list(waiting.items()):
                try:
                    ready = json.loads(self.held(idx).read("ready"))
                except (OSError, ValueError):
                    continue
                self._pids[idx] = int(ready.get("pid") or 0)
                misplaced = self.launcher.agent_misplaced(node, ready)
                if misplaced:
                    self.gone[idx] = f"the agent of node {idx} ({node.host}) {misplaced}"
                del waiting[idx]
            for launch, p in zip(self.launches, self.procs):
                if p.poll() is not None:
                    for idx in launch.ranks:
                        if idx in waiting:
                            node = waiting.pop(idx)
                            self.gone[idx] = (
                                f"the agent of node {idx} ({node.host}) exited (code {p.returncode}) before it was "
                                f"ready: {self._launch_tail(launch)}"
                            )
            if waiting and time.monotonic() > deadline:
                for idx, node in waiting.items():
                    self.gone[idx] = (
                        f"the agent of node {idx} ({node.host}) was not ready within {self.timeout:g} s: "
                        f"{self._launch_tail(self.launches[0]) or 'no output'}"
                    )
                return
            time.sleep(0.01)

    def _launch_tail(self, launch: Launch) -> str:
        return self._held[None].tail(f"launch-{self.launches.index(launch)}.log")

    @property
    def started(self) -> bool:
        return self.folder is not None

    def run(self, launch: Launch, log: Path) -> AgentProc:
        """Asks the agent of launch.node to start launch.argv (its output
        to log). Starts the agents first if need be."""
        if not self.started:
            self.start()
        idx = launch.node.index
        seq = self._seq.get(idx, 0)
        self._seq[idx] = seq + 1
        proc = AgentProc(self, launch.node, seq, launch.argv, Path(log).resolve())
        why = self.lost(idx)
        if why:
            proc.lose(why)  # its log says why (when it can be written)
            return proc
        fields = ["log", str(proc.log)]
        for k, v in launch.env.items():
            fields += ["env", f"{k}={v}"]
        for a in launch.argv:
            fields += ["arg", a]
        try:
            self.held(idx).publish(f"req-{seq}", b"".join(f.encode() + b"\0" for f in fields))
        except OSError as e:
            proc.lose(f"the agent of node {idx} ({launch.node.host}) could not be asked to start it: {e}")
        return proc

    def lost(self, index: int, fresh: bool = False) -> str | None:
        """Why the agent of node index is gone (None while it runs); looked
        at once per CHECK_S; fresh: its folders are looked at now too."""
        if index in self.gone or not self.started:
            return self.gone.get(index)
        if fresh:
            self._replaced([None, index])
        now = time.monotonic()
        if now - self._checked >= CHECK_S:
            self._checked = now
            self._look(now)
        return self.gone.get(index)

    def pids(self) -> list[int]:
        """The pids of the agents that run (on their hosts: on this
        machine's launchers, pids here)."""
        return [pid for idx, pid in self._pids.items() if pid and idx not in self.gone]

    def gone_among(self, indexes) -> list[str]:
        """Why the agents of those nodes are gone, for those that are."""
        return [why for i in sorted(set(indexes)) if (why := self.lost(i))]

    def _replaced(self, keys: list[int | None]) -> None:
        """The agents whose folder (None: the session's, else a node's)
        was removed or replaced are gone, for that cause."""
        for key in keys:
            folder = self._held.get(key)
            why = folder.replaced() if folder else None
            if folder and why:
                for node in self.nodes if key is None else [self.nodes[key]]:
                    self.gone.setdefault(node.index, f"the agents' folder {folder.path} was removed or replaced: {why}")

    def _look(self, now: float) -> None:
        # The folders first: their removal is the cause of what follows it.
        self._replaced([None, *(n.index for n in self.nodes if n.index not in self.gone)])
        for launch, p in zip(self.launches, self.procs):
            if p.poll() is not None:
                for idx in launch.ranks:
                    self.gone.setdefault(
                        idx,
                        f"the agent of node {idx} ({self.nodes[idx].host}) exited (code {p.returncode}): "
                        f"{self._launch_tail(launch) or 'no output'}",
                    )
        shared = {idx for launch in self.launches if len(launch.ranks) > 1 for idx in launch.ranks}
        for node in self.nodes:
            if node.index in self.gone:
                continue
            ndir = self.held(node.index)
            try:
                doc = json.loads(ndir.read("agent.json"))
                why = (doc.get("result") or {}).get("stop_reason") or "; ".join(doc.get("errors") or [])
                self.gone[node.index] = f"the agent of node {node.index} ({node.host}) stopped: {why}"
                continue
            except (OSError, ValueError):
                pass
            if node.index not in shared:
                continue
            try:
                beat = ndir.read("beat")
            except OSError:
                beat = ""
            last, since = self._beats.get(node.index, (None, now))
            if beat != last:
                self._beats[node.index] = (beat, now)
            elif now - since > SILENT_S:
                self.gone[node.index] = (
                    f"the agent of node {node.index} ({node.host}) is silent: its beat has not changed "
                    f"for {SILENT_S:g} s"
                )

    def stop(self) -> None:
        """Stops every agent: each node folder gets a stop file (its agent
        wakes on it), and their lease is removed (an agent that misses the
        file, e.g. over NFS without inotify, stops at its next look at the
        lease); each stops its children (SIGTERM, SIGKILL GRACE_S later) and
        exits; a launcher process still running after that is killed."""
        if self.folder is None:
            return
        for n in self.nodes:
            try:
                self.held(n.index).wake("stop")
            except (OSError, KeyError):
                pass  # the lease, dropped next, stops it all the same
        self.leases.drop(self.folder)
        reap(self.procs, GRACE_S + 5)
        for folder in self._held.values():
            folder.close()
        self.folder, self._held = None, {}
        self.launches, self.procs, self.gone, self._seq, self._beats, self._pids = [], [], {}, {}, {}, {}
