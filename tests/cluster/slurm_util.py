"""Helpers for the tests of Slurm and multi-host mpiexec on the emulated
cluster: why they cannot run here, Slurm's commands, process trees, and the
check that every engine ran in the namespace of the node it was placed on."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from cluster_util import _why_no_cluster

SLURM_TOOLS = ("munged", "slurmctld", "slurmd", "salloc", "srun", "sinfo", "squeue", "scontrol", "nsenter", "mpiexec")


def _why_no_slurm() -> str | None:
    why = _why_no_cluster()
    if why:
        return why
    missing = [t for t in SLURM_TOOLS if shutil.which(t) is None]
    if missing:
        return (
            f"{', '.join(missing)} not installed (apt-get install slurm-wlm munge; "
            f"'bash scripts/setup.sh --test' does it as root)"
        )
    return None


needs_slurm = pytest.mark.skipif(_why_no_slurm() is not None, reason=str(_why_no_slurm()))


def slurm_env(**extra) -> dict[str, str]:
    from rooftop.cluster import slurm

    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SRUN_", "SALLOC_"))}
    return {
        **env,
        "SLURM_CONF": str(slurm.conf_path()),
        "ROOFTOP_CORES_LOCK": os.environ.get("ROOFTOP_CORES_LOCK", "/tmp/rooftop-slurm-tests.lock"),
        **extra,
    }


def sl(*argv, timeout=30, check=True) -> subprocess.CompletedProcess:
    """A Slurm command against the emulated cluster's Slurm."""
    p = subprocess.run(
        list(argv), capture_output=True, text=True, timeout=timeout, env=slurm_env(), stdin=subprocess.DEVNULL
    )
    if check:
        assert p.returncode == 0, (argv, p.stdout, p.stderr)
    return p


def wait_for(what: str, cond, timeout: float, every: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(every)
    raise AssertionError(f"{what}: not within {timeout:g} s")


def squeue(steps: bool = False) -> list[str]:
    return sl("squeue", "-h", *(["-s"] if steps else [])).stdout.split("\n")[:-1]


def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                kids = [int(k) for k in (task / "children").read_text().split()]
            except OSError:
                continue
            out += kids
            todo += kids
    return out


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def node_processes() -> dict[str, list[str]]:
    """Commands still running in each node's namespace, but Slurm's slurmd."""
    from rooftop.cluster import net

    out = {}
    for ns in net.list_netns():
        cmds = [cmdline(p) for p in net.netns_pids(ns)]
        out[ns] = [c for c in cmds if c and not re.match(r"\S*slurmd ", c)]
    return out


def check_engines_on_their_nodes(run_dir: Path) -> int:
    """Every engine document's endpoint is on the interface and address of a
    node it was placed on (servers: the group's server nodes; clients: the
    sample's client nodes): it ran in that node's namespace. Returns the
    number of documents checked."""
    checked = 0
    for f in run_dir.rglob("*.json"):
        if not re.fullmatch(r"(server|client)-\d+\.json", f.name):
            continue
        doc = json.loads(f.read_text())
        eng = doc.get("engine") or {}
        m = re.search(r"_?s([\d-]+)x\d+" if doc["role"] == "server" else r"_c([\d-]+)x\d+", f.parent.name)
        assert m, f
        nodes = [int(n) for n in m.group(1).split("-")]
        i = int(eng["domain"].removeprefix("rooftop-p"))
        assert i in nodes, (f, eng["domain"], nodes)
        assert eng.get("ip") == f"10.231.0.{10 + i}", (f, eng)
        checked += 1
    return checked
