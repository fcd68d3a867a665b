"""The quick commands around the engine and the config: probe (one server
and one client per fabric here), config (the resolved config, every key)
and engine (rooftop-engine run directly)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from rooftop import session
from rooftop.cli.common import RESULTS_FLAG, add_key_flags, config_args, results_arg, seconds


def _cmd_probe(args) -> int:
    from rooftop import probe

    fabrics = [f.strip() for f in args.fabric.split(",") if f.strip()]
    if not fabrics:
        print("rooftop probe: --fabric names no fabric", file=sys.stderr)
        return 2
    if args.duration <= 0 or args.repeat < 1 or args.lease <= 0:
        print("rooftop probe: --duration and --lease must be > 0 and --repeat at least 1", file=sys.stderr)
        return 2
    print(f"rooftop probe: {', '.join(fabrics)}; {args.duration:g} s per measurement, {args.repeat} run(s) each")
    summary = probe.run(fabrics, args.duration, Path(args.results), repeat=args.repeat, lease=args.lease)
    failed = [r for r in summary["rows"] if "error" in r]
    print(f"results: {summary['folder']}")
    return 1 if failed else 0


def _cmd_config(args) -> int:
    from rooftop.config.resolve import build, describe_keys

    if args.action == "keys":
        print(describe_keys())
        return 0
    cfg = build(args.config, session.overrides(args))
    print(json.dumps(cfg, indent=2))
    return 0


def cmd_engine(args) -> int:
    from rooftop.engine.base import EngineError, engine_path

    try:
        path = engine_path()
    except EngineError as e:
        print(f"rooftop engine: {e}", file=sys.stderr)
        return 2
    os.execv(path, [path, *args.engine_args])
    return 0  # not reached


def add_config(sub) -> None:
    cf = sub.add_parser(
        "config",
        help="show the resolved config, or list every key",
        description="'rooftop config show' prints the fully resolved config "
        "(every default, the nodes found, the validation grid) for the given file "
        "and overrides; 'rooftop config keys' documents every key.",
    )
    cf.add_argument("action", choices=["show", "keys"])
    config_args(cf)
    add_key_flags(cf, [RESULTS_FLAG])
    cf.set_defaults(func=_cmd_config)


def add_probe(sub) -> None:
    from rooftop.engine.base import DEFAULT_LEASE

    pr = sub.add_parser(
        "probe",
        help="quick RPC-rate and bandwidth check on this machine",
        description="One pinned server and one pinned client per fabric: "
        "sequential noop RPC rate and 4 MiB bulk-read bandwidth "
        "(streaming buffer), each measured --repeat times (a fresh "
        "server each time): the median, the range of the runs and "
        "their spread, with a warning when they disagree by more "
        "than 20 %. Engine documents are saved under --results.",
    )
    pr.add_argument("--fabric", default="ofi+tcp,ofi+shm", help="comma-separated fabrics (default: %(default)s)")
    pr.add_argument("--duration", type=float, default=3.0, help="measured seconds per test (default: %(default)s)")
    pr.add_argument(
        "--repeat", type=int, default=3, help="runs per test; the median is reported (default: %(default)s)"
    )
    pr.add_argument(
        "--lease",
        type=seconds,
        default=DEFAULT_LEASE,
        metavar="SECONDS",
        help="seconds its engines run on once this command is gone (killed): they stop when a lease "
        "file it renews is no longer renewed (default: %(default)s)",
    )
    results_arg(pr)
    pr.set_defaults(func=_cmd_probe)


def add_engine(sub) -> None:
    en = sub.add_parser("engine", help="run rooftop-engine with the given arguments", add_help=False)
    en.add_argument("engine_args", nargs=argparse.REMAINDER)
    en.set_defaults(func=cmd_engine)
