"""A server answers at once after a connection storm (issue 27): 2,000 TCP
connections opened and closed against its address (loopback, ofi+tcp),
then one ping must succeed on its first try.

Over tcp;ofi_rxm (libfabric 1.17) rxm accepts one queued connection per
FI_OFI_RXM_CM_PROGRESS_INTERVAL (10 ms) of polling, so the ping used to
wait ~10 ms per storm connection (~20 s here). FI_OFI_RXM_CM_PROGRESS_INTERVAL=0
would drain at once but make every empty read an epoll_wait
(tests/engine/test_progress.py measures that cost). Instead a busy or
spindown server that sees connections stay queued sends itself a zero-byte
message: while rxm connects to it, it progresses connections on every read
and accepts the queue at once (engine/src/cm_nudge.hpp; the server's
result counts the nudges). Block progress was never affected (fi_trywait
progresses the connections)."""

from __future__ import annotations

import re
import socket
import time

import pytest

from rooftop.engine.commands import run_engine
from rooftop.engine.servers import Group

STORM = 2000


def storm(directory) -> None:
    text = (directory / "0.addr").read_text()
    m = re.search(r"^text=fi_sockaddr_in://([\d.]+):(\d+)$", text, re.M)
    assert m, text  # the tcp provider publishes its IPv4 listening address
    for _ in range(STORM):
        socket.create_connection((m.group(1), int(m.group(2))), timeout=5).close()


@pytest.mark.parametrize("progress", ["busy", "spindown"])
def test_server_answers_at_once_after_a_connection_storm(progress, cores):
    with Group() as g:
        s = g.start_server(0, cpus=cores[0], progress=progress)
        if progress == "spindown":
            time.sleep(1.2)  # idle long enough to sleep-poll in its longest steps
        storm(g.directory)
        doc = run_engine(["ping", "--group-dir", str(g.directory), "--count", "1", "--timeout", "3"], timeout=15)
        assert doc["complete"], doc
        server = s.stop()
    nudges = server["result"]["connection_nudges"]
    assert nudges["sent"] >= 1 and nudges["received"] == nudges["sent"] and nudges["errors"] == 0, nudges
