"""The rooftop command line."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from rooftop import __version__

DESCRIPTION = """\
rooftop: empirical rooflines for distributed data services.

How fast can a data service go on this machine, and how many servers should
it run for its clients? rooftop measures it with its native engine
(rooftop-engine: noop RPCs and bulk RDMA transfers over libfabric).
"""

EPILOG = """\
commands:
  probe    one server + one client per fabric on this machine: RPC rate and
           4 MiB bulk-read bandwidth (the quick answer)
  engine   run rooftop-engine directly (serve, load, ping, stat, shutdown, ...)

examples:
  rooftop probe                        # ofi+tcp and ofi+shm, 3 s each
  rooftop probe --fabric ofi+tcp --duration 10
  rooftop engine load --help
"""


def _cmd_probe(args) -> int:
    from rooftop import probe

    fabrics = [f.strip() for f in args.fabric.split(",") if f.strip()]
    if not fabrics:
        print("rooftop probe: --fabric names no fabric", file=sys.stderr)
        return 2
    if args.duration <= 0:
        print("rooftop probe: --duration must be > 0", file=sys.stderr)
        return 2
    print(f"rooftop probe: {', '.join(fabrics)}; {args.duration:g} s per measurement")
    summary = probe.run(fabrics, args.duration, Path(args.results))
    failed = [r for r in summary["rows"] if "error" in r]
    print(f"results: {summary['folder']}")
    return 1 if failed else 0


def _cmd_engine(args) -> int:
    from rooftop.engine import EngineError, engine_path

    try:
        path = engine_path()
    except EngineError as e:
        print(f"rooftop engine: {e}", file=sys.stderr)
        return 2
    os.execv(path, [path, *args.engine_args])
    return 0  # not reached


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rooftop", description=DESCRIPTION, epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"rooftop {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    pr = sub.add_parser("probe", help="quick RPC-rate and bandwidth check on this machine",
                        description="One pinned server and one pinned client per fabric: "
                                    "sequential noop RPC rate and 4 MiB bulk-read bandwidth "
                                    "(streaming buffer). Engine documents are saved under "
                                    "--results.")
    pr.add_argument("--fabric", default="ofi+tcp,ofi+shm",
                    help="comma-separated fabrics (default: %(default)s)")
    pr.add_argument("--duration", type=float, default=3.0,
                    help="measured seconds per test (default: %(default)s)")
    pr.add_argument("--results", default="./rooftop-results",
                    help="results folder (default: %(default)s)")
    pr.set_defaults(func=_cmd_probe)

    en = sub.add_parser("engine", help="run rooftop-engine with the given arguments",
                        add_help=False)
    en.add_argument("engine_args", nargs=argparse.REMAINDER)
    en.set_defaults(func=_cmd_engine)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("\nrooftop: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
