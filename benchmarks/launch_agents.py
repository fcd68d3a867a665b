#!/usr/bin/env python3
"""The fixed cost of a placement, engines launched per placement against
engines forked by node agents (engine.launch, issue 31: goal <= 0.2 s per
placement with agents, from ~2.3 s).

    python3 benchmarks/launch_agents.py [--pairs 8] [--launcher local]
        [--metric rpc] [--duration 0.05] [--json FILE]

One placement as a campaign runs it -- its servers started until every
address file is published, one client round of one window, its servers
shut down and reaped -- measured through rooftop's own Runner
(Servers.start, RoundMeasurer.measure, Servers.stop; nothing stored), once
with engine.launch = per-placement and once with engine.launch = agents,
in --pairs adjacent pairs (per-placement first in even pairs, agents first
in odd ones). A placement's fixed cost is its wall time less its window,
warmup and settle (what a longer window would not change). The agents are
started once, before the pairs, by an untimed placement of each kind (a
campaign starts them once); each pair prints both costs and their ratio
(agents / per-placement), then the median of the ratios and of each cost.
Compare with the expected-time constants of each launch mode
(rooftop.campaign.costs.LAUNCH_MODES, printed last).

--launcher netns runs on the emulated cluster ('rooftop cluster up', root);
--launcher local (default) splits this machine into 2 logical nodes.
Run on a quiet machine: the ratio of adjacent pairs cancels slow drifts,
not another job's bursts. Python 3.10+, rooftop's own modules (imported
from this checkout's src/ when rooftop is not installed).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

try:
    import rooftop  # noqa: F401 (installed: .venv/bin/python)
except ImportError:  # python3 from a checkout: its src/
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
from rooftop.campaign import Runner, client_rounds, plan_collect
from rooftop.campaign.costs import LAUNCH_MODES
from rooftop.campaign.estimate import round_start_s
from rooftop.config.resolve import build
from rooftop.launchers import make_launcher
from rooftop.store.db import Store

MODES = ("per-placement", "agents")


def runner(store: Store, launch: str, a: argparse.Namespace) -> tuple[Runner, object]:
    """A Runner of one run with engine.launch = launch, and its one
    placement (its servers, one client round of one window)."""
    cfg = build(
        overrides={
            "launcher.type": a.launcher,
            "metrics": [a.metric],
            "engine.launch": launch,
            "collect.windows": 1,
            "collect.duration": a.duration,
            "collect.warmup": 0.0,
            "collect.client_peak": False,
            "collect.client_node": False,
            "collect.servers_per_node": 1,
            "collect.clients_per_node": 1,
        }
    )
    run_id = store.new_run(cfg, {"kind": "benchmark launch_agents"})
    (pl,) = plan_collect(cfg)[:1]
    return Runner(cfg, store, run_id, make_launcher(cfg["launcher"])), pl


def placement_cost(r: Runner, pl, attempt: int) -> float:
    """Seconds of one placement outside its window, warmup and settle (a
    lone client has none: it starts without the barrier)."""
    (rnd,) = client_rounds(pl.measurements)
    m = rnd.measurement
    in_windows = m.duration * len(rnd.windows) + round_start_s(r.cfg, m.warmup, m.client_procs)
    t0 = time.monotonic()
    group = r.servers.start(pl)
    try:
        rows = r.measurer.measure(group, rnd, attempt)
    finally:
        r.servers.stop(group)
    took = time.monotonic() - t0
    bad = [row["error"] for _, row in rows if row["status"] != "ok"]
    if bad:
        raise SystemExit(f"engine.launch = {r.cfg['engine']['launch']}: a sample failed: {bad[0]}")
    return took - in_windows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=8, help="adjacent pairs (default 8)")
    ap.add_argument("--launcher", default="local", choices=("local", "netns"), help="default local")
    ap.add_argument("--metric", default="rpc", help="the metric of the placement (default rpc)")
    ap.add_argument("--duration", type=float, default=0.05, help="its one window, seconds (default 0.05)")
    ap.add_argument("--json", help="also write every pair's costs to this file")
    a = ap.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="rooftop-launch-agents-"))
    store = Store(folder, create=True)
    runners = {mode: runner(store, mode, a) for mode in MODES}
    pairs: list[dict[str, float]] = []
    try:
        for r, pl in runners.values():  # the agents start here, as once per campaign
            placement_cost(r, pl, 1)
        print(f"one {a.metric} placement ({a.launcher} launcher, 1 server, 1 client, one {a.duration:g} s window)")
        print(f"{'pair':>4} {'order':>25} {'per-placement s':>16} {'agents s':>9} {'ratio':>7}")
        for i in range(a.pairs):
            order = MODES if i % 2 == 0 else MODES[::-1]
            got = {mode: placement_cost(*runners[mode], i + 2) for mode in order}
            pairs.append(got)
            ratio = got["agents"] / got["per-placement"]
            print(f"{i:>4} {' then '.join(order):>25} {got['per-placement']:>16.3f} {got['agents']:>9.3f} "
                  f"{ratio:>7.3f}", flush=True)  # fmt: skip
    finally:
        for r, _ in runners.values():
            r.procs.close()
            r.leases.close()
        shutil.rmtree(folder, ignore_errors=True)
    ratios = [p["agents"] / p["per-placement"] for p in pairs]
    med = {mode: statistics.median(p[mode] for p in pairs) for mode in MODES}
    print(f"median ratio (agents / per-placement) over {len(pairs)} pairs: {statistics.median(ratios):.3f}")
    print(f"median fixed cost per placement: per-placement {med['per-placement']:.3f} s, agents {med['agents']:.3f} s "
          f"(goal with agents <= 0.2 s)")  # fmt: skip
    for mode in MODES:
        o = LAUNCH_MODES[mode]
        print(f"expected-time constants, {mode}: {o.placement_s:g} s per placement + {o.round_s:g} s per round")
    if a.json:
        Path(a.json).write_text(json.dumps({"args": vars(a), "pairs": pairs, "ratios": ratios}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
