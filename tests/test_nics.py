"""nic.policy and `rooftop nics`: the key is checked against the engine's
policy table (naming the key), campaigns pass each engine its policy with a
fresh round-robin counter directory per node, and `rooftop nics` prints
what every policy does on a topology without starting anything."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from rooftop.config.resolve import build
from rooftop.engine.commands import run_engine
from rooftop.keys import ConfigError
from rooftop.launchers.base import Node, pinned_argvs
from rooftop.nics import policy as nics

TOPOLOGIES = Path(__file__).resolve().parent / "data" / "topologies"


def rooftop(*args):
    return subprocess.run([sys.executable, "-m", "rooftop", *args], capture_output=True, text=True, timeout=120)


def test_default_policy_is_margos_and_resolves():
    cfg = build(overrides={"launcher.nodes": 2})
    assert cfg["nic"]["policy"] == "package:roundrobin"
    assert build(overrides={"launcher.nodes": 2, "nic.policy": "numa:rank"})["nic"]["policy"] == "numa:rank"


@pytest.mark.parametrize(
    "value, message",
    [
        (
            "socket:byset",
            "nic.policy: 'socket:byset': use passthrough or BUCKET:SELECTION; buckets: "
            "all, package, numa; selections: byset, bycore, random, roundrobin, rank",
        ),
        (
            "all:first",
            "nic.policy: 'all:first': unknown selection 'first'; selections: byset, bycore, random, roundrobin, rank",
        ),
        (
            "all:byset,package:roundrobin",
            "nic.policy: 'all:byset,package:roundrobin': one policy per "
            "run; 'rooftop collect --nic-policy A,B' measures one run per "
            "policy",
        ),
    ],
)
def test_a_bad_policy_names_the_key(value, message):
    with pytest.raises(ConfigError) as e:
        build(overrides={"launcher.nodes": 2, "nic.policy": value})
    assert str(e.value).startswith(message)


def test_python_names_are_the_engines_table():
    doc = run_engine(
        ["nics", "--topology", str(TOPOLOGIES / "laptop.xml"), "--binding", "core", "--processes", "1"], timeout=60
    )
    assert [a["policy"] for a in doc["result"]["assignments"]] == nics.policy_names()


def test_engine_args_give_each_node_a_fresh_counter_directory(tmp_path):
    cfg = {"nic": {"policy": "package:roundrobin"}, "launcher": {"type": "local"}}
    stale = tmp_path / "nic-counters" / "node-1"
    stale.mkdir(parents=True)
    (stale / "package-0").write_text("7\n")  # an earlier attempt's counter
    assert nics.engine_args(cfg, tmp_path / "nic-counters", 1) == [
        "--nic-policy",
        "package:roundrobin",
        "--nic-counters",
        str(stale),
    ]
    assert not stale.exists()  # the engine recreates it, 0700, from counter 0
    # fabric.domain wins over any policy; passthrough is the engine's default.
    assert nics.engine_args({**cfg, "fabric": {"domain": "hsn0"}}, tmp_path, 0) == []
    cfg["nic"]["policy"] = "passthrough"
    assert nics.engine_args(cfg, tmp_path, 0) == []
    assert nics.engine_args({"launcher": {"type": "local"}}, tmp_path, 0) == []  # a run from before


def test_rank_selection_gets_the_node_local_rank_from_pinned_launchers(tmp_path):
    cfg = {"nic": {"policy": "all:rank"}, "launcher": {"type": "local"}}
    argv = ["rooftop-engine", "serve", *nics.engine_args(cfg, tmp_path, 0)]
    node = Node(index=1, host="localhost", cores=(0, 1, 2, 3))
    got = pinned_argvs(node, argv, 2, "core", 4)
    assert [a[a.index("--local-rank") + 1] for _, a in got] == ["0", "1"]
    assert [r for r, _ in got] == [4, 5]
    cfg["launcher"]["type"] = "srun"  # the launcher sets SLURM_LOCALID
    assert "--local-rank" not in nics.engine_args(cfg, tmp_path, 0)


def test_validate_keeps_the_runs_policy():
    nics.same_policy({"nic": {"policy": "all:rank"}}, "all:rank", "r1")
    with pytest.raises(ConfigError, match="run r1 measures under nic.policy passthrough"):
        nics.same_policy({}, "package:roundrobin", "r1")


def test_rooftop_nics_prints_figure_2_on_an_aurora_like_node():
    p = rooftop(
        "nics",
        "--fabric",
        "ofi+cxi",
        "--topology",
        str(TOPOLOGIES / "aurora.xml"),
        "--binding",
        "2cores,none",
        "--processes",
        "8",
        "--policy",
        "all:byset,package:roundrobin",
    )
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert "  cxi4         pci 0000:98:00.0   package 1, NUMA 1" in lines
    assert "  all:byset           2cores  cxi1 x2, cxi3 x2, cxi5 x2, cxi7 x2" in lines
    assert "  all:byset           none    cxi1 x8" in lines
    assert "  package:roundrobin  none    cxi0 x2, cxi1 x2, cxi2 x2, cxi3 x2" in lines
    assert "                              per process: cxi1 cxi1 cxi1 cxi1 cxi1 cxi1 cxi1 cxi1" in lines
    js = rooftop(
        "nics", "--topology", str(TOPOLOGIES / "frontier.xml"), "--json", "--binding", "core", "--policy", "numa:byset"
    )
    result = json.loads(js.stdout)
    assert result["processes"] == 56 and result["assignments"][0]["load"] == {
        "hsn0": 14,
        "hsn1": 14,
        "hsn2": 14,
        "hsn3": 14,
    }


def test_rooftop_nics_refuses_what_the_engine_refuses(tmp_path):
    p = rooftop("nics", "--policy", "near:byset")
    assert p.returncode == 2 and "--policy: 'near:byset'" in p.stderr
    p = rooftop("nics", "--topology", str(tmp_path / "none.xml"))
    assert p.returncode == 2 and "none.xml" in p.stderr


def test_collect_passes_the_policy_to_every_engine(tmp_path):
    res = tmp_path / "res"
    p = rooftop(
        "collect",
        "--dry-run",
        "--metrics",
        "rpc",
        "--nodes",
        "2",
        "--nic-policy",
        "all:rank",
        "--set",
        "collect.client_peak=false",
        "--set",
        "collect.client_node=false",
        "--results",
        str(res),
    )
    assert p.returncode == 0, p.stderr
    engines = [l for l in p.stdout.splitlines() if " serve " in l or " load " in l]
    assert engines and all("--nic-policy all:rank --nic-counters " in l for l in engines)
    assert all("--local-rank 0 " in l for l in engines)  # one process per node here
    assert any("/groups/<group>/nic-counters/node-0" in l for l in engines if " serve " in l)
    p = rooftop("collect", "--dry-run", "--nic-policy", "all:near", "--results", str(res))
    assert p.returncode == 2 and "nic.policy: 'all:near': unknown selection 'near'" in p.stderr


def test_collect_with_several_policies_measures_one_run_each(tmp_path):
    res = tmp_path / "res"
    quick = [
        "--metrics",
        "rpc",
        "--nodes",
        "2",
        "--duration",
        "0.2",
        "--warmup",
        "0.1",
        "--windows",
        "1",
        "--set",
        "collect.client_peak=false",
        "--set",
        "collect.client_node=false",
        "--results",
        str(res),
    ]
    p = rooftop("collect", "--dry-run", "--nic-policy", "all:byset,numa:roundrobin", *quick)
    assert p.returncode == 0, p.stderr
    serve = [l for l in p.stdout.splitlines() if " serve " in l]
    assert ["--nic-policy all:byset" in l for l in serve] == [True, False]
    assert "--nic-policy numa:roundrobin" in serve[1]
    p = rooftop("collect", "--nic-policy", "all:byset,package:rank", *quick)
    assert p.returncode == 0, p.stderr
    assert "one run per NIC policy (all:byset, package:rank)" in p.stderr
    db = sqlite3.connect(res / "rooftop.db")
    runs = db.execute("SELECT id, config FROM runs ORDER BY created, rowid").fetchall()
    policies = []
    for run, cfg in runs:
        assert run in p.stdout  # each run's id is printed
        policy = json.loads(cfg)["nic"]["policy"]
        policies.append(policy)
        server = json.loads(next(res.glob(f"{run}/groups/*/server-0.json")).read_text())
        assert server["engine"]["nic_policy"]["policy"] == policy
    assert policies == ["all:byset", "package:rank"]
    p = rooftop("collect", "--nic-policy", "all:byset,all:byset", *quick)
    assert p.returncode == 2 and "names a policy twice" in p.stderr


def test_servers_follow_nic_server_policy_when_it_is_set(tmp_path):
    cfg = {"nic": {"policy": "all:byset", "server_policy": "all:roundrobin"}, "launcher": {"type": "netns"}}
    assert nics.engine_args(cfg, tmp_path, 0, "server")[:2] == ["--nic-policy", "all:roundrobin"]
    assert nics.engine_args(cfg, tmp_path, 0, "client")[:2] == ["--nic-policy", "all:byset"]
    cfg["nic"]["server_policy"] = None  # default: nic.policy for both
    assert nics.engine_args(cfg, tmp_path, 0, "server")[:2] == ["--nic-policy", "all:byset"]
