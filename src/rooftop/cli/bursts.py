"""`rooftop bursts`: its parser and driver (rooftop.bursts.run does the
work: the modes, their bursts, the run's summary)."""

from __future__ import annotations

import json
import sys
import time

from rooftop import session
from rooftop.bursts import neighbour
from rooftop.bursts.run import (
    DEFAULT_PROGRESS,
    MIN_INTERVAL,
    BurstsError,
    build_config,
    planned_keys,
    power_note,
    print_summary,
    results,
    run_modes,
)
from rooftop.cli.common import CONFIG_FLAGS, RESULTS_FLAG, add_key_flags, campaign_flags


def _execute(args, cfg: dict, store, run_id: str) -> int:
    """Runs the modes; sets the run's status; returns the exit code."""
    from rooftop import ui
    from rooftop.campaign import SampleFailed

    say = (lambda m: None) if args.json else (lambda m: ui.console.print(f"[cyan]bursts[/] {m}"))
    log = (lambda m: ui.console.print(f"[dim]{m}[/]")) if args.verbose else None
    t0 = time.monotonic()
    try:
        failed = run_modes(cfg, store, run_id, say, log)
        status, note, rc = "complete", (f"{failed} windows failed" if failed else ""), 1 if failed else 0
    except KeyboardInterrupt:
        status, note, rc = "interrupted", "bursts interrupted: the intervals measured so far are stored", 130
    except (neighbour.NeighbourFailed, SampleFailed) as e:
        status, note, rc = "failed", str(e), 1
        print(f"rooftop bursts: {e}", file=sys.stderr)
    finally:
        store.add_time(run_id, time.monotonic() - t0)
    missing = len(planned_keys(cfg["bursts"]) - store.stored_keys(run_id))
    if status == "complete" and missing:
        status, note = "interrupted", f"{missing} windows missing"
    store.set_status(run_id, status, note)
    return rc


def cmd(args) -> int:
    from rooftop import ui
    from rooftop.bursts.figure import plot
    from rooftop.store.db import Store

    try:
        cfg = build_config(args)
    except BurstsError as e:
        print(f"rooftop bursts: {e}", file=sys.stderr)
        return 2
    store = Store(cfg["results"])
    with session.campaign_locks(args, store, cfg) as locks:
        env = session.environment(cfg)
        env["power_note"] = power_note()
        run_id = store.new_run(cfg, env)
        locks.name_run(run_id)
        store.claim(run_id, "bursts running")
        rc = _execute(args, cfg, store, run_id)
    res = results(store, run_id)
    files = plot(res, store.run_dir(run_id) / "figures") if res["lines"] else []
    if args.json:
        print(
            json.dumps(
                {
                    "run": run_id,
                    "status": store.get_run(run_id).status,
                    "modes": res["rows"],
                    "neighbour": res["neighbour"],
                    "power_note": res["power_note"],
                    "figures": [str(f) for f in files],
                },
                indent=1,
            )
        )
        return rc
    print_summary(res)
    for f in files:
        ui.console.print(f"figure: {f}")
    ui.console.print(f"results: {store.path} and {store.run_dir(run_id)}/ (rooftop report {run_id})")
    print(run_id)
    return rc


def add_parser(sub) -> None:
    from rooftop import metrics
    from rooftop.locks import ON_THIS_MACHINE
    from rooftop.stencil import DEFAULT_ITERATIONS, DEFAULT_SIZE

    b = sub.add_parser(
        "bursts",
        help="rate, CPU and power per progress mode in bursts of operations "
        "(seed 000's Figure 6), and the cost to a job beside the server",
        description="One server (node 0, pinned) and its client(s) on the last node: "
        "sequential operations in bursts with idle gaps, for each server progress mode. "
        "Per interval: the client's rate, the server's CPU (user, system), context "
        "switches and wake-ups, package power from RAPL where readable; a figure and a "
        "summary per mode (burst rate, idle CPU, idle watts, J/op, time to full rate). "
        "--neighbour runs a compute job pinned to the server's core(s), alone and during "
        "each mode: its slowdown. Stored as a run (rooftop runs, export, report).",
    )
    b.add_argument("--config", help="campaign file (JSON, or TOML by extension); see 'rooftop config keys'")
    add_key_flags(b, [f for f in CONFIG_FLAGS if f.key != "metrics"])
    b.add_argument("--set", action="append", metavar="KEY=VALUE", help="any config key (repeatable)")
    add_key_flags(b, [RESULTS_FLAG])
    b.add_argument(
        "--progress",
        default=DEFAULT_PROGRESS,
        metavar="MODES",
        help="server progress modes, in order (default: %(default)s); a spindown sweep: "
        "spindown:0.1,1,10,50 (milliseconds, down to 0.001)",
    )
    b.add_argument(
        "--metric", default="rpc", choices=list(metrics.METRICS), help="what the client sends (default: %(default)s)"
    )
    b.add_argument("--clients", type=int, default=1, metavar="N", help="client processes (default: 1)")
    b.add_argument("--bursts", type=int, default=3, metavar="K", help="bursts per mode (default: 3)")
    b.add_argument("--on", type=float, default=10.0, metavar="S", help="seconds per burst (default: 10)")
    b.add_argument("--off", type=float, default=20.0, metavar="S", help="seconds of gap after each burst (default: 20)")
    b.add_argument(
        "--interval",
        type=float,
        default=1.0,
        metavar="S",
        help=f"seconds per interval, at least {MIN_INTERVAL:g} (default: 1)",
    )
    b.add_argument(
        "--full-rate",
        type=float,
        default=0.9,
        metavar="F",
        help="'full rate' after a gap: this fraction of the burst rate (default: 0.9)",
    )
    b.add_argument(
        "--neighbour",
        metavar="CMD",
        help="a compute job pinned to the server's core(s): "
        "'stencil' (rooftop-stencil) or a command line; run alone, then during each mode",
    )
    b.add_argument(
        "--neighbour-timeout",
        type=float,
        default=600.0,
        metavar="S",
        help="a neighbour run longer than this is stopped and fails the run (default: 600)",
    )
    b.add_argument(
        "--stencil-size",
        type=int,
        default=DEFAULT_SIZE,
        metavar="N",
        help=f"--neighbour stencil: grid points per side (default: {DEFAULT_SIZE})",
    )
    b.add_argument(
        "--stencil-iterations",
        type=int,
        default=DEFAULT_ITERATIONS,
        metavar="K",
        help=f"--neighbour stencil: sweeps (default: {DEFAULT_ITERATIONS})",
    )
    locked = (
        f"another campaign holds the results folder (or, {' and '.join(ON_THIS_MACHINE)} "
        "launchers, this machine's cores): wait up to SECONDS (default 0: refuse at once)"
    )
    campaign_flags(
        b,
        json_help="print a JSON summary on stdout (no progress)",
        wait_lock_help=locked,
        allow_concurrent_help="run even if another campaign holds the locks (samples marked concurrent)",
    )
    b.set_defaults(func=cmd)
