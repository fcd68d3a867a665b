"""Server readiness and process reaping: the one implementation
(rooftop.engine) that servers.Group and the campaign Runner both use."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from rooftop.engine.reaping import reap, terminate
from rooftop.engine.servers import NotReady, wait_published


def py(code: str, log=None, **kw) -> subprocess.Popen:
    out = open(log, "w") if log else subprocess.DEVNULL
    return subprocess.Popen([sys.executable, "-c", code], stdout=out, stderr=subprocess.STDOUT, **kw)


def publish(*ranks: int, delay: float = 0.0) -> str:
    """Code that publishes <cwd>/<rank>.addr of each rank as the engine
    does (atomically, with its pid), then waits."""
    return (
        f"import os, time\ntime.sleep({delay})\nfor r in {list(ranks)}:\n"
        f"    open(f'{{r}}.tmp', 'w').write('ofi+tcp://x\\npid=%d\\n' % os.getpid())\n"
        f"    os.rename(f'{{r}}.tmp', f'{{r}}.addr')\n    time.sleep(0.1)\ntime.sleep(30)"
    )


def test_every_rank_of_every_process(tmp_path):
    # One launcher line may run several ranks: all of them must publish.
    a = py(publish(0, delay=0.1), cwd=tmp_path)
    b = py(publish(1, 2, delay=0.2), cwd=tmp_path)
    try:
        wait_published(tmp_path, [(a, [0], None), (b, [1, 2], None)], timeout=10)
        assert {p.name for p in tmp_path.glob("*.addr")} == {"0.addr", "1.addr", "2.addr"}
    finally:
        assert terminate([a, b], 5) == []


def test_a_process_that_exits_first_is_named_with_its_log(tmp_path):
    log = tmp_path / "launch-1.log"
    ok = py(publish(0), cwd=tmp_path)
    bad = py("import sys; print('refused: no such domain'); sys.exit(2)", log=log)
    try:
        with pytest.raises(NotReady) as e:
            wait_published(tmp_path, [(ok, [0], None), (bad, [1, 2], log)], timeout=10)
    finally:
        terminate([ok, bad])
    assert (e.value.index, e.value.missing, e.value.returncode) == (1, [1, 2], 2)
    assert "refused: no such domain" in e.value.log and "exited (code 2)" in str(e.value)


def test_time_runs_out_naming_the_missing_ranks(tmp_path):
    p = py("import time; time.sleep(30)")
    t0 = time.monotonic()
    try:
        with pytest.raises(NotReady) as e:
            wait_published(tmp_path, [(p, [0, 1], None)], timeout=0.3)
    finally:
        terminate([p])
    assert 0.3 <= time.monotonic() - t0 < 5
    assert e.value.index is None and e.value.missing == [0, 1]
    assert str(e.value).startswith("servers not ready within 0.3 s: rank 0, rank 1 published no address")


def test_own_pid_skips_a_stale_file(tmp_path):
    # A file a dead server left behind is not this server's address.
    (tmp_path / "0.addr").write_text("ofi+tcp://old\npid=1\n")
    p = py(publish(0, delay=0.3), cwd=tmp_path)
    try:
        t0 = time.monotonic()
        wait_published(tmp_path, [(p, [0], None)], timeout=10, own_pid=True)
        assert time.monotonic() - t0 >= 0.25
        assert f"pid={p.pid}" in (tmp_path / "0.addr").read_text()
    finally:
        terminate([p])


def test_reap_kills_what_outlives_its_time_with_its_group(tmp_path):
    # A launcher (own session) whose child would outlive it: both go.
    pidfile = tmp_path / "child"
    leader = py(
        f"import subprocess, sys, time; c = subprocess.Popen([sys.executable, '-c', "
        f"'import time; time.sleep(60)']); open({str(pidfile)!r}, 'w').write(str(c.pid)); "
        f"time.sleep(60)",
        start_new_session=True,
    )
    quick = py("pass")
    while not pidfile.exists() or not pidfile.read_text():
        time.sleep(0.01)
    killed = reap([quick, leader], timeout=0.5)
    assert killed == [leader] and quick.returncode == 0 and leader.returncode == -9
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _alive(child):
        time.sleep(0.05)
    assert not _alive(child)


def test_reap_grace_once_one_failed():
    failed = py("import sys; sys.exit(1)")
    stuck = py("import time; time.sleep(60)", start_new_session=True)
    t0 = time.monotonic()
    assert reap([failed, stuck], timeout=60, grace=0.3) == [stuck]
    assert time.monotonic() - t0 < 5


def test_terminate_sends_sigterm_first():
    p = py("import time; time.sleep(60)")  # not a group leader: signalled alone
    assert terminate([p], 5) == [] and p.returncode == -15


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
