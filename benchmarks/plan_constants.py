#!/usr/bin/env python3
"""The fixed costs `rooftop plan` and `rooftop collect --dry-run` price a
campaign with (rooftop.campaign.costs), measured again on this machine.

    python3 benchmarks/plan_constants.py [--repeats 5] [--windows 3]
        [--duration 1] [--warmup 0.5] [--metrics rpc,bw]
        [--launch per-placement|agents] [--json FILE]

Each repeat runs, per metric, one placement as a campaign runs it -- the
local launcher, 2 logical nodes, one server process on node 0 and one
client process on node 1 -- through the campaign's own pieces (its Runner:
Servers.start, run_round, Servers.stop), and takes from their clocks and
the client's window log (load --window-log: when its first window started,
when each ended):

  placement start   Servers.start(): launch until every address file is published
  placement stop    Servers.stop(): shutdown RPCs, then every server reaped
  round start       the round's launch until its first window starts, less
                    warmup and engine.settle (client start-up and connection)
  round end         the last window's end until run_round() returned (the
                    client's exit, its documents read, its rows stored)
  window overhead   (last window's end - first window's start) / windows - duration
  agents start      --launch agents: the node agents launched until each is
                    ready, before the placement (once per campaign)

under the launch mode --launch names (engine.launch; default per-placement,
the mode its constants were measured in), and prints each one's median,
min and max per metric and over all, beside the value that mode's entry of
the table holds. A round measured again (invalid) is reported
and left out. It takes this machine's cores lock as a campaign does, and
stops every process it started on any exit. Measure on a quiet machine:
the constants are wall-clock times. Python 3.10+ and rooftop (this
checkout's src/ when rooftop is not installed)."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

try:
    import rooftop  # noqa: F401  (installed: .venv/bin/python)
except ImportError:  # python3 from a checkout: its src/
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from rooftop.campaign import Runner, client_rounds, plan_collect
from rooftop.campaign.costs import LAUNCH_MODES, PER_PLACEMENT, Constant, LaunchMode
from rooftop.campaign.estimate import round_start_s
from rooftop.config.resolve import build
from rooftop.engine import enginedoc
from rooftop.launchers import make_launcher
from rooftop.locks import CampaignLocks
from rooftop.store.db import Store

#: The figures measured, in order.
FIGURES = ("placement start", "placement stop", "round start", "round end", "window overhead", "agents start")


def table(mode: LaunchMode) -> dict[str, Constant | None]:
    """What each measured figure is in the launch mode's entry of the table
    (rooftop.campaign.costs; None: the mode has no such cost)."""
    return dict(
        zip(
            FIGURES,
            (mode.placement_start, mode.placement_stop, mode.round_start, mode.round_end, mode.window, mode.campaign),
        )
    )


def window_log(folder: Path) -> tuple[float, list[float]]:
    """(first window's start, each window's end) from rank 0's window log."""
    start, ends = None, []
    for ev in enginedoc.window_log(enginedoc.window_log_path(folder, 0)):
        if ev["event"] == "measure":
            start = ev["start_s"]
        elif ev["event"] == "window":
            ends.append(ev["end_s"])
    if start is None or not ends:
        raise RuntimeError(f"{folder}: the window log has no measure or window event")
    return start, ends


def one_placement(store: Store, metric: str, args) -> dict[str, list[float]]:
    """One placement of one server and one client, one round per measurement."""
    cfg = build(
        None,
        {
            "launcher.nodes": 2,
            "metrics": [metric],
            "collect.windows": args.windows,
            "collect.duration": args.duration,
            "collect.warmup": args.warmup,
            "collect.client_peak": False,
            "collect.client_node": False,
            "collect.servers_per_node": 1,
            "collect.clients_per_node": 1,
            "engine.launch": args.launch,
        },
    )
    run_id = store.new_run(cfg, {"benchmark": "plan_constants"})
    runner = Runner(cfg, store, run_id, make_launcher(cfg["launcher"]))
    before = round_start_s(cfg, cfg["collect"]["warmup"], nclients=1)  # one client: no barrier, no settle
    out: dict[str, list[float]] = {k: [] for k in FIGURES}
    (placement,) = plan_collect(cfg)
    try:
        if runner.agents is not None:  # started once per campaign, before its first placement
            t = time.monotonic()
            runner.agents.start()
            out["agents start"].append(time.monotonic() - t)
        t = time.monotonic()
        group = runner.servers.start(placement)
        out["placement start"].append(time.monotonic() - t)
        try:
            for rnd in client_rounds(placement.measurements):
                launched = time.time()
                rows = runner.run_round(group, rnd)
                returned = time.time()
                if any(r["status"] != "ok" or r.get("attempt", 1) != 1 for r in rows):
                    print(f"  {metric}: a round was measured again or not ok: left out", file=sys.stderr)
                    continue
                start, ends = window_log(runner.run_dir / "raw" / rnd.folder)
                out["round start"].append(start - launched - before)
                out["round end"].append(returned - ends[-1])
                out["window overhead"].append((ends[-1] - start) / len(ends) - args.duration)
        finally:
            t = time.monotonic()
            runner.servers.stop(group)
            out["placement stop"].append(time.monotonic() - t)
    finally:
        runner.procs.close()
        runner.leases.close()
    store.set_status(run_id, "complete", "benchmarks/plan_constants.py")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5, help="placements per metric (default 5)")
    ap.add_argument("--windows", type=int, default=3, help="windows per round (default 3)")
    ap.add_argument("--duration", type=float, default=1.0, help="seconds per window (default 1)")
    ap.add_argument("--warmup", type=float, default=0.5, help="warmup seconds per round (default 0.5)")
    ap.add_argument("--metrics", default="rpc,bw", help="comma-separated (default rpc,bw)")
    ap.add_argument(
        "--launch",
        choices=list(LAUNCH_MODES),
        default=PER_PLACEMENT.name,
        help="engine.launch: the launch mode measured, beside its constants (default per-placement)",
    )
    ap.add_argument("--json", metavar="FILE", help="save every measured value")
    args = ap.parse_args()
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    if args.repeats < 1 or args.windows < 1 or not metrics:
        ap.error("--repeats and --windows must be at least 1, and --metrics name one")
    measured: dict[str, dict[str, list[float]]] = {m: {k: [] for k in FIGURES} for m in metrics}
    constants = table(LAUNCH_MODES[args.launch])
    with tempfile.TemporaryDirectory(prefix="rooftop-plan-constants-") as tmp:
        store = Store(Path(tmp) / "results")
        with CampaignLocks(store.dir, "local", 0.0, False, lambda m: print(m, file=sys.stderr)):
            for i in range(args.repeats):
                for m in metrics:
                    print(f"repeat {i + 1}/{args.repeats}: {m}", file=sys.stderr, flush=True)
                    for k, v in one_placement(store, m, args).items():
                        measured[m][k] += v
    print(f"{'':16s}  {'metric':6s}  {'median':>7s}  {'min':>7s}  {'max':>7s}  {'n':>3s}  table")
    for k, c in constants.items():
        for m in [*metrics, "all"]:
            v = [x for mm in metrics for x in measured[mm][k]] if m == "all" else measured[m][k]
            if not v:
                continue
            held = f"{c.name} = {c.value:g}" if m == "all" and c is not None else ""
            print(f"{k:16s}  {m:6s}  {statistics.median(v):7.3f}  {min(v):7.3f}  {max(v):7.3f}  {len(v):3d}  {held}")
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "measured": measured}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
