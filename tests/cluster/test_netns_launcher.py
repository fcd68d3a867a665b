"""The netns launcher's command lines, from a state file (no root needed)."""

from __future__ import annotations

import pytest
from cluster_util import rooftop

from rooftop.cluster import state
from rooftop.launchers import LauncherError, make_launcher
from rooftop.launchers.netns import NetnsLauncher

CG = "/sys/fs/cgroup"
JOIN = (
    "for f in {c}/cpu/rooftop/n{i}/cgroup.procs {c}/cpuset/rooftop/n{i}/cgroup.procs; do "
    '{{ echo $$ > "$f"; }} 2>/dev/null || {{ echo "rooftop: cannot join cgroup $f (root needed; '
    'is the cluster up?)" >&2; exit 126; }}; done; exec "$@"'
)


def fake_state(tmp_path, n=3, cores=((0,), (1,), (0,)), cpu=None):
    nodes = []
    for i in range(n):
        nodes.append(
            {
                "index": i,
                "name": f"n{i}",
                "netns": f"rooftop-n{i}",
                "address": f"10.231.0.{10 + i}",
                "prefixlen": 24,
                "veth_host": f"rooftop-v{i}",
                "veth_node": f"rooftop-p{i}",
                "cores": list(cores[i]),
                "shared_with": [j for j in range(n) if j != i and set(cores[j]) & set(cores[i])],
                "cpu_percent": cpu if i == n - 1 else None,
                "cpu_quota_us": None,
                "cpu_period_us": 100000,
                "link_rate_bits": 200_000_000,
                "cgroups": [f"{CG}/cpu/rooftop/n{i}", f"{CG}/cpuset/rooftop/n{i}"],
                "cgroup_procs": [f"{CG}/cpu/rooftop/n{i}/cgroup.procs", f"{CG}/cpuset/rooftop/n{i}/cgroup.procs"],
            }
        )
    data = {
        "version": 1,
        "created": "2025-01-01T00:00:00+00:00",
        "spec": {},
        "bridge": {"name": "rooftop-br0", "address": "10.231.0.1/24"},
        "cgroup": {"version": 1, "cpu": f"{CG}/cpu", "cpuset": f"{CG}/cpuset"},
        "machine_cores": [0, 1],
        "nodes": nodes,
    }
    p = tmp_path / "state.json"
    state.save(data, p)
    return p


def test_nodes_from_state(tmp_path):
    launcher = NetnsLauncher({"type": "netns", "nodes": None}, state_path=fake_state(tmp_path, cpu=50.0))
    nodes = launcher.nodes()
    assert [(n.index, n.host, n.cores, n.address) for n in nodes] == [
        (0, "rooftop-n0", (0,), "10.231.0.10"),
        (1, "rooftop-n1", (1,), "10.231.0.11"),
        (2, "rooftop-n2", (0,), "10.231.0.12"),
    ]
    assert nodes[2].describe()["emulation"] == {
        "netns": "rooftop-n2",
        "cpu_percent": 50.0,
        "link_rate_bits": 200_000_000,
        "shared_with": [0],
    }
    assert [n.index for n in NetnsLauncher({"nodes": 2}, state_path=fake_state(tmp_path)).nodes()] == [0, 1]
    with pytest.raises(LauncherError, match="launcher.nodes = 4 but the emulated cluster has 3 nodes"):
        NetnsLauncher({"nodes": 4}, state_path=fake_state(tmp_path))


def test_exact_argv(tmp_path):
    launcher = NetnsLauncher({"extra_args": []}, state_path=fake_state(tmp_path, cores=((0, 1),) * 3))
    node = launcher.nodes()[1]
    engine = ["/x/rooftop-engine", "serve", "--output", "/g/server-{rank}.json", "--address", node.address]
    ls = launcher.launches(node, engine, 2, "core", 4)
    assert [x.ranks for x in ls] == [[4], [5]]
    assert ls[0].argv == [
        "/bin/sh",
        "-c",
        JOIN.format(c=CG, i=1),
        "rooftop-n1",
        launcher._ip,
        "netns",
        "exec",
        "rooftop-n1",
        "/x/rooftop-engine",
        "serve",
        "--output",
        "/g/server-4.json",
        "--address",
        "10.231.0.11",
        "--rank",
        "4",
        "--cpus",
        "0",
    ]
    assert ls[1].argv[-4:] == ["--rank", "5", "--cpus", "1"]
    # unbound: each process gets all of its node's cores; extra_args go before the engine
    launcher = NetnsLauncher({"extra_args": ["nice", "-n", "0"]}, state_path=fake_state(tmp_path, cores=((0, 1),) * 3))
    (one,) = launcher.launches(launcher.nodes()[0], ["/x/e", "load"], 1, "none", 0)
    assert one.argv[4:] == [
        launcher._ip,
        "netns",
        "exec",
        "rooftop-n0",
        "nice",
        "-n",
        "0",
        "/x/e",
        "load",
        "--rank",
        "0",
        "--cpus",
        "0,1",
    ]
    with pytest.raises(LauncherError, match="has 2 usable cores: 3 processes"):
        launcher.launches(launcher.nodes()[0], ["/x/e", "load"], 3, "core", 0)


def test_keys_of_other_launchers_are_refused(tmp_path):
    with pytest.raises(LauncherError, match="launcher.hosts does not apply to the netns launcher"):
        NetnsLauncher({"hosts": ["a", "b"]}, state_path=fake_state(tmp_path))


def test_no_cluster(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFTOP_CLUSTER_STATE", str(tmp_path / "none.json"))
    with pytest.raises(
        LauncherError,
        match=r"no emulated cluster is up .*run 'rooftop cluster up "
        r"--nodes N' first \(as root\)",
    ):
        make_launcher({"type": "netns", "nodes": None})
    env = {**__import__("os").environ, "ROOFTOP_CLUSTER_STATE": str(tmp_path / "none.json")}
    p = rooftop("collect", "--launcher", "netns", "--dry-run", "--results", str(tmp_path / "r"), env=env, check=False)
    assert p.returncode == 3  # unreachable: no emulated cluster up (rooftop.exits)
    assert "run 'rooftop cluster up --nodes N' first (as root)" in p.stderr


def test_multi_nic_nodes_serve_on_every_nic_and_count_every_link(tmp_path):
    from rooftop.campaign import limits
    from rooftop.nics.check import mismatch

    p = fake_state(tmp_path, n=2, cores=((0, 1), (0, 1)))
    st = state.load(p)
    for n in st["nodes"]:
        n["nics"] = [
            {
                "rail": k,
                "name": f"rooftop-p{n['index']}" + (f"r{k}" if k else ""),
                "peer": "",
                "address": f"10.231.{k}.{10 + n['index']}",
                "prefixlen": 24,
                "bridge": f"rooftop-br{k}",
            }
            for k in range(4)
        ]
    state.save(st, p)
    nodes = NetnsLauncher({"oversubscribe": True}, state_path=p).nodes()
    assert nodes[1].nic_addresses() == ["10.231.0.11", "10.231.1.11", "10.231.2.11", "10.231.3.11"]
    assert nodes[1].address == "10.231.0.11"
    # 4 NICs of 200 Mbit/s each way: a node carries 100 MB/s
    assert limits.link_limit(nodes, [0], [1]) == 4 * 200_000_000 / 8
    cfg = {"fabric": {"domain": None, "provider": "ofi+tcp"}}
    assert mismatch(cfg, nodes[1], {"ip": "10.231.2.11"}) == ""
    assert "not the node's address 10.231.0.11 or" in mismatch(cfg, nodes[1], {"ip": "10.231.2.10"})


def test_oversubscribe_wraps_processes_around_the_cores(tmp_path):
    p = fake_state(tmp_path, n=2, cores=((0, 1), (0, 1)))
    engine = ["/x/rooftop-engine", "load"]
    with pytest.raises(LauncherError, match="5 processes x 1 core"):
        NetnsLauncher({}, state_path=p).launches(NetnsLauncher({}, state_path=p).nodes()[0], engine, 5, "core", 0)
    wrap = NetnsLauncher({"oversubscribe": True}, state_path=p)
    node = wrap.nodes()[0]
    cpus = [ls.argv[ls.argv.index("--cpus") + 1] for ls in wrap.launches(node, engine, 5, "core", 0)]
    assert cpus == ["0", "1", "0", "1", "0"]
    cpus = [ls.argv[ls.argv.index("--cpus") + 1] for ls in wrap.launches(node, engine, 3, "2cores", 0)]
    assert cpus == ["0,1", "0,1", "0,1"]
