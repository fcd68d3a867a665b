"""Prints the table of docs/topology.md ("The search's power"): what
`rooftop plan --pairs sample --json` quotes for the search on 17, 128,
1,000 and 10,000 nodes in groups (rooftop.campaign.simulate: a node at
0.7 x, a group link at 0.5 x, the plan's noise), with the pairs a run
draws, in how many batches, and the client ceiling's planned time (its
pairs in their rounds, priced as the plan prices them; the longest run).

    PYTHONPATH=src python scripts/power_table.py

tests/campaign/test_search_power.py checks the page holds what it prints,
so the page follows the sampling and the naming when they change."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable

#: (nodes, groups) of each row.
CASES = [(17, 3), (128, 8), (1000, 50), (10_000, 500)]
#: The suite's options, beside --nodes and --groups.
SUITE = ["--launcher", "srun", "--cores-per-node", "64", "--metrics", "rpc", "--pairs", "sample"]


def argv(nodes: int, groups: int) -> list[str]:
    """The plan command of one row (without 'rooftop')."""
    return ["plan", "--nodes", str(nodes), "--groups", str(groups), *SUITE, "--json"]


def _pct(share: float) -> str:
    return f"{100 * share:.0f} %"


def table(plan: Callable[[list[str]], dict]) -> str:
    """The markdown table; plan(argv) gives `rooftop <argv>` as a dict."""
    from rooftop.campaign.estimate import fmt_duration

    lines = [
        "| nodes | groups | pairs a run draws | batches | client peak planned | runs a case | node at 0.7 x found "
        "| group link at 0.5 x found | false names a run |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for nodes, groups in CASES:
        p = plan(argv(nodes, groups))["power"]
        found = p["found"]
        cells = []
        for kind in ("node", "group link"):
            f = found[kind]
            lo, hi = f["interval"]
            cells.append(f"{_pct(f['power'])} ({_pct(lo)} to {_pct(hi)})")
        lines.append(
            f"| {nodes:,} | {groups} | {p['pairs']:,.0f} | {p['batches']:g} | {fmt_duration(p['planned_s'])} | "
            f"{found['node']['runs']} | {cells[0]} | {cells[1]} | {p['false_names_per_run']:.2f} |"
        )
    return "\n".join(lines)


def _run(args: list[str]) -> dict:
    p = subprocess.run([sys.executable, "-m", "rooftop", *args], capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise SystemExit(f"rooftop {' '.join(args)}: exit {p.returncode}\n{p.stderr}")
    return json.loads(p.stdout)


if __name__ == "__main__":
    print(table(_run))
