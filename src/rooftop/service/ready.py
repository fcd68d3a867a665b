"""Waiting for a service's servers to be ready (the spec's ready rule: a
TCP port accepting, a file appearing, a command succeeding), each within
ready.timeout; a server process that exits first is named with its log."""

from __future__ import annotations

import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from rooftop.engine.reaping import Proc
from rooftop.service.spec import ServiceSpec, command, fill


class NotReady(RuntimeError):
    """A server did not become ready (the message names the rule)."""


@dataclass(frozen=True)
class ServerProc:
    """One server process as the campaign started it."""

    rank: int
    node: int
    address: str
    port: int
    dir: Path
    #: The launch (Popen) holding it, and its log.
    proc: Proc
    log: Path

    def values(self) -> dict:
        return {"address": self.address, "port": self.port, "rank": self.rank, "node": self.node, "dir": self.dir}


def _tcp(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=0.5):
            return True
    except OSError:
        return False


def _command(argv: list[str], timeout: float) -> bool:
    try:
        return subprocess.run(argv, capture_output=True, timeout=max(0.5, timeout)).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def is_ready(spec: ServiceSpec, s: ServerProc, left: float) -> bool:
    r = spec.ready
    if r.tcp:
        return _tcp(s.address, s.port)
    if r.file:
        return Path(fill(r.file, s.values())).exists()
    return _command(command(r.command, s.values()), min(5.0, left))


def wait(spec: ServiceSpec, servers: list[ServerProc], tail) -> None:
    """Returns once every server is ready; NotReady (naming the rule) after
    ready.timeout seconds, or as soon as a server process has exited."""
    deadline = time.monotonic() + spec.ready.timeout
    todo = list(servers)
    while todo:
        for s in list(todo):
            rc = s.proc.poll()
            if rc is not None:
                raise NotReady(
                    f"server rank {s.rank} on node {s.node} exited (code {rc}) before {spec.ready.rule()} "
                    f"held; its log ({s.log}) ends: {tail(s.log)}"
                )
            if is_ready(spec, s, deadline - time.monotonic()):
                todo.remove(s)
        if not todo:
            return
        if time.monotonic() > deadline:
            s = todo[0]
            raise NotReady(
                f"server rank {s.rank} on node {s.node} ({s.address}:{s.port}) not ready within "
                f"ready.timeout = {spec.ready.timeout:g} s: {spec.ready.rule()} never held "
                f"({len(todo)} of {len(servers)} servers not ready); its log ({s.log}) ends: {tail(s.log)}"
            )
        time.sleep(0.05)
