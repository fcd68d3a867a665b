"""Two campaigns at once (issue 11, finding 3): the locks of a results folder
and of this machine's cores, --wait-lock, --allow-concurrent, and the foreign
CPU each sample records. Real campaigns, real processes.

The machine lock is ROOFTOP_CORES_LOCK in a temporary folder, so these tests
see only their own campaigns' locks. The machine may be shared (other
campaigns, builds): foreign load is asserted against a hog whose own CPU time
is read from /proc, never as an absolute "quiet" value unless the machine
was quiet."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from campaign_util import rooftop, samples

QUICK = ["--metrics", "rpc", "--duration", "0.5", "--windows", "2", "--warmup", "0.2"]
# Long enough (about 13 s) that the first campaign still holds its locks
# while two refused commands and the waiter start (each a second or so of
# Python start-up): with 8 windows (5 s) it could end before the waiter
# asked, and the waiter never waited.
LONGER = ["--metrics", "rpc", "--duration", "0.5", "--windows", "24", "--warmup", "0.2"]


@pytest.fixture
def env(tmp_path):
    return dict(os.environ, ROOFTOP_CORES_LOCK=str(tmp_path / "cores.lock"))


def start(results: Path, env: dict, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "rooftop", "collect", "--results", str(results), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def holder_of(lock: Path, timeout: float = 60) -> dict:
    """The holder a lock file names once its campaign has a run id."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            doc = json.loads(lock.read_text() or "{}")
        except (OSError, ValueError):
            doc = {}
        if doc.get("run", "(starting)") != "(starting)":
            return doc
        time.sleep(0.05)
    raise AssertionError(f"{lock} named no run within {timeout} s")


def finish(p: subprocess.Popen, timeout: float = 120) -> tuple[int, str, str]:
    out, err = p.communicate(timeout=timeout)
    return p.returncode, out, err


def run_ids(results: Path, env: dict) -> list[str]:
    return [r["id"] for r in json.loads(rooftop("runs", "--results", str(results), "--json", env=env).stdout)]


def test_second_campaign_is_refused_naming_the_holder_then_waits(tmp_path, env):
    results = tmp_path / "r"
    first = start(results, env, *LONGER)
    try:
        held = holder_of(results / ".lock")
        assert held["pid"] == first.pid and held["host"]
        # Same results folder: refused at once, naming the holder's run id, pid and host.
        t0 = time.monotonic()
        p = rooftop("collect", "--results", str(results), *QUICK, env=env, check=False)
        assert p.returncode == 2, p.stderr
        assert time.monotonic() - t0 < 15
        assert f"results folder {results}" in p.stderr
        assert held["run"] in p.stderr and f"pid {first.pid}" in p.stderr and held["host"] in p.stderr
        assert "--wait-lock" in p.stderr and "--allow-concurrent" in p.stderr
        # Another results folder, same machine: refused by the cores' lock.
        p = rooftop("collect", "--results", str(tmp_path / "other"), *QUICK, env=env, check=False)
        assert p.returncode == 2 and "this machine's cores" in p.stderr and held["run"] in p.stderr
        # --wait-lock: waits for the first, then runs.
        waiter = start(results, env, *QUICK, "--wait-lock", "120")
        rc, _, err = finish(first)
        assert rc == 0, err
        rc, out, err = finish(waiter)
        assert rc == 0, err
        assert "waiting up to" in err and held["run"] in err
    finally:
        for p in (first,):
            if p.poll() is None:
                p.kill()
    second = out.strip().splitlines()[-1]
    assert run_ids(results, env) == [held["run"], second]  # the refused campaign made no run
    last_of_first = max(s["created"] for s in samples(results, held["run"]))
    assert min(s["created"] for s in samples(results, second)) >= last_of_first
    assert all(s["concurrent"] == 0 for s in samples(results, second))


def test_allow_concurrent_runs_both_and_marks_every_sample(tmp_path, env):
    results = tmp_path / "r"
    # Each campaign's engines are foreign CPU on the other's cores: above
    # engine.foreign_cpu_gate its rounds would be stored invalid (rightly).
    # This test is about the locks and the marks, so the gate is opened.
    both = ["--allow-concurrent", "--set", "engine.foreign_cpu_gate=1000"]
    first = start(results, env, *LONGER, *both)
    holder_of(results / ".lock")
    second = start(results, env, *QUICK, *both)
    # An exclusive campaign meanwhile is refused: the concurrent ones hold the locks shared.
    p = rooftop("collect", "--results", str(results), *QUICK, env=env, check=False)
    # (Each shared holder writes its name into the file; every holder's pid is named, from /proc/locks.)
    assert p.returncode == 2 and f"pid {first.pid}" in p.stderr, p.stderr
    runs = []
    for proc in (first, second):
        rc, out, err = finish(proc)
        assert rc == 0, err
        runs.append(out.strip().splitlines()[-1])
    for run in runs:
        rows = samples(results, run)
        assert rows and all(s["concurrent"] == 1 for s in rows)
    rep = rooftop("report", runs[1], "--results", str(results), env=env)
    assert "were measured with --allow-concurrent" in rep.stderr
    md = (results / runs[1] / "report" / "report.md").read_text()
    assert "--allow-concurrent" in md


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


#: Every core of this machine.
ALL = set(range(os.cpu_count() or 1))


def children_cpu_s() -> float:
    """CPU seconds of this process's reaped children (a campaign and its engines)."""
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


HOG = "while True: pass"


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2 or not shutil.which("taskset"), reason="needs 2 cores and taskset")
def test_foreign_cpu_above_the_gate_leaves_the_samples_out_and_a_quiet_round_in(tmp_path, env):
    """A busy loop pinned to each core of the round (the server's node 0,
    the client's node 1) takes about half of each: its samples are invalid
    (engine.foreign_cpu_gate, default 0.5 cores), so the ceiling has nothing
    to use and `rooftop model` says why. A quiet rpc and bw round on loopback
    is not: its own network softirq and its engines are not foreign."""
    from rooftop.config.catalog import KEY_BY_PATH
    from rooftop.foreign import OVER_GATE, cores_busy_s

    gate = KEY_BY_PATH["engine.foreign_cpu_gate"].default
    results = tmp_path / "r"
    hogs = [
        subprocess.Popen(["taskset", "-c", str(c), sys.executable, "-c", HOG], start_new_session=True)
        for c in sorted(os.sched_getaffinity(0))[:2]
    ]
    try:
        time.sleep(0.3)
        c0, t0 = sum(cpu_s(h.pid) for h in hogs), time.monotonic()
        p = rooftop("collect", "--results", str(results), *QUICK, "--set", "engine.retries=0", env=env, check=False)
        hog_cores = (sum(cpu_s(h.pid) for h in hogs) - c0) / (time.monotonic() - t0)
    finally:
        for h in hogs:
            os.killpg(h.pid, signal.SIGKILL)
            h.wait()
    assert p.returncode == 1, p.stderr  # as for failed samples
    run = p.stdout.strip().splitlines()[-1]
    assert hog_cores > gate + 0.2, f"the busy loops got only {hog_cores:.2f} cores"
    for s in samples(results, run):
        # The loops' CPU is foreign to the campaign: at least most of it is seen.
        assert s["foreign_cpu"] >= max(0.7 * hog_cores, gate), (s["foreign_cpu"], hog_cores)
        assert s["status"] == "invalid" and s["error"].startswith(OVER_GATE), s["error"]
        assert f"engine.foreign_cpu_gate: {gate:g}" in s["error"]
    assert OVER_GATE in " ".join(p.stderr.split())  # the summary
    m = rooftop("model", run, "--results", str(results), env=env, check=False)
    assert m.returncode == 2 and "no usable" in m.stderr and OVER_GATE in m.stderr, m.stderr

    b0, c0, t0 = cores_busy_s(ALL), children_cpu_s(), time.monotonic()
    p = rooftop("collect", "--results", str(results), *QUICK[:1], "rpc,bw", *QUICK[2:], env=env)
    others = (cores_busy_s(ALL) - b0 - (children_cpu_s() - c0)) / (time.monotonic() - t0)
    run = p.stdout.strip().splitlines()[-1]
    clean = samples(results, run)
    assert {s["metric"] for s in clean} == {"rpc", "bw"}
    assert all(s["status"] == "ok" and 0 <= s["foreign_cpu"] <= gate for s in clean), [
        (s["status"], s["foreign_cpu"]) for s in clean
    ]
    if others < 0.02:  # nothing else ran meanwhile (the machine may be shared): nothing foreign, no warning
        assert all(s["foreign_cpu"] < 0.1 for s in clean), [s["foreign_cpu"] for s in clean]
        assert "shared their cores" not in " ".join(p.stderr.split())
    m = rooftop("model", run, "--results", str(results), env=env)
    assert OVER_GATE not in m.stdout


HOLD = """
import fcntl, json, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR if sys.argv[2] == "rw" else os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX)
if sys.argv[2] == "rw":
    os.write(fd, json.dumps({"run": "held-by-test", "pid": os.getpid(), "host": "h"}).encode())
print("held", flush=True)
time.sleep(600)
"""


def hold(lock: Path, mode: str, *prefix: str) -> subprocess.Popen:
    """A process holding lock exclusively (as a campaign would) until killed."""
    p = subprocess.Popen([*prefix, sys.executable, "-c", HOLD, str(lock), mode], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "held"
    return p


def test_lock_of_a_killed_campaign_is_released(tmp_path, env):
    results = tmp_path / "r"
    results.mkdir()
    (results / ".lock").touch()
    holder = hold(results / ".lock", "rw")
    p = rooftop("collect", "--results", str(results), *QUICK, env=env, check=False)
    assert p.returncode == 2 and "held-by-test" in p.stderr, p.stderr
    holder.kill()  # SIGKILL: the kernel drops its flock, the file's text stays
    holder.wait()
    rooftop("collect", "--results", str(results), *QUICK, env=env)


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv")
def test_machine_lock_held_by_another_user_names_its_pid(tmp_path, env):
    import tempfile

    shared = Path(tempfile.mkdtemp(prefix="rooftop-lock-"))
    try:
        shared.chmod(0o755)
        lock = shared / "cores.lock"
        from rooftop.locks import Lock

        Lock(lock, "test").release()  # created by this user, 0644 whatever the umask
        assert lock.stat().st_mode & 0o777 == 0o644
        nobody = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")
        holder = hold(lock, "ro", *nobody)  # can lock it read-only, cannot write its name
        try:
            p = rooftop(
                "collect",
                "--results",
                str(tmp_path / "r"),
                *QUICK,
                check=False,
                env=dict(env, ROOFTOP_CORES_LOCK=str(lock)),
            )
        finally:
            holder.kill()
            holder.wait()
        assert p.returncode == 2, p.stderr
        assert f"pid {holder.pid}" in p.stderr and "run unknown" in p.stderr
    finally:
        shutil.rmtree(shared)


def test_foreign_is_what_processes_not_the_campaigns_used_on_the_cores():
    """Snapshots of /proc: the kernel's threads (the round's own I/O) and
    the campaign's descendants are not foreign; a process that ended
    meanwhile is counted once, through its reaper (whose cutime holds its
    whole life); a process on other cores is not counted."""
    from rooftop.foreign import Proc, foreign_s, processes

    now = processes()
    assert now[2].kernel and not now[os.getpid()].kernel  # kthreadd, the parent of every kernel thread

    def p(ppid, cpu, reaped=0.0, core=0, kernel=False, born=1):
        return Proc(ppid, born, cpu, reaped, core, kernel)

    me = 100
    before = {
        1: p(0, 1.0),
        2: p(0, 5.0, kernel=True),
        me: p(1, 1.0),
        101: p(me, 2.0),  # an engine
        200: p(1, 10.0),  # a build: make
        201: p(200, 3.0),  # its compiler, ends meanwhile
        300: p(1, 4.0, core=1),  # elsewhere
    }
    after = {
        1: p(0, 1.0),
        2: p(0, 9.0, kernel=True),
        me: p(1, 1.5, reaped=0.5),
        101: p(me, 4.0),
        200: p(1, 10.25, reaped=3.5),  # 201 used 0.5 more, then was reaped
        202: p(200, 0.25, born=7),  # born meanwhile
        300: p(1, 6.0, core=1),
    }
    assert foreign_s(before, after, {0}, me) == 0.25 + 0.5 + 0.25
    assert foreign_s(before, after, {0, 1}, me) == 1.0 + 2.0
    # A pid reused meanwhile is another process: counted from 0.
    after[202] = p(200, 0.25, born=9)
    before[202] = p(me, 8.0, born=3)
    assert foreign_s(before, after, {0}, me) == 1.0
