"""Emulated nodes with several NICs (issue 14, items 4 and 5): 'cluster up
--nics-per-node 4' builds one rail per NIC, and the NIC policies do what
they claim on it. Ground truth: 2 nodes with 4 NICs each at rate R; unbound
clients (every one on the node's whole cpuset) under all:byset all take the
same NIC and get about R together, under all:roundrobin they spread over the
4 NICs and get about 4 R (within 10 %); the engine documents name the NICs
used. Servers spread over their NICs in both (nic.server_policy), so only
the clients' policy differs."""

from __future__ import annotations

import json
import subprocess

from campaign_util import samples
from cluster_util import cluster, cluster_up, needs_root, rooftop, status_json

pytestmark = needs_root

RATE_MBIT = 40
NICS = 4


def run_json(argv):
    out = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=True).stdout
    return json.loads(out) if out.strip() else []


def nic_name(i: int, k: int) -> str:
    return f"rooftop-p{i}" + (f"r{k}" if k else "")


def check_rails(st: dict) -> None:
    """Every node has its 4 NICs, NIC k on rail k, each shaped to R both ways,
    and a rule sending what comes from NIC k's address out of NIC k."""
    assert st["up"] and not st["problems"], st["problems"]
    assert [r["bridge"] for r in st["rails"]] == [f"rooftop-br{k}" for k in range(NICS)]
    for n in st["nodes"]:
        i = n["index"]
        assert [x["name"] for x in n["nics"]] == [nic_name(i, k) for k in range(NICS)]
        assert [x["address"] for x in n["nics"]] == [f"10.231.{k}.{10 + i}" for k in range(NICS)]
        for x in n["live"]["nics"]:
            assert x["send_rate_bits"] == x["receive_rate_bits"] == RATE_MBIT * 10**6
        for k in range(NICS):
            master = run_json(["ip", "-j", "link", "show", "dev", n["nics"][k]["peer"]])[0]["master"]
            assert master == f"rooftop-br{k}"
            other = f"10.231.3.{10 + 1 - i}"  # the other node's NIC on rail 3
            route = run_json(["ip", "-j", "-n", n["netns"], "route", "get", other, "from", f"10.231.{k}.{10 + i}"])[0]
            assert route["dev"] == nic_name(i, k)


def measure(policy: str, res) -> tuple[list[dict], set[str]]:
    """Server peak of 4 servers (node 0) and 8 unbound clients (node 1)
    under the clients' policy: the samples, and the NICs the clients used."""
    p = rooftop(
        "collect",
        "--launcher",
        "netns",
        "--metrics",
        "bw",
        "--binding",
        "none",
        "--nic-policy",
        policy,
        "--set",
        "nic.server_policy=all:roundrobin",
        "--set",
        "bw.size=1MiB",
        "--set",
        "bw.stream_size=64MiB",
        # 12 processes on 2 cores: they wait for completions instead of polling
        "--set",
        "engine.client_progress=block",
        "--set",
        "engine.server_progress=block",
        "--set",
        "collect.servers_per_node=4",
        "--set",
        "collect.clients_per_node=8",
        "--set",
        "collect.client_peak=false",
        "--set",
        "collect.client_node=false",
        "--duration",
        "3",
        "--warmup",
        "0.5",
        "--windows",
        "2",
        "--results",
        str(res),
        timeout=300,
    )
    run = p.stdout.strip().splitlines()[-1]
    rows = samples(res, run)
    used = set()
    for doc in (res / run).rglob("client-*.json"):
        engine = json.loads(doc.read_text())["engine"]
        assert engine["nic_policy"]["policy"] == policy
        assert [c["name"] for c in engine["nic_policy"]["candidates"]] == [nic_name(1, k) for k in range(NICS)]
        used.add(engine["nic_policy"]["chosen"]["name"])
        assert engine["interface"] == engine["nic_policy"]["chosen"]["name"]
    servers = set()
    for doc in (res / run).rglob("server-*.json"):
        servers.add(json.loads(doc.read_text())["engine"]["nic_policy"]["chosen"]["name"])
    assert servers == {nic_name(0, k) for k in range(NICS)}, servers
    return rows, used


def test_four_nics_carry_four_links_only_when_the_policy_spreads_clients(tmp_path):
    R = RATE_MBIT * 10**6 / 8
    with cluster_up("--nodes", "2", "--nics-per-node", str(NICS), "--link-rate", f"{RATE_MBIT}mbit"):
        check_rails(status_json())
        one, one_nics = measure("all:byset", tmp_path / "byset")
        four, four_nics = measure("all:roundrobin", tmp_path / "roundrobin")
    for rows, want in ((one, R), (four, NICS * R)):
        seen = [(r["status"], round(r["aggregate"] / R, 3), r["error"]) for r in rows]
        assert len(rows) == 2 and all(r["status"] == "ok" for r in rows), seen
        assert all(abs(r["aggregate"] / want - 1) <= 0.10 for r in rows), (want / R, seen)
    # byset: the first CPU of the node's cpuset (node 1 has core 1) mod 4 NICs
    assert one_nics == {nic_name(1, 1)}
    assert four_nics == {nic_name(1, k) for k in range(NICS)}


def test_down_removes_every_rail(tmp_path):
    with cluster_up("--nodes", "2", "--nics-per-node", "3", "--link-rate", "20mbit"):
        text = cluster("status").stdout
        assert "3 NICs each" in text and "rooftop-p1r2" in text and "10.231.2.11" in text
    links = run_json(["ip", "-j", "link", "show"])
    assert not [e["ifname"] for e in links if e["ifname"].startswith("rooftop-")]
    assert not [n for n in run_json(["ip", "-j", "netns", "list"]) if n["name"].startswith("rooftop-")]
    assert not status_json()["up"]
