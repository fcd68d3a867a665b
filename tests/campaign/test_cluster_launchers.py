"""Campaigns through cluster launchers: srun command lines checked exactly
(no Slurm here), mpiexec run for real with the installed Open MPI."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3

import pytest
from campaign_util import engine_processes, rooftop, samples

from rooftop.engine.base import engine_path

SRUN_ENV = dict(SLURM_JOB_ID="42", SLURM_JOB_NODELIST="nid[001-002]", SLURM_CPUS_ON_NODE="4")


def test_srun_command_lines_exactly(tmp_path):
    env = dict(os.environ, **SRUN_ENV)
    res = tmp_path / "res"
    out = rooftop(
        "collect",
        "--launcher",
        "srun",
        "--dry-run",
        "--set",
        "engine.launch=per-placement",
        "--set",
        "fabric.domain=hsn0",
        "--metrics",
        "rpc",
        "--windows",
        "2",
        "--duration",
        "3",
        "--warmup",
        "0.5",
        "--set",
        "collect.client_peak=false",
        "--set",
        "collect.client_node=false",
        "--results",
        str(res),
        env=env,
    ).stdout
    e = engine_path()
    g = f"{res}/<run>/groups/<group>"
    srun = "srun --nodes=1 --ntasks=4 --nodelist={} --exact --cpus-per-task=1 --cpu-bind=cores --kill-on-bad-exit=1"
    one = srun.replace("--ntasks=4", "--ntasks=1")
    machine = f"machine --fabric ofi+tcp --domain hsn0 --output '{res}/<run>/machine/node-{{rank}}.json'"
    assert out.splitlines() == [
        # The machine read once per node (issue 43), a step each, before the first placement.
        "# the machine's record, once per node:",
        f"{one.format('nid001')} {e} {machine} --rank 0 --rank-from-env",
        f"{one.format('nid002')} {e} {machine} --rank 1 --rank-from-env",
        "# servers on node(s) [0], 4 per node",
        f"{srun.format('nid001')} {e} serve --fabric ofi+tcp --domain hsn0 --group-dir '{g}' "
        f"--token-file '{g}/token' --progress spindown --max-size 4KiB "
        f"--lease '{g}/lease' --lease-timeout 10.0 --output '{g}/server-{{rank}}.json' "
        f"--rank 0 --rank-from-env",
        "# server_peak rpc: clients on node(s) [1], 2 sample(s) in one round",
        f"{srun.format('nid002')} {e} load --fabric ofi+tcp --domain hsn0 --group-dir '{g}' "
        f"--nservers 4 --duration 3.0 --windows 2 --warmup 0.5 --barrier 4 --barrier-id '<random>' "
        f"--barrier-timeout 60.0 --settle 0.1 --slices 20 --progress busy --timeout 10.0 "
        f"--lease '{g}/lease' --lease-timeout 10.0 "
        f"--output '{res}/<run>/raw/server_peak_rpc_s0x4_c1x4/client-{{rank}}.json' "
        f"--window-log '{res}/<run>/raw/server_peak_rpc_s0x4_c1x4/windows-{{rank}}.jsonl' --op noop "
        f"--rank 0 --rank-from-env",
        f"# then: rooftop-engine shutdown --token-file '{g}/token' for each server",
        "#   stage        placements  rounds  windows  launches  measuring  overhead  time",
        "#   server_peak           1       1        2         2      6.0 s     3.8 s  10 s",
        "#   total                 1       1        2         2      6.0 s     3.8 s  10 s",
        "# expected run time: 10 s (1 placement, 1 client round, 2 windows: measuring 6.0 s, "
        "warmups 0.6 s, overhead 3.8 s at 2.3 s per placement and 1.5 s per round)",
    ]
    # Outside an allocation the srun launcher says so.
    env.pop("SLURM_JOB_NODELIST")
    env.pop("SLURM_JOB_ID")
    p = rooftop(
        "collect",
        "--launcher",
        "srun",
        "--dry-run",
        "--set",
        "fabric.domain=hsn0",
        "--results",
        str(res),
        env=env,
        check=False,
    )
    assert p.returncode == 2 and "Slurm allocation" in p.stderr


def test_srun_agents_command_lines_exactly(tmp_path):
    """engine.launch = agents: one srun step starts every node's agent (a
    task per node, all of its CPUs, --cpus of each process a position in
    them); the engines' own command lines carry their rank and cores."""
    res = tmp_path / "res"
    out = rooftop(
        "collect",
        "--launcher",
        "srun",
        "--dry-run",
        "--set",
        "engine.launch=agents",
        "--set",
        "fabric.domain=hsn0",
        "--metrics",
        "rpc",
        "--windows",
        "2",
        "--set",
        "collect.servers_per_node=2",
        "--set",
        "collect.clients_per_node=1",
        "--set",
        "collect.client_peak=false",
        "--set",
        "collect.client_node=false",
        "--results",
        str(res),
        env=dict(os.environ, **SRUN_ENV),
    ).stdout.splitlines()
    e, a, g = engine_path(), f"{res}/<run>/agents/<session>", f"{res}/<run>/groups/<group>"
    assert out[:3] == [
        "# engine.launch = agents: an agent per node for the whole campaign, started once:",
        "srun --nodes=2 --ntasks=2 --ntasks-per-node=1 --nodelist=nid001,nid002 --overlap --cpu-bind=none "
        f"{e} agent --dir '{a}' --lease '{a}/lease' --lease-timeout 12 --beat 1 --grace 5 "
        f"--output '{a}/node-{{rank}}/agent.json' --preinit ofi+tcp \"$(printf '%8192s' '')\" "
        "--rank 0 --rank-from-env --relative-cpus",
        "# each command below is started by the agent of its node (forked: no launch of its own)",
    ]
    serve = [l for l in out if l.startswith(f"{e} serve ")]
    assert [l.split(" --output ")[1] for l in serve] == [
        f"'{g}/server-0.json' --rank 0 --cpus 0",
        f"'{g}/server-1.json' --rank 1 --cpus 1",
    ]
    load = [l for l in out if l.startswith(f"{e} load ")]
    assert len(load) == 1 and load[0].endswith(" --op noop --rank 0 --cpus 0"), load
    assert not [l for l in out if l.startswith("srun") and "agent" not in l]
    # Priced as agents: their start once, a launch per node for the campaign, none per stage.
    assert out[-6:-1] == [
        "# then: SIGTERM to each server, from the agent of its node",
        "#   stage                placements  rounds  windows  launches  measuring  overhead  time",
        "#   server_peak                   1       1        2         -       10 s     0.6 s  12 s",
        "#   agents launch, once                                                       0.4 s",
        "#   total                         1       1        2         2       10 s     1.0 s  12 s",
    ]
    assert out[-1].endswith("overhead 1.0 s at 0.2 s per placement and 0.4 s per round)")


@pytest.mark.skipif(not shutil.which("mpiexec"), reason="no mpiexec (Open MPI or MPICH) installed")
@pytest.mark.parametrize("launch", ["per-placement", "agents"])
def test_mpiexec_campaign_runs_for_real(tmp_path, launch):
    """Per placement, each engine takes its rank from mpiexec; with agents,
    one mpiexec starts both nodes' agents, which give each engine its rank."""
    res = tmp_path / "res"
    p = rooftop(
        "collect",
        "--launcher",
        "mpiexec",
        "--set",
        f"engine.launch={launch}",
        "--set",
        'launcher.hosts=["localhost","localhost"]',
        "--metrics",
        "rpc",
        "--duration",
        "0.3",
        "--warmup",
        "0.1",
        "--windows",
        "2",
        "--set",
        "collect.client_peak=false",
        "--set",
        "collect.client_node=false",
        "--results",
        str(res),
        "-v",
    )
    run = p.stdout.strip().splitlines()[-1]
    assert "mpiexec" in p.stderr  # -v logs every command started
    rows = samples(res, run)
    assert len(rows) == 2 and all(r["status"] == "ok" and r["aggregate"] > 0 for r in rows), rows
    servers = list(res.glob(f"{run}/groups/*/server-0.json"))
    assert servers
    doc = json.loads(servers[0].read_text())
    assert doc["complete"] and doc["config"]["rank_from_env"] is (launch == "per-placement")
    agents = [json.loads(f.read_text()) for f in res.glob(f"{run}/agents/*/node-*/agent.json")]
    assert [a["config"]["rank"] for a in sorted(agents, key=lambda a: a["config"]["rank"])] == (
        [0, 1] if launch == "agents" else []
    )
    # Per placement: stopped with the campaign's token; agents: by its agent's SIGTERM.
    assert doc["result"]["stop_reason"] == ("signal SIGTERM" if launch == "agents" else "shutdown rpc")
    cfg = json.loads(
        sqlite3.connect(res / "rooftop.db").execute("SELECT config FROM runs WHERE id=?", (run,)).fetchone()[0]
    )
    assert cfg["launcher"]["type"] == "mpiexec" and len(cfg["nodes"]) == 2
    assert not engine_processes(str(res))
