"""The quick commands around the engine and the config: probe (one server
and one client per fabric here), config (the resolved config, every key)
and engine (rooftop-engine run directly)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from rooftop import probe as _probe  # noqa: F401  (registers the probe.* config keys)
from rooftop import session
from rooftop.cli.common import RESULTS_FLAG, KeyFlag, add_key_flags, config_args, json_flag
from rooftop.numbers import json_text

#: probe's flags: keys of rooftop.probe.KEYS, fabric.provider and engine.lease.
PROBE_FLAGS = (
    KeyFlag("--fabric", "fabric.provider"),
    KeyFlag("--compare", "probe.compare", "LIST"),
    KeyFlag("--duration", "probe.duration", "S"),
    KeyFlag("--repeats", "probe.repeat", "K"),
    KeyFlag("--lease", "engine.lease", "SECONDS"),
)


def probe_fabrics(config_file: str | None, overrides: dict) -> tuple[list[str], dict]:
    """The fabrics probed (fabric.provider, then each of probe.compare, each
    once) and the config (defaults <- file <- overrides) they come from."""
    from rooftop.config.catalog import section_of
    from rooftop.config.files import load_file, merge
    from rooftop.keys import ConfigError

    reads = ("fabric.provider", "engine.lease", "results")
    other = sorted(k for k in overrides if k not in reads and section_of(k) != "probe")
    if other:
        raise ConfigError(f"{other[0]}: not read by rooftop probe (its keys: probe.*, {', '.join(reads)})")
    cfg = merge(load_file(config_file) if config_file else None, overrides, ("probe",))
    return list(dict.fromkeys([cfg["fabric"]["provider"], *cfg["probe"]["compare"]])), cfg


def _cmd_probe(args) -> int:
    from rooftop import probe
    from rooftop.keys import ConfigError

    fabrics, cfg = probe_fabrics(args.config, session.overrides(args))
    p, lease = cfg["probe"], cfg["engine"]["lease"]
    if lease <= 0:
        raise ConfigError(f"engine.lease: must be > 0, got {lease}")
    print(
        f"rooftop probe: {', '.join(fabrics)}; {p['duration']:g} s per measurement, {p['repeat']} run(s) each",
        file=sys.stderr,
    )
    # The table is the result (stdout); with --json the summary is, and the table goes to stderr.
    say = (lambda *a, **k: print(*a, **k, file=sys.stderr)) if args.json else print
    summary = probe.run(fabrics, p["duration"], Path(cfg["results"]), say, p["repeat"], lease)
    failed = [r for r in summary["rows"] if "error" in r]
    if args.json:
        print(json_text(summary, indent=1))
    else:
        print(f"results: {summary['folder']}")
    return 1 if failed else 0


def _cmd_config(args) -> int:
    from rooftop.config.resolve import build, describe_keys

    if args.action == "keys":
        print(json_text(_keys_doc(), indent=1) if args.json else describe_keys())
        return 0
    cfg = build(args.config, session.overrides(args))
    print(json_text(cfg, indent=2))  # JSON with or without --json
    return 0


def _keys_doc() -> list[dict]:
    """`rooftop config keys --json`: every key as `config keys` lists it."""
    from rooftop.config.catalog import KEYS, STUDY_COMMAND, STUDY_KEYS

    keys = [(None, k) for k in KEYS] + [(s, k) for s, ks in STUDY_KEYS.items() for k in ks]
    return [
        {
            "key": k.path,
            "kind": k.kind,
            "default": k.default,
            "choices": list(k.choices) if k.choices else None,
            "minimum": k.minimum,
            "maximum": k.maximum,
            "only": f"rooftop {STUDY_COMMAND.get(s, s)}" if s else None,
            "help": k.help,
            "executes": k.executes,
        }
        for s, k in keys
    ]


def cmd_engine(args) -> int:
    from rooftop import exits
    from rooftop.engine.base import EngineError, engine_path

    try:
        path = engine_path()
    except EngineError as e:
        print(f"rooftop engine: {e}", file=sys.stderr)
        return exits.UNREACHABLE if isinstance(e, exits.Unreachable) else exits.USAGE
    os.execv(path, [path, *args.engine_args])


def add_config(sub) -> None:
    cf = sub.add_parser(
        "config",
        help="show the resolved config, or list every key",
        description="'rooftop config show' prints the fully resolved config "
        "(every default, the nodes found, the validation grid) for the given file "
        "and overrides; 'rooftop config keys' documents every key. A key marked [executes] names what a "
        "command runs or writes (a program, hosts, arguments, a folder written to): a stored run's value of "
        "it is used again (validate, collect --resume, service, interfere --bursts-run) only from a results folder "
        "that is yours alone, or when given again with --set (docs/locks-and-secrets.md).",
    )
    cf.add_argument("action", choices=["show", "keys"])
    config_args(cf)
    add_key_flags(cf, [RESULTS_FLAG])
    json_flag(cf, "the config (show prints JSON either way) or every key (keys)")
    cf.set_defaults(func=_cmd_config)


def add_probe(sub) -> None:
    pr = sub.add_parser(
        "probe",
        help="one server and one client per fabric here: RPC rate and 4 MiB read bandwidth (the quick answer)",
        description="One pinned server and one pinned client per fabric (fabric.provider, --fabric, "
        "then each of probe.compare, --compare): "
        "sequential noop RPC rate and 4 MiB bulk-read bandwidth "
        "(streaming buffer), each measured --repeats times (a fresh "
        "server each time): the median, the range of the runs and "
        "their spread, with a warning when they disagree by more "
        "than 20 %. Engine documents are saved under --results.",
    )
    pr.add_argument("--config", help="config file (JSON, or TOML by extension); see 'rooftop config keys'")
    pr.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="a probe key, fabric.provider or engine.lease, e.g. --set probe.repeat=5",
    )
    add_key_flags(pr, [*PROBE_FLAGS, RESULTS_FLAG])
    json_flag(pr, "the summary (the table then goes to stderr)")
    pr.set_defaults(func=_cmd_probe)


def add_engine(sub) -> None:
    en = sub.add_parser(
        "engine", help="run rooftop-engine directly (serve, load, ping, stat, shutdown, ...)", add_help=False
    )
    en.add_argument("engine_args", nargs=argparse.REMAINDER)
    en.set_defaults(func=cmd_engine)
