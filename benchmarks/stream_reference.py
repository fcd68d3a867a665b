"""The streaming reference of engine_vs_reference.py's bulk rows (3, 4).

`stream_ref.c` (next to this file) is built with the system's C compiler when
the benchmark runs, and run as one process pair: the copier on the server's
core, the holder of a 1 GiB region on the client's core, each transfer into
(or out of) the region's next 4 MiB slice, so that every slice arrives cold
as the engine's `--buffer stream` slices do. Modes: `push` (process_vm_writev
into the holder's slice: the copy the shm provider makes for the engine's
read), `pull` (process_vm_readv out of it: the engine's write) and `tcp` (a
loopback socket stream received into the slices). Standard library only.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

SOURCE = Path(__file__).resolve().parent / "stream_ref.c"
MODES = ("push", "pull", "tcp")


class StreamRefError(Exception):
    """The reference could not be built or one run failed."""


def build(workdir: Path) -> Path:
    """Compiles stream_ref.c into workdir with $CC, cc or gcc; returns the program."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise StreamRefError("no C compiler found (cc or gcc; or set $CC)")
    if not SOURCE.is_file():
        raise StreamRefError(f"{SOURCE} is missing")
    out = workdir / "stream_ref"
    try:
        cp = subprocess.run(
            [cc, "-O2", "-o", str(out), str(SOURCE)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise StreamRefError(f"{cc} {SOURCE.name}: {e}") from None
    if cp.returncode != 0:
        raise StreamRefError(f"{cc} {SOURCE.name} failed: {cp.stderr.strip()[-300:]}")
    return out


def first_cpu(cpus: str) -> int:
    """The first core of a taskset-style list ("1", "2-3", "0,4")."""
    head = cpus.split(",")[0].split("-")[0].strip()
    if not head.isdigit():
        raise StreamRefError(f"cannot pin to cpu list '{cpus}'")
    return int(head)


def run(
    program: Path,
    mode: str,
    *,
    slice_bytes: int,
    region_bytes: int,
    seconds: float,
    warmup: float,
    copier_cpu: str,
    holder_cpu: str,
) -> dict:
    """One run: its JSON object (bytes_per_sec, bytes, seconds, slices, ...)."""
    if mode not in MODES:
        raise StreamRefError(f"unknown mode {mode}; one of {', '.join(MODES)}")
    cmd = [
        str(program),
        "--mode",
        mode,
        "--slice",
        str(slice_bytes),
        "--region",
        str(region_bytes),
        "--seconds",
        f"{seconds:g}",
        "--warmup",
        f"{warmup:g}",
        "--copier-cpu",
        str(first_cpu(copier_cpu)),
        "--holder-cpu",
        str(first_cpu(holder_cpu)),
    ]
    limit = seconds + warmup + 60
    try:
        cp = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        raise StreamRefError(f"stream_ref --mode {mode} did not finish within {limit:.0f}s (killed)") from None
    except OSError as e:
        raise StreamRefError(f"stream_ref: {e}") from None
    if cp.returncode != 0:
        raise StreamRefError(f"stream_ref --mode {mode} rc {cp.returncode}: {cp.stderr.strip()[-300:]}")
    lines = cp.stdout.strip().splitlines()
    try:
        doc = json.loads(lines[-1])
    except (IndexError, ValueError):
        raise StreamRefError(f"stream_ref output not understood: {cp.stdout.strip()[-300:]}") from None
    if not isinstance(doc, dict) or not doc.get("bytes_per_sec") or doc.get("slices", 0) < 1:
        raise StreamRefError(f"stream_ref measured nothing: {lines[-1][:300]}")
    return doc
