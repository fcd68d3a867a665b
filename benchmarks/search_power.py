#!/usr/bin/env python3
"""The power of the --pairs sample search at 1,000 and 10,000 nodes,
through the simulator (rooftop.campaign.simulate: the campaign's own
sampling and naming on a described platform, no engine).

    .venv/bin/python benchmarks/search_power.py [--runs 100] [--runs-10k 40]
        [--node 0.7] [--link 0.5] [--sigma S] [--min-pairs K] [--only 1000] [--seed 0] [--json FILE]

Per case -- 1,000 nodes in 50 groups, 10,000 nodes in 500 groups, one
switch a group, every link as fast as a node, the plan's noise (5 % per
class; --sigma: another, every class), every node in 3 pairs
(collect.sample_min_pairs; --min-pairs: K), planned as `rooftop plan --launcher srun --cores-per-node 64
--metrics rpc --pairs sample` plans them -- it runs --runs seeded
campaigns with one node planted at --node x and as many with one group
link at --link x, and prints per case: the power to name each (with its
95 % Wilson interval), the false names per run (over both kinds of run,
and per kind), the pairs and batches of a run, the client ceiling's
planned time (the longest run) and the wall time the simulation took.
The goal (issue 45): power >= 95 % and <= 0.05 false names per run, the
search planned within an hour at 10,000 nodes and 30 minutes at 1,000.
CPU only: run it under nice on a quiet machine. Python 3.10+ with numpy
(the README's setup's .venv) and rooftop (this checkout's src/ when rooftop
is not installed; PYTHONPATH=src to run this checkout's over an installed
one)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

try:
    import rooftop  # noqa: F401  (installed: .venv/bin/python)
except ImportError:  # python3 from a checkout: its src/
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from rooftop.campaign import simulate
from rooftop.campaign.estimate import fmt_duration
from rooftop.campaign.forecast import resolve_planned

#: (nodes, groups, the goal's planned time in seconds) of each case.
CASES = [(1000, 50, 1800), (10_000, 500, 3600)]
PLAN = {"launcher.type": "srun", "launcher.cores_per_node": 64, "metrics": ["rpc"], "collect.pairs": "sample"}


def case(args: argparse.Namespace, nodes: int, groups: int, runs: int) -> dict:
    node, link, seed, sigma = args.node, args.link, args.seed, args.sigma
    more = {"collect.sample_min_pairs": args.min_pairs} if args.min_pairs else {}
    cfg, topo = resolve_planned(None, {**PLAN, **more, "launcher.nodes": nodes}, groups)
    assert topo is not None
    noise = dict.fromkeys(topo.sizes(), sigma) if sigma is not None else {}
    start = time.monotonic()
    p = simulate.power(simulate.Platform(topo, noise=noise), cfg, runs, node, link, seed)
    return {"nodes": nodes, "groups": groups, "wall_s": round(time.monotonic() - start, 1), **p.as_dict()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=100, help="runs of each planted kind at 1,000 nodes (default 100)")
    ap.add_argument("--runs-10k", type=int, default=40, help="runs of each planted kind at 10,000 nodes (default 40)")
    ap.add_argument("--node", type=float, default=simulate.NODE_FACTOR, help="the slow node's factor (0.7)")
    ap.add_argument("--link", type=float, default=simulate.LINK_FACTOR, help="the slow group link's factor (0.5)")
    ap.add_argument("--sigma", type=float, help="the noise of every class's log pair rates (default: the plan's)")
    ap.add_argument("--min-pairs", type=int, help="collect.sample_min_pairs: every node in K pairs (default 3)")
    ap.add_argument("--only", type=int, help="only the case of this many nodes")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", metavar="FILE", help="write every figure as JSON")
    args = ap.parse_args()
    out = []
    print(
        "| nodes | groups | noise | runs a kind | node found | group link found | false names a run (node runs, link runs) "
        "| pairs a run | batches | client peak planned (goal) | wall |"
    )
    print("|---:|---:|---|---:|---|---|---|---:|---:|---:|---:|")
    for nodes, groups, goal in CASES:
        if args.only and nodes != args.only:
            continue
        runs = args.runs if nodes < 10_000 else args.runs_10k
        d = case(args, nodes, groups, runs)
        out.append(d)
        cells = []
        for kind in ("node", "group link"):
            f = d["found"][kind]
            lo, hi = f["interval"]
            cells.append(f"{100 * f['power']:.0f} % ({100 * lo:.0f} to {100 * hi:.0f} %) at {f['factor']:g} x")
        by = d["false_names_per_run_by_case"]
        print(
            f"| {nodes:,} | {groups} | {', '.join(f'{c} {s:g}' for c, s in d['noise'].items())} | {runs} | {cells[0]} | {cells[1]} | {d['false_names_per_run']:.2f} "
            f"({by['node']:.2f}, {by['group link']:.2f}) | {d['pairs']:,.0f} | {d['batches']:g} | "
            f"{fmt_duration(d['planned_s'])} ({fmt_duration(goal)}) | {fmt_duration(d['wall_s'])} |",
            flush=True,
        )
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
