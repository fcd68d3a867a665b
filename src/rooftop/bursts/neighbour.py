"""The neighbour job of `rooftop bursts --neighbour`: a compute job pinned to
the server's core(s) while the client sends bursts, and once alone.

`--neighbour stencil` runs the built-in kernel (rooftop.stencil: fixed
work, its own time in its JSON); any other value is a command line
(`--neighbour 'my-app --steps 100'`), run as is. Its time is the
`seconds` of the last line of its standard output when that line is a JSON
object holding one (the stencil's document), else its wall time from start
to exit. It is pinned with sched_setaffinity before it executes (so every
thread it starts inherits the cores), in a session of its own: stopping it
kills its whole process group. A command that cannot start or exits with an
error is a NeighbourFailed naming it and ending with its stderr.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from rooftop.engine import guard
from rooftop.stencil import DEFAULT_ITERATIONS, DEFAULT_SIZE


class NeighbourFailed(RuntimeError):
    """The neighbour job could not start, or failed."""


def command(spec: str, size: int = DEFAULT_SIZE, iterations: int = DEFAULT_ITERATIONS) -> list[str]:
    """The argv of --neighbour SPEC ('stencil': the built-in kernel)."""
    if spec == "stencil":
        return [sys.executable, "-m", "rooftop.stencil", "--size", str(size), "--iterations", str(iterations)]
    try:
        argv = shlex.split(spec)
    except ValueError as e:
        raise NeighbourFailed(f"--neighbour {spec!r}: {e}") from None
    if not argv:
        raise NeighbourFailed("--neighbour is empty: give 'stencil' or a command")
    if shutil.which(argv[0]) is None:
        raise NeighbourFailed(f"--neighbour {spec!r}: {argv[0]!r} is not an executable command here")
    return argv


@dataclass
class Job:
    """A running neighbour: its process, pinned cores and output files."""

    argv: list[str]
    cores: list[int]
    proc: subprocess.Popen
    out: Path
    err: Path
    t0: float
    guard: subprocess.Popen | None = None

    def running(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        """Kills its process group (nothing of it is left running)."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()
        if self.guard is not None and self.guard.poll() is None:
            self.guard.kill()
        if self.guard is not None:
            self.guard.wait()

    def result(self, timeout: float) -> dict:
        """Waits for it (killing it after timeout) and returns its record:
        seconds, how they were measured, cores, exit code, its document."""
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise NeighbourFailed(
                f"neighbour {shlex.join(self.argv)} did not finish within {timeout:g} s; stopped"
            ) from None
        wall = time.monotonic() - self.t0
        err = self.err.read_text(errors="replace").strip()[-600:]
        if self.proc.returncode != 0:
            raise NeighbourFailed(
                f"neighbour {shlex.join(self.argv)} exited with {self.proc.returncode}" + (f": {err}" if err else "")
            )
        doc = _last_json(self.out.read_text(errors="replace"))
        seconds = doc.get("seconds") if isinstance(doc.get("seconds"), (int, float)) else None
        return {
            "seconds": float(seconds) if seconds is not None else wall,
            "timed_by": "its own JSON 'seconds'" if seconds is not None else "wall time",
            "wall_s": wall,
            "cores": self.cores,
            "argv": self.argv,
            "document": doc,
        }


def _last_json(text: str) -> dict:
    lines = [l for l in text.strip().splitlines() if l.strip()]
    try:
        doc = json.loads(lines[-1]) if lines else {}
    except json.JSONDecodeError:
        return {}
    return doc if isinstance(doc, dict) else {}


def start(argv: list[str], cores: list[int], folder: Path, name: str) -> Job:
    """Starts the job pinned to cores; its stdout and stderr go to
    folder/NAME.out and NAME.err."""
    folder.mkdir(parents=True, exist_ok=True)
    out, err = folder / f"{name}.out", folder / f"{name}.err"
    pin = set(cores)
    try:
        with open(out, "w") as o, open(err, "w") as e:
            proc = subprocess.Popen(
                argv,
                stdout=o,
                stderr=e,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=lambda: os.sched_setaffinity(0, pin),
            )
    except (OSError, subprocess.SubprocessError) as e:
        raise NeighbourFailed(f"neighbour {shlex.join(argv)} cannot start: {e}") from None
    return Job(argv, sorted(pin), proc, out, err, time.monotonic(), guard.start(proc.pid))


def alone(argv: list[str], cores: list[int], folder: Path, timeout: float) -> dict:
    """The baseline: the job alone on the cores, no service running."""
    job = start(argv, cores, folder, "neighbour-alone")
    try:
        return job.result(timeout)
    finally:
        job.stop()
