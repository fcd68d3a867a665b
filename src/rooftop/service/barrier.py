"""The wrapper every service process runs under:

  python -m rooftop.service.barrier server --command TEMPLATE --base-port P
      --address A --dir-base D --lease FILE --lease-timeout S  (+ --rank R --cpus C)
  python -m rooftop.service.barrier client --command TEMPLATE --servers A:P,A:P,...
      --folder SAMPLE --release-timeout S --lease FILE --lease-timeout S
      [--stop-after S] [--progress REGEX]  (+ --rank R --cpus C)

The launchers append --rank R --cpus C as they do for engines (mpiexec
and srun: --rank FIRST --rank-from-env; the rank is then offset by the MPI
or Slurm rank in the environment). The wrapper pins itself to --cpus and
fills the template's per-process placeholders: a server's {rank}, {port}
(base port + rank), {cores} and {dir} (DIR_BASE/server-R, created); a
client's {rank}, {server_address} and {server_port} (servers round-robin:
client r uses server r mod S).

A client first writes SAMPLE/ready-R, then waits for SAMPLE/release (the
campaign writes it once every client is ready; up to --release-timeout
seconds, else it exits 3), writes SAMPLE/start-R.json (its start time),
and runs the client with its output in SAMPLE/client-R.out. Without
--stop-after or --progress it execs the client (nothing of the wrapper
stays); otherwise it stays the client's parent: SIGINT to the client after
--stop-after seconds, each output line matching --progress appended to
SAMPLE/progress-R.jsonl with its arrival time, and SAMPLE/end-R.json
written when the client ends.

Both watch --lease (rooftop.engine.leases.Leases: the campaign rewrites it
while it lives): once it is removed or left unchanged for --lease-timeout
seconds, the wrapper's process group (the service process and anything it
started) gets SIGTERM, then SIGKILL, so no service process outlives a
killed campaign. SIGTERM to the wrapper stops its service process the same
way.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from rooftop.engine.leases import wait_until_lapsed
from rooftop.service.spec import command

#: Environment variables an MPI or Slurm launcher gives each process's rank in.
RANK_ENV = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID")
#: Seconds between SIGTERM and SIGKILL when a service process is stopped.
GRACE = 3.0
#: Exit codes: no release within the timeout; the command could not start.
EXIT_NO_RELEASE, EXIT_CANNOT_START = 3, 4


def _cpus(text: str) -> set[int]:
    out: set[int] = set()
    for part in text.split(","):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


def _write_json(path: Path, doc: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc))
    os.replace(tmp, path)


_CHILD: subprocess.Popen | None = None
#: Set once the wrapper stops its service process (a signal, or the lease).
_STOPPING = threading.Event()
#: Set by the client's timer when it sent the client SIGINT (--stop-after).
_STOPPED_AFTER = threading.Event()


def _send(sig: int) -> None:
    """sig to the service process: to this wrapper's whole process group
    when it leads one (the campaign starts it so: the service and anything
    it started are in it; the wrapper ignores SIGTERM itself), else (under
    mpiexec or srun) to its child alone."""
    try:
        if os.getpgid(0) == os.getpid():
            os.killpg(os.getpid(), sig)
        elif _CHILD is not None:
            _CHILD.send_signal(sig)
    except ProcessLookupError:
        pass


def _on_signal(signum, frame) -> None:
    """SIGTERM or SIGINT to the wrapper: SIGTERM to the service, SIGKILL
    GRACE seconds later if it is still there; the wrapper ends with it."""
    if _CHILD is None:  # still at the barrier: nothing to stop
        os._exit(1)
    if _STOPPING.is_set():
        return
    _STOPPING.set()
    _send(signal.SIGTERM)
    t = threading.Timer(GRACE, _send, (signal.SIGKILL,))
    t.daemon = True
    t.start()


def _end_group() -> None:
    """The lease ended (a thread): SIGTERM, then SIGKILL after GRACE
    seconds, to the service; then the wrapper exits."""
    _STOPPING.set()
    _send(signal.SIGTERM)  # the wrapper's own handler (_on_signal) ignores it
    deadline = time.monotonic() + GRACE
    while time.monotonic() < deadline and (_CHILD is None or _CHILD.returncode is None):
        time.sleep(0.05)
    _send(signal.SIGKILL)
    os._exit(1)


def _finish(rc: int) -> int:
    """The service process ended: after a stop, whatever it left in the
    wrapper's process group goes too."""
    if _STOPPING.is_set() and os.getpgid(0) == os.getpid():
        os.killpg(os.getpid(), signal.SIGTERM)
    return rc


def watch_lease(path: str, timeout: float) -> threading.Thread:
    """Ends the process group once path is gone or unchanged for timeout s."""

    def run():
        wait_until_lapsed(path, timeout)
        print(f"rooftop.service.barrier: lease {path} ended: stopping", file=sys.stderr, flush=True)
        _end_group()

    t = threading.Thread(target=run, name="rooftop-service-lease", daemon=True)
    t.start()
    return t


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m rooftop.service.barrier")
    p.add_argument("role", choices=("server", "client"))
    p.add_argument("--command", required=True)
    p.add_argument("--env", default="{}", help="JSON object: environment of the service process")
    p.add_argument("--lease")
    p.add_argument("--lease-timeout", type=float, default=10.0)
    p.add_argument("--rank", type=int, default=0)
    p.add_argument("--rank-from-env", action="store_true")
    p.add_argument("--cpus")
    # server
    p.add_argument("--base-port", type=int, default=0)
    p.add_argument("--address", default="127.0.0.1")
    p.add_argument("--dir-base")
    # client
    p.add_argument("--servers", default="")
    p.add_argument("--folder")
    p.add_argument("--release-timeout", type=float, default=30.0)
    p.add_argument("--stop-after", type=float)
    p.add_argument("--progress")
    a = p.parse_args(argv)
    if a.rank_from_env:
        a.rank += next((int(os.environ[v]) for v in RANK_ENV if v in os.environ), 0)
    return a


def _spawn(argv: list[str], env: dict, **kw) -> subprocess.Popen:
    global _CHILD
    try:
        _CHILD = subprocess.Popen(argv, env=dict(os.environ, **env), **kw)
    except OSError as e:
        print(f"rooftop.service.barrier: cannot start {argv[0]}: {e.strerror}", file=sys.stderr, flush=True)
        sys.exit(EXIT_CANNOT_START)
    return _CHILD


def _forward_term() -> None:
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)


def server_command(a: argparse.Namespace, cores: str) -> list[str]:
    """The server's command line, its placeholders filled for rank a.rank
    (also what 'rooftop service --dry-run' prints)."""
    d = Path(a.dir_base) / f"server-{a.rank}"
    values = {"rank": a.rank, "port": a.base_port + a.rank, "cores": cores, "dir": str(d), "address": a.address}
    return command(a.command, values)


def client_command(a: argparse.Namespace, cores: str) -> list[str]:
    """The client's command line for rank a.rank: server r mod S of --servers
    (also what 'rooftop service --dry-run' prints)."""
    servers = [s.rsplit(":", 1) for s in a.servers.split(",") if s]
    host, port = servers[a.rank % len(servers)]
    values = {"rank": a.rank, "server_address": host, "server_port": port, "cores": cores}
    return command(a.command, values)


def serve(a: argparse.Namespace, cores: str) -> int:
    (Path(a.dir_base) / f"server-{a.rank}").mkdir(parents=True, exist_ok=True)
    argv = server_command(a, cores)
    print(f"rooftop.service.barrier: server rank {a.rank}: {shlex.join(argv)}", file=sys.stderr, flush=True)
    child = _spawn(argv, json.loads(a.env))
    return _finish(child.wait())


def client(a: argparse.Namespace, cores: str) -> int:
    folder = Path(a.folder)
    argv = client_command(a, cores)
    _write_json(folder / f"ready-{a.rank}", {"pid": os.getpid(), "t": time.time()})
    if not _released(folder / "release", a.release_timeout):
        print(f"rooftop.service.barrier: no release within {a.release_timeout:g} s", file=sys.stderr, flush=True)
        return EXIT_NO_RELEASE
    out = folder / f"client-{a.rank}.out"
    env = json.loads(a.env)
    _write_json(folder / f"start-{a.rank}.json", {"t": time.time(), "pid": os.getpid(), "argv": argv})
    if a.stop_after is None and a.progress is None:
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        try:
            os.execvpe(argv[0], argv, dict(os.environ, **env))
        except OSError as e:
            print(f"rooftop.service.barrier: cannot start {argv[0]}: {e.strerror}", file=sys.stderr, flush=True)
            return EXIT_CANNOT_START
    with open(out, "wb") as f:
        child = _spawn(argv, env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if a.stop_after is not None:
            timer = threading.Timer(a.stop_after, _stop_client, (child,))
            timer.daemon = True
            timer.start()
        assert child.stdout is not None
        _progress(child.stdout, f, folder / f"progress-{a.rank}.jsonl", a.progress)
        rc = child.wait()
    stopped = _STOPPED_AFTER.is_set()
    _write_json(folder / f"end-{a.rank}.json", {"t": time.time(), "rc": rc, "stopped_after": stopped})
    return _finish(0 if stopped and not _STOPPING.is_set() else rc)


def _released(release: Path, timeout: float) -> bool:
    """Waits for the release file (the campaign's start of every client at
    once); False when timeout seconds pass without it."""
    deadline = time.monotonic() + timeout
    while not release.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.002)
    return True


def _progress(stream, out, path: Path, pattern: str | None) -> None:
    """Copies the client's output to out until it ends; each line matching
    pattern (its group 'rate', else its first) is a progress record in path,
    timed as it comes."""
    rx = re.compile(pattern) if pattern else None
    with open(path, "w") as prog:
        for line in _lines(stream, out):
            m = rx.search(line) if rx is not None else None
            if m and rx is not None:
                g = m.group("rate") if "rate" in rx.groupindex else m.group(1)
                prog.write(json.dumps({"t": time.time(), "rate": float(g)}) + "\n")
                prog.flush()


def _stop_client(child: subprocess.Popen) -> None:
    """--stop-after: the client's time is up (SIGINT, as Ctrl-C would)."""
    if child.returncode is None:
        _STOPPED_AFTER.set()
        child.send_signal(signal.SIGINT)


def _lines(stream, copy):
    """Lines of stream as they come (split at \\n and \\r: progress bars
    rewrite one line), each also copied to copy."""
    buf = b""
    while True:
        chunk = stream.read1(65536)
        if not chunk:
            break
        copy.write(chunk)
        copy.flush()
        buf += chunk
        *done, buf = re.split(rb"[\r\n]", buf)
        for line in done:
            if line.strip():
                yield line.decode(errors="replace")
    if buf.strip():
        yield buf.decode(errors="replace")


def main(argv: list[str] | None = None) -> int:
    a = parse(sys.argv[1:] if argv is None else argv)
    _forward_term()
    cores = ""
    if a.cpus:
        os.sched_setaffinity(0, _cpus(a.cpus))
        cores = a.cpus
    if a.lease:
        watch_lease(a.lease, a.lease_timeout)
    return serve(a, cores) if a.role == "server" else client(a, cores)


if __name__ == "__main__":
    sys.exit(main())
