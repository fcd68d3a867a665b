"""NIC policies in the engine (--nic-policy): every document records the
policy, the candidate NICs with their locality, the bucket, the chosen NIC
and why; an explicit --domain still wins; `rooftop-engine nics` shows what
each policy would do on an hwloc XML topology without opening anything."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from rooftop.engine.base import engine_path
from rooftop.engine.commands import run_engine
from rooftop.engine.servers import Group

TOPOLOGIES = Path(__file__).resolve().parents[1] / "data" / "topologies"


def engine(*args, env=None, timeout=30):
    return subprocess.run([engine_path(), *args], capture_output=True, text=True, timeout=timeout, env=env)


def other_ipv4() -> str | None:
    """An IPv4 address of an interface other than loopback that carries tcp."""
    doc = run_engine(["domains", "--fabric", "ofi+tcp"], timeout=30)
    for i in doc["result"]["interfaces"]:
        v4 = [ip for ip in i["ips"] if "." in ip]
        if i["name"] != "lo" and i["carries_provider"] and v4:
            return v4[0]
    return None


def test_a_policy_spreads_servers_over_the_addresses_given(tmp_path, cores, validate):
    ip = other_ipv4()
    if ip is None:
        pytest.skip("this host has no interface other than loopback carrying tcp")
    counters = tmp_path / "counters"
    extra = ["--address", f"127.0.0.1,{ip}", "--nic-policy", "all:roundrobin", "--nic-counters", str(counters)]
    with Group() as g:
        g.start_server(0, cpus=cores[0], extra=extra)
        g.start_server(1, cpus=cores[0], extra=extra)
        docs = [validate(d) for d in g.close()]
    used = [d["engine"]["ip"] for d in docs]
    assert used == ["127.0.0.1", ip]  # counter 0 then 1, in start order
    iface = docs[1]["engine"]["interface"]
    for k, d in enumerate(docs):
        e = d["engine"]
        nic = e["nic_policy"]
        assert nic["policy"] == "all:roundrobin" and nic["bucket"] == "all"
        assert [c["name"] for c in nic["candidates"]] == ["lo", iface]
        assert nic["chosen"]["name"] == e["domain"] == e["interface"]
        assert nic["why"] == f"roundrobin: counter of bucket all in {counters} was {k} mod 2 NICs = {k}: {e['domain']}"
        assert e["domain_choice"] == f"nic policy all:roundrobin: {nic['why']}"
    assert stat.S_IMODE(counters.stat().st_mode) == 0o700
    assert (counters / "all").read_text() == "2\n"


def test_one_candidate_is_the_choice_and_its_reason_stays(cores, validate):
    with Group() as g:
        g.start_server(0, cpus=cores[0], extra=["--nic-policy", "package:roundrobin"])
        client = validate(g.load(duration=0.2, warmup=0.1, cpus=cores[1], extra=["--nic-policy", "numa:bycore"]))
        server = validate(g.close()[0])
    e = server["engine"]
    assert e["domain"] == "lo" and e["domain_choice"].startswith("default: loopback")
    assert e["nic_policy"]["candidates"] == [{"name": "lo", "pci": None, "located": False, "packages": [], "numa": []}]
    assert e["nic_policy"]["why"] == "the only NIC of bucket package unknown: lo"
    assert e["nic_policy"]["topology"] == "none needed: no candidate has a PCI device"
    c = client["engine"]
    assert c["nic_policy"]["policy"] == "numa:bycore" and c["nic_policy"]["chosen"]["name"] == "lo"
    assert "routing to the server's address 127.0.0.1" in c["domain_choice"]


def test_shm_policy_chooses_its_one_domain(cores, validate):
    with Group(fabric="ofi+shm") as g:
        g.start_server(0, cpus=cores[0], extra=["--nic-policy", "all:random"])
        server = validate(g.close()[0])
    e = server["engine"]
    assert e["domain"] == "shm"
    assert e["domain_choice"] == "nic policy all:random: the only NIC of bucket all: shm"


def test_explicit_domain_wins_over_the_policy(cores, validate):
    with Group() as g:
        g.start_server(0, cpus=cores[0], extra=["--domain", "lo", "--nic-policy", "all:byset"])
        server = validate(g.close()[0])
    e = server["engine"]
    assert e["domain_choice"] == "given with --domain"
    assert e["nic_policy"]["policy"] == "all:byset"
    assert e["nic_policy"]["chosen"] is None and e["nic_policy"]["bucket"] is None
    assert e["nic_policy"]["why"] == "--domain lo is used whatever the policy"


def test_no_policy_is_todays_behaviour(cores, validate):
    with Group() as g:
        g.start_server(0, cpus=cores[0])
        server = validate(g.close()[0])
    e = server["engine"]
    assert e["nic_policy"]["policy"] == "passthrough" and e["nic_policy"]["candidates"] == []
    assert e["domain_choice"].startswith("default: loopback")


@pytest.mark.parametrize(
    "policy, message",
    [
        ("socket:byset", "use passthrough or BUCKET:SELECTION; buckets: all, package, numa"),
        ("all:first", "unknown selection 'first'; selections: byset, bycore, random, roundrobin, rank"),
    ],
)
def test_unknown_policy_is_refused_up_front(tmp_path, policy, message):
    for command in ("serve", "load"):
        p = engine(command, "--group-dir", str(tmp_path), "--nic-policy", policy)
        assert p.returncode == 2, p.stderr
        assert f"--nic-policy: nic policy '{policy}': {message}" in p.stderr


def test_rank_selection_needs_a_node_local_rank(tmp_path):
    ip = other_ipv4()
    if ip is None:
        pytest.skip("this host has no interface other than loopback carrying tcp")
    env = {
        k: v
        for k, v in os.environ.items()
        if k
        not in ("MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK", "PALS_LOCAL_RANKID", "SLURM_LOCALID", "PMI_LOCAL_RANK")
    }
    args = ["serve", "--group-dir", str(tmp_path), "--address", f"127.0.0.1,{ip}", "--nic-policy", "all:rank"]
    p = engine(*args, env=env)
    assert p.returncode == 2
    assert "nic policy all:rank: rank: no node-local rank" in p.stderr


def nics(*args) -> dict:
    return run_engine(["nics", *args], timeout=60)["result"]


def test_nics_shows_figure_2_on_an_aurora_like_node(validate):
    aurora = str(TOPOLOGIES / "aurora.xml")
    r = nics(
        "--fabric",
        "ofi+cxi",
        "--topology",
        aurora,
        "--processes",
        "8",
        "--policy",
        "all:byset,package:roundrobin",
        "--binding",
        "2cores,none",
    )
    assert r["cores"] == 102 and [n["name"] for n in r["nics"]] == [f"cxi{k}" for k in range(8)]
    assert r["nics"][5] == {"name": "cxi5", "pci": "0000:a9:00.0", "located": True, "packages": [1], "numa": [1]}
    got = {(a["policy"], a["binding"]): a["load"] for a in r["assignments"]}
    assert got == {
        ("all:byset", "2cores"): {"cxi1": 2, "cxi3": 2, "cxi5": 2, "cxi7": 2},
        ("all:byset", "none"): {"cxi1": 8},  # unbound: everyone on one NIC
        ("package:roundrobin", "2cores"): {"cxi0": 2, "cxi1": 2, "cxi2": 2, "cxi3": 2},
        ("package:roundrobin", "none"): {"cxi0": 2, "cxi1": 2, "cxi2": 2, "cxi3": 2},
    }
    # The IP view of the same node: its network interfaces.
    r = nics(
        "--fabric", "ofi+tcp", "--topology", aurora, "--policy", "passthrough", "--binding", "core", "--processes", "1"
    )
    assert [n["name"] for n in r["nics"]] == [f"hsn{k}" for k in range(8)]
    assert r["assignments"][0]["processes"][0]["nic"] is None


def test_nics_refuses_a_bad_topology_or_policy(tmp_path):
    p = engine("nics", "--topology", str(tmp_path / "missing.xml"))
    assert p.returncode == 2 and "--topology: topology" in p.stderr
    p = engine("nics", "--topology", str(TOPOLOGIES / "laptop.xml"), "--policy", "near:byset")
    assert p.returncode == 2 and "nic policy 'near:byset'" in p.stderr
    p = engine("nics", "--topology", str(TOPOLOGIES / "laptop.xml"), "--binding", "socket")
    assert p.returncode == 2 and "--binding socket" in p.stderr


def test_documents_from_before_nic_policies_stay_valid(validate):
    """The schema only adds engine.nic_policy: an older engine's document
    (tests/data, written before it) still validates."""
    old = next((TOPOLOGIES.parent / "results-19dee6e").glob("*/raw/*/client-0.json"))
    doc = json.loads(old.read_text())
    assert doc["engine"]["provider"] and "nic_policy" not in doc["engine"]
    validate(doc)
