"""rooftop service on this machine (local launcher, 2 logical nodes), with
real processes: the redis and memcached presets end to end, a server never
ready, a client whose output does not match, a late client and one that
never starts, and a SIGKILLed campaign whose servers end with their lease.

One results folder holds one run (created from a config, no engine
measurement needed: rooftop service only reads the run's config); each
service has its own name, so they share it."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rooftop import session
from rooftop.config.resolve import build as build_config
from rooftop.service import points
from rooftop.store.db import Store

SRC = str(Path(__file__).resolve().parents[2] / "src")
needs = lambda *progs: pytest.mark.skipif(
    any(shutil.which(p) is None for p in progs), reason=f"needs {', '.join(progs)} (scripts/setup.sh --test)"
)


def make_run(res: Path, **over) -> str:
    ov = {
        "results": str(res),
        "collect.windows": 2,
        "collect.duration": 1.0,
        "engine.retries": 0,
        "engine.lease": 2.0,
        **over,
    }
    cfg = build_config(None, ov)
    st = Store(str(res))
    rid = st.new_run(cfg, session.environment(cfg))
    st.set_status(rid, "complete", "")
    return rid


def rooftop(*args, env=None, timeout=120, cwd=None):
    e = dict(os.environ, **(env or {}))
    e["PYTHONPATH"] = os.pathsep.join(filter(None, [(env or {}).get("PYTHONPATH"), SRC]))
    return subprocess.run(
        [sys.executable, "-m", "rooftop", *args], capture_output=True, text=True, timeout=timeout, env=e, cwd=cwd
    )


def left_with(marker: str) -> list[str]:
    """Command lines of live processes naming marker."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if marker in cmd and state != "Z":
                out.append(f"{d.name}: {cmd}")
    return out


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    # A space in the results folder's path: {dir} and the paths the wrapper
    # is given stay one argument each (issue 42: redis-server read a path
    # split in two, "wrong number of arguments", and every point failed).
    res = tmp_path_factory.mktemp("service results")
    # Two client processes per client node (binding none: a logical node here has one core).
    return res, make_run(res, binding="none", **{"validate.clients_per_node": 2})


def stored(res: Path, rid: str, name: str) -> list[points.ServicePoint]:
    return points.load(Store(str(res), create=False), rid, name)


def spec(tmp_path: Path, name: str, client: str, server: str = "sleep 30.25", extra: str = "", rate=None) -> Path:
    p = tmp_path / f"{name}.toml"
    rate = rate or "regex = 'rate=(\\d+)'"
    p.write_text(
        f'name = "{name}"\nmetric = "rpc"\n[server]\ncommand = "{server}"\nbase_port = 23000\n'
        f'[ready]\nfile = "{{dir}}"\ntimeout = 5\n[client]\ncommand = "{client}"\n{extra}\n'
        f'[rate]\n{rate}\nunit = "ops/s"\n'
    )
    return p


def test_dry_run_prints_each_process_command(run):
    """--dry-run: the launches, and each process's service command as its wrapper will fill it in."""
    res, rid = run
    r = rooftop("service", rid, "--preset", "redis", "--results", str(res), "--dry-run")
    assert r.returncode == 0, r.stderr
    folder = res / rid / "service" / "redis" / "s0x1"
    assert "#   server rank 0 on node 0: redis-server --bind 127.0.0.1 --port 16379 " in r.stdout, r.stdout
    assert (
        f"--dir {shlex.quote(f'{folder}/server-0')} --logfile {shlex.quote(f'{folder}/server-0/redis.log')} "
        in r.stdout
    )
    assert ": 2 window(s) of 2 client(s) vs 1 server(s)" in r.stdout, r.stdout  # collect.windows: one point each
    for rank in (0, 1):  # both clients of the one server
        assert f"#   client rank {rank} on node 1: redis-benchmark -h 127.0.0.1 -p 16379 -c 1 -P 1 " in r.stdout
    assert not folder.exists() or not any(folder.rglob("release"))  # nothing ran
    # --results relative to this directory: the service's folders are still given as absolute
    # paths (an mpiexec or srun process starts elsewhere, and its redis-server found no log file).
    r = rooftop("service", rid, "--preset", "redis", "--results", res.name, "--dry-run", cwd=res.parent)
    assert r.returncode == 0, r.stderr
    assert f"--dir {shlex.quote(f'{folder}/server-0')} " in r.stdout, r.stdout


@needs("redis-server", "redis-benchmark", "redis-cli")
def test_redis_preset_end_to_end(run):
    res, rid = run
    r = rooftop("service", rid, "--preset", "redis", "--results", str(res), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["ok"] == 2
    pts = stored(res, rid, "redis")
    assert [p.status for p in pts] == ["ok", "ok"]
    assert all(p.server_procs == 1 and p.client_procs == 2 and p.aggregate > 0 for p in pts)
    assert all(len(p.detail["per_client_rates"]) == 2 and min(p.detail["per_client_rates"]) > 0 for p in pts)
    saved = points.specs(Store(str(res), create=False), rid)["redis"]
    assert saved["client"]["command"].startswith("redis-benchmark") and "-c 1 -P 1" in saved["client"]["command"]
    folder = res / rid / "service" / "redis" / "s0x1"
    assert "redis-server" in (folder / "servers.txt").read_text()
    assert (folder / "server-0" / "redis.log").exists()  # kept (server.keep)
    assert "GET: rps=" in (folder / "c1x2-0" / "try0" / "client-1.out").read_text()
    assert not left_with("redis-server --bind")
    # Stored points are skipped with --resume, refused without it.
    again = rooftop("service", rid, "--preset", "redis", "--results", str(res))
    assert again.returncode == 2 and "--resume" in again.stderr
    assert rooftop("service", rid, "--preset", "redis", "--results", str(res), "--resume").returncode == 0
    assert Store(str(res), create=False).get_run(rid).status == "complete"  # the run's own status is kept


@needs("memcached", "memcaslap")
def test_memcached_preset(run):
    res, rid = run
    r = rooftop("service", rid, "--preset", "memcached", "--results", str(res))
    assert r.returncode == 0, r.stderr
    pts = stored(res, rid, "memcached")
    assert [p.status for p in pts] == ["ok", "ok"] and all(p.aggregate > 0 for p in pts)
    assert not left_with("memcached -u")


def test_server_never_ready(run, tmp_path):
    res, rid = run
    p = spec(tmp_path, "never", "echo {server_address}:{server_port} rate=1", server="sleep 30.5")
    p.write_text(p.read_text().replace('file = "{dir}"\ntimeout = 5', "tcp = true\ntimeout = 1"))
    r = rooftop("service", rid, str(p), "--results", str(res))
    assert r.returncode == 1
    pts = stored(res, rid, "never")
    assert [p.status for p in pts] == ["failed", "failed"]
    assert "ready.tcp" in pts[0].error and "ready.timeout = 1 s" in pts[0].error
    assert not left_with("sleep 30.5")


def test_client_output_does_not_match(run, tmp_path):
    res, rid = run
    p = spec(tmp_path, "nomatch", "sh -c 'sleep {duration}; echo {server_address}:{server_port} hello-from-the-client'")
    r = rooftop("service", rid, str(p), "--results", str(res))
    assert r.returncode == 1
    pts = stored(res, rid, "nomatch")
    assert {p.status for p in pts} == {"failed"}
    assert "rate.regex" in pts[0].error and "hello-from-the-client" in pts[0].error


# Client rank 1's wrapper starts late (or never): a sitecustomize on its
# PYTHONPATH sleeps in the wrapper process of client rank 1 before it
# reaches the barrier.
SITE = """
import os, sys, time
a = sys.argv
if "client" in a and "--rank" in a and a[a.index("--rank") + 1] == "1":
    time.sleep(float(os.environ["L29_CLIENT_DELAY"]))
"""


def test_late_client_is_held_by_the_barrier(run, tmp_path):
    res, rid = run
    (tmp_path / "sitecustomize.py").write_text(SITE)
    p = spec(tmp_path, "late", "sh -c 'sleep {duration}; echo {server_address}:{server_port} rate=5'")
    r = rooftop(
        "service", rid, str(p), "--results", str(res),
        env={"PYTHONPATH": str(tmp_path), "L29_CLIENT_DELAY": "1.5"},
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    pts = stored(res, rid, "late")
    assert [p.status for p in pts] == ["ok", "ok"] and pts[0].aggregate == 10.0
    sdir = res / rid / "service" / "late" / "s0x1" / "c1x2-0" / "try0"
    ready = [json.loads((sdir / f"ready-{k}").read_text())["t"] for k in (0, 1)]
    starts = [json.loads((sdir / f"start-{k}.json").read_text())["t"] for k in (0, 1)]
    assert ready[1] > ready[0] + 1.0  # rank 1 did arrive late ...
    assert min(starts) >= ready[1]  # ... and rank 0 waited for it


def test_client_that_never_starts(run, tmp_path):
    res, rid = run
    (tmp_path / "sitecustomize.py").write_text(SITE)
    p = spec(
        tmp_path, "absent", "sh -c 'sleep {duration}; echo {server_address}:{server_port} rate=5'",
        extra="start_timeout = 1.5", server="sleep 30.75",
    )  # fmt: skip
    r = rooftop(
        "service", rid, str(p), "--results", str(res),
        env={"PYTHONPATH": str(tmp_path), "L29_CLIENT_DELAY": "3600"},
    )  # fmt: skip
    assert r.returncode == 0, r.stderr  # invalid, not failed
    pts = stored(res, rid, "absent")
    assert [p.status for p in pts] == ["invalid", "invalid"]
    assert "client rank 1 on node 1 never reached the barrier" in pts[0].error
    assert not left_with("sleep 30.75") and not left_with(str(res / rid / "service" / "absent"))


def test_sigkilled_campaign_leaves_no_service_process(tmp_path):
    """... and the run reads as it did before the service (complete), not
    running or interrupted with a 'collect --resume' to do (issue 42)."""
    res = tmp_path / "res"
    rid = make_run(res, **{"collect.duration": 30.0})
    # A client the wrapper stays parent of (stopped after the duration, rate
    # from progress lines) watches the lease too.
    p = spec(
        tmp_path, "killed", "sh -c 'while sleep 0.25; do echo {server_address}:{server_port} rate=5; done' l29killed",
        server="sleep 31.25", extra="stop_after_duration = true", rate="progress = 'rate=(\\d+)'",
    )  # fmt: skip
    e = dict(os.environ, PYTHONPATH=SRC)
    proc = subprocess.Popen(
        [sys.executable, "-m", "rooftop", "service", rid, str(p), "--results", str(res)],
        env=e, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not (left_with("sleep 31.25") and left_with("l29killed")):
            assert time.monotonic() < deadline and proc.poll() is None, "the service never started"
            time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    # engine.lease = 2 s, then the wrappers' grace: poll, bounded.
    deadline = time.monotonic() + 30
    while (left_with("sleep 31.25") or left_with("l29killed")) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left_with("sleep 31.25") and not left_with("l29killed")
    listed = json.loads(rooftop("runs", "--json", "--results", str(res)).stdout)
    assert [(r["id"], r["status"], r["note"]) for r in listed] == [(rid, "complete", "")]


def _rows(res: Path, table: str) -> list[dict]:
    import sqlite3

    db = sqlite3.connect(res / "rooftop.db")
    db.row_factory = sqlite3.Row
    try:
        return [
            {k: r[k] for k in r.keys() if k != "created"} for r in db.execute(f"SELECT * FROM {table} ORDER BY 1, 2, 3")
        ]
    finally:
        db.close()


def _damage_table(db: Path, table: str) -> None:
    """Overwrites the root page of one table: every other table still reads."""
    import sqlite3

    con = sqlite3.connect(db)
    root = con.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    size = con.execute("PRAGMA page_size").fetchone()[0]
    con.close()
    with open(db, "r+b") as f:
        f.seek((root - 1) * size)
        f.write(b"\xa5" * size)


def test_rebuild_restores_service_points_and_baselines_and_says_what_it_cannot(tmp_path):
    """doctor --rebuild carries service points (measured and imported), their
    specs, named baselines and time series over from the old database.
    Without it, the measured points are read again from RUN/service/NAME/
    (with the spec kept there); a service_points table the old database
    cannot read is named, with the imported points it held as lost."""
    res = tmp_path / "res"
    rid = make_run(res, **{"collect.duration": 0.5})
    p = spec(tmp_path, "rb", "sh -c 'sleep {duration}; echo {server_address}:{server_port} rate=7'")
    r = rooftop("service", rid, str(p), "--results", str(res))
    assert r.returncode == 0, r.stdout + r.stderr
    st = Store(str(res), create=False)
    imported = points.ServicePoint("elsewhere", "rpc", "ops/s", 4, 8, 0, "ok", 80.0, origin="imported")
    points.add(st, rid, imported)
    st.db.execute("INSERT INTO baselines VALUES ('nightly', ?, '2026-01-01T12:00:00+00:00', '{}')", (rid,))
    st.add_series(rid, "r0", {"cpu": [(0.5, "cpu_user", 0.25, "cores")]})
    st.close()
    carried = ("service_points", "service_specs", "baselines", "series")
    before = {t: _rows(res, t) for t in carried}
    assert [p["origin"] for p in before["service_points"]] == ["imported", "measured", "measured"]
    out = rooftop("doctor", "--results", str(res), "--rebuild")
    assert out.returncode == 0 and "service_points: 3 row(s) carried over" in out.stdout, out.stdout
    assert {t: _rows(res, t) for t in carried} == before
    # The database lost: the measured points are read again from their folders, with their spec.
    for f in res.glob("rooftop.db*"):
        f.unlink()
    out = rooftop("doctor", "--results", str(res), "--rebuild")
    assert out.returncode == 0 and f"run {rid}: 2 service point(s) read again" in out.stdout, out.stdout
    measured = [p for p in before["service_points"] if p["origin"] == "measured"]
    same = ("service", "key", "metric", "unit", "server_procs", "client_procs", "window", "status", "aggregate")
    assert [{k: p[k] for k in same} for p in _rows(res, "service_points")] == [
        {k: p[k] for k in same} for p in measured
    ]
    assert [s["service"] for s in _rows(res, "service_specs")] == ["rb"]
    # A service_points table the old database cannot read: said; measured points read again, imported lost.
    st = Store(str(res), create=False)
    points.add(st, rid, imported)
    st.close()
    _damage_table(res / "rooftop.db", "service_points")
    out = rooftop("doctor", "--results", str(res), "--rebuild")
    assert "service_points: NOT all restored" in out.stdout and "imported points" in out.stdout, out.stdout
    assert f"run {rid}: 2 service point(s) read again" in out.stdout, out.stdout
    assert [p["origin"] for p in _rows(res, "service_points")] == ["measured", "measured"]
