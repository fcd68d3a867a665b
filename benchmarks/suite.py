#!/usr/bin/env python3
"""The roofline suite of Carns et al. (CUG 2025) on an emulated cluster, from
`rooftop collect` to the report, timed per stage against what `rooftop plan`
predicted for it (issue 31: 17 nodes in at most 10 minutes; the plan within
15 % per stage at 5, 9 and 17 nodes).

    .venv/bin/python benchmarks/suite.py --nodes 17 [--groups 3] [--link-rate 1mbit]
        [--group-link-rate 333kbit] [--metrics rpc] [--json FILE] [--keep]

The suite: the server peak (one server node against every other node, 5
windows of 5 s), the client ceiling by node pairs sampled by topology class
(`--pairs sample`, one 5 s window per pair), the node-full client ceiling,
then validation over 1..4 server nodes x 1..16 client nodes (as many as the
nodes allow: servers + clients <= N, each at most N - 1), one 5 s window each, then `rooftop
model` and `rooftop report`. One server or client process per node, node
agents (engine.launch = agents), every process blocking for its completions
(engine.*_progress = block) and the links shaped low, so the 2 cores of this
machine are not what limits a rate: the emulated cluster's N nodes share
them (--cores-per-node 2), and the exclusion rule keeps a sample whose cores
were busy at most half of its round (rooftop.model.exclude.SHARED_BUSY_MAX).

Each stage's time is the wall time between the progress log's events
(progress.jsonl of the run: every measured window, stamped): the interval
up to an event counts for that event's stage; a command's start (agents,
topology) counts for its first stage and its end (the last placement's
stop, the summary) for its last. `rooftop plan` is asked first, with the
same config, node count, groups and cores, and each stage is printed with
its planned time and the ratio measured / planned. The config the suite ran
is written beside the results (suite.toml).

Needs root (`rooftop cluster up`); brings the cluster up with --nodes
nodes in --groups groups (node links at --link-rate, each group's link to
the top switch at --group-link-rate) unless --no-up, and down at the end
unless --keep. Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"


def rooftop(*args: str, timeout: float = 3600, capture: bool = True, check: bool = True) -> subprocess.CompletedProcess:
    """rooftop from this checkout (its src/ first on the path), with this
    Python (the .venv's: python3 benchmarks/suite.py from an activated
    .venv, or .venv/bin/python benchmarks/suite.py)."""
    env = dict(os.environ, PYTHONPATH=f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    p = subprocess.run(
        [sys.executable, "-m", "rooftop", *args], env=env, text=True, capture_output=capture, timeout=timeout
    )
    if check and p.returncode != 0:
        sys.exit(f"rooftop {' '.join(args)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


def suite_config(a: argparse.Namespace) -> str:
    metrics = ", ".join(f'"{m}"' for m in a.metrics.split(","))
    servers = ", ".join(str(c) for c in range(1, min(4, a.nodes - 1) + 1))
    clients = ", ".join(str(c) for c in range(1, min(16, a.nodes - 1) + 1))
    return f"""# The suite of Carns et al. (CUG 2025) as benchmarks/suite.py runs it
metrics = [{metrics}]
binding = "none"
[launcher]
type = "netns"
[engine]
launch = "agents"
server_progress = "block"
client_progress = "block"
[collect]
pairs = "sample"
duration = {a.duration}
warmup = {a.warmup}
windows = 5
pair_windows = 1
pairs_share_cores = true
servers_per_node = 1
clients_per_node = 1
[validate]
server_nodes = [{servers}]
client_nodes = [{clients}]
servers_per_node = 1
clients_per_node = 1
duration = {a.duration}
warmup = {a.warmup}
windows = 1
"""


def stage_times(progress: Path, phases: list[tuple[str, float, float]]) -> dict[str, dict[str, float]]:
    """Per phase (collect, validate: its wall start and end), seconds per
    stage from the progress log's events (see the module)."""
    events = [json.loads(line) for line in progress.read_text().splitlines() if line.strip()]
    out: dict[str, dict[str, float]] = {}
    for name, start, end in phases:
        mine = [e for e in events if start <= e["t"] <= end and e.get("stage")]
        stages: dict[str, float] = {}
        last = start
        for e in mine:
            stages[e["stage"]] = stages.get(e["stage"], 0.0) + e["t"] - last
            last = e["t"]
        if mine:
            stages[mine[-1]["stage"]] += end - last
        out[name] = stages
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=17)
    ap.add_argument("--groups", type=int, default=3)
    ap.add_argument("--link-rate", default="1mbit")
    ap.add_argument("--group-link-rate", default="333kbit")
    ap.add_argument("--metrics", default="rpc")
    ap.add_argument("--duration", type=float, default=5.0)
    ap.add_argument("--warmup", type=float, default=0.5)
    ap.add_argument("--results", help="results folder (default: a new temporary one)")
    ap.add_argument("--json", help="write the table and every figure here")
    ap.add_argument("--no-up", action="store_true", help="use the emulated cluster already up")
    ap.add_argument("--keep", action="store_true", help="leave the emulated cluster up")
    a = ap.parse_args()
    res = Path(a.results or tempfile.mkdtemp(prefix="rooftop-suite-"))
    res.mkdir(parents=True, exist_ok=True)
    conf = res / "suite.toml"
    conf.write_text(suite_config(a))
    shape = ["--groups", str(a.groups), "--cores-per-node", "2"]
    if not a.no_up:
        rooftop("cluster", "down", timeout=300, check=False)
        up = ["--nodes", str(a.nodes), *shape, "--link-rate", a.link_rate, "--group-link-rate", a.group_link_rate]
        rooftop("cluster", "up", *up, timeout=600)
    try:
        plan = json.loads(rooftop("plan", "--config", str(conf), "--nodes", str(a.nodes), *shape, "--json").stdout)
        walls: dict[str, float] = {}
        phases = []
        t0 = time.time()
        run = rooftop("collect", "--config", str(conf), "--results", str(res)).stdout.strip().splitlines()[-1]
        t1 = time.time()
        rooftop("validate", run, "--results", str(res))
        t2 = time.time()
        model = json.loads(rooftop("model", run, "--results", str(res), "--json").stdout)
        rooftop("report", run, "--results", str(res))
        t3 = time.time()
        phases = [("collect", t0, t1), ("validate", t1, t2)]
        walls = {"collect": t1 - t0, "validate": t2 - t1, "model and report": t3 - t2, "total": t3 - t0}
    finally:
        if not a.keep and not a.no_up:
            rooftop("cluster", "down", timeout=300)
    measured = stage_times(res / run / "progress.jsonl", phases)
    rows = []
    for phase, stages in measured.items():
        planned = plan["phases"][phase]["stages"]
        for st, secs in stages.items():
            want = (planned.get(st) or {}).get("total_s")
            rows.append((phase, st, secs, want))
        rows.append((phase, "(all)", walls[phase], plan["phases"][phase]["total_s"]))
    rows.append(("-", "model and report", walls["model and report"], None))
    rows.append(("-", "total", walls["total"], plan["total_s"]))
    print(f"{a.nodes} nodes, {a.groups} groups, links {a.link_rate} / {a.group_link_rate}, metrics {a.metrics}")
    print(f"{'phase':<10} {'stage':<18} {'measured s':>11} {'planned s':>10} {'ratio':>6}")
    for phase, st, secs, want in rows:
        ratio = f"{secs / want:.2f}" if want else "-"
        print(f"{phase:<10} {st:<18} {secs:>11.1f} {want or 0:>10.1f} {ratio:>6}")
    excluded = {m["metric"]: m.get("core_shared") for m in model.get("metrics", [])}
    print(
        f"run {run} in {res}; samples left out for core sharing: "
        + ", ".join(f"{k}: {len((v or {}).get('excluded') or [])}" for k, v in excluded.items())
    )
    if a.json:
        Path(a.json).write_text(
            json.dumps(
                {
                    "args": vars(a),
                    "run": run,
                    "results": str(res),
                    "rows": rows,
                    "walls": walls,
                    "plan": plan,
                    "config": conf.read_text(),
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
