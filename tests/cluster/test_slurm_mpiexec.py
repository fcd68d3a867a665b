"""Real Slurm and real multi-host mpiexec on the emulated cluster (root, with
slurm-wlm, munge and Open MPI installed): the README's cluster commands run
as written, each engine in the namespace of the node it was placed on.

One 3-node cluster with Slurm for the module ('cluster up --slurm'); short
samples (0.3 s, 2 per measurement) keep it to about two minutes here."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from campaign_util import counting_engine, execs, samples
from cluster_util import cluster, cluster_up, rooftop, status_json
from slurm_util import (
    check_engines_on_their_nodes,
    cmdline,
    descendants,
    needs_slurm,
    node_processes,
    sl,
    slurm_env,
    squeue,
    wait_for,
)

pytestmark = needs_slurm

ROOFTOP = str(Path(sys.executable).with_name("rooftop"))
SHORT = ["--metrics", "rpc", "--duration", "0.3", "--warmup", "0.1", "--windows", "2"]
HOSTS = "launcher.hosts=rooftop-n0,rooftop-n1,rooftop-n2"


@pytest.fixture(scope="module")
def slurm3():
    """3 nodes, links of 200 Mbit/s, Slurm on them (nodes 0 and 2 share a core)."""
    with cluster_up("--nodes", "3", "--link-rate", "200mbit", "--slurm"):
        yield status_json()


def in_allocation(*argv, timeout=300) -> subprocess.CompletedProcess:
    """salloc -N 3 ARGV, as the README writes it (SLURM_CONF set)."""
    return subprocess.run(
        ["salloc", "-N", "3", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=slurm_env(),
        stdin=subprocess.DEVNULL,
    )


def run_id(p: subprocess.CompletedProcess) -> str:
    assert p.returncode == 0, p.stderr[-3000:]
    return p.stdout.strip().splitlines()[-1]


def test_sinfo_shows_every_node_idle_in_status(slurm3):
    assert slurm3["slurm"] and not slurm3["problems"], slurm3["problems"]
    text = cluster("status").stdout
    assert "SLURM_CONF=" in text and text.count(" idle ") == 3, text
    conf = Path(slurm3["slurm"]["conf"]).read_text()
    for n in slurm3["nodes"]:
        assert f"NodeName={n['netns']} NodeAddr={n['address']} CPUs={len(n['cores'])} " in conf


def test_salloc_srun_collect_and_validate(slurm3, tmp_path):
    res = tmp_path / "res"
    p = in_allocation(ROOFTOP, "collect", "--launcher", "srun", "--fabric", "ofi+tcp", *SHORT, "--results", str(res))
    run = run_id(p)
    v = in_allocation(
        ROOFTOP, "validate", run, "--results", str(res), "--duration", "0.3", "--warmup", "0.1", "--windows", "1"
    )
    assert v.returncode == 0, v.stderr[-3000:]
    rows = samples(res, run)
    assert rows and all(r["status"] == "ok" for r in rows), [r["error"] for r in rows if r["error"]]
    assert {r["stage"] for r in rows} >= {"server_peak", "client_peak", "validate"}
    cfg = json.loads((res / run / "config.json").read_text())
    assert cfg["launcher"]["type"] == "srun" and cfg["fabric"]["domain"] is None
    assert [(n["host"], n["address"], n["emulation"]["shared_with"]) for n in cfg["nodes"]] == [
        ("rooftop-n0", "10.231.0.10", [2]),
        ("rooftop-n1", "10.231.0.11", []),
        ("rooftop-n2", "10.231.0.12", [0]),
    ]
    assert check_engines_on_their_nodes(res / run) >= 10
    assert squeue() == []


def test_mpiexec_across_nodes_collect_and_validate(slurm3, tmp_path):
    res = tmp_path / "res"
    p = rooftop(
        "collect",
        "--launcher",
        "mpiexec",
        "--set",
        HOSTS,
        "--fabric",
        "ofi+tcp",
        *SHORT,
        "--results",
        str(res),
        "-v",
        env=slurm_env(),
    )
    run = p.stdout.strip().splitlines()[-1]
    assert "plm_rsh_agent" in p.stderr  # -v logs each mpiexec line
    rooftop(
        "validate",
        run,
        "--results",
        str(res),
        "--duration",
        "0.3",
        "--warmup",
        "0.1",
        "--windows",
        "1",
        env=slurm_env(),
    )
    rows = samples(res, run)
    assert rows and all(r["status"] == "ok" for r in rows), [r["error"] for r in rows if r["error"]]
    cfg = json.loads((res / run / "config.json").read_text())
    assert [(n["host"], n["address"]) for n in cfg["nodes"]] == [
        ("rooftop-n0", "10.231.0.10"),
        ("rooftop-n1", "10.231.0.11"),
        ("rooftop-n2", "10.231.0.12"),
    ]
    assert check_engines_on_their_nodes(res / run) >= 10
    assert not any(node_processes().values()), node_processes()


@pytest.mark.parametrize("launcher", ["srun", "mpiexec"])
def test_agents_one_per_node_and_no_other_engine_launch(slurm3, tmp_path, launcher):
    """engine.launch = agents: one srun step (in salloc) or one mpiexec
    starts an agent on every node for the whole campaign; every engine runs
    in its node's namespace, and nothing else execs the engine."""
    wrapper, log = counting_engine(tmp_path)
    res = tmp_path / "res"
    args = ["collect", "--launcher", launcher, "--fabric", "ofi+tcp", *SHORT, "--results", str(res)]
    args += ["--set", "engine.launch=agents", *(["--set", HOSTS] if launcher == "mpiexec" else [])]
    env = slurm_env(ROOFTOP_ENGINE=str(wrapper))
    if launcher == "srun":
        p = subprocess.run(
            ["salloc", "-N", "3", ROOFTOP, *args],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
            stdin=subprocess.DEVNULL,
        )
        run = run_id(p)
    else:
        run = rooftop(*args, env=env).stdout.strip().splitlines()[-1]
    rows = samples(res, run)
    assert rows and all(r["status"] == "ok" for r in rows), [r["error"] for r in rows if r["error"]]
    assert execs(log) == Counter({"agent": 3, "version": 1}), execs(log)
    assert check_engines_on_their_nodes(res / run) >= 6
    (launch_log,) = (res / run).glob("agents/*/launch-*.log")  # one launcher line for every agent
    docs = [json.loads(f.read_text()) for f in sorted((res / run).glob("agents/*/node-*/agent.json"))]
    assert [d["result"]["node"] for d in docs] == [0, 1, 2] and all(d["result"]["relative_cpus"] for d in docs)
    assert all(d["result"]["started"] > 0 and "asked it to stop" in d["result"]["stop_reason"] for d in docs), docs
    # srun's one line gives each agent room for its children's titles; mpiexec's,
    # which repeats the agent's line per node, does not: each runs itself again.
    assert all(d["result"]["ran_again"] is (launcher == "mpiexec") for d in docs), docs
    wait_for("no process left in the nodes", lambda: not any(node_processes().values()), 15)
    assert squeue(steps=True) == []


def interrupt_campaign(argv: list[str], started, tmp_path: Path) -> str:
    """Starts argv (a campaign, possibly under salloc), waits until started()
    says engines run, sends SIGINT to the rooftop process itself (as Ctrl-C
    does), and returns its stderr."""
    err = tmp_path / "stderr"
    with open(err, "w") as f:
        top = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=f, env=slurm_env(), stdin=subprocess.DEVNULL)
    try:
        wait_for("engines started", started, 120)
        campaign = [p for p in [top.pid] + descendants(top.pid) if " collect " in cmdline(p) and "python" in cmdline(p)]
        assert campaign, [cmdline(p) for p in descendants(top.pid)]
        time.sleep(0.5)
        os.kill(campaign[0], signal.SIGINT)
        top.wait(timeout=90)
    finally:
        if top.poll() is None:
            top.kill()
            top.wait(timeout=30)
    return err.read_text()


def test_ctrl_c_cancels_the_slurm_steps_and_leaves_no_process(slurm3, tmp_path):
    res = tmp_path / "res"
    steps_after = tmp_path / "steps-after"
    # The campaign runs under a shell inside the allocation, which records
    # the job's steps once the campaign has exited on Ctrl-C (waiting up to
    # 10 s for Slurm to retire them) before salloc ends the allocation.
    script = (
        f"{ROOFTOP} collect --launcher srun --fabric ofi+tcp --metrics rpc,bw --duration 3 "
        f"--windows 3 --results {res}; "
        'for i in $(seq 50); do s=$(squeue -h -s -j $SLURM_JOB_ID); [ -z "$s" ] && break; '
        f'sleep 0.2; done; echo "$s" > {steps_after}'
    )
    stderr = interrupt_campaign(["salloc", "-N", "3", "sh", "-c", script], lambda: squeue(steps=True), tmp_path)
    assert steps_after.read_text().strip() == "", (steps_after.read_text(), stderr[-2000:])
    assert squeue() == [] and squeue(steps=True) == []
    # no engine was left; slurmstepd finishes reporting to slurmctld, then exits
    assert not any("rooftop-engine" in c for cs in node_processes().values() for c in cs)
    wait_for("no process left in the nodes", lambda: not any(node_processes().values()), 15)
    runs = json.loads(rooftop("runs", "--results", str(res), "--json").stdout)
    assert [r["status"] for r in runs] == ["interrupted"], (runs, stderr[-2000:])


def test_ctrl_c_of_a_multi_host_mpiexec_campaign_leaves_no_process(slurm3, tmp_path):
    res = tmp_path / "res"
    interrupt_campaign(
        [
            ROOFTOP,
            "collect",
            "--launcher",
            "mpiexec",
            "--set",
            HOSTS,
            "--metrics",
            "rpc",
            "--duration",
            "3",
            "--windows",
            "3",
            "--results",
            str(res),
        ],
        lambda: any("rooftop-engine" in " ".join(c) for c in node_processes().values()),
        tmp_path,
    )
    wait_for("no process left in the nodes", lambda: not any(node_processes().values()), 15)
    assert not [p for p in descendants(1) if "orted" in cmdline(p)]


def test_a_drained_node_is_refused_before_anything_starts(slurm3, tmp_path):
    res = tmp_path / "res"
    script = (
        "scontrol update nodename=rooftop-n2 state=drain reason=rooftop-test && "
        f"{ROOFTOP} collect --launcher srun --fabric ofi+tcp --metrics rpc --results {res}"
    )
    try:
        p = in_allocation("sh", "-c", script, timeout=120)
    finally:
        sl("scontrol", "update", "nodename=rooftop-n2", "state=resume")
    assert p.returncode == 2, p.stderr[-2000:]
    assert "Slurm node rooftop-n2 is" in p.stderr and "DRAIN" in p.stderr and "rooftop-test" in p.stderr, p.stderr[
        -2000:
    ]
    assert not list(res.glob("*/groups/*")) and not list(res.glob("*/raw/*"))
    wait_for("rooftop-n2 idle again", lambda: "idle" in sl("sinfo", "-h", "-n", "rooftop-n2", "-o", "%t").stdout, 30)


def test_hostlist_fallback_expands_as_scontrol_does(slurm3):
    from rooftop.launchers.hostlist import expand

    for expr in (
        "nid[0001-0003,0007],login1",
        "a[1-2]b[3-4]",
        "n[8-10]",
        "x[01-100]",
        "c1 c2",
        "n[1,3-4],m5,n[1-2]",
        "rooftop-n[0-2]",
        "h[009-011]",
        "n[1-2]-ib[3-4]",
    ):
        assert expand(expr) == sl("scontrol", "show", "hostnames", expr).stdout.split(), expr
    # Slurm 22.05 refuses text after the last bracket group; the fallback keeps it.
    p = sl("scontrol", "show", "hostnames", "n[1-2]-ib", check=False)
    assert p.stdout == "" and "Invalid hostlist" in p.stderr
    assert expand("n[1-2]-ib") == ["n1-ib", "n2-ib"]


# It restarts the module's Slurm and munge daemons: they outlive it, as slurm3's.
@pytest.mark.keeps_processes
def test_up_slurm_again_is_safe_and_restarts_a_dead_slurmd(slurm3):
    from rooftop.cluster import slurm

    p = cluster("up", "--nodes", "3", "--link-rate", "200mbit", "--slurm")
    assert "already up" in p.stderr
    before = slurm.processes()
    (victim,) = [pid for pid, name in before.items() if name == "slurmd" and "rooftop-n1" in cmdline(pid)]
    os.kill(victim, signal.SIGKILL)
    wait_for("slurmd gone", lambda: victim not in slurm.processes(), 10)
    p = cluster("up", "--nodes", "3", "--link-rate", "200mbit", "--slurm")
    assert "restarting" in p.stderr and "the slurmd of rooftop-n1 is not running" in p.stderr
    assert sorted(slurm.processes().values()) == ["munged", "slurmctld", "slurmd", "slurmd", "slurmd"]
    assert not status_json()["problems"]


def test_reframe_check_through_the_slurm_scheduler(slurm3, tmp_path):
    """ReFrame submits rooftop's check to the emulated Slurm with sbatch; rooftop
    runs inside the 3-node allocation with --launcher srun (from the partition)."""
    pytest.importorskip("reframe")
    bin_dir = Path(sys.executable).parent
    check = subprocess.run(
        [str(bin_dir / "rooftop-reframe-check")], capture_output=True, text=True, check=True
    ).stdout.strip()
    config = Path(__file__).resolve().parents[2] / "examples" / "reframe" / "emulated-slurm.py"
    report = tmp_path / "report.json"
    p = subprocess.run(
        [
            str(bin_dir / "reframe"),
            "-C",
            str(config),
            "-c",
            check,
            "-r",
            "--nocolor",
            "--prefix",
            str(tmp_path / "rfm"),
            "--report-file",
            str(report),
            "-S",
            "num_nodes=3",
            "-S",
            "metrics=rpc",
            "-S",
            "duration=0.3",
            "-S",
            "samples=2",
            "-S",
            f"rooftop={bin_dir / 'rooftop'}",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=900,
        env=dict(slurm_env(), RFM_LOG_FILE=str(tmp_path / "rfm.log")),
    )
    case = json.loads(report.read_text())["runs"][0]["testcases"][0]
    assert p.returncode == 0 and case["result"] == "pass", p.stdout[-3000:]
    assert case["scheduler"] == "squeue" and case["jobid"]
    out = Path(case["outputdir"])
    export = json.loads((out / "export.json").read_text())
    assert export["config"]["launcher"]["type"] == "srun"
    assert [n["host"] for n in export["config"]["nodes"]] == ["rooftop-n0", "rooftop-n1", "rooftop-n2"]
    perf = {k.split(":")[-1]: v for k, v in case["perfvalues"].items()}
    assert perf["rpc_server_median"][0] > 0 and perf["rpc_server_median"][4] == "ops/s"
    assert squeue() == []
