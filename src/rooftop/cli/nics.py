"""`rooftop nics`: its parser and driver (rooftop.nics.policy asks the
engine what each policy does and renders it). Its fabric is the config's
fabric.provider, as every command's: a site config file's, --set's, or
--fabric's."""

from __future__ import annotations

from rooftop import session
from rooftop.cli.common import KeyFlag, add_key_flags
from rooftop.keys import ConfigError
from rooftop.nics.policy import check_policy, render, run
from rooftop.numbers import json_text

#: The common keys `rooftop nics` reads (any other given is refused, not ignored).
READS = ("fabric.provider",)


def fabric(config_file: str | None, overrides: dict) -> str:
    """The fabric whose NICs are shown: fabric.provider (defaults <- file <- overrides)."""
    from rooftop.config.files import load_file, merge

    other = sorted(k for k in overrides if k not in READS)
    if other:
        raise ConfigError(f"{other[0]}: not read by rooftop nics (its keys: {', '.join(READS)})")
    return merge(load_file(config_file) if config_file else None, overrides)["fabric"]["provider"]


def add_parser(sub) -> None:
    p = sub.add_parser(
        "nics",
        help="the NICs here and the NIC each process would get per policy",
        description="The NICs the fabric (fabric.provider: --fabric, --set or a config file) can use on this "
        "node (or in an hwloc XML topology) with their locality, and the NIC each of N processes would get "
        "under each NIC policy (nic.policy) and binding. Nothing is started.",
    )
    p.add_argument("--config", help="config file (JSON, or TOML by extension) whose fabric.provider is used")
    add_key_flags(p, [KeyFlag("--fabric", "fabric.provider")])
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="fabric.provider=PROVIDER, as --fabric")
    p.add_argument(
        "--topology", metavar="FILE.xml", help="an hwloc XML topology (lstopo --of xml) instead of this machine"
    )
    p.add_argument(
        "--binding", default="all", help="core, 2cores, none, comma-separated, or all (default: %(default)s)"
    )
    p.add_argument(
        "--processes", type=int, default=0, metavar="N", help="processes on the node (default: one per usable core)"
    )
    p.add_argument("--policy", default="all", help="policies, comma-separated, or all (default)")
    p.add_argument("--json", action="store_true", help="the engine's JSON result")
    p.set_defaults(func=_cmd_nics)


def _cmd_nics(args) -> int:
    from rooftop.engine.base import engine_path

    if args.processes < 0:
        raise ConfigError(f"--processes: must be 0 or more, not {args.processes}")
    if args.policy != "all":
        for pol in args.policy.split(","):
            check_policy(pol, "--policy")
    provider = fabric(args.config, session.overrides(args))
    result = run(engine_path(), provider, args.topology, args.policy, args.binding, args.processes)
    print(json_text(result, indent=2) if args.json else render(result))
    return 0
