"""Prints the plan table of docs/measurement.md ("Planning a campaign") from
`rooftop plan --json`: Carns et al.'s suite (server peak 5 x 5 s windows,
client ceilings, validation 1..4 server nodes x 1..16 client nodes with one
5 s sample each, rpc) on 17, 128 and 1,000 nodes, serial and rounds (and
sample, its first batch, on 1,000 nodes in 50 groups), priced under
engine.launch's default (agents), with the launches a launch per placement
would take beside them (engine.launch = per-placement).

    PYTHONPATH=src python scripts/plan_table.py

tests/campaign/test_plan.py checks the page holds what it prints, so the
page follows the constants (rooftop.campaign.costs) when they change."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable

#: (nodes, pair strategy, topology groups, one window per pair) of each row.
CASES = [(17, "serial", None, False), (17, "rounds", None, False), (17, "sample", 3, True)]
CASES += [(128, "serial", None, False), (128, "rounds", None, False), (128, "sample", 8, True)]
CASES += [(1000, "serial", 50, False), (1000, "rounds", 50, False), (1000, "sample", 50, False)]
CASES += [(1000, "sample", 50, True)]
#: The suite's options, beside --nodes, --pairs and --groups.
SUITE = ["--launcher", "srun", "--cores-per-node", "64", "--metrics", "rpc"]
SUITE += ["--client-nodes", ",".join(map(str, range(1, 17)))]


def argv(nodes: int, pairs: str, groups: int | None, one: bool = False) -> list[str]:
    """The plan command of one row (without 'rooftop'); one: a window per
    pair (collect.pair_windows = 1, as Carns et al. measured their pairs)."""
    out = ["plan", "--nodes", str(nodes), *SUITE, "--pairs", pairs, *(["--groups", str(groups)] if groups else [])]
    return out + (["--set", "collect.pair_windows=1"] if one else [])


def table(plan: Callable[[list[str]], dict]) -> str:
    """The markdown table; plan(argv) gives `rooftop <argv> --json` as a dict."""
    from rooftop.campaign.estimate import fmt_duration

    lines = [
        "| nodes | `--pairs` | pairs in rounds | server peak | client peak | client node | validate | total | launches "
        "| launches per placement |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for nodes, pairs, groups, one in CASES:
        d = plan([*argv(nodes, pairs, groups, one), "--json"])
        each = plan([*argv(nodes, pairs, groups, one), "--set", "engine.launch=per-placement", "--json"])["launches"]
        c, v = d["phases"]["collect"], d["phases"]["validate"]
        stage = {k: fmt_duration(s["total_s"]) for k, s in c["stages"].items()}
        p = c["pairs"]
        lines.append(
            f"| {nodes:,} | {pairs}{', 1 window a pair' if one else ''}{f' ({groups} groups)' if groups else ''} | "
            f"{p['pairs']:,} in {p['rounds']:,} | {stage['server_peak']} | "
            f"{stage['client_peak']} | {stage['client_node']} | {fmt_duration(v['total_s'])} | "
            f"{fmt_duration(d['total_s'])} | {d['launches']:,} | {each:,} |"
        )
    return "\n".join(lines)


def _run(args: list[str]) -> dict:
    p = subprocess.run([sys.executable, "-m", "rooftop", *args], capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise SystemExit(f"rooftop {' '.join(args)}: exit {p.returncode}\n{p.stderr}")
    return json.loads(p.stdout)


if __name__ == "__main__":
    print(table(_run))
