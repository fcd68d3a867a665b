"""What the commands share: the flags that set config keys (KeyFlag and its
tables), the config and campaign flag groups, the history rule's flags and
their merge (rule_args, rule_of: history, check, report --judge), RUN and 'latest', argument
types, and how a stop signal ends a command."""

from __future__ import annotations

import argparse
import io
import json
import signal
import sys
from dataclasses import dataclass
from typing import overload

from rooftop.config.catalog import DEFAULT_RESULTS
from rooftop.history import keys as _check_keys  # noqa: F401  (registers the check.* config keys)
from rooftop.numbers import json_text
from rooftop.session import key_values as key_values  # the key flags' values: config overrides


@dataclass(frozen=True)
class KeyFlag:
    """A flag that sets one config key. Its type, choices, help and default
    come from the key's entry in KEYS, as fio's option table and
    ReFrame's declared variables carry their own type, default and doc: the
    command line cannot drift from the config."""

    flag: str
    #: The config key; "{stage}" is the command's stage (collect or validate).
    key: str
    metavar: str | None = None

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")


#: Every command that builds a config (collect, config show).
CONFIG_FLAGS = (
    KeyFlag("--launcher", "launcher.type"),
    KeyFlag("--nodes", "launcher.nodes", "N"),
    KeyFlag("--metrics", "metrics", "LIST"),
    KeyFlag("--fabric", "fabric.provider"),
    KeyFlag("--binding", "binding"),
    KeyFlag("--nic-policy", "nic.policy", "POLICY"),
)


#: Both campaign stages (collect, validate).
STAGE_FLAGS = (
    KeyFlag("--duration", "{stage}.duration", "S"),
    KeyFlag("--warmup", "{stage}.warmup", "S"),
    KeyFlag("--windows", "{stage}.windows", "K"),
    KeyFlag("--fail-fast", "fail_fast"),
    KeyFlag("--series", "series", "LIST"),
)


COLLECT_FLAGS = (KeyFlag("--pairs", "collect.pairs"), KeyFlag("--sweep-servers", "collect.sweep_servers"))


VALIDATE_FLAGS = (
    KeyFlag("--server-nodes", "validate.server_nodes", "N,..."),
    KeyFlag("--client-nodes", "validate.client_nodes", "N,..."),
    KeyFlag("--servers-per-node", "validate.servers_per_node", "N"),
    KeyFlag("--clients-per-node", "validate.clients_per_node", "N"),
)


RESULTS_FLAG = KeyFlag("--results", "results", "DIR")


#: The rule's flags: keys of rooftop.history.keys (--threshold sets check.threshold or check.METRIC.threshold).
RULE_FLAGS = (KeyFlag("--last", "check.last", "K"), KeyFlag("--k", "check.k", "K"))


def _int_list(text: str) -> list[int] | None:
    """'1,2' -> [1, 2]; blank: not given."""
    if not text.strip():
        return None
    try:
        return [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"comma-separated integers, not {text!r}") from None


def str_list(text: str) -> list[str]:
    """'rpc, bw' -> ['rpc', 'bw']; blank or ',' -> [] (the config then refuses an empty
    metrics list, naming the key, rather than running the defaults)."""
    return [v.strip() for v in text.split(",") if v.strip()]


def key_help(key) -> str:
    """The key's own help, its path and its default (a computed default,
    None here, is stated by the help itself: see test_config_contract)."""
    if key.kind == "bool":
        note = f"sets {key.path} to true"
    elif key.default is None:
        note = key.path
    else:
        shown = ",".join(map(str, key.default)) if isinstance(key.default, list) else key.default
        note = f"{key.path}; default {json.dumps(shown) if shown == '' else shown}"
    if key.kind.startswith("list["):
        note = note.replace(key.path, f"{key.path}; comma-separated", 1)
    return f"{key.help} ({note})".replace("%", "%%")


def _argparse_kind(key) -> dict:
    """add_argument keywords for a key's kind."""
    if key.kind == "bool":
        return {"action": "store_true", "default": None}
    if key.kind == "choice":
        return {"choices": list(key.choices)}
    return {
        "type": {"int": int, "float": float, "list[int]": _int_list}.get(
            key.kind, str_list if key.kind.startswith("list[") else str
        )
    }


def add_key_flags(p: argparse.ArgumentParser, flags, stage: str = "collect") -> None:
    """Adds flags to p, each from its config key; the parsed values become
    config overrides through key_values()."""
    from rooftop.config.catalog import KEY_BY_PATH

    mapping = dict(p.get_default("key_flags") or {})
    for f in flags:
        key = KEY_BY_PATH[f.key.format(stage=stage)]
        kw = _argparse_kind(key)
        if f.metavar and "choices" not in kw and kw.get("action") != "store_true":
            kw["metavar"] = f.metavar
        p.add_argument(f.flag, dest=f.dest, help=key_help(key), **kw)
        mapping[f.dest] = key.path
    p.set_defaults(key_flags=mapping)


def config_args(p) -> None:
    """A config file, the config key flags, and --set."""
    p.add_argument("--config", help="campaign file (JSON, or TOML by extension); see 'rooftop config keys'")
    add_key_flags(p, CONFIG_FLAGS)
    p.add_argument(
        "--set", action="append", metavar="KEY=VALUE", help="any config key, e.g. --set bw.size=1MiB (repeatable)"
    )


def restate_arg(p) -> None:
    """--set of a command that measures a stored run again (validate, service):
    a value of the run that names what would run, given again."""
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="give again a value of the run's config that names what would run or be written (e.g. engine.path, "
        "launcher.command, launcher.hosts; 'rooftop config keys' marks each [executes]), the value the run "
        "recorded: needed to use it from a results folder not yours alone (owned by another user, or writable "
        "by group or others; docs/locks-and-secrets.md); repeatable",
    )


def campaign_args(p, stage: str) -> None:
    """What collect and validate share: the stage's key flags, and how the campaign runs."""
    add_key_flags(p, STAGE_FLAGS[:3], stage)
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the exact commands of every stage, then the expected run time; run nothing",
    )
    add_key_flags(p, STAGE_FLAGS[3:], stage)
    campaign_flags(p)


def campaign_flags(p, verbose: bool = True, allow_concurrent: bool = True) -> None:
    """How a measuring command runs, declared once for every one (collect,
    validate, interfere, bursts, tune, audit) with the same help texts, in
    this order: --json, -v, --wait-lock, --allow-concurrent. verbose or
    allow_concurrent False: the command has no such flag (audit)."""
    from rooftop.launchers import ON_THIS_MACHINE

    p.add_argument(
        "--json",
        action="store_true",
        help="print the outcome as JSON on stdout (the run id and what it measured; no progress bar)",
    )
    if verbose:
        p.add_argument("-v", "--verbose", action="store_true", help="log every command started")
    p.add_argument(
        "--wait-lock",
        type=seconds,
        default=0.0,
        metavar="SECONDS",
        help=f"another campaign holds the results folder (or, {' and '.join(ON_THIS_MACHINE)} "
        "launchers, this machine's cores): wait up to SECONDS for it (default 0: refuse "
        "at once, naming its run id, pid and host)",
    )
    if allow_concurrent:
        p.add_argument(
            "--allow-concurrent",
            action="store_true",
            help="run even if another campaign holds the locks; every sample is then marked concurrent "
            "and the report warns",
        )


def rule_args(p, results: bool = True) -> None:
    """The rule's keys as flags: --config (its [check] table), --set
    check.*, --threshold, --last, --k; results: --results as a key flag
    too (a command with its own --results passes False)."""
    p.add_argument(
        "--config", help="config file (JSON, or TOML by extension) with a [check] table; see 'rooftop config keys'"
    )
    p.add_argument(
        "--set", action="append", metavar="KEY=VALUE", help="a check.* key, e.g. --set check.k=4 (repeatable)"
    )
    p.add_argument(
        "--threshold",
        action="append",
        default=[],
        metavar="[METRIC=]PCT",
        help="a ceiling must move more than PCT %% of its median to count: every metric's "
        "(check.threshold, default 10) or METRIC's (check.METRIC.threshold); repeatable",
    )
    add_key_flags(p, RULE_FLAGS)
    if results:
        add_key_flags(p, [RESULTS_FLAG])


def rule_of(args):
    """(the rule, the merged config) from defaults <- --config <- --set <- the flags (rule_args)."""
    from rooftop import session
    from rooftop.history.keys import rule, threshold_overrides

    overrides = session.overrides(args)
    overrides.update(threshold_overrides(args.threshold))
    return rule(args.config, overrides)


def results_arg(p, what: str = "results folder") -> None:
    p.add_argument("--results", default=DEFAULT_RESULTS, help=f"{what} (default: %(default)s)")


def json_flag(p, what: str = "the result") -> None:
    """--json, the same on every command that prints a result."""
    p.add_argument("--json", action="store_true", help=f"print {what} as JSON on stdout")


def out_dir_arg(p, what: str, default: str | None = None) -> None:
    """--out-dir DIR: the folder a command writes its files into (-o/--output
    is a file: rooftop export)."""
    p.add_argument("--out-dir", metavar="DIR", default=default, help=what)


#: The run id that stands for the newest run of the results folder.
LATEST = "latest"


def run_arg(p, what: str, optional: bool = False, resolve: bool = True) -> None:
    """RUN, positional: a run id or 'latest'. resolve False: the command resolves 'latest' itself (its results folder
    may come from its config)."""
    p.add_argument(
        "run",
        nargs="?" if optional else None,
        metavar="RUN",
        help=f"{what}: a run id, or '{LATEST}' (the newest run of the results folder)",
    )
    if resolve:
        takes_runs(p, "run")


def takes_runs(p, *attrs: str) -> None:
    """args.ATTR names runs (a run id, a list of them, or 'RUN,...'): 'latest'
    in it becomes the newest run's id before the command runs (resolve_latest)."""
    p.set_defaults(run_attrs=tuple(p.get_default("run_attrs") or ()) + attrs)


class CommandParser(argparse.ArgumentParser):
    """A command's parser: a flag is given whole, never abbreviated (so a
    spelling a command does not have, such as --metric for --metrics, is
    refused rather than taken for the flag it begins)."""

    def __init__(self, *args, **kw):
        kw.setdefault("allow_abbrev", False)
        super().__init__(*args, **kw)
        add_quiet(self)


QUIET_HELP = "only the result on stdout: no progress or notes on stderr (errors are still shown)"


def add_quiet(p: argparse.ArgumentParser) -> None:
    """-q/--quiet, on the top parser and every command's (CommandParser):
    given anywhere, it holds (SUPPRESS: a command's parser does not reset
    the top's `rooftop --quiet COMMAND`); read it with quiet_of(args)."""
    p.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS, help=QUIET_HELP)


def quiet_of(args) -> bool:
    return bool(getattr(args, "quiet", False))


class Quiet:
    """--quiet while a command runs: what it writes to stderr (notes,
    warnings, rich's progress) is held back, stdout (the result) is not.
    A command that fails shows what it held (show()); an exception shows
    it on the way out, so an error keeps its context."""

    def __init__(self, on: bool):
        self.on = on
        self.held = io.StringIO()
        self.saved: tuple = ()

    def __enter__(self) -> Quiet:
        if self.on:
            from rooftop import ui

            self.saved = (sys.stderr, ui.console.quiet)
            sys.stderr, ui.console.quiet = self.held, True
        return self

    def __exit__(self, kind, e, tb) -> None:
        if self.on:
            from rooftop import ui

            sys.stderr, ui.console.quiet = self.saved
            if kind is not None:
                self.show()

    def show(self) -> None:
        """Writes what was held to stderr (once)."""
        sys.stderr.write(self.held.getvalue())
        self.held = io.StringIO()


class ShowVersion(argparse.Action):
    """--version: rooftop's, the engine's and libfabric's versions and the
    git revision (rooftop.session.versions), then exit."""

    def __init__(self, option_strings, dest, **kw):
        kw.update(nargs=0, default=argparse.SUPPRESS)
        kw.setdefault("help", "show rooftop's, the engine's and libfabric's versions and the git revision, and exit")
        super().__init__(option_strings, dest, **kw)

    def __call__(self, parser, namespace, values, option_string=None):
        from rooftop.session import version_text, versions

        print(version_text(versions()))
        parser.exit()


def latest_run(results: str) -> str:
    """The newest run of the results folder (StoreError when it has none)."""
    from rooftop.store.db import Store
    from rooftop.store.records import StoreError

    store = Store(results, create=False)
    runs = store.runs()
    if not runs:
        raise StoreError(f"'{LATEST}': no run in {store.dir} yet (start one with 'rooftop collect')")
    return runs[-1].id


@overload
def resolve_run(results: str | None, text: str) -> str: ...
@overload
def resolve_run(results: str | None, text: None) -> None: ...
def resolve_run(results: str | None, text: str | None) -> str | None:
    """text, or the newest run's id when it is 'latest'."""
    return latest_run(results or DEFAULT_RESULTS) if text == LATEST else text


def resolve_latest(args) -> None:
    """'latest' in every argument that names a run (takes_runs) becomes
    the newest run's id in args.results."""
    from pathlib import Path

    def one(v: str) -> str:
        return (
            latest_run(getattr(args, "results", None) or DEFAULT_RESULTS)
            if v == LATEST and not Path(v).is_file()
            else v
        )

    for attr in getattr(args, "run_attrs", ()):
        value = getattr(args, attr, None)
        if isinstance(value, list):
            setattr(args, attr, [one(v) for v in value])
        elif isinstance(value, str):
            setattr(args, attr, ",".join(one(v.strip()) for v in value.split(",")) if "," in value else one(value))


def seconds(text: str) -> float:
    import math

    try:
        v = float(text)
    except ValueError:
        v = -1.0
    if not math.isfinite(v) or v < 0 or v > 30 * 86400:
        raise argparse.ArgumentTypeError(f"seconds from 0 to 30 days, not {text!r}")
    return v


def formats(text: str) -> tuple[str, ...]:
    fmts = tuple(f.strip().lower() for f in text.split(",") if f.strip())
    bad = [f for f in fmts if f not in ("png", "svg", "pdf")]
    if bad or not fmts:
        raise argparse.ArgumentTypeError(f"formats are png, svg, pdf (comma-separated), not {text!r}")
    return fmts


def print_files(files: dict, as_json: bool) -> None:
    if as_json:
        print(json_text({k: [str(p) for p in v] for k, v in files.items()}, indent=1))
    else:
        for paths in files.values():
            for p in paths:
                print(p)


#: The signal that stopped this command (SIGINT, SIGTERM, SIGHUP), if any.
_STOPPED_BY: list[int] = []


def stop_on_signal(signum, frame):
    """SIGTERM and SIGHUP (a closed terminal) stop like Ctrl-C: clean up,
    keep every measured window. After SIGHUP nothing may read the terminal
    any more: output goes nowhere rather than failing."""
    _STOPPED_BY.append(signum)
    if signum == signal.SIGHUP:
        import os

        for stream in (sys.stdout, sys.stderr):
            try:
                if stream.isatty():
                    null = os.open(os.devnull, os.O_WRONLY)
                    os.dup2(null, stream.fileno())
                    os.close(null)
            except (OSError, ValueError):
                pass
    raise KeyboardInterrupt


def interrupted_rc() -> int:
    """128 + the signal for SIGHUP (129); 130 for Ctrl-C and SIGTERM, as before."""
    return 128 + signal.SIGHUP if signal.SIGHUP in _STOPPED_BY else 130
