"""srun launcher: command lines inside a (simulated) Slurm allocation.

There is no Slurm here: the allocation is faked with SLURM_* variables and
only the produced command lines are checked.
"""

from __future__ import annotations

import os

import pytest

from rooftop.launchers import make_launcher
from rooftop.launchers.base import LauncherError
from rooftop.launchers.srun import SrunLauncher

ENGINE = [
    "/opt/rooftop/bin/rooftop-engine",
    "serve",
    "--group-dir",
    "/g",
    "--token-file",
    "/g/token",
    "--output",
    "/g/server-{rank}.json",
]
TAIL = ["--kill-on-bad-exit=1", *ENGINE]


def cfg(**kw):
    return {"type": "srun", "nodes": None, "command": "srun", "extra_args": [], **kw}


@pytest.fixture
def slurm(monkeypatch):
    """A 4-node allocation with 64 CPUs on each node."""
    for var in list(os.environ):
        if var.startswith(("SLURM_", "SRUN_")):
            monkeypatch.delenv(var)
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    monkeypatch.setenv("SLURM_JOB_NODELIST", "nid[0001-0003],nid0010")
    monkeypatch.setenv("SLURM_JOB_CPUS_PER_NODE", "64(x4)")
    monkeypatch.setenv("SLURM_CPUS_ON_NODE", "64")
    return monkeypatch


def test_nodes_from_allocation(slurm):
    launcher = SrunLauncher(cfg())
    nodes = launcher.nodes()
    assert [n.host for n in nodes] == ["nid0001", "nid0002", "nid0003", "nid0010"]
    assert [n.index for n in nodes] == [0, 1, 2, 3]
    assert all(n.cores == tuple(range(64)) and n.address is None for n in nodes)
    assert launcher.describe()["type"] == "srun"
    assert make_launcher(cfg()).nodes() == nodes


def test_core_binding(slurm):
    node = SrunLauncher(cfg()).nodes()[1]
    [launch] = SrunLauncher(cfg()).launches(node, ENGINE, 2, "core", 0)
    assert launch.argv == [
        "srun",
        "--nodes=1",
        "--ntasks=2",
        "--nodelist=nid0002",
        "--exact",
        "--cpus-per-task=1",
        "--cpu-bind=cores",
        *TAIL,
        "--rank",
        "0",
        "--rank-from-env",
    ]
    assert launch.ranks == [0, 1] and launch.node == node and launch.env == {}


def test_2cores_binding(slurm):
    node = SrunLauncher(cfg()).nodes()[0]
    [launch] = SrunLauncher(cfg()).launches(node, ENGINE, 32, "2cores", 8)
    assert launch.argv == [
        "srun",
        "--nodes=1",
        "--ntasks=32",
        "--nodelist=nid0001",
        "--exact",
        "--cpus-per-task=2",
        "--cpu-bind=cores",
        *TAIL,
        "--rank",
        "8",
        "--rank-from-env",
    ]
    assert launch.ranks == list(range(8, 40))


def test_no_binding(slurm):
    node = SrunLauncher(cfg()).nodes()[3]
    [launch] = SrunLauncher(cfg()).launches(node, ENGINE, 100, "none", 3)
    assert launch.argv == [
        "srun",
        "--nodes=1",
        "--ntasks=100",
        "--nodelist=nid0010",
        "--exact",
        "--cpu-bind=none",
        *TAIL,
        "--rank",
        "3",
        "--rank-from-env",
    ]
    assert launch.ranks == list(range(3, 103))


def test_command_and_extra_args(slurm):
    launcher = SrunLauncher(cfg(command="/usr/local/bin/srun", extra_args=["--mpi=none", "--mem-per-cpu=1G"]))
    [launch] = launcher.launches(launcher.nodes()[0], ENGINE, 1, "core", 5)
    assert launch.argv == [
        "/usr/local/bin/srun",
        "--nodes=1",
        "--ntasks=1",
        "--nodelist=nid0001",
        "--exact",
        "--cpus-per-task=1",
        "--cpu-bind=cores",
        "--kill-on-bad-exit=1",
        "--mpi=none",
        "--mem-per-cpu=1G",
        *ENGINE,
        "--rank",
        "5",
        "--rank-from-env",
    ]


def test_rank_placeholder_left_to_the_engine(slurm):
    launcher = SrunLauncher(cfg())
    [launch] = launcher.launches(launcher.nodes()[0], ENGINE, 2, "core", 4)
    assert "/g/server-{rank}.json" in launch.argv


def test_nodes_selection(slurm):
    launcher = SrunLauncher(cfg(nodes=2))
    assert [n.host for n in launcher.nodes()] == ["nid0001", "nid0002"]


def test_too_many_nodes(slurm):
    with pytest.raises(LauncherError) as e:
        SrunLauncher(cfg(nodes=5))
    assert "launcher.nodes = 5" in str(e.value) and "only 4 nodes" in str(e.value)


def test_zero_nodes(slurm):
    with pytest.raises(LauncherError, match="at least 1"):
        SrunLauncher(cfg(nodes=0))


def test_no_allocation(slurm):
    slurm.delenv("SLURM_JOB_NODELIST")
    slurm.delenv("SLURM_JOB_ID")
    with pytest.raises(LauncherError) as e:
        SrunLauncher(cfg())
    assert str(e.value) == ("srun launcher needs a Slurm allocation (salloc/sbatch); SLURM_JOB_NODELIST is not set")


def test_slurm_nodelist_fallback(slurm):
    slurm.delenv("SLURM_JOB_NODELIST")
    slurm.setenv("SLURM_NODELIST", "c[1-2]")
    slurm.delenv("SLURM_JOB_CPUS_PER_NODE")
    assert [n.host for n in SrunLauncher(cfg()).nodes()] == ["c1", "c2"]


def test_malformed_nodelist(slurm):
    slurm.setenv("SLURM_JOB_NODELIST", "nid[0001-")
    with pytest.raises(LauncherError) as e:
        SrunLauncher(cfg())
    assert "SLURM_JOB_NODELIST" in str(e.value) and "nid[0001-" in str(e.value)


def test_too_many_processes(slurm):
    launcher = SrunLauncher(cfg())
    node = launcher.nodes()[0]
    launcher.launches(node, ENGINE, 64, "core", 0)
    launcher.launches(node, ENGINE, 32, "2cores", 0)
    with pytest.raises(LauncherError, match="64 usable cores"):
        launcher.launches(node, ENGINE, 65, "core", 0)
    with pytest.raises(LauncherError, match="64 usable cores"):
        launcher.launches(node, ENGINE, 33, "2cores", 0)


def test_bad_binding_and_nprocs(slurm):
    launcher = SrunLauncher(cfg())
    node = launcher.nodes()[0]
    with pytest.raises(LauncherError, match="binding 'socket'"):
        launcher.launches(node, ENGINE, 1, "socket", 0)
    with pytest.raises(LauncherError, match="at least 1"):
        launcher.launches(node, ENGINE, 0, "core", 0)


def test_heterogeneous_cpu_counts(slurm):
    slurm.setenv("SLURM_JOB_CPUS_PER_NODE", "64(x2),32,16")
    slurm.setenv("SLURM_CPUS_ON_NODE", "64")
    nodes = SrunLauncher(cfg()).nodes()
    assert [len(n.cores) for n in nodes] == [64, 64, 32, 16]
    with pytest.raises(LauncherError, match="node 3 \\(nid0010\\) has 16 usable cores"):
        SrunLauncher(cfg()).launches(nodes[3], ENGINE, 17, "core", 0)


def test_cpus_on_node_when_counts_do_not_match(slurm):
    slurm.setenv("SLURM_JOB_CPUS_PER_NODE", "64(x3)")  # 3 counts for 4 nodes
    slurm.setenv("SLURM_CPUS_ON_NODE", "48")
    assert [len(n.cores) for n in SrunLauncher(cfg()).nodes()] == [48] * 4


def test_cpus_on_node_only(slurm):
    slurm.delenv("SLURM_JOB_CPUS_PER_NODE")
    slurm.setenv("SLURM_CPUS_ON_NODE", "8")
    assert [len(n.cores) for n in SrunLauncher(cfg()).nodes()] == [8] * 4


def test_first_count_when_nothing_else(slurm):
    slurm.setenv("SLURM_JOB_CPUS_PER_NODE", "64(x3)")
    slurm.delenv("SLURM_CPUS_ON_NODE")
    assert [len(n.cores) for n in SrunLauncher(cfg()).nodes()] == [64] * 4


def test_cpu_count_fallback(slurm):
    slurm.delenv("SLURM_JOB_CPUS_PER_NODE")
    slurm.delenv("SLURM_CPUS_ON_NODE")
    assert [len(n.cores) for n in SrunLauncher(cfg()).nodes()] == [os.cpu_count()] * 4


def test_bad_cpu_variables(slurm):
    slurm.setenv("SLURM_JOB_CPUS_PER_NODE", "lots")
    with pytest.raises(LauncherError, match="SLURM_JOB_CPUS_PER_NODE"):
        SrunLauncher(cfg())
    slurm.delenv("SLURM_JOB_CPUS_PER_NODE")
    slurm.setenv("SLURM_CPUS_ON_NODE", "x")
    with pytest.raises(LauncherError, match="SLURM_CPUS_ON_NODE"):
        SrunLauncher(cfg())


def test_explicit_environ():
    launcher = SrunLauncher(cfg(), environ={"SLURM_JOB_NODELIST": "a[1-2]", "SLURM_CPUS_ON_NODE": "4"})
    assert [(n.host, len(n.cores)) for n in launcher.nodes()] == [("a1", 4), ("a2", 4)]


SHOW_NODE = (
    "NodeName=nid0001 Arch=x86_64 CoresPerSocket=1 CPUAlloc=1 CPUTot=64 NodeAddr=10.0.0.1 "
    "NodeHostName=nid0001 State=ALLOCATED Partitions=batch\n"
    "NodeName=nid0002 Arch=x86_64 CoresPerSocket=1 CPUAlloc=1 CPUTot=64 NodeAddr=10.0.0.2 "
    "NodeHostName=nid0002 State=ALLOCATED+DRAIN Partitions=batch Reason=bad dimm [root@2026-11-23T01:00:00]\n"
)


def fake_scontrol(monkeypatch, show_node: str, hostnames: str | None = None):
    """scontrol answering from canned text (None: it cannot run here)."""
    import rooftop.launchers.srun as srun

    def answer(args, env):
        if args[:2] == ["show", "hostnames"]:
            return hostnames
        return show_node

    monkeypatch.setattr(srun, "scontrol", answer)


def test_hosts_come_from_scontrol_when_it_answers(slurm):
    fake_scontrol(slurm, SHOW_NODE.split("\n")[0], hostnames="nid0001\nnid0003\nnid0002\nnid0010\n")
    assert [n.host for n in SrunLauncher(cfg()).nodes()] == ["nid0001", "nid0003", "nid0002", "nid0010"]


def test_a_drained_node_is_refused_with_slurms_reason(slurm):
    fake_scontrol(slurm, SHOW_NODE)
    with pytest.raises(LauncherError) as e:
        SrunLauncher(cfg())
    assert str(e.value).startswith(
        "srun launcher: Slurm node nid0002 is ALLOCATED+DRAIN (reason: bad dimm "
        "[root@2026-11-23T01:00:00]); nothing was started"
    )
    fake_scontrol(slurm, SHOW_NODE.replace("ALLOCATED+DRAIN", "IDLE*"))
    with pytest.raises(LauncherError, match="nid0002 is IDLE\\*"):
        SrunLauncher(cfg())
    # a node that is fine, and no scontrol here: no check
    fake_scontrol(slurm, SHOW_NODE.split("\n")[0])
    assert len(SrunLauncher(cfg()).nodes()) == 4
    fake_scontrol(slurm, None)
    assert all(n.address is None for n in SrunLauncher(cfg()).nodes())
