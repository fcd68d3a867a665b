"""Campaigns on the emulated cluster (root): collect + validate end to end,
and the ground truth -- every link shaped to R, so rooftop's bandwidth
ceilings must say R, as iperf3 does over the same links.

One 3-node cluster for the module, links at R = 200 Mbit/s: low enough that
2 shared cores saturate it (nodes 0 and 2 share a core)."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
from campaign_util import counting_engine, execs, samples
from cluster_util import needs_root, rooftop
from slurm_util import check_engines_on_their_nodes

pytestmark = needs_root

R_BITS = 200_000_000
R = R_BITS / 8  # bytes/s
# What TCP carries of R: tbf counts whole frames (1514 bytes with the
# Ethernet header) and a segment carries 1448 (timestamps on).
GOODPUT = R * 1448 / 1514


@pytest.fixture(scope="module")
def netns_run(cluster3, tmp_path_factory):
    """One rpc+bw campaign on the cluster, validated: (results folder, run id)."""
    res = tmp_path_factory.mktemp("netns") / "res"
    p = rooftop(
        "collect",
        "--launcher",
        "netns",
        "--metrics",
        "rpc,bw",
        "--duration",
        "1",
        "--warmup",
        "0.3",
        "--windows",
        "2",
        "--results",
        str(res),
    )
    run = p.stdout.strip().splitlines()[-1]
    rooftop("validate", run, "--results", str(res), "--duration", "1", "--warmup", "0.3", "--windows", "1")
    return res, run


def test_collect_and_validate_end_to_end(netns_run):
    res, run = netns_run
    rows = samples(res, run)
    assert rows and all(r["status"] == "ok" for r in rows), [r["error"] for r in rows if r["error"]]
    assert {r["stage"] for r in rows} >= {"server_peak", "client_peak", "validate"}
    # Bulk reads out of one server node share its link: several clients,
    # measured over common windows, never add up to more than R.
    one_server_node = [r for r in rows if r["metric"] == "bw" and len(json.loads(r["server_nodes"])) == 1]
    assert any(r["client_procs"] > 1 for r in one_server_node)
    assert all(r["aggregate"] <= 1.02 * R for r in one_server_node), [
        (r["key"], r["aggregate"] / 1e6) for r in one_server_node
    ]

    # Nodes 0 and 2 share a core: no ceiling comes from a placement that puts
    # two processes on it (the pair 0-2, here), and the model says which.
    model = json.loads(rooftop("model", run, "--results", str(res), "--json").stdout)
    for m in model["metrics"]:
        excluded = m["core_shared"]["excluded"]
        assert any(e["stage"] == "client_peak" and "/s0x1/c2x1/" in e["key"] for e in excluded), excluded
        assert all({0, 2} <= key_nodes(e["key"]) for e in excluded), excluded
        assert m["client"]["samples"] == 4, m["client"]  # pairs 0-1 and 1-2, 2 samples each

    cfg = json.loads((res / run / "config.json").read_text())
    assert cfg["launcher"]["type"] == "netns"
    assert [(n["host"], n["address"]) for n in cfg["nodes"]] == [
        ("rooftop-n0", "10.231.0.10"),
        ("rooftop-n1", "10.231.0.11"),
        ("rooftop-n2", "10.231.0.12"),
    ]
    assert all(n["emulation"]["link_rate_bits"] == R_BITS for n in cfg["nodes"])

    # engine documents: servers serve on their node's address, clients use their node's veth
    addr = {f"rooftop-p{i}": f"10.231.0.{10 + i}" for i in range(3)}
    docs = [json.loads(f.read_text()) for f in (res / run).rglob("*.json") if f.name != "config.json"]
    servers = [d for d in docs if d.get("role") == "server"]
    clients = [d for d in docs if d.get("role") == "client"]
    assert servers and clients
    for d in servers + clients:
        eng = d["engine"]
        assert eng["domain"] in addr, eng
        assert f"//{addr[eng['domain']]}:" in eng["local_address"], eng
    assert {d["engine"]["domain"] for d in servers} >= {"rooftop-p0", "rooftop-p1"}
    assert {d["engine"]["domain"] for d in clients} >= {"rooftop-p1", "rooftop-p2"}


def key_nodes(key: str) -> set[int]:
    """The nodes of a sample key 'stage/metric/s0-1x2/c2x1/i'."""
    s, c = key.split("/")[2:4]
    return {int(n) for part in (s[1:], c[1:]) for n in part.split("x")[0].split("-")}


def live(marker: str) -> list[str]:
    """Command lines of live (not zombie) processes naming marker."""
    out = []
    for d in Path("/proc").iterdir():
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker in cmd and state != "Z":
            out.append(cmd)
    return out


@pytest.mark.skipif(
    any(shutil.which(p) is None for p in ("redis-server", "redis-benchmark", "memcached", "memcaslap")),
    reason="needs redis-server, redis-tools, memcached, libmemcached-tools (scripts/setup.sh --test)",
)
def test_service_presets_on_the_cluster(netns_run):
    """rooftop service on the nodes: servers bound to their node's address,
    clients in their own nodes' namespaces; points whose nodes share a core
    are left out of the efficiencies, the others are in (0, 1.05]."""
    res, run = netns_run
    dry = rooftop("service", run, "--preset", "redis", "--results", str(res), "--dry-run").stdout
    # every process's own command, filled in: the server on node 0's address, the client aimed at it
    assert "server rank 0 on node 0: redis-server --bind 10.231.0.10 --port 16379 " in dry, dry
    assert "client rank 0 on node 1: redis-benchmark -h 10.231.0.10 -p 16379 -c 1 -P 1 " in dry, dry
    assert "ip netns exec rooftop-n1" in dry
    for preset in ("redis", "memcached"):
        out = json.loads(rooftop("service", run, "--preset", preset, "--results", str(res), "--json").stdout)
        assert out["ok"] == 6 and out["failed"] == out["invalid"] == 0, out  # 3 placements x 2 samples
        assert not live("redis-server --bind 10.231.") and not live("memcached -u")
    assert (res / run / "service" / "redis" / "s0x1" / "server-0" / "redis.log").exists()
    model = json.loads(rooftop("model", run, "--results", str(res), "--json").stdout)
    verdict = {m["metric"]: m["verdict"]["kind"] for m in model["metrics"]}
    services = {s["service"]: s for s in model["services"]}
    assert set(services) == {"redis", "memcached"}
    for name, s in services.items():
        print(s["headline"], [p["efficiency"] for p in s["placements"]])
        # 1 server on n0, 1 client on n1 is the one placement whose nodes share no core
        assert [(p["server_procs"], p["client_procs"]) for p in s["placements"]] == [(1, 1)], (name, s)
        assert len(s["left_out"]) == 4 and all("share" in x["why"] for x in s["left_out"]), (name, s["left_out"])
        if verdict[s["metric"]] == "cannot_tell":
            # Nodes 0 and 2 share a core, so the server ceiling comes only from
            # samples the model may not use: no efficiency is quoted against
            # ceilings the verdict does not stand behind (issue 43), and it says why.
            assert all(p["efficiency"] is None for p in s["placements"]), (name, s["placements"])
            assert s["efficiency"]["overall"] is None and s["efficiency"]["not_quoted"], (name, s["efficiency"])
        else:
            assert all(0 < p["efficiency"] <= 1.05 for p in s["placements"] if p["quoted"]), (name, s["placements"])


def iperf3(server_ns: str, server_addr: str, client_ns: str, seconds: float = 2) -> float:
    """Bytes/s from server to client (-R: the direction of a bulk read)."""
    port = "5299"
    srv = subprocess.Popen(
        ["ip", "netns", "exec", server_ns, "iperf3", "-s", "-1", "-p", port, "-B", server_addr],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):  # wait until it listens
            ss = subprocess.run(
                ["ip", "netns", "exec", server_ns, "ss", "-ltn"], capture_output=True, text=True, timeout=10
            ).stdout
            if f":{port}" in ss:
                break
            time.sleep(0.05)
        p = subprocess.run(
            ["ip", "netns", "exec", client_ns, "iperf3", "-c", server_addr, "-p", port, "-R", "-t", str(seconds), "-J"],
            capture_output=True,
            text=True,
            timeout=seconds + 30,
        )
        assert p.returncode == 0, p.stdout[-500:] + p.stderr
        return json.loads(p.stdout)["end"]["sum_received"]["bits_per_second"] / 8
    finally:
        srv.kill()
        srv.wait(timeout=10)


@pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 is not installed (apt-get install iperf3)")
def test_ground_truth_bandwidth_is_the_link_rate(cluster3, tmp_path):
    ref = iperf3("rooftop-n0", "10.231.0.10", "rooftop-n1")
    # 1 MiB reads: about 24 per second at R, so 2 s windows hold ~48 of them (sequential
    # reads of 256 KiB and less stall over a shaped TCP link and get 50-85 % of R; see
    # docs/emulated-cluster.md)
    res = tmp_path / "res"
    p = rooftop(
        "collect",
        "--launcher",
        "netns",
        "--metrics",
        "bw",
        "--set",
        "bw.size=1MiB",
        "--duration",
        "2",
        "--warmup",
        "0.5",
        "--windows",
        "2",
        "--set",
        "collect.client_node=false",
        "--results",
        str(res),
    )
    run = p.stdout.strip().splitlines()[-1]
    rows = [r for r in samples(res, run) if r["status"] == "ok"]
    client = statistics.median(r["per_client"] for r in rows if r["stage"] == "client_peak")
    server = [r for r in rows if r["stage"] == "server_peak"]
    # node 0's link carries every client's data: server ceiling x server processes = R
    node0 = statistics.median(r["per_server"] * r["server_procs"] for r in server)
    report = (
        f"R {R / 1e6:.1f} MB/s (TCP goodput {GOODPUT / 1e6:.1f}), iperf3 {ref / 1e6:.1f}, client ceiling {client / 1e6:.1f}, "
        f"server node aggregate {node0 / 1e6:.1f}"
    )
    print(report)
    # iperf3 itself (quiet machine: 23.6 MB/s, 99 % of the goodput; CI, loaded: 22.5, 94 %)
    assert abs(ref - GOODPUT) <= 0.10 * GOODPUT, report
    assert abs(client - R) <= 0.10 * R, report
    assert abs(client - ref) <= 0.10 * ref, report
    assert abs(node0 - R) <= 0.10 * R, report
    # A physical limit is never exceeded: no sample's aggregate through one
    # link is above R (2 % for the shaper's burst), whether one client or
    # several clients measured the same, common windows.
    over = [(r["key"], r["aggregate"] / 1e6) for r in rows if r["aggregate"] > 1.02 * R]
    assert not over, (report, over)


def test_agents_one_per_node_in_its_namespace(cluster3, tmp_path):
    """engine.launch = agents on the emulated cluster: an agent per node,
    in the node's namespace and cgroups (its forked servers and clients
    serve and load on the node's address), and no other engine launch."""
    wrapper, log = counting_engine(tmp_path)
    res = tmp_path / "res"
    p = rooftop(
        "collect",
        "--launcher",
        "netns",
        "--metrics",
        "rpc",
        "--duration",
        "0.3",
        "--warmup",
        "0.1",
        "--windows",
        "2",
        "--set",
        "engine.launch=agents",
        "--results",
        str(res),
        env=dict(os.environ, ROOFTOP_ENGINE=str(wrapper)),
    )
    run = p.stdout.strip().splitlines()[-1]
    rows = samples(res, run)
    assert rows and all(r["status"] == "ok" for r in rows), [r["error"] for r in rows if r["error"]]
    assert execs(log) == Counter({"agent": 3, "version": 1}), execs(log)
    assert check_engines_on_their_nodes(res / run) >= 6
    docs = [json.loads(f.read_text()) for f in sorted((res / run).glob("agents/*/node-*/agent.json"))]
    assert [d["environment"]["cpuset"] for d in docs] == ["0", "1", "0"]  # each node's cgroup
    assert all(d["result"]["started"] > 0 and "asked it to stop" in d["result"]["stop_reason"] for d in docs), docs
    assert not any(d["result"]["ran_again"] for d in docs), docs  # `ip netns exec` kept the room given
    assert not live(str(res))
