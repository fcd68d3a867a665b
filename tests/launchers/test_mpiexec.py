"""mpiexec launcher: command lines for Open MPI and MPICH, host lists, flavor
detection, and real runs of engine servers under the installed Open MPI."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from rooftop.engine.base import engine_path, private_dir, write_token
from rooftop.engine.commands import run_engine
from rooftop.launchers import make_launcher
from rooftop.launchers import mpiexec as mpx
from rooftop.launchers.base import LauncherError
from rooftop.launchers.mpiexec import MpiexecLauncher, detect_flavor, read_hostfile

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
RANKS = ["--rank-from-env"]


def cfg(**kw):
    base = {
        "type": "mpiexec",
        "nodes": None,
        "hosts": None,
        "hostfile": None,
        "cores_per_node": None,
        "command": "mpiexec",
        "flavor": "auto",
        "extra_args": [],
    }
    return {**base, **kw}


@pytest.fixture
def user(monkeypatch):
    """Not root, and 8 usable cores on this machine."""
    monkeypatch.setattr(mpx.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(mpx.os, "sched_getaffinity", lambda pid: set(range(8)))


@pytest.fixture
def root(monkeypatch):
    monkeypatch.setattr(mpx.os, "geteuid", lambda: 0)


@pytest.fixture(autouse=True)
def fresh_cache():
    detect_flavor.cache_clear()
    yield
    detect_flavor.cache_clear()


# ---- Open MPI command lines -------------------------------------------------


def ompi(**kw):
    return MpiexecLauncher(cfg(flavor="openmpi", hosts=["n1", "n2"], cores_per_node=16, **kw))


def test_openmpi_core(user):
    launcher = ompi()
    node = launcher.nodes()[1]
    [launch] = launcher.launches(node, ENGINE, 2, "core", 0)
    assert launch.argv == [
        "mpiexec",
        "-n",
        "2",
        "--host",
        "n2:2",
        "--bind-to",
        "core",
        "--map-by",
        "core",
        *ENGINE,
        "--rank",
        "0",
        *RANKS,
    ]
    assert launch.ranks == [0, 1] and launch.node == node and launch.env == {}


def test_openmpi_2cores(user):
    launcher = ompi()
    [launch] = launcher.launches(launcher.nodes()[0], ENGINE, 8, "2cores", 16)
    assert launch.argv == [
        "mpiexec",
        "-n",
        "8",
        "--host",
        "n1:8",
        "--bind-to",
        "core",
        "--map-by",
        "slot:PE=2",
        *ENGINE,
        "--rank",
        "16",
        *RANKS,
    ]
    assert launch.ranks == list(range(16, 24))


def test_openmpi_none(user):
    launcher = ompi()
    [launch] = launcher.launches(launcher.nodes()[0], ENGINE, 40, "none", 3)
    assert launch.argv == [
        "mpiexec",
        "-n",
        "40",
        "--host",
        "n1:40",
        "--bind-to",
        "none",
        "--map-by",
        "slot",
        *ENGINE,
        "--rank",
        "3",
        *RANKS,
    ]


def test_openmpi_as_root(root):
    launcher = ompi()
    [launch] = launcher.launches(launcher.nodes()[0], ENGINE, 2, "core", 0)
    assert launch.argv == [
        "mpiexec",
        "-n",
        "2",
        "--host",
        "n1:2",
        "--bind-to",
        "core",
        "--map-by",
        "core",
        "--allow-run-as-root",
        *ENGINE,
        "--rank",
        "0",
        *RANKS,
    ]


def test_openmpi_command_and_extra_args(user):
    launcher = ompi(command="/opt/ompi/bin/mpirun", extra_args=["--mca", "btl", "self,tcp"])
    [launch] = launcher.launches(launcher.nodes()[0], ENGINE, 1, "core", 0)
    assert launch.argv == [
        "/opt/ompi/bin/mpirun",
        "-n",
        "1",
        "--host",
        "n1:1",
        "--bind-to",
        "core",
        "--map-by",
        "core",
        "--mca",
        "btl",
        "self,tcp",
        *ENGINE,
        "--rank",
        "0",
        *RANKS,
    ]


def test_openmpi_shared_host_is_mpmd_with_exact_cores(user):
    launcher = MpiexecLauncher(cfg(flavor="openmpi", hosts=["localhost", "localhost"]))
    n0, n1 = launcher.nodes()
    assert (n0.cores, n1.cores) == ((0, 1, 2, 3), (4, 5, 6, 7))
    [launch] = launcher.launches(n1, ENGINE, 2, "core", 2)
    tail = ["--rank", "2", *RANKS]
    assert launch.argv == [
        "mpiexec",
        "--host",
        "localhost:2",
        "--bind-to",
        "none",
        "-n",
        "1",
        *ENGINE,
        *tail,
        "--cpus",
        "4",
        ":",
        "-n",
        "1",
        *ENGINE,
        *tail,
        "--cpus",
        "5",
    ]
    assert launch.ranks == [2, 3]
    [launch] = launcher.launches(n0, ENGINE, 2, "2cores", 0)
    assert launch.argv[-3:] == ["--rank-from-env", "--cpus", "2,3"]
    assert launch.argv.count(":") == 1 and "0,1" in launch.argv
    [launch] = launcher.launches(n0, ENGINE, 3, "none", 0)
    assert launch.argv.count(":") == 2 and launch.argv.count("0,1,2,3") == 3


def test_shared_host_as_root(root, monkeypatch):
    monkeypatch.setattr(mpx.os, "sched_getaffinity", lambda pid: {0, 1})
    launcher = MpiexecLauncher(cfg(flavor="openmpi", hosts=["localhost"] * 2))
    [launch] = launcher.launches(launcher.nodes()[1], ENGINE, 1, "core", 1)
    assert launch.argv == [
        "mpiexec",
        "--host",
        "localhost:1",
        "--bind-to",
        "none",
        "--allow-run-as-root",
        "-n",
        "1",
        *ENGINE,
        "--rank",
        "1",
        *RANKS,
        "--cpus",
        "1",
    ]


# ---- MPICH command lines ------------------------------------------------------


def mpich(**kw):
    return MpiexecLauncher(cfg(flavor="mpich", hosts=["n1", "n2"], cores_per_node=16, **kw))


@pytest.mark.parametrize("binding, bind", [("core", "core"), ("2cores", "core:2"), ("none", "none")])
def test_mpich(root, binding, bind):  # no root option for MPICH
    launcher = mpich(extra_args=["-genv", "X", "1"])
    [launch] = launcher.launches(launcher.nodes()[1], ENGINE, 2, binding, 4)
    assert launch.argv == [
        "mpiexec",
        "-n",
        "2",
        "-hosts",
        "n2",
        "-bind-to",
        bind,
        "-genv",
        "X",
        "1",
        *ENGINE,
        "--rank",
        "4",
        *RANKS,
    ]
    assert launch.ranks == [4, 5] and launch.env == {}


def test_mpich_shared_host(user):
    launcher = MpiexecLauncher(cfg(flavor="mpich", hosts=["localhost"] * 2))
    [launch] = launcher.launches(launcher.nodes()[0], ENGINE, 2, "core", 0)
    tail = ["--rank", "0", *RANKS]
    assert launch.argv == [
        "mpiexec",
        "-hosts",
        "localhost",
        "-bind-to",
        "none",
        "-n",
        "1",
        *ENGINE,
        *tail,
        "--cpus",
        "0",
        ":",
        "-n",
        "1",
        *ENGINE,
        *tail,
        "--cpus",
        "1",
    ]


# ---- hosts, nodes and cores ---------------------------------------------------


def test_nodes_and_cores(user):
    launcher = make_launcher(cfg(flavor="openmpi", hosts=["a", "b", "c"], cores_per_node=4, nodes=2))
    assert [(n.index, n.host, n.cores, n.address) for n in launcher.nodes()] == [
        (0, "a", (0, 1, 2, 3), None),
        (1, "b", (0, 1, 2, 3), None),
    ]
    assert launcher.describe()["type"] == "mpiexec"


def test_default_cores_per_node(user):
    remote, local = MpiexecLauncher(cfg(flavor="openmpi", hosts=["far", "localhost"])).nodes()
    assert remote.cores == tuple(range(os.cpu_count()))
    assert local.cores == tuple(range(8))  # this process's usable cores


def test_local_cores_follow_affinity(monkeypatch):
    monkeypatch.setattr(mpx.os, "sched_getaffinity", lambda pid: {4, 5, 6, 7})
    nodes = MpiexecLauncher(cfg(flavor="openmpi", hosts=["localhost"] * 2)).nodes()
    assert [n.cores for n in nodes] == [(4, 5), (6, 7)]
    nodes = MpiexecLauncher(cfg(flavor="openmpi", hosts=["localhost"], cores_per_node=2)).nodes()
    assert nodes[0].cores == (4, 5)


def test_hosts_bracket_notation(user):
    nodes = MpiexecLauncher(cfg(flavor="openmpi", hosts=["node[01-03]", "gpu1"], cores_per_node=2)).nodes()
    assert [n.host for n in nodes] == ["node01", "node02", "node03", "gpu1"]


def test_hostfile(tmp_path, user):
    hf = tmp_path / "hosts"
    hf.write_text("# cluster\n\nnode1 slots=4 max_slots=8\n  node2   # second\nnode3:16\nlocalhost\n")
    assert read_hostfile(hf) == ["node1", "node2", "node3", "localhost"]
    launcher = MpiexecLauncher(cfg(flavor="openmpi", hostfile=str(hf), cores_per_node=4, nodes=3))
    assert [n.host for n in launcher.nodes()] == ["node1", "node2", "node3"]


def test_hostfile_errors(tmp_path):
    with pytest.raises(LauncherError, match="launcher.hostfile .*missing"):
        MpiexecLauncher(cfg(flavor="openmpi", hostfile=str(tmp_path / "missing")))
    (tmp_path / "empty").write_text("# nothing\n\n")
    with pytest.raises(LauncherError, match="lists no hosts"):
        MpiexecLauncher(cfg(flavor="openmpi", hostfile=str(tmp_path / "empty")))


def test_no_hosts():
    with pytest.raises(LauncherError) as e:
        MpiexecLauncher(cfg(flavor="openmpi", nodes=2))
    assert "launcher.hosts" in str(e.value) and "launcher.hostfile" in str(e.value)
    with pytest.raises(LauncherError, match="empty"):
        MpiexecLauncher(cfg(flavor="openmpi", hosts=[""]))


def test_hosts_and_hostfile(tmp_path):
    with pytest.raises(LauncherError, match="not both"):
        MpiexecLauncher(cfg(flavor="openmpi", hosts=["a"], hostfile=str(tmp_path / "h")))


def test_too_many_nodes():
    with pytest.raises(LauncherError) as e:
        MpiexecLauncher(cfg(flavor="openmpi", hosts=["a", "b"], nodes=3, cores_per_node=2))
    assert "launcher.nodes = 3" in str(e.value) and "only 2 hosts" in str(e.value)
    with pytest.raises(LauncherError, match="at least 1"):
        MpiexecLauncher(cfg(flavor="openmpi", hosts=["a"], nodes=0))
    with pytest.raises(LauncherError, match="cores_per_node"):
        MpiexecLauncher(cfg(flavor="openmpi", hosts=["a"], cores_per_node=0))


def test_host_split_too_thin(monkeypatch):
    monkeypatch.setattr(mpx.os, "sched_getaffinity", lambda pid: {0, 1})
    with pytest.raises(LauncherError, match="listed 3 times .* only 2 cores"):
        MpiexecLauncher(cfg(flavor="openmpi", hosts=["localhost"] * 3))


def test_too_many_processes(user):
    launcher = ompi()
    node = launcher.nodes()[0]
    with pytest.raises(LauncherError, match="16 usable cores"):
        launcher.launches(node, ENGINE, 17, "core", 0)
    with pytest.raises(LauncherError, match="16 usable cores"):
        launcher.launches(node, ENGINE, 9, "2cores", 0)
    with pytest.raises(LauncherError, match="binding 'socket'"):
        launcher.launches(node, ENGINE, 1, "socket", 0)
    with pytest.raises(LauncherError, match="at least 1"):
        launcher.launches(node, ENGINE, 0, "none", 0)


def test_bad_flavor():
    with pytest.raises(LauncherError, match="launcher.flavor 'intel'"):
        MpiexecLauncher(cfg(flavor="intel", hosts=["a"]))


# ---- flavor detection ---------------------------------------------------------


def fake_mpiexec(tmp_path: Path, body: str) -> str:
    path = tmp_path / "fake-mpiexec"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return str(path)


@pytest.mark.skipif(shutil.which("mpiexec") is None, reason="no mpiexec installed")
def test_detects_installed_mpiexec(user):
    out = subprocess.run(["mpiexec", "--version"], capture_output=True, text=True).stdout
    expected = "openmpi" if ("Open MPI" in out or "OpenRTE" in out) else "mpich"
    launcher = MpiexecLauncher(cfg(hosts=["n1"], cores_per_node=2))
    assert launcher.flavor == expected
    [launch] = launcher.launches(launcher.nodes()[0], ENGINE, 1, "core", 0)
    assert launch.argv[:3] == ["mpiexec", "-n", "1"]


def test_detects_hydra(tmp_path, user):
    cmd = fake_mpiexec(tmp_path, 'echo "HYDRA build details:"; echo "    Version: 4.1.2"')
    launcher = MpiexecLauncher(cfg(hosts=["n1"], cores_per_node=2, command=cmd))
    assert launcher.flavor == "mpich"
    [launch] = launcher.launches(launcher.nodes()[0], ENGINE, 1, "core", 0)
    assert launch.argv[:6] == [cmd, "-n", "1", "-hosts", "n1", "-bind-to"]


def test_detects_open_mpi_5(tmp_path):
    cmd = fake_mpiexec(tmp_path, 'echo "mpiexec (Open MPI) 5.0.3"')
    assert detect_flavor(cmd) == "openmpi"


def test_detection_is_cached(tmp_path):
    count = tmp_path / "count"
    cmd = fake_mpiexec(tmp_path, f'echo x >> {count}; echo "mpiexec (OpenRTE) 4.1.4"')
    for _ in range(3):
        assert MpiexecLauncher(cfg(hosts=["n1"], command=cmd)).flavor == "openmpi"
    assert count.read_text().count("x") == 1


def test_missing_command():
    with pytest.raises(LauncherError) as e:
        _ = MpiexecLauncher(cfg(hosts=["n1"], command="no-such-mpiexec-here")).flavor
    assert "'no-such-mpiexec-here' not found" in str(e.value)
    assert "launcher.command" in str(e.value)


def test_unknown_mpi(tmp_path):
    cmd = fake_mpiexec(tmp_path, 'echo "Some Other MPI 1.0"')
    with pytest.raises(LauncherError) as e:
        detect_flavor(cmd)
    assert "Some Other MPI" in str(e.value) and "launcher.flavor" in str(e.value)


def test_hydra_output_mentioning_open_mpi(tmp_path):
    cmd = fake_mpiexec(tmp_path, 'echo "HYDRA build details:"; echo "    Configure options: --with-foo=/opt/openmpi"')
    assert detect_flavor(cmd) == "mpich"


def test_detection_timeout(tmp_path, monkeypatch):
    monkeypatch.setattr(mpx, "VERSION_TIMEOUT", 0.5)
    cmd = fake_mpiexec(tmp_path, "exec sleep 30")
    with pytest.raises(LauncherError, match="did not finish within 0.5 s"):
        detect_flavor(cmd)


# ---- real runs under the installed Open MPI -------------------------------------


def _installed_openmpi() -> bool:
    if shutil.which("mpiexec") is None:
        return False
    try:
        return detect_flavor("mpiexec") == "openmpi"
    except LauncherError:
        return False


needs_openmpi = pytest.mark.skipif(not _installed_openmpi(), reason="Open MPI mpiexec needed")


def _wait_for(paths, procs, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not all(p.exists() for p in paths):
        for proc, log in procs:
            if proc.poll() is not None:
                raise AssertionError(f"mpiexec exited {proc.returncode} early:\n" + Path(log).read_text())
        assert time.monotonic() < deadline, f"no {[str(p) for p in paths]} within {timeout} s"
        time.sleep(0.05)


def _run_servers(tmp_path, launcher, plan):
    """Starts servers with plan = [(node, nprocs, binding, first_rank)], runs a
    short client against all of them, shuts them down; returns {rank: doc}."""
    group = private_dir(tmp_path / "group")
    token_file = write_token(group, secrets.token_hex(8))  # on the shared FS, as a campaign does
    argv = [
        engine_path(),
        "serve",
        "--group-dir",
        str(group),
        "--token-file",
        str(token_file),
        "--output",
        f"{group}/server-{{rank}}.json",
    ]
    procs, ranks = [], []
    try:
        for i, (node, nprocs, binding, first) in enumerate(plan):
            [launch] = launcher.launches(node, argv, nprocs, binding, first)
            log = tmp_path / f"mpiexec-{i}.log"
            with open(log, "w") as out:
                p = subprocess.Popen(
                    launch.argv,
                    env={**os.environ, **launch.env},
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=out,
                    start_new_session=True,
                )
            procs.append((p, log))
            ranks += launch.ranks
        _wait_for([group / f"{r}.addr" for r in ranks], procs)
        doc = run_engine(
            ["load", "--group-dir", str(group), "--server", "all", "--duration", "0.3", "--warmup", "0"], timeout=30
        )
        assert doc["complete"] and doc["result"]["ops"] > 0
        for r in ranks:
            run_engine(
                ["shutdown", "--group-dir", str(group), "--rank", str(r), "--token-file", str(token_file)], timeout=30
            )
        for p, log in procs:
            assert p.wait(timeout=20) == 0, Path(log).read_text()
    finally:
        for p, _ in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    docs = {}
    for r in ranks:
        doc = json.loads((group / f"server-{r}.json").read_text())
        assert doc["complete"] is True and doc["config"]["rank"] == r
        docs[r] = doc
    return docs


def _this_machine(**kw):
    return MpiexecLauncher(cfg(hosts=["localhost"], cores_per_node=len(os.sched_getaffinity(0)), **kw))


@needs_openmpi
def test_real_openmpi_unbound(tmp_path, validate):
    launcher = _this_machine()
    docs = _run_servers(tmp_path, launcher, [(launcher.nodes()[0], 2, "none", 0)])
    assert sorted(docs) == [0, 1]
    for doc in docs.values():
        validate(doc)


@needs_openmpi
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 cores")
def test_real_openmpi_core_binding(tmp_path):
    launcher = _this_machine()
    docs = _run_servers(tmp_path, launcher, [(launcher.nodes()[0], 2, "core", 0)])
    cpusets = [docs[r]["environment"]["cpuset"] for r in (0, 1)]
    assert all(c.isdigit() for c in cpusets), cpusets  # one core each
    assert cpusets[0] != cpusets[1]


@needs_openmpi
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 cores")
def test_real_openmpi_two_nodes_on_this_machine(tmp_path):
    """hosts [localhost, localhost]: two concurrent mpiexec, one per logical
    node, each on its own half of the cores; ranks offset by first_rank."""
    cpus = sorted(os.sched_getaffinity(0))[:2]
    launcher = MpiexecLauncher(cfg(hosts=["localhost", "localhost"], cores_per_node=2))
    n0, n1 = launcher.nodes()
    assert (n0.cores, n1.cores) == ((cpus[0],), (cpus[1],))
    docs = _run_servers(tmp_path, launcher, [(n0, 1, "core", 0), (n1, 1, "none", 1)])
    assert docs[0]["environment"]["cpuset"] == str(cpus[0])
    assert docs[1]["environment"]["cpuset"] == str(cpus[1])
