"""`rooftop bursts`: its parser and driver (rooftop.bursts.run does the
work: the modes, their bursts, the run's summary)."""

from __future__ import annotations

import sys

from rooftop import session
from rooftop.bursts import neighbour
from rooftop.bursts.run import BurstsError, build_config, planned_keys, power_note, print_summary, results, run_modes
from rooftop.cli.common import CONFIG_FLAGS, RESULTS_FLAG, KeyFlag, add_key_flags, campaign_flags, interrupted_rc
from rooftop.numbers import json_text

#: The command's own flags, each setting a key of rooftop.bursts.keys.
BURSTS_FLAGS = (
    KeyFlag("--progress", "bursts.progress", "MODES"),
    KeyFlag("--metrics", "bursts.metric"),
    KeyFlag("--clients", "bursts.clients", "N"),
    KeyFlag("--bursts", "bursts.bursts", "K"),
    KeyFlag("--on", "bursts.on", "S"),
    KeyFlag("--off", "bursts.off", "S"),
    KeyFlag("--interval", "bursts.interval", "S"),
    KeyFlag("--full-rate", "bursts.full_rate", "F"),
    KeyFlag("--neighbour", "bursts.neighbour", "CMD"),
    KeyFlag("--neighbour-timeout", "bursts.neighbour_timeout", "S"),
    KeyFlag("--stencil-size", "bursts.stencil_size", "N"),
    KeyFlag("--stencil-iterations", "bursts.stencil_iterations", "K"),
)


def _execute(args, cfg: dict, store, run_id: str) -> int:
    """Runs the modes under the run's lifecycle (campaign.lifecycle: its
    status, time and events); returns the exit code."""
    from rooftop import ui
    from rooftop.campaign import SampleFailed
    from rooftop.campaign.lifecycle import Hold, keys_status

    say = (lambda m: None) if args.json else (lambda m: ui.console.print(f"[cyan]bursts[/] {m}"))
    log = (lambda m: ui.console.print(f"[dim]{m}[/]")) if args.verbose else None
    try:
        with Hold(store, run_id, "bursts") as hold:
            failed = run_modes(cfg, store, run_id, say, log)
            status, note = keys_status(store, run_id, planned_keys(cfg["bursts"]), "bursts", "windows")
            hold.finish(status, note or (f"{failed} windows failed" if failed else ""))
            return 1 if failed else 0
    except KeyboardInterrupt:  # the run reads interrupted, the intervals measured so far stored
        return interrupted_rc()
    except (neighbour.NeighbourFailed, SampleFailed) as e:  # the run reads failed
        print(f"rooftop bursts: {e}", file=sys.stderr)
        return 1


def cmd(args) -> int:
    from rooftop import ui
    from rooftop.bursts.figure import plot
    from rooftop.files import confined
    from rooftop.store.db import Store

    try:
        cfg = build_config(args.config, session.overrides(args))
    except BurstsError as e:
        print(f"rooftop bursts: {e}", file=sys.stderr)
        return 2
    store = Store(cfg["results"])
    with session.campaign_locks(args, store, cfg) as locks:
        env = session.environment(cfg)
        env["power_note"] = power_note()
        run_id = store.new_run(cfg, env)
        locks.name_run(run_id)
        rc = _execute(args, cfg, store, run_id)
    res = results(store, run_id)
    with confined(store.run_dir(run_id)):  # nothing written through a link out of the run's folder
        files = plot(res, store.run_dir(run_id) / "figures") if res["lines"] else []
    if args.json:
        print(
            json_text(
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
    b = sub.add_parser(
        "bursts",
        help="rate, CPU and power per progress mode in bursts of operations "
        "(Figure 6 of Carns et al. (CUG 2025)), and the cost to a job beside the server",
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
    b.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="any config key, e.g. --set bursts.interval=0.5 (repeatable)",
    )
    add_key_flags(b, [RESULTS_FLAG])
    add_key_flags(b, BURSTS_FLAGS)
    campaign_flags(b)
    b.set_defaults(func=cmd)
