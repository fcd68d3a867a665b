"""Issue 27, item 6: options and states that were silently accepted or read
wrong are refused, or named, with a clear message (no traceback)."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from pathlib import Path

import pytest
from campaign_util import rooftop

from rooftop.config.catalog import MIN_DURATION_S
from rooftop.config.files import merge
from rooftop.config.resolve import build, resolve
from rooftop.keys import ConfigError
from rooftop.store.db import Store

DATA = Path(__file__).parent.parent / "data" / "results-19dee6e"


def refused(*args, env=None) -> str:
    p = rooftop(*args, check=False, env=env)
    assert p.returncode == 2 and "Traceback" not in p.stderr, (p.returncode, p.stdout, p.stderr)
    return p.stderr


def test_a_window_too_short_for_operations_is_refused(tmp_path):
    err = refused("collect", "--duration", "1e-9", "--windows", "2", "--results", str(tmp_path / "r"))
    assert "collect.duration: 1e-09 s is too short" in err and f"{MIN_DURATION_S:g} s" in err
    assert not (tmp_path / "r").exists()
    with pytest.raises(ConfigError, match="validate.duration"):
        resolve(merge({"validate": {"duration": 0.001}}, {}))


def test_empty_metrics_is_refused_not_the_defaults(tmp_path):
    err = refused("collect", "--metrics", "", "--dry-run", "--results", str(tmp_path / "r"))
    assert "metrics: name at least one of" in err


@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_a_deeply_nested_config_is_an_error_naming_the_file(tmp_path, suffix):
    f = tmp_path / f"deep{suffix}"
    n = 100_000
    f.write_text('{"a": ' * n + "1" + "}" * n if suffix == ".json" else "a = " + "[" * n + "]" * n + "\n")
    err = refused("collect", "--config", str(f), "--dry-run")
    assert str(f) in err and "nested too deeply" in err


def test_resume_refuses_the_options_it_would_ignore(tmp_path):
    err = refused("collect", "--resume", "RUN", "--duration", "0.2", "--metrics", "bw", "--results", str(tmp_path))
    assert "would be ignored: collect.duration, metrics" in err


def test_a_run_of_another_host_without_its_lock_reads_unknown(tmp_path):
    res = tmp_path / "res"
    store = Store(res)
    run = store.new_run(build(overrides={"results": str(res)}), {})
    store.db.execute("UPDATE runs SET owner_pid = 4242, owner_host = 'elsewhere' WHERE id = ?", (run,))
    store.db.commit()
    store.close()

    def row():
        return {r["id"]: r for r in json.loads(rooftop("runs", "--json", "--results", str(res)).stdout)}[run]

    got = row()
    assert got["status"] == "unknown" and "pid 4242 on host elsewhere" in got["note"], got
    assert f"collect --resume {run}" in got["note"]
    with open(res / ".lock", "a") as lock:  # a campaign holding the results folder: still running
        fcntl.flock(lock, fcntl.LOCK_EX)
        assert row()["status"] == "running"


@pytest.mark.skipif(os.geteuid() != 0, reason="'rooftop cluster down' needs root")
def test_cluster_down_refuses_while_a_campaign_holds_the_cores(tmp_path):
    from rooftop.locks import Lock

    path = tmp_path / "cores.lock"
    lock = Lock(path, "this machine's cores")
    assert lock.acquire(0)
    lock.write_holder("RUN-27")
    try:
        err = refused("cluster", "down", env={**os.environ, "ROOFTOP_CORES_LOCK": str(path)})
    finally:
        lock.release()
    assert "run RUN-27" in err and f"pid {os.getpid()}" in err and "--force" in err


def test_plot_does_not_write_through_a_figures_link_outside_the_run(tmp_path):
    res = tmp_path / "res"
    shutil.copytree(DATA, res)
    run = next(p.name for p in res.iterdir() if p.is_dir())
    outside = tmp_path / "outside"
    outside.mkdir()
    (res / run / "figures").symlink_to(outside)
    err = refused("plot", run, "--results", str(res))
    assert "leads outside" in err and str(outside) in err
    assert not any(outside.iterdir())
    (res / run / "figures").unlink()  # a figure file linked elsewhere is replaced, not written through
    (res / run / "figures").mkdir()
    target = outside / "victim"
    target.write_text("keep")
    for name in ("roofline.png", "roofline.svg"):
        (res / run / "figures" / name).symlink_to(target)
    rooftop("plot", run, "--results", str(res))
    assert target.read_text() == "keep"


def test_a_lapsed_lease_is_named_in_the_samples_it_failed(tmp_path):
    """SIGSTOP of collect past engine.lease during the rpc round: its servers
    stop; the bw round on them then fails naming the lapsed lease, not only
    'did not publish 0.addr'."""
    import signal
    import subprocess
    import sys
    import time

    from campaign_util import samples

    res = tmp_path / "res"
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rooftop",
            "collect",
            "--metrics",
            "rpc,bw",
            "--duration",
            "1",
            "--warmup",
            "0.1",
            "--windows",
            "2",
            "--set",
            "collect.client_peak=false",
            "--set",
            "collect.client_node=false",
            "--set",
            "engine.lease=1",
            "--results",
            str(res),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not list(res.glob("*/raw/*rpc*/windows-*.jsonl")):  # the rpc round measures
            assert time.monotonic() < deadline and p.poll() is None
            time.sleep(0.02)
        p.send_signal(signal.SIGSTOP)
        time.sleep(3)  # three lease periods
        p.send_signal(signal.SIGCONT)
        p.communicate(timeout=120)
    finally:
        p.kill()
        p.wait()
    run = next(d.name for d in res.iterdir() if d.is_dir())
    bw = [s for s in samples(res, run) if s["metric"] == "bw"]
    assert bw and all(s["status"] == "failed" and "lease lapsed" in s["error"] for s in bw), bw
