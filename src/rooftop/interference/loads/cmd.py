"""cmd: any user command as background (e.g. the user's real application).
One unit = one run of the command to its end (started again while the
load runs); its work is 1, so its rate is runs per second and its own
slowdown the ratio of its run times. "{rank}" in the command becomes the
process's rank. A command still running when the load stops is stopped
with it (its process group: SIGTERM, then SIGKILL)."""

from __future__ import annotations

import argparse
import shlex
import subprocess

from rooftop.interference.loads.base import Load, knob
from rooftop.interference.loads.worker import repeat


class _Child:
    proc: subprocess.Popen | None = None


def run(argv, stopping, record, rank):
    p = argparse.ArgumentParser(prog="rooftop.interference.loads.worker cmd")
    p.add_argument("--command", required=True)
    a = p.parse_args(argv)
    codes = []

    def unit():
        _Child.proc = subprocess.Popen(shlex.split(a.command))
        code = _Child.proc.wait()
        _Child.proc = None
        codes.append(code)
        return None if stopping.is_set() else 1.0

    repeat(unit, stopping, record)
    return {"command": a.command, "returncodes": sorted(set(codes))}


def on_stop() -> None:
    child = _Child.proc
    if child is not None and child.poll() is None:
        child.terminate()  # the worker's group gets the signal too; this covers a direct SIGTERM


def _args(ctx):
    if not ctx.knobs["command"]:
        raise ValueError("load 'cmd' needs a command: --load-set cmd.command='...'")
    return ["--command", ctx.knobs["command"]]


LOAD = Load(
    "cmd",
    "any command, run again each time it ends",
    "whatever the command uses",
    (
        knob("cmd", "procs", "int", 1, "processes per node (0: one per core of the node)", minimum=0),
        knob("cmd", "command", "str", "", "the command line ({rank}: the process's rank)", executes=True),
    ),
    "runs/s",
    procs=lambda ctx, cores: ctx.knobs["procs"] or cores,
    args=_args,
)
