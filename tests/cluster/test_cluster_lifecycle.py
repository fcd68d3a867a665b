"""cluster up / status / down on this machine, for real (root)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cluster_util import cluster, needs_root, status_json

from rooftop.cluster import cgroups, lifecycle, net, state
from rooftop.cluster.spec import build_spec

pytestmark = needs_root

SRC = str(Path(__file__).resolve().parents[2] / "src")


def run_json(argv):
    out = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=True).stdout
    return json.loads(out) if out.strip() else []


def everything() -> dict:
    """Every rooftop object on this machine."""
    layout = cgroups.detect()
    cg = []
    for root in layout.roots():
        if root.is_dir():
            cg += [str(root)] + sorted(str(p) for p in root.iterdir() if p.is_dir())
    return {"netns": net.list_netns(), "links": net.list_links(), "cgroups": cg, "state": state.path().exists()}


NOTHING = {"netns": [], "links": [], "cgroups": [], "state": False}


def test_up_builds_exactly_the_cluster_and_is_idempotent(clean):
    cluster("up", "--nodes", "4", "--link-rate", "100mbit", "--node", "3:rate=50mbit", "--node", "2:cpu=40%")
    layout = cgroups.detect()
    got = everything()
    assert got["netns"] == [f"rooftop-n{i}" for i in range(4)]
    assert got["links"] == ["rooftop-br0"] + [f"rooftop-v{i}" for i in range(4)]
    assert got["state"]
    for i in range(4):
        ns = f"rooftop-n{i}"
        links = {e["ifname"]: e for e in run_json(["ip", "-j", "-n", ns, "link", "show"])}
        assert set(links) == {"lo", f"rooftop-p{i}"}
        assert "UP" in links["lo"]["flags"] and "UP" in links[f"rooftop-p{i}"]["flags"]
        addrs = run_json(["ip", "-j", "-n", ns, "-4", "addr", "show", "dev", f"rooftop-p{i}"])
        assert [a["local"] for a in addrs[0]["addr_info"]] == [f"10.231.0.{10 + i}"]
        rate = 50_000_000 if i == 3 else 100_000_000
        for argv in (
            ["tc", "-j", "-n", ns, "qdisc", "show", "dev", f"rooftop-p{i}"],
            ["tc", "-j", "qdisc", "show", "dev", f"rooftop-v{i}"],
        ):
            (q,) = [q for q in run_json(argv) if q.get("root")]
            assert q["kind"] == "tbf" and q["options"]["rate"] * 8 == rate
        master = run_json(["ip", "-j", "link", "show", "dev", f"rooftop-v{i}"])[0]["master"]
        assert master == "rooftop-br0"
        cg = cgroups.read_node(layout, i)
        assert cg["cpus"] == str(i % 2)
        assert cg["quota_us"] == (40_000 if i == 2 else None)
    # the root namespace reaches every node (the campaign's control commands run there)
    routes = run_json(["ip", "-j", "route", "get", "10.231.0.12"])
    assert routes[0]["dev"] == "rooftop-br0"

    st = status_json()
    assert st["up"] and not st["problems"]
    assert [n["live"]["send_rate_bits"] for n in st["nodes"]] == [10**8, 10**8, 10**8, 5 * 10**7]
    assert [n["live"]["receive_rate_bits"] for n in st["nodes"]] == [10**8, 10**8, 10**8, 5 * 10**7]
    assert [n["shared_with"] for n in st["nodes"]] == [[2], [3], [0], [1]]  # 4 nodes on 2 cores
    assert st["nodes"][2]["cpu_percent"] == 40.0
    text = cluster("status").stdout
    assert "nodes share cores: 4 nodes on 2 core(s)" in text and "40% (0.40 cores)" in text

    before = everything()
    again = cluster("up", "--nodes", "4", "--link-rate", "100mbit", "--node", "3:rate=50mbit", "--node", "2:cpu=40%")
    assert "already up" in again.stderr
    assert everything() == before

    other = cluster("up", "--nodes", "2", check=False)
    assert other.returncode == 2
    assert "a different emulated cluster is up (4 nodes" in other.stderr
    assert "run 'rooftop cluster down' first" in other.stderr
    assert everything() == before

    down = cluster("down")
    assert "removed 4 namespace(s)" in down.stdout
    assert everything() == NOTHING
    assert cluster("down").stdout.strip() == "emulated cluster down: nothing to remove"
    st = cluster("status", check=False)
    assert st.returncode == 3 and "no emulated cluster is up" in st.stdout  # unreachable


def test_groups_hang_from_switches_of_their_own_and_down_removes_them(clean):
    """--groups: each group's nodes on its bridge, each group joined to the
    top switch by a veth pair shaped both ways; the root namespace routes
    to every node through the top switch (that traffic crosses the groups'
    links: tests/cluster/test_topology_sample.py); a group link shaped
    otherwise is a problem; down removes it all, found by name."""
    cluster("up", "--nodes", "5", "--groups", "2", "--link-rate", "100mbit", "--group-link-rate", "20mbit")
    got = everything()
    assert got["links"] == sorted(
        ["rooftop-br0", "rooftop-gb0", "rooftop-gb1", "rooftop-gd0", "rooftop-gd1", "rooftop-gu0", "rooftop-gu1"]
        + [f"rooftop-v{i}" for i in range(5)]
    )
    master = lambda dev: run_json(["ip", "-j", "link", "show", "dev", dev])[0]["master"]
    assert [master(f"rooftop-v{i}") for i in range(5)] == ["rooftop-gb0"] * 3 + ["rooftop-gb1"] * 2
    assert [master(d) for d in ("rooftop-gu0", "rooftop-gd0", "rooftop-gd1")] == ["rooftop-gb0"] + ["rooftop-br0"] * 2
    for dev in ("rooftop-gu0", "rooftop-gd0", "rooftop-gu1", "rooftop-gd1"):
        (q,) = [q for q in run_json(["tc", "-j", "qdisc", "show", "dev", dev]) if q.get("root")]
        assert q["kind"] == "tbf" and q["options"]["rate"] * 8 == 20_000_000
    assert run_json(["ip", "-j", "route", "get", "10.231.0.14"])[0]["dev"] == "rooftop-br0"  # the top switch
    st = status_json()
    assert not st["problems"], st["problems"]
    assert [(n["group"], n["switch"]) for n in st["nodes"]] == [(0, "rooftop-gb0")] * 3 + [(1, "rooftop-gb1")] * 2
    assert "5 nodes, 1 core(s) each, links 100Mbit, 2 groups joined by links of 20Mbit" in cluster("status").stdout
    subprocess.run(["tc", "qdisc", "replace", "dev", "rooftop-gd1", "root", "tbf", "rate", "5mbit", "burst", "65536",
                    "latency", "50ms"], check=True, timeout=10)  # fmt: skip
    assert "group 1 receive rate is 5000000 bit/s, not 20000000" in status_json()["problems"]
    other = cluster("up", "--nodes", "5", "--link-rate", "100mbit", check=False)
    assert other.returncode == 2 and "2 groups joined by links of 20Mbit" in other.stderr
    state.path().unlink()  # down finds the groups' bridges and links by name
    cluster("down")
    assert everything() == NOTHING


def test_up_repairs_an_incomplete_cluster_and_down_needs_no_state(clean):
    cluster("up", "--nodes", "2", "--link-rate", "1gbit")
    subprocess.run(["ip", "netns", "del", "rooftop-n1"], check=True, timeout=10)
    st = status_json()
    assert any("rooftop-n1 is missing" in p for p in st["problems"])
    p = cluster("up", "--nodes", "2", "--link-rate", "1gbit")
    assert "incomplete" in p.stderr
    assert not status_json()["problems"]
    state.path().unlink()  # down finds everything by name
    cluster("down")
    assert everything() == NOTHING


def test_bad_specs_are_refused_before_anything_is_built(clean):
    p = cluster("up", "--nodes", "4", "--node", "9:rate=1gbit", check=False)
    assert p.returncode == 2
    assert "--node 9:rate=1gbit: node 9 does not exist (nodes are 0..3)" in p.stderr
    p = cluster("up", "--nodes", "4", "--link-rate", "fast", check=False)
    assert p.returncode == 2
    assert "--link-rate 'fast' is not a link rate" in p.stderr
    p = cluster("up", "--nodes", "3", "--groups", "4", check=False)
    assert p.returncode == 2 and "--groups 4: must be 1 to the number of nodes (3)" in p.stderr
    assert everything() == NOTHING


def _as_nobody(*args):
    """The CLI run as user nobody. The venv's interpreter may live under /root
    (not readable by others): then the system python3 runs the same sources
    with the venv's packages."""
    py = sys.executable
    site = [p for p in sys.path if p.endswith("site-packages") and "/.venv/" in p]
    if not os.access(os.path.realpath(py), os.X_OK) or os.path.realpath(py).startswith("/root/"):
        py = "/usr/bin/python3"
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": ":".join([SRC, *site])}
    return subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", py, "-m", "rooftop", "cluster", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd="/",
    )


def test_not_root_is_a_clear_error(clean, monkeypatch, capsys):
    # As user nobody for real when nobody can read this checkout (a clone in
    # a private temporary folder cannot be), else in-process with a non-root
    # effective uid: the same check, the same message.
    real = os.path.exists("/usr/bin/setpriv")
    if real:
        probe = _as_nobody("status").stderr
        real = "No module named" not in probe and "Permission denied" not in probe
    for action in (["up", "--nodes", "2"], ["down"]):
        if real:
            p = _as_nobody(*action)
            code, err = p.returncode, p.stderr
        else:
            from rooftop.cli import main

            monkeypatch.setattr(os, "geteuid", lambda: 65534)
            code = main(["cluster", *action])
            err = capsys.readouterr().err
            monkeypatch.undo()
        assert code == 2, err
        assert f"'cluster {action[0]}' needs root" in err
    assert everything() == NOTHING


def test_interrupt_during_up_cleans_up(clean, monkeypatch):
    real = net.shape_node

    def shape_then_interrupt(i, rate):
        real(i, rate)
        if i == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(net, "shape_node", shape_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        lifecycle.up(build_spec(4, link_rate="1gbit"))
    assert everything() == NOTHING

    def fail(layout, i, cores, cpu):
        raise lifecycle.ClusterError("cgroup step failed")

    monkeypatch.setattr(net, "shape_node", real)
    monkeypatch.setattr(cgroups, "create_node", fail)
    with pytest.raises(lifecycle.ClusterError, match="cgroup step failed"):
        lifecycle.up(build_spec(2))
    assert everything() == NOTHING


def test_ctrl_c_during_up_cleans_up(clean):
    """A real SIGINT to 'rooftop cluster up' while it builds node 3 of 60."""
    import signal

    p = subprocess.Popen(
        [sys.executable, "-m", "rooftop", "cluster", "up", "--nodes", "60", "--link-rate", "100mbit"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for line in p.stderr:
            if line.startswith("node 2:"):
                p.send_signal(signal.SIGINT)
                break
        rest = p.stderr.read()
        assert p.wait(timeout=60) == 130, rest
    finally:
        if p.poll() is None:
            p.kill()
    assert "rooftop: interrupted" in rest
    assert everything() == NOTHING


CPU_PROBE = """
import os, time
t, c = time.time(), time.process_time()
while time.time() - t < 1.5:
    pass
print(os.listdir('/sys/class/net'), round((time.process_time() - c) / (time.time() - t), 3))
print(open('/proc/self/cgroup').read())
"""


def test_processes_run_in_the_node_and_the_cpu_cap_holds(clean):
    from rooftop.launchers.netns import NetnsLauncher

    cluster("up", "--nodes", "2", "--node", "1:cpu=30%")
    launcher = NetnsLauncher({})
    node = launcher.nodes()[1]
    assert node.emulation["cpu_percent"] == 30.0
    argv = launcher.wrap(node, ["/usr/bin/python3", "-c", CPU_PROBE])
    p = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    first, cg = p.stdout.split("\n", 1)
    ifaces, share = first.rsplit(" ", 1)
    assert sorted(eval(ifaces)) == ["lo", "rooftop-p1"]  # its own namespace
    assert ":/rooftop/n1" in cg  # its cgroups
    assert 0.2 <= float(share) <= 0.35, share  # 30 % of its one core
