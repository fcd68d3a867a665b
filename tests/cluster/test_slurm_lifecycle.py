"""'cluster up --slurm' and 'cluster down' for real (root, slurm-wlm and
munge installed): the daemons run where they should, down leaves nothing
but logs, even after an 'up' killed half-way, and the node names in
/etc/hosts come and go with the cluster."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from cluster_util import cluster
from slurm_util import cmdline, needs_slurm, wait_for

from rooftop.cluster import hosts, mpi, net, slurm, state

pytestmark = needs_slurm

UP = ["up", "--nodes", "2", "--link-rate", "100mbit", "--slurm"]


def leftovers() -> dict:
    """Everything of the cluster but Slurm's logs."""
    d = state.path().parent
    files = (
        [str(p) for p in d.rglob("*") if p.is_file() and "log" not in p.relative_to(d).parts[:2]] if d.exists() else []
    )
    return {
        "netns": net.list_netns(),
        "processes": sorted(slurm.processes().values()),
        "hosts": hosts.entries(),
        "files": files,
    }


NOTHING = {"netns": [], "processes": [], "hosts": [], "files": []}


def test_daemons_run_in_their_nodes_and_down_leaves_only_logs(clean):
    cluster(*UP)
    procs = slurm.processes()
    assert sorted(procs.values()) == ["munged", "slurmctld", "slurmd", "slurmd"]
    for i in range(2):
        (pid,) = [p for p, n in procs.items() if n == "slurmd" and cmdline(p).endswith(f"-N rooftop-n{i} ")]
        # in the node's network namespace and cgroups (nsenter --net, not ip netns exec)
        assert os.stat(f"/proc/{pid}/ns/net").st_ino == os.stat(f"/run/netns/rooftop-n{i}").st_ino
        assert f"/rooftop/n{i}" in Path(f"/proc/{pid}/cgroup").read_text()
    assert hosts.entries() == [("10.231.0.10", "rooftop-n0"), ("10.231.0.11", "rooftop-n1")]
    key = slurm.paths()["key_dir"]
    assert oct(key.stat().st_mode & 0o777) == "0o700"
    assert oct((key / "munge.key").stat().st_mode & 0o777) == "0o600"
    assert os.access(mpi.agent_path(), os.X_OK)

    cluster("down")
    assert leftovers() == NOTHING
    assert (slurm.paths()["log"] / "slurmctld.log").exists()  # the logs stay
    assert "rooftop-n0" not in Path("/etc/hosts").read_text()


def test_down_after_a_killed_up_and_up_again(clean):
    """An 'up --slurm' SIGKILLed once Slurm's daemons start leaves them
    running with no state file: 'down' finds them all; a second 'up'
    removes them too and starts afresh."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    p = subprocess.Popen(
        [sys.executable, "-m", "rooftop", "cluster", *UP], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for("slurmctld started", lambda: "slurmctld" in slurm.processes().values(), 60, every=0.02)
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=30)
    assert net.list_netns() and slurm.processes()
    cluster("down")
    assert leftovers() == NOTHING

    # killed again, then 'up' itself cleans up what the first one left
    p = subprocess.Popen(
        [sys.executable, "-m", "rooftop", "cluster", *UP], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for("slurmctld started", lambda: "slurmctld" in slurm.processes().values(), 60, every=0.02)
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=30)
    cluster(*UP)
    assert sorted(slurm.processes().values()) == ["munged", "slurmctld", "slurmd", "slurmd"]
    assert not [n for n in slurm.node_states(["rooftop-n0", "rooftop-n1"]).values() if n != "idle"]
    cluster("down")
    assert leftovers() == NOTHING


def test_slurm_is_added_to_a_cluster_already_up(clean):
    cluster("up", "--nodes", "2", "--link-rate", "100mbit")
    assert not slurm.processes() and hosts.entries()
    p = cluster(*UP)
    assert "export SLURM_CONF=" in p.stderr
    assert sorted(slurm.processes().values()) == ["munged", "slurmctld", "slurmd", "slurmd"]
    cluster("down")
    assert leftovers() == NOTHING
