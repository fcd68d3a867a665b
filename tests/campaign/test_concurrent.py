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

QUICK = ["--metrics", "rpc", "--duration", "0.5", "--samples", "2", "--warmup", "0.2"]
LONGER = ["--metrics", "rpc", "--duration", "0.5", "--samples", "8", "--warmup", "0.2"]


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
    first = start(results, env, *LONGER, "--allow-concurrent")
    holder_of(results / ".lock")
    second = start(results, env, *QUICK, "--allow-concurrent")
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


def quiet_cores(cores: set[int], seconds: float = 1.0) -> float:
    """Cores' worth of CPU used on cores by anything, over a second."""
    from rooftop.foreign import cores_busy_s

    b0, t0 = cores_busy_s(cores), time.monotonic()
    time.sleep(seconds)
    return (cores_busy_s(cores) - b0) / (time.monotonic() - t0)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2 or not shutil.which("taskset"), reason="needs 2 cores and taskset")
def test_foreign_cpu_on_the_measured_cores_is_marked(tmp_path, env):
    results = tmp_path / "r"
    core = sorted(os.sched_getaffinity(0))[0]  # node 0's core: the server's
    hog = subprocess.Popen(["taskset", "-c", str(core), "sh", "-c", "while :; do :; done"], start_new_session=True)
    try:
        time.sleep(0.3)
        c0, t0 = cpu_s(hog.pid), time.monotonic()
        p = rooftop("collect", "--results", str(results), *QUICK, env=env)
        hog_share = (cpu_s(hog.pid) - c0) / (time.monotonic() - t0)
    finally:
        os.killpg(hog.pid, signal.SIGKILL)
        hog.wait()
    run = p.stdout.strip().splitlines()[-1]
    loaded = samples(results, run)
    assert hog_share > 0.2, f"the hog got only {hog_share:.2f} of a core"
    for s in loaded:
        assert s["status"] == "ok", s["error"]
        # The hog's CPU is foreign to the campaign: at least most of it is seen.
        assert s["foreign_cpu"] >= max(0.5 * hog_share, 0.15), (s["foreign_cpu"], hog_share)
    assert "shared their cores with other processes" in " ".join(p.stderr.split())  # the summary
    rep = rooftop("report", run, "--results", str(results), env=env)
    assert "shared their cores with other processes" in rep.stderr

    cores = set(os.sched_getaffinity(0))
    before = quiet_cores(cores)
    p = rooftop("collect", "--results", str(results), *QUICK, env=env)
    after = quiet_cores(cores)
    clean = samples(results, p.stdout.strip().splitlines()[-1])
    assert all(s["foreign_cpu"] is not None and s["foreign_cpu"] >= 0 for s in clean)
    if max(before, after) < 0.05:  # a quiet machine: nothing foreign, no warning
        assert all(s["foreign_cpu"] < 0.1 for s in clean), [s["foreign_cpu"] for s in clean]
        assert "shared their cores" not in " ".join(p.stderr.split())


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


def test_kernel_threads_are_the_io_path_not_foreign():
    """The kernel's threads (kworkers, loop devices) do the round's own I/O:
    their CPU is taken out of the foreign load; processes are not."""
    from rooftop.foreign import kernel_delta_s, kernel_threads_cpu

    every = kernel_threads_cpu(set(range(os.cpu_count() or 1)))
    assert 2 in every  # kthreadd, the parent of every kernel thread
    assert os.getpid() not in every and 1 not in every
    assert kernel_delta_s({5: 1.0, 6: 2.0}, {5: 1.5, 7: 0.25}) == 0.75  # 6 died; 7 was born
