"""Campaigns measure on the NIC the config asked for: a fabric.domain that
does not exist is refused before anything starts (local launcher), an
engine's own refusal on another launcher names the host, and a sample whose
processes used another interface or address fails naming rank and node."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from campaign_util import engine_processes, rooftop, samples

from rooftop.campaign import Runner, plan_collect
from rooftop.config.resolve import build
from rooftop.launchers.local import LocalLauncher
from rooftop.store.db import Store

ONE_STAGE = [
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
]


def test_collect_refuses_a_domain_that_does_not_exist(tmp_path):
    res = tmp_path / "res"
    p = rooftop("collect", *ONE_STAGE, "--set", "fabric.domain=eth99", "--results", str(res), check=False)
    assert p.returncode == 2, p.stderr
    assert "config error: fabric.domain: --domain eth99: no such network interface" in p.stderr
    assert "lo (127.0.0.1" in p.stderr  # the ones that exist
    assert not (res / "rooftop.db").exists()  # no run was even created
    assert not engine_processes(str(res))


def test_domain_lo_campaign_then_validate_refuses_a_bad_domain(tmp_path):
    res = tmp_path / "res"
    run = (
        rooftop("collect", *ONE_STAGE, "--set", "fabric.domain=lo", "--results", str(res))
        .stdout.strip()
        .splitlines()[-1]
    )
    rows = samples(res, run)
    assert rows and all(r["status"] == "ok" for r in rows), rows
    for doc in Path(rows[0]["raw_dir"]).glob("client-*.json"):
        engine = json.loads(doc.read_text())["engine"]
        assert (engine["domain"], engine["interface"], engine["ip"]) == ("lo", "lo", "127.0.0.1")
    servers = list(res.glob(f"{run}/groups/*/server-0.json"))
    assert servers and json.loads(servers[0].read_text())["engine"]["interface"] == "lo"
    # The same run with a domain this host lacks: validate refuses to start.
    db = sqlite3.connect(res / "rooftop.db")
    cfg = json.loads(db.execute("SELECT config FROM runs WHERE id=?", (run,)).fetchone()[0])
    cfg["fabric"]["domain"] = "eth99"
    db.execute("UPDATE runs SET config=? WHERE id=?", (json.dumps(cfg), run))
    db.commit()
    db.close()
    p = rooftop("validate", run, "--results", str(res), check=False)
    assert p.returncode == 2 and "fabric.domain: --domain eth99" in p.stderr
    assert not [r for r in samples(res, run) if r["stage"] == "validate"]


class AddressedLocal(LocalLauncher):
    """This machine's logical nodes, each given an address (as emulated
    cluster nodes carry theirs)."""

    def __init__(self, addresses: list[str]):
        super().__init__(len(addresses))
        self._nodes = [type(n)(n.index, n.host, n.cores, a) for n, a in zip(self._nodes, addresses)]


def _collect(tmp_path, launcher) -> list[dict]:
    cfg = build(
        None,
        {
            "metrics": ["rpc"],
            "collect.client_peak": False,
            "collect.client_node": False,
            "collect.duration": 0.3,
            "collect.warmup": 0.1,
            "collect.windows": 1,
            "results": str(tmp_path / "res"),
        },
    )
    store = Store(cfg["results"])
    run = store.new_run(cfg, {})
    Runner(cfg, store, run, launcher).run_placements(plan_collect(cfg))
    assert not engine_processes(str(tmp_path))
    return store.samples(run)


def test_sample_fails_when_a_client_did_not_use_its_node_address(tmp_path):
    # Servers on node 0 serve on 127.0.0.1; node 1's clients should use ::1
    # but reach 127.0.0.1 from 127.0.0.1: measured, yet not what was asked.
    rows = _collect(tmp_path, AddressedLocal(["127.0.0.1", "::1"]))
    assert rows and all(r["status"] == "failed" for r in rows), rows
    assert (
        "client rank 0 on node 1 (localhost) used address 127.0.0.1 (interface lo), not the node's address ::1"
    ) in rows[0]["error"]


def test_server_refusal_names_the_node_and_host(tmp_path):
    rows = _collect(tmp_path, AddressedLocal(["203.0.113.77", "127.0.0.1"]))
    assert rows and all(r["status"] == "failed" for r in rows), rows
    err = rows[0]["error"]
    assert "server rank(s) [0] on node 0 (localhost)" in err
    assert "rooftop-engine on host localhost refused its arguments (exit 2)" in err
    assert "--address 203.0.113.77: no local interface carries this address" in err


@pytest.mark.skipif(not shutil.which("mpiexec"), reason="no mpiexec (Open MPI or MPICH) installed")
def test_remote_launcher_surfaces_the_engines_refusal(tmp_path):
    # Not checked up front (the interfaces are on the hosts): the engine's
    # exit 2 on the host fails the samples with its message and the host.
    res = tmp_path / "res"
    p = rooftop(
        "collect",
        "--launcher",
        "mpiexec",
        "--set",
        'launcher.hosts=["localhost","localhost"]',
        *ONE_STAGE,
        "--set",
        "fabric.domain=eth99",
        "--results",
        str(res),
        check=False,
    )
    assert p.returncode == 1, p.stderr
    run = p.stdout.strip().splitlines()[-1]
    rows = samples(res, run)
    assert rows and all(r["status"] == "failed" for r in rows)
    assert "on host localhost refused its arguments (exit 2)" in rows[0]["error"]
    assert "--domain eth99: no such network interface" in rows[0]["error"]
    assert not engine_processes(str(res))
