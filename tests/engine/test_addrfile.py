"""One server per rank: a second publisher is refused, a dead one's file is
replaced (and the server says so), and clients do not wait on dead servers."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time

import pytest

from rooftop.engine.base import engine_path
from rooftop.engine.commands import run_engine
from rooftop.engine.servers import Group


def serve(directory, rank=0, timeout=20):
    """A second server process of the group, run to its end (or killed)."""
    t = time.monotonic()
    p = subprocess.run(
        [engine_path(), "serve", "--group-dir", str(directory), "--rank", str(rank), "--progress", "block"],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return p, time.monotonic() - t


def killed_server(g: Group, cores) -> int:
    s = g.start_server(0, cpus=cores[0])
    s.proc.send_signal(signal.SIGKILL)
    s.proc.wait(timeout=10)
    assert (g.directory / "0.addr").exists()
    return s.proc.pid


def test_second_server_of_a_rank_is_refused(cores):
    with Group() as g:
        first = g.start_server(0, cpus=cores[0])
        addr = g.directory / "0.addr"
        before = addr.read_text()
        p, took = serve(g.directory)
        assert p.returncode == 2, p.stderr
        assert f"pid {first.proc.pid}" in p.stderr and socket.gethostname() in p.stderr
        assert "already published" in p.stderr and took < 10
        assert addr.read_text() == before  # not clobbered
        doc = run_engine(["ping", "--group-dir", str(g.directory), "--count", "1"], timeout=15)
        assert doc["complete"]
        first.stop()
        assert not addr.exists()  # withdrawn by its owner


def test_stale_file_of_a_dead_server_is_replaced_and_said(cores, validate):
    with Group() as g:
        dead = killed_server(g, cores)
        s = g.start_server(0, cpus=cores[0])
        assert f"pid={s.proc.pid}" in (g.directory / "0.addr").read_text()
        assert f"pid {dead}" in s.stderr() and "stale" in s.stderr()
        doc = validate(s.stop())
    assert doc["result"]["address_file"]["replaced_stale"]["pid"] == dead
    assert "is gone" in doc["result"]["address_file"]["replaced_stale"]["why"]
    assert not (g.directory / "0.addr").exists()


@pytest.mark.parametrize("command", [["ping"], ["stat"], ["load", "--duration", "1"], ["shutdown"]])
def test_client_fails_at_once_on_a_dead_server(command, cores):
    with Group() as g:
        dead = killed_server(g, cores)
        t = time.monotonic()
        p = subprocess.run(
            [engine_path(), *command, "--group-dir", str(g.directory), "--timeout", "30"],
            capture_output=True,
            text=True,
            timeout=60,
            env=dict(os.environ, ROOFTOP_TOKEN="x"),
        )
        took = time.monotonic() - t
    assert p.returncode == 3, p.stderr
    assert f"pid {dead} is gone" in p.stderr and "0.addr" in p.stderr
    assert took < 5
