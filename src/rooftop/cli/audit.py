"""`rooftop audit`: its parser and driver (rooftop.audit measures the
pitfalls, stores the run and shows it)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rooftop.cli.common import campaign_flags, results_arg, seconds


def _cmd_audit(args) -> int:
    from rooftop import audit
    from rooftop.audit import run as audit_run
    from rooftop.audit import show
    from rooftop.locks import CampaignLocks
    from rooftop.store.db import Store

    try:
        pitfalls = audit.select(args.only)
    except ValueError as e:
        print(f"rooftop audit: {e}", file=sys.stderr)
        return 2
    if args.repeats < 1 or args.duration <= 0 or args.warmup < 0 or args.lease <= 0:
        print("rooftop audit: --repeats must be >= 1, --duration and --lease > 0, --warmup >= 0", file=sys.stderr)
        return 2
    if args.storage_dir and not Path(args.storage_dir).is_dir():
        print(f"rooftop audit: --storage-dir {args.storage_dir}: not a directory", file=sys.stderr)
        return 2
    store = Store(args.results)
    opts = {
        "repeats": args.repeats,
        "duration": args.duration,
        "warmup": args.warmup,
        "fabric": args.fabric,
        "storage_dir": str(Path(args.storage_dir).resolve()) if args.storage_dir else "",
        "results": str(store.dir),
        "lease": args.lease,
    }
    say = (lambda m: None) if args.json else (lambda m: print(m, file=sys.stderr, flush=True))
    with CampaignLocks(
        store.dir, "local", args.wait_lock, False, lambda m: print(f"rooftop: {m}", file=sys.stderr, flush=True)
    ) as locks:
        run_id, rows = audit_run.run(store, pitfalls, opts, say)
        locks.name_run(run_id)
    page, _ = show.write(store.get_run(run_id), rows, store.run_dir(run_id) / "report")
    if args.json:
        print(json.dumps({"run": run_id, "report": str(page), "rows": rows}, indent=1))
        return 0
    print(show.table_text(rows))
    print(f"run {run_id}; report: {page}")
    return 0


def add_audit(sub) -> None:
    from rooftop.audit import PITFALLS
    from rooftop.audit.run import DEFAULTS

    au = sub.add_parser(
        "audit",
        help="seed 002's five benchmark pitfalls and a sixth, measured here as deltas",
        description="Measures each pitfall's settings side by side on this machine "
        "(local launcher, one logical node of its usable cores): "
        + "; ".join(f"{p.name}: {p.title}" for p in PITFALLS.values())
        + ". Settings alternate over the repeats; two settings whose repeats "
        "overlap are 'indistinguishable here'. Stored as a run (rooftop runs, "
        "rooftop report RUN); prints the table and the report's path.",
    )
    au.add_argument("--only", metavar="NAMES", help=f"comma-separated pitfalls (default: all: {','.join(PITFALLS)})")
    au.add_argument("--repeats", type=int, default=DEFAULTS["repeats"], help="runs per setting (default: %(default)s)")
    au.add_argument(
        "--duration",
        type=seconds,
        default=DEFAULTS["duration"],
        metavar="SECONDS",
        help="measured seconds per run (default: %(default)s)",
    )
    au.add_argument(
        "--warmup",
        type=seconds,
        default=DEFAULTS["warmup"],
        metavar="SECONDS",
        help="warm-up seconds per run (default: %(default)s)",
    )
    au.add_argument(
        "--fabric", default=DEFAULTS["fabric"], help="fabric of the network pitfalls (default: %(default)s)"
    )
    au.add_argument(
        "--storage-dir",
        metavar="DIR",
        help="directory of the storage pitfalls (default: a temporary directory in the run's "
        "folder under --results, removed after; on tmpfs the O_DIRECT settings are "
        "reported not measurable)",
    )
    au.add_argument(
        "--lease",
        type=seconds,
        default=DEFAULTS["lease"],
        metavar="SECONDS",
        help="seconds its engines run on once this command is gone (killed): they stop when a lease "
        "file it renews is no longer renewed (default: %(default)s)",
    )
    results_arg(au)
    campaign_flags(
        au,
        json_help="print the run id, the report's path and the rows as JSON",
        verbose=False,
        wait_lock_help="another campaign holds the results folder or this machine's cores: wait up "
        "to SECONDS (default 0: refuse at once)",
        allow_concurrent_help=None,
    )
    au.set_defaults(func=_cmd_audit)
