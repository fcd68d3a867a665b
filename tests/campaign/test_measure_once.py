"""Ceiling stages that run the same placement are measured once, and the
stored samples say every ceiling they stand for (issue 10, item 7)."""

from __future__ import annotations

import json
import os
import sqlite3

import pytest
from campaign_util import engine_processes, rooftop, samples

from rooftop.campaign import plan_collect
from rooftop.config.files import up_to_date
from rooftop.store.db import Store
from rooftop.store.records import stands_for
from synthetic import sample_row


def _cfg(n, spn=1, cpn=1, pairs="serial", **stages):
    c = {
        "server_peak": True,
        "client_peak": True,
        "client_node": True,
        "sweep_servers": False,
        "pairs": pairs,
        "windows": 3,
        "duration": 1.0,
        "warmup": 0.5,
        "servers_per_node": spn,
        "clients_per_node": cpn,
    }
    c.update(stages)
    # every other key at its default, as a resolved config has it
    return up_to_date({"nodes": [{"index": i} for i in range(n)], "metrics": ["rpc", "bw"], "collect": c})


def _keys(placements):
    return sorted(k for g in placements for k in g.keys())


@pytest.mark.parametrize("pairs", ["serial", "rounds"])
def test_two_nodes_of_one_core_plan_one_measurement_for_three_stages(pairs):
    placements = plan_collect(_cfg(2, pairs=pairs))
    # One group (one server on n0), one measurement of 3 windows per metric, no other.
    assert len(placements) == 1 and placements[0].server_nodes == [0] and placements[0].servers_per_node == 1
    measured = placements[0].measurements
    assert [(m.metric, m.windows) for m in measured] == [("rpc", range(3)), ("bw", range(3))]
    for s in measured:
        assert (s.stage, s.also) == ("server_peak", ("client_peak", "client_node"))
        assert s.client_nodes == [1] and s.clients_per_node == 1
    assert _keys(placements) == sorted(
        f"server_peak+client_peak+client_node/{m}/s0x1/c1x1/{i}" for m in ("rpc", "bw") for i in range(3)
    )


def test_more_cores_per_node_share_only_what_is_the_same():
    # 2 nodes of 4 cores: server peak and client node are both 4 servers on
    # n0 against 4 clients on n1; the lone pair is 1 against 1, its own.
    placements = plan_collect(_cfg(2, spn=4, cpn=4))
    keys = _keys(placements)
    assert [k for k in keys if k.startswith("server_peak")] == sorted(
        f"server_peak+client_node/{m}/s0x4/c1x4/{i}" for m in ("rpc", "bw") for i in range(3)
    )
    assert len([k for k in keys if k.startswith("client_peak/")]) == 6 and len(keys) == 12


def test_three_nodes_measure_every_stage_apart():
    keys = _keys(plan_collect(_cfg(3)))
    assert not [k for k in keys if "+" in k.split("/")[0]]
    assert {k.split("/")[0] for k in keys} == {"server_peak", "client_peak", "client_node"}


def test_without_server_peak_the_pair_stands_for_the_node_stage():
    for pairs in ("serial", "rounds"):
        placements = plan_collect(_cfg(2, pairs=pairs, server_peak=False))
        assert _keys(placements) == sorted(
            f"client_peak+client_node/{m}/s0x1/c1x1/{i}" for m in ("rpc", "bw") for i in range(3)
        )


def test_store_derives_the_ceilings_from_the_key_and_migrates_old_databases(tmp_path):
    st = Store(tmp_path)
    run = st.new_run({}, {})
    st.add_sample(**sample_row(run, "server_peak+client_peak/rpc/s0x1/c1x1/0"))
    st.add_sample(**sample_row(run, "server_peak/rpc/s0x1/c1x1/1", window=1))
    a, b = st.samples(run)
    assert stands_for(a) == ["server_peak", "client_peak"] and stands_for(b) == ["server_peak"]
    st.close()
    # A database from before the column: rows stand for their own stage.
    db = sqlite3.connect(tmp_path / "rooftop.db")
    db.execute("ALTER TABLE samples DROP COLUMN ceilings")
    db.execute("PRAGMA user_version = 2")  # as written before store migration 3 (ceilings)
    db.commit()
    db.close()
    st = Store(tmp_path)
    assert [stands_for(r) for r in st.samples(run)] == [["server_peak"], ["server_peak"]]


def test_a_real_collect_on_two_nodes_measures_the_shared_placement_once(tmp_path):
    res = tmp_path / "res"
    p = rooftop(
        "collect",
        "--nodes",
        "2",
        "--metrics",
        "rpc",
        "--duration",
        "0.3",
        "--windows",
        "3",
        "--warmup",
        "0.1",
        "--results",
        str(res),
    )
    run = p.stdout.strip().splitlines()[-1]
    rows = samples(res, run)
    assert len(rows) == 3 and all(r["status"] == "ok" for r in rows), rows
    for r in rows:
        assert r["stage"] == "server_peak"
        assert json.loads(r["ceilings"]) == ["server_peak", "client_peak", "client_node"]
        assert (json.loads(r["server_nodes"]), json.loads(r["client_nodes"])) == ([0], [1])
    # One client round: the three samples are windows of one set of processes.
    assert len({r["raw_dir"] for r in rows}) == 1
    # The summary says the stages are one measurement.
    assert "measured once" in p.stderr
    assert not engine_processes(str(res))


# --- what a run can tell, said first (issue 30, item 5) ----------------------------
def test_the_separable_line_says_whether_the_ridge_can_be_located():
    from rooftop.campaign import separable

    two = _cfg(2)
    two["launcher"] = {"type": "local"}
    two["nodes"] = [{"index": i, "cores": [i]} for i in range(2)]
    line = separable.line(two, plan_collect(two))
    assert line.startswith("rooftop collect: 2 logical nodes of 1 core each (this machine's cores split)")
    assert "cannot locate the ridge: the client and server ceilings are one measurement here" in line
    assert "collect on 3 or more nodes or on the emulated cluster" in line
    three = _cfg(3)
    three["launcher"] = {"type": "srun"}
    assert separable.one_measurement(plan_collect(three)) == []
    assert separable.line(three, plan_collect(three)) == (
        "rooftop collect: 3 nodes (srun launcher), metrics rpc, bw: client and server ceilings are "
        "separate measurements, so the ridge can be located"
    )
    # 2 nodes of 4 cores: server peak and client node are one measurement, the lone pair its own.
    wide = _cfg(2, spn=4, cpn=4)
    wide["launcher"] = {"type": "local"}
    assert separable.one_measurement(plan_collect(wide)) == []


def test_the_local_launcher_makes_3_nodes_where_the_cores_allow():
    from rooftop.launchers.local import LocalLauncher

    assert [n.cores for n in LocalLauncher(cores=[0, 1]).nodes()] == [(0,), (1,)]
    assert [n.cores for n in LocalLauncher(cores=[0, 1, 2]).nodes()] == [(0,), (1,), (2,)]
    assert [n.cores for n in LocalLauncher(cores=list(range(7))).nodes()] == [(0, 1), (2, 3), (4, 5)]


def test_collect_says_first_what_it_can_tell(tmp_path):
    """Before anything is measured (here a dry run: nothing is), the first
    line on stderr; the plan itself stays on stdout."""
    p = rooftop("collect", "--dry-run", "--results", str(tmp_path), "--set", "launcher.nodes=2")
    first = p.stderr.splitlines()[0]
    assert first.startswith("rooftop collect: 2 logical nodes of ") and "the ridge" in first
    if len(os.sched_getaffinity(0)) == 2:  # 1 core each: one measurement for every ceiling
        assert "of 1 core each" in first and "cannot locate the ridge" in first
    assert "rooftop collect:" not in p.stdout
    # The plan: the node agents (engine.launch = agents, the default), then the placements.
    assert p.stdout.startswith("# engine.launch = agents") and "\n# servers on node(s) [0]" in p.stdout
