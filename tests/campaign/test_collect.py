"""rooftop collect and validate end to end with the real engine (local launcher)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from campaign_util import QUICK, engine_processes, rooftop, samples

from rooftop.engine.servers import Group


def test_local_campaign_yields_consistent_ceilings(tmp_path, cores):
    res = tmp_path / "res"
    p = rooftop("collect", "--nodes", "2", "--metrics", "rpc,bw", *QUICK, "--results", str(res))
    run = p.stdout.strip().splitlines()[-1]
    rows = samples(res, run)
    # 2 logical nodes of 1 core: server peak, client peak and client node
    # are one placement, measured once; each row stands for all three.
    assert {r["stage"] for r in rows} == {"server_peak"}
    by = {}
    for r in rows:
        for stage in json.loads(r["ceilings"]):
            by.setdefault((stage, r["metric"]), []).append(r)
    assert len(rows) == 4
    assert set(by) == {
        ("server_peak", "rpc"),
        ("server_peak", "bw"),
        ("client_peak", "rpc"),
        ("client_peak", "bw"),
        ("client_node", "rpc"),
        ("client_node", "bw"),
    }
    for (_stage, metric), rs in by.items():
        assert len(rs) == 2 and all(r["status"] == "ok" for r in rs), rs
        for r in rs:
            assert r["aggregate"] > 0 and r["measured_s"] >= 0.4
            assert r["per_server"] == pytest.approx(r["aggregate"] / r["server_procs"])
            assert r["per_client"] == pytest.approx(r["aggregate"] / r["client_procs"])
            assert r["unit"] == ("ops/s" if metric == "rpc" else "bytes/s")
            # Every engine document of the sample is kept.
            assert sorted(os.listdir(r["raw_dir"])) and any(f.startswith("client-") for f in os.listdir(r["raw_dir"]))
    # 2 logical nodes of 1 core: server node 0, client node 1; one pair.
    sp = by[("server_peak", "rpc")][0]
    assert (json.loads(sp["server_nodes"]), json.loads(sp["client_nodes"])) == ([0], [1])
    assert sp["server_procs"] == 1 and sp["client_procs"] == 1
    # The client node stage: the last node full of clients, servers everywhere else.
    cn = by[("client_node", "bw")][0]
    assert (json.loads(cn["server_nodes"]), json.loads(cn["client_nodes"])) == ([0], [1])
    # Consistent with the engine's own single run on the same cores.
    with Group() as g:
        g.start_server(0, cpus=cores[0], progress="spindown")
        direct = g.load(op="noop", duration=0.5, warmup=0.2, cpus=cores[1])["result"]["ops_per_sec"]
    camp = sorted(r["per_client"] for r in by[("client_peak", "rpc")])[-1]
    assert direct / 4 < camp < direct * 4, (camp, direct)
    # The run records its resolved config, environment and overhead.
    db = sqlite3.connect(res / "rooftop.db")
    cfg, env, status, wall, measured = db.execute(
        "SELECT config, environment, status, wall_s, measured_s FROM runs WHERE id = ?", (run,)
    ).fetchone()
    cfg, env = json.loads(cfg), json.loads(env)
    assert status == "complete" and wall > measured > 0
    # Consecutive windows each add their common time; nothing is counted twice or lost.
    assert measured == pytest.approx(sum(r["measured_s"] for r in rows), rel=1e-9)
    assert cfg["collect"]["duration"] == 0.4 and cfg["collect"]["servers_per_node"] == 1
    assert [n["cores"] for n in cfg["nodes"]] == [[int(cores[0])], [int(cores[1])]]
    assert env["engine"].startswith("rooftop-engine") and env["launcher"] == "local"
    assert "overhead" in p.stderr
    assert not engine_processes(str(res))


def test_validate_grid_stores_every_sample_with_x(tmp_path):
    res = tmp_path / "res"
    run = (
        rooftop(
            "collect",
            "--metrics",
            "rpc",
            "--set",
            "collect.client_peak=false",
            "--set",
            "collect.client_node=false",
            "--duration",
            "0.3",
            "--warmup",
            "0.1",
            "--windows",
            "1",
            "--results",
            str(res),
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    # 3 clients do not fit on a 1-core node with one process per core ...
    p = rooftop("validate", run, "--clients-per-node", "3", "--results", str(res), check=False)
    assert p.returncode == 2 and "validate.clients_per_node: 3 processes" in p.stderr
    # ... but unbound they do: x = 1/1, then 1/3.
    db = sqlite3.connect(res / "rooftop.db")
    cfg = json.loads(db.execute("SELECT config FROM runs WHERE id=?", (run,)).fetchone()[0])
    cfg["binding"] = "none"
    db.execute("UPDATE runs SET config=? WHERE id=?", (json.dumps(cfg), run))
    db.commit()
    db.close()
    for cpn in (1, 3):
        rooftop(
            "validate",
            run,
            "--clients-per-node",
            str(cpn),
            "--duration",
            "0.3",
            "--warmup",
            "0.1",
            "--windows",
            "2",
            "--results",
            str(res),
        )
    rows = [r for r in samples(res, run) if r["stage"] == "validate"]
    assert len(rows) == 4 and all(r["status"] == "ok" for r in rows), rows
    xs = sorted({r["x"] for r in rows})
    assert xs == pytest.approx([1 / 3, 1.0])
    for r in rows:
        assert r["x"] == pytest.approx(r["server_procs"] / r["client_procs"])
        assert r["per_client"] == pytest.approx(r["aggregate"] / r["client_procs"])
    # The 3 clients of a sample start on one barrier release, and the row
    # records their start skew and the share of the window they shared.
    for r in rows:
        if r["client_procs"] == 1:  # a lone client starts without the barrier: nobody to wait for
            (doc,) = [json.loads((Path(r["raw_dir"]) / "client-0.json").read_text())]
            assert doc["result"]["barrier"] == {"clients": 0} and r["barrier_s"] == 0.0
        if r["client_procs"] == 3:
            docs = [json.loads((Path(r["raw_dir"]) / f"client-{i}.json").read_text()) for i in range(3)]
            starts = [d["result"]["measure_start_s"] for d in docs]
            assert {d["result"]["barrier"]["clients"] for d in docs} == {3}
            assert len({d["result"]["barrier"]["id"] for d in docs}) == 1
            assert r["skew_s"] == pytest.approx(max(starts) - min(starts), abs=1e-6)
            assert r["overlap"] == pytest.approx(1 - r["skew_s"] / 0.3, abs=1e-6)
            assert r["measured_s"] == pytest.approx(0.3 - r["skew_s"], abs=1e-6)
    # Re-running validate adds nothing: every grid point is already stored.
    rooftop(
        "validate",
        run,
        "--clients-per-node",
        "3",
        "--duration",
        "0.3",
        "--warmup",
        "0.1",
        "--windows",
        "2",
        "--results",
        str(res),
    )
    assert len([r for r in samples(res, run) if r["stage"] == "validate"]) == 4


def test_ctrl_c_then_resume(tmp_path):
    res = tmp_path / "res"
    args = [
        sys.executable,
        "-m",
        "rooftop",
        "collect",
        "--metrics",
        "rpc,bw",
        "--duration",
        "0.5",
        "--warmup",
        "0.1",
        "--windows",
        "3",
        "--results",
        str(res),
    ]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    db_path = res / "rooftop.db"
    deadline = time.monotonic() + 120
    while True:  # interrupt once some, not all, samples are stored
        assert time.monotonic() < deadline and p.poll() is None
        if db_path.exists():
            try:
                n = sqlite3.connect(db_path).execute("SELECT COUNT(*) FROM samples").fetchone()[0]
            except sqlite3.OperationalError:
                n = 0
            if n >= 3:
                break
        time.sleep(0.05)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert "--resume" in err
    db = sqlite3.connect(db_path)
    run, status = db.execute("SELECT id, status FROM runs").fetchone()
    before = db.execute("SELECT COUNT(*) FROM samples WHERE status='ok'").fetchone()[0]
    db.close()
    assert status == "interrupted" and 3 <= before < 6
    time.sleep(0.5)
    assert not engine_processes(str(res)), "engine processes left behind"
    rooftop("collect", "--resume", run, "--results", str(res))
    rows = samples(res, run)
    keys = [r["key"] for r in rows]
    # (server, client peak, client node: one placement on 2 nodes) x 2 metrics x 3
    assert len(keys) == len(set(keys)) == 6
    assert all(k.startswith("server_peak+client_peak+client_node/") for k in keys)
    assert all(r["status"] == "ok" for r in rows)
    db = sqlite3.connect(db_path)
    assert db.execute("SELECT status FROM runs WHERE id=?", (run,)).fetchone()[0] == "complete"
    assert not engine_processes(str(res))


def test_failing_engine_is_recorded_and_campaign_continues(tmp_path):
    real = rooftop("engine", "version").stdout  # the engine works
    assert real
    from rooftop.engine.base import engine_path

    wrapper = tmp_path / "engine.sh"
    wrapper.write_text(f"""#!/bin/sh
# Fails every bulk-read client the way the engine does, passes the rest.
for a in "$@"; do [ "$a" = read ] && exec {engine_path()} "$@" --size 0; done
exec {engine_path()} "$@"
""")
    wrapper.chmod(0o755)
    res = tmp_path / "res"
    # A wrapper per engine process: each launched on its own (node agents
    # fork their engines: engine.path would wrap the agents).
    launch = ["--set", "engine.launch=per-placement"]
    p = rooftop(
        "collect",
        *launch,
        "--set",
        f"engine.path={wrapper}",
        "--set",
        "collect.client_peak=false",
        "--set",
        "collect.client_node=false",
        "--duration",
        "0.3",
        "--warmup",
        "0.1",
        "--windows",
        "2",
        "--results",
        str(res),
        check=False,
    )
    assert p.returncode == 1, p.stderr
    run = p.stdout.strip().splitlines()[-1]
    rows = samples(res, run)
    bw = [r for r in rows if r["metric"] == "bw"]
    rpc = [r for r in rows if r["metric"] == "rpc"]
    assert len(rpc) == 2 and all(r["status"] == "ok" for r in rpc)
    assert len(bw) == 2 and all(r["status"] == "failed" for r in bw)
    assert all("--size must be at least 1 byte" in r["error"] for r in bw)  # the engine's own words
    # --fail-fast stops at the first failure.
    p = rooftop(
        "collect",
        *launch,
        "--set",
        f"engine.path={wrapper}",
        "--set",
        "collect.client_peak=false",
        "--set",
        "collect.client_node=false",
        "--metrics",
        "bw,rpc",
        "--duration",
        "0.3",
        "--warmup",
        "0.1",
        "--windows",
        "1",
        "--results",
        str(res),
        "--fail-fast",
        check=False,
    )
    assert p.returncode == 1 and "fail-fast" in p.stderr
    run2 = p.stdout.strip().splitlines()[-1]
    assert [r["metric"] for r in samples(res, run2)] == ["bw"]


def test_runs_and_export(tmp_path):
    res = tmp_path / "res"
    run = (
        rooftop(
            "collect",
            "--metrics",
            "rpc",
            "--duration",
            "0.3",
            "--warmup",
            "0.1",
            "--windows",
            "1",
            "--results",
            str(res),
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    listed = json.loads(rooftop("runs", "--json", "--results", str(res)).stdout)
    assert [r["id"] for r in listed] == [run] and listed[0]["status"] == "complete"
    # One sample: server peak, client peak and client node are one placement here.
    assert listed[0]["samples"] == 1 and 0 <= listed[0]["overhead"] < 1
    csv_text = rooftop("export", run, "--format", "csv", "--results", str(res)).stdout
    lines = csv_text.strip().splitlines()
    assert lines[0].startswith("id,run_id,key,stage,metric,unit") and len(lines) == 2
    assert "ceilings" in lines[0].strip().split(",")
    doc = json.loads(rooftop("export", run, "--format", "json", "--results", str(res)).stdout)
    assert doc["run"] == run and len(doc["samples"]) == 1 and doc["config"]["metrics"] == ["rpc"]
    assert doc["samples"][0]["ceilings"] == ["server_peak", "client_peak", "client_node"]
    p = rooftop("export", "nope", "--results", str(res), check=False)
    assert p.returncode == 2 and "no run 'nope'" in p.stderr and run in p.stderr


def test_dry_run_prints_commands_and_runs_nothing(tmp_path):
    res = tmp_path / "res"
    p = rooftop("collect", "--dry-run", "--results", str(res), "--windows", "3")
    lines = p.stdout.splitlines()
    serve = [l for l in lines if " serve " in l]
    load = [l for l in lines if " load " in l]
    assert serve and load
    assert all("--cpus" in l and "--token" in l for l in serve)
    assert any("--op noop" in l and "--windows 3" in l for l in load)
    assert any("--op read" in l and "--size 4MiB" in l for l in load)
    assert not (res / "rooftop.db").exists() or not samples(res, "x")
    assert not engine_processes(str(res))


def test_server_sweep(tmp_path):
    res = tmp_path / "res"
    run = (
        rooftop(
            "collect",
            "--metrics",
            "rpc",
            "--sweep-servers",
            "--binding",
            "none",
            "--set",
            "collect.servers_per_node=3",
            "--set",
            "collect.server_peak=false",
            "--set",
            "collect.client_peak=false",
            "--set",
            "collect.client_node=false",
            "--duration",
            "0.3",
            "--warmup",
            "0.1",
            "--windows",
            "1",
            "--results",
            str(res),
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    rows = samples(res, run)
    assert [r["server_procs"] for r in rows] == [1, 2, 3]
    assert all(r["stage"] == "sweep_servers" and r["status"] == "ok" for r in rows)
    assert all(r["x"] == pytest.approx(r["server_procs"] / r["client_procs"]) for r in rows)


def test_a_late_client_is_recorded_and_warned_about(tmp_path):
    # Started on the clock (not the barrier), with no lead time and no
    # warmup: every client is late by its own start-up.
    res = tmp_path / "res"
    run = (
        rooftop(
            "collect",
            "--metrics",
            "rpc",
            "--set",
            "collect.client_peak=false",
            "--set",
            "collect.client_node=false",
            "--set",
            "engine.start_lead=0",
            "--set",
            "engine.start=clock",
            "--warmup",
            "0",
            "--duration",
            "0.5",
            "--windows",
            "1",
            "--results",
            str(res),
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    (row,) = samples(res, run)
    doc = json.loads((Path(row["raw_dir"]) / "client-0.json").read_text())
    assert row["status"] == "ok" and row["late_s"] == doc["result"]["measure_at_late_s"] > 0
    from rooftop import results
    from rooftop.store.db import Store

    warnings = results.load(Store(res), run).warnings
    assert any("start measuring late" in w and "engine.start_lead" in w for w in warnings), warnings
