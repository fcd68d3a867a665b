"""Campaign configuration: one file in (JSON or TOML) plus command-line
overrides, one fully resolved config out -- every default filled in, the
nodes the launcher found, the validation grid -- stored with the results.

Every key is declared once in KEYS (type, default, meaning): the common
ones here, each metric's in its own file (rooftop.metrics); unknown keys,
wrong types and impossible values are errors that name the key.
"""

from __future__ import annotations

import copy
import difflib
import json
import math
import os
import re
import sys
from pathlib import Path
from typing import Any

from rooftop import metrics, samplers, stages

# ConfigError lives with Key (rooftop.keys) so that what config imports can
# raise it; config.ConfigError stays its name for callers above config.
from rooftop.keys import ConfigError, Key, by_path, short
from rooftop.launchers import BINDINGS, LAUNCHERS, binding_width
from rooftop.launchers.mpiexec import FLAVORS
from rooftop.nics.policy import check_policy
from rooftop.units import parse_size

HOUR, DAY = 3600.0, 86400.0
#: A measurement (samples x duration) longer than this is a mistake.
MAX_MEASUREMENT_S = 30 * DAY
#: Shortest measured window (collect.duration, validate.duration): a window
#: must hold many operations, and 50 ms is ~100x the engine's clock and
#: start-skew noise; 1e-9 s gave 'ok' rates 20-400x below the real one.
MIN_DURATION_S = 0.05
#: The validation grid's server-node counts by default: 1..min(this, N-1).
VALIDATE_SERVER_NODES = 4


def _launcher_type_help() -> str:
    return "how processes start: " + "; ".join(f"{s.name}: {s.help}" for s in LAUNCHERS.values())


def _launcher_nodes_help() -> str:
    each = "; ".join(f"{s.name}: {s.default_nodes}" for s in LAUNCHERS.values())
    return f"nodes to use, the first N of the launcher's; default {each}"


def _for_launchers(key: str, text: str) -> str:
    """A launcher.* key's help, led by the launchers that read it (their SPEC.keys)."""
    users = [s.name for s in LAUNCHERS.values() if key in s.keys]
    return f"{_and(users)}: {text}"


def _and(names: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 2 else names)


KEYS: list[Key] = [
    Key("fabric.provider", "str", "ofi+tcp", "libfabric provider: ofi+tcp, ofi+shm, ofi+verbs, ofi+cxi, ..."),
    Key(
        "fabric.domain",
        "str",
        None,
        "NIC / libfabric domain for every process (e.g. hsn0, cxi0); default: "
        "loopback on one machine. One that does not exist or lacks the provider is refused (before "
        "starting with the local launcher, by the engine on the node otherwise), and every sample "
        "checks each process used it",
        nullable=True,
    ),
    Key(
        "nic.policy",
        "str",
        "package:roundrobin",
        "how each engine process picks its NIC when "
        "fabric.domain is not set: BUCKET:SELECTION (buckets all, package, numa: the NICs near the "
        "process; selections byset, bycore, random, roundrobin, rank) or passthrough (the provider's "
        "first domain, or the interface of the node's address or route). Default as Margo's; with one "
        "NIC every policy picks it. 'rooftop nics' shows what each does here; 'rooftop collect "
        "--nic-policy A,B' measures one run per policy; docs/nic-policies.md",
    ),
    Key(
        "nic.server_policy",
        "str",
        None,
        "the NIC policy of server processes when it differs from "
        "nic.policy (which then applies to clients only), as seed 000's Figure 2 fixes each server "
        "on its own NIC and varies the clients' policy: e.g. all:roundrobin; default: nic.policy",
        nullable=True,
    ),
    Key("launcher.type", "choice", "local", _launcher_type_help(), tuple(LAUNCHERS)),
    Key("launcher.nodes", "int", None, _launcher_nodes_help(), nullable=True, maximum=100_000),
    Key(
        "launcher.hosts",
        "list[str]",
        None,
        _for_launchers("hosts", "host names, one per node (default none: give hosts or hostfile)"),
        nullable=True,
    ),
    Key(
        "launcher.hostfile",
        "str",
        None,
        _for_launchers("hostfile", "file with one host per line (default none: give hosts or hostfile)"),
        nullable=True,
    ),
    Key(
        "launcher.cores_per_node",
        "int",
        None,
        _for_launchers("cores_per_node", "usable cores per node (default: this machine's)"),
        nullable=True,
        maximum=100_000,
    ),
    Key(
        "launcher.command",
        "str",
        None,
        _for_launchers("command", "the launcher's executable (default: its name, e.g. mpiexec / srun)"),
        nullable=True,
    ),
    Key(
        "launcher.flavor",
        "choice",
        "auto",
        _for_launchers("flavor", "MPI flavour (auto: from 'mpiexec --version')"),
        FLAVORS,
    ),
    Key(
        "launcher.extra_args",
        "list[str]",
        [],
        _for_launchers("extra_args", "extra launcher arguments, placed before the engine"),
    ),
    Key(
        "launcher.oversubscribe",
        "bool",
        False,
        _for_launchers(
            "oversubscribe",
            "under binding core "
            "or 2cores, start more processes than a node's cores hold: process k takes the k-th core set "
            "mod the node's, so processes share cores (for placements such as 16 clients on an emulated "
            "node of 2 cores; rates that need CPU then share it)",
        ),
    ),
    Key("binding", "choice", "core", "core binding: one process per core, two cores per process, or none", BINDINGS),
    Key("metrics", "list[choice]", metrics.defaults(), metrics.help_text(), tuple(metrics.METRICS)),
    # Each metric's own keys (declared in its file, rooftop/metrics/), in table order.
    *(k for m in metrics.METRICS.values() for k in m.keys),
    Key("collect.duration", "float", 5.0, f"measured seconds per sample (at least {MIN_DURATION_S:g})", maximum=DAY),
    Key("collect.warmup", "float", 1.0, "warmup seconds before each sample", maximum=HOUR),
    Key("collect.samples", "int", 5, "samples per measurement", maximum=10_000),
    Key("collect.server_peak", "bool", True, "measure the server ceiling (saturated server node)"),
    Key("collect.client_peak", "bool", True, "measure the client ceiling (every node pair)"),
    Key(
        "collect.pairs",
        "choice",
        "serial",
        "client peak pair scheduling: serial (one node pair at a "
        "time, as seed 000) or rounds (round-robin tournament: N-1 rounds of N/2 disjoint pairs measured "
        "at once, about N/2 times faster; pairs may then share a switch)",
        ("serial", "rounds"),
    ),
    Key(
        "collect.client_node",
        "bool",
        True,
        "measure the node-saturated client ceiling: one client "
        "node fully populated against the servers of every other node (seed 000, section 5.2)",
    ),
    Key(
        "collect.sweep_servers",
        "bool",
        False,
        "measure one server node's aggregate as its server processes grow 1..max",
    ),
    Key(
        "collect.servers_per_node",
        "int",
        None,
        "server processes on the server node (default: one per usable core under the binding)",
        nullable=True,
        maximum=100_000,
    ),
    Key(
        "collect.clients_per_node",
        "int",
        None,
        "client processes per client node (default: one per usable core under the binding)",
        nullable=True,
        maximum=100_000,
    ),
    Key(
        "validate.server_nodes",
        "list[int]",
        None,
        f"server-node counts of the validation grid (default 1..min({VALIDATE_SERVER_NODES}, N-1))",
        nullable=True,
        maximum=100_000,
    ),
    Key(
        "validate.client_nodes",
        "list[int]",
        None,
        "client-node counts (default 1..N-servers)",
        nullable=True,
        maximum=100_000,
    ),
    Key(
        "validate.servers_per_node",
        "int",
        None,
        "server processes per server node (default: one per usable core under the binding)",
        nullable=True,
        maximum=100_000,
    ),
    Key(
        "validate.clients_per_node",
        "int",
        None,
        "client processes per client node (default: one per usable core under the binding)",
        nullable=True,
        maximum=100_000,
    ),
    Key(
        "validate.duration",
        "float",
        5.0,
        f"measured seconds per validation sample (at least {MIN_DURATION_S:g})",
        maximum=DAY,
    ),
    Key("validate.warmup", "float", 1.0, "warmup seconds per validation sample", maximum=HOUR),
    Key("validate.samples", "int", 1, "samples per grid point", maximum=10_000),
    Key("engine.server_progress", "str", "spindown", "server progress mode: busy, block, adaptive, spindown[:MS]"),
    Key("engine.client_progress", "str", "busy", "client progress mode"),
    Key(
        "engine.concurrency",
        "int",
        1,
        "operations each client process keeps outstanding (1: sequential, synchronous, as seed 000 measures)",
        maximum=4096,
    ),
    Key(
        "engine.handler_threads",
        "int",
        0,
        "server threads running RPC handlers (0: all in the single progress loop, the paper's single-threaded daemon)",
        maximum=256,
    ),
    Key(
        "engine.start",
        "choice",
        "barrier",
        "how the clients of a sample start measuring together: barrier "
        "(each warms up, reports ready to server rank 0 over the fabric and keeps loading; its one answer "
        "starts every client's first window) or clock (a wall-clock instant, launch time + start_lead + "
        "warmup: a guess, kept to compare with)",
        ("barrier", "clock"),
    ),
    Key(
        "engine.barrier_timeout",
        "float",
        60.0,
        "seconds a ready client waits at the start barrier for "
        "the others: allow for the slowest start-up (a CPU-capped node populating its 1 GiB stream buffer "
        "takes several seconds); a client that never becomes ready fails its sample after this",
    ),
    Key(
        "engine.settle",
        "float",
        0.1,
        "seconds clients load again after the start barrier's release "
        "before their first window (they drained to report ready: pipelines and TCP windows refill)",
    ),
    Key(
        "engine.start_lead",
        "float",
        0.5,
        "engine.start = clock: seconds allowed for client processes to start before their warmup",
        maximum=HOUR,
    ),
    Key(
        "engine.min_overlap",
        "float",
        0.95,
        "share of each window that all clients of a sample must "
        "measure together; a round below it is measured again, then stored invalid",
    ),
    Key(
        "engine.retries",
        "int",
        2,
        "times an invalid round (clients apart, an aggregate above a known "
        "link rate) is measured again before its samples are stored invalid",
    ),
    Key(
        "engine.slices",
        "int",
        20,
        "slices per window in which clients report their work, to sum it over the time all of them measured",
    ),
    Key("engine.timeout", "float", 10.0, "seconds before a missing or silent server is an error", maximum=DAY),
    Key(
        "engine.lease",
        "float",
        10.0,
        "seconds an engine runs on without hearing from its campaign "
        "(a lease file in its group folder, renewed every lease/5 s): engines never outlive a campaign "
        "that was killed",
        maximum=DAY,
    ),
    Key("engine.path", "str", None, "rooftop-engine executable (default: installed one)", nullable=True),
    Key("results", "str", "./rooftop-results", "results folder (SQLite database and raw engine output)"),
    Key("fail_fast", "bool", False, "stop the campaign at the first failed sample"),
    # The samplers' keys (rooftop/samplers.py): time series recorded during rounds.
    *samplers.KEYS,
]
KEY_BY_PATH = by_path(KEYS)

#: The studies' own keys (rooftop.bursts.keys, rooftop.learn.keys, ...), by
#: section (the first part of their paths: bursts, tune, audit, loads, probe).
#: A study registers its table with register() when its keys module is
#: imported (the layers forbid config from importing a study). They are in
#: KEY_BY_PATH (`--set`, config files, `config keys`) but only in the config
#: of a command that reads them: build(..., sections=("bursts",)).
STUDY_KEYS: dict[str, list[Key]] = {}


def register(section: str, keys: list[Key]) -> None:
    """Adds a study's keys (every path under `section.`); a key declared
    twice, here or in KEYS, is an error, as in by_path."""
    bad = [k.path for k in keys if not k.path.startswith(section + ".")]
    if bad or any(k.path == section or k.path.startswith(section + ".") for k in KEYS):
        raise ValueError(f"study keys of section {section}: {bad or section} not under a section of their own")
    if STUDY_KEYS.get(section) == keys:  # the same table again (a module imported twice)
        return
    new = by_path(keys)
    twice = sorted(set(new) & set(KEY_BY_PATH))
    if twice:
        raise ValueError(f"config key {twice[0]} is declared twice (a study's table and another)")
    STUDY_KEYS.setdefault(section, []).extend(keys)
    KEY_BY_PATH.update(new)


def section_of(path: str) -> str | None:
    """The study section a key belongs to (None: a common key)."""
    head = path.split(".", 1)[0]
    return head if head in STUDY_KEYS else None


def _at_most(key: Key, value: float) -> float:
    if key.maximum is not None and value > key.maximum:
        raise ConfigError(f"{key.path}: {short(value)} is beyond any sensible value (at most {key.maximum:g})")
    if key.minimum is not None and value < key.minimum:
        raise ConfigError(f"{key.path}: {short(value)} is too small (at least {key.minimum:g})")
    return value


def _check(key: Key, value: Any) -> Any:
    """Type-checks one value; returns it normalised."""
    p = key.path
    if value is None:
        if key.nullable:
            return None
        raise ConfigError(f"{p}: may not be null")
    k = key.kind
    if k == "str":
        if not isinstance(value, str):
            raise ConfigError(f"{p}: expected a string, got {type(value).__name__} {value!r}")
        return value
    if k == "bool":
        if not isinstance(value, bool):
            raise ConfigError(f"{p}: expected true or false, got {value!r}")
        return value
    if k == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{p}: expected an integer, got {type(value).__name__} {short(value)}")
        return _at_most(key, value)
    if k == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{p}: expected a number, got {type(value).__name__} {short(value)}")
        try:
            number = float(value)
        except OverflowError:
            raise ConfigError(f"{p}: {short(value)} is not a usable number (too large)") from None
        if not math.isfinite(number):
            raise ConfigError(f"{p}: expected a finite number, got {value!r}")
        return _at_most(key, number)
    if k == "size":
        parse_size(value, p)
        return value
    if k == "choice":
        if value not in key.choices:
            raise ConfigError(f"{p}: '{value}' is not one of {', '.join(key.choices)}")
        return value
    if k.startswith("list["):
        if not isinstance(value, list):
            raise ConfigError(f"{p}: expected a list, got {type(value).__name__} {value!r}")
        inner = k[5:-1]
        out = []
        for i, v in enumerate(value):
            sub = Key(f"{p}[{i}]", inner, None, "", key.choices, maximum=key.maximum, minimum=key.minimum)
            out.append(_check(sub, v))
        return out
    raise AssertionError(k)


def defaults(sections: tuple[str, ...] = ()) -> dict:
    """Every common key's default, and those of the study sections named."""
    cfg: dict = {}
    for k in [*KEYS, *(k for s in sections for k in STUDY_KEYS.get(s, []))]:
        _set(cfg, k.path, copy.deepcopy(k.default))
    return cfg


def _set(cfg: dict, path: str, value: Any) -> None:
    parts = path.split(".")
    d = cfg
    for part in parts[:-1]:
        d = d.setdefault(part, {})
    d[parts[-1]] = value


def set_key(cfg: dict, path: str, value: Any) -> None:
    """Sets one dotted key of a config (e.g. validate.samples), unchecked:
    resolve or resolve_grid checks it."""
    _set(cfg, path, value)


def _get(cfg: dict, path: str) -> Any:
    d = cfg
    for part in path.split("."):
        d = d[part]
    return d


def _flatten(data: dict, prefix: str = "", where: str = "") -> dict[str, Any]:
    """Nested user config -> {dotted path: value}; unknown keys are errors."""
    flat = {}
    for name, value in data.items():
        path = f"{prefix}{name}"
        if path in KEY_BY_PATH:
            flat[path] = value
        elif isinstance(value, dict) and any(k.startswith(path + ".") for k in KEY_BY_PATH):
            flat.update(_flatten(value, path + ".", where))
        else:
            near = difflib.get_close_matches(path, list(KEY_BY_PATH), n=1, cutoff=0.75)
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise ConfigError(f"{path}: unknown key{where}{hint}")
    return flat


def load_file(path: str | Path) -> dict:
    """Reads a JSON or TOML campaign file (by extension; JSON otherwise)."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise ConfigError(f"cannot read config file {path}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a text file (expected JSON or TOML)") from None
    if path.suffix == ".toml":
        if sys.version_info >= (3, 11):
            import tomllib
        else:  # Python 3.10
            import tomli as tomllib
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{path}: not valid TOML: {e}") from None
        except RecursionError:
            raise ConfigError(f"{path}: nested too deeply to be a config (TOML)") from None
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ConfigError(f"{path}: not valid JSON: line {e.lineno} column {e.colno}: {e.msg}") from None
        except RecursionError:
            raise ConfigError(f"{path}: nested too deeply to be a config (JSON)") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be an object of settings")
    return data


def parse_override(text: str) -> tuple[str, Any]:
    """'key=value' from --set: the value is JSON if it parses, else a string."""
    if "=" not in text:
        raise ConfigError(f"--set {text}: expected KEY=VALUE (e.g. collect.samples=3)")
    key, raw = text.split("=", 1)
    key = key.strip()
    if key not in KEY_BY_PATH:
        raise ConfigError(f"{key}: unknown key (see 'rooftop config keys')")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    except RecursionError:
        raise ConfigError(f"--set {key}: the value is nested too deeply") from None
    if KEY_BY_PATH[key].kind.startswith("list[") and isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
        if KEY_BY_PATH[key].kind == "list[int]":
            try:
                value = [int(v) for v in value]
            except ValueError:
                raise ConfigError(f"{key}: expected comma-separated integers, got '{raw}'") from None
    return key, value


def merge(file_data: dict | None, overrides: dict[str, Any], sections: tuple[str, ...] = ()) -> dict:
    """Defaults <- file <- overrides, type-checked; not yet resolved.
    Keys of a study section not in `sections` are checked and left out if
    the file sets them (one file may serve several commands), refused if
    given as overrides (this command would ignore them)."""
    cfg = defaults(sections)
    where = ""
    flat = _flatten(file_data or {}, "", where)
    for path in overrides:
        other = section_of(path)
        if other and other not in sections:
            raise ConfigError(f"{path}: a key of 'rooftop {STUDY_COMMAND.get(other, other)}', not read by this command")
    flat.update(overrides)
    for path, value in flat.items():
        key = KEY_BY_PATH.get(path)
        if key is None:
            raise ConfigError(f"{path}: unknown key")
        value = _check(key, value)
        if section_of(path) in (None, *sections):
            _set(cfg, path, value)
    return cfg


#: The command that reads a study section, where it is not the section's name.
STUDY_COMMAND = {"loads": "interfere"}


def _positive(cfg: dict, path: str, minimum: float = 0, strict: bool = True) -> None:
    v = _get(cfg, path)
    if v is None:
        return
    if (strict and v <= minimum) or (not strict and v < minimum):
        op = ">" if strict else ">="
        raise ConfigError(f"{path}: must be {op} {minimum:g}, got {v}")


def _long_enough(cfg: dict, path: str) -> None:
    """A measured window too short to hold a few operations is a mistake,
    not a sample (issue 27)."""
    v = _get(cfg, path)
    if v < MIN_DURATION_S:
        raise ConfigError(
            f"{path}: {v:g} s is too short for a measured window (at least "
            f"{MIN_DURATION_S:g} s: a window must hold many operations)"
        )


def _not_years(cfg: dict, stage: str) -> None:
    """One measurement (samples x (warmup + duration)) must end this month."""
    st = cfg[stage]
    total = st["samples"] * st["duration"] + st["warmup"]
    if total > MAX_MEASUREMENT_S:
        raise ConfigError(
            f"{stage}.samples: {st['samples']} samples of {st['duration']:g} s take "
            f"{total / DAY:.0f} days per measurement (at most {MAX_MEASUREMENT_S / DAY:.0f})"
        )


def _check_start(cfg: dict) -> None:
    e = cfg["engine"]
    if not 0 < e["min_overlap"] <= 1:
        raise ConfigError(f"engine.min_overlap: {e['min_overlap']} is not a share in (0, 1]")
    if not 0 <= e["retries"] <= 10:
        raise ConfigError(f"engine.retries: {e['retries']} is not 0..10")
    if not 1 <= e["slices"] <= 1000:
        raise ConfigError(f"engine.slices: {e['slices']} is not 1..1000")


def resolve(cfg: dict) -> dict:
    """Checks values against each other and the machine, and fills in what
    depends on them (nodes, processes per node, the validation grid)."""
    from rooftop.launchers import LauncherError, make_launcher
    from rooftop.launchers.base import procs_per_node

    cfg = copy.deepcopy(cfg)
    for p in ("collect.duration", "validate.duration", "engine.timeout", "engine.barrier_timeout", "engine.lease"):
        _positive(cfg, p)
    for p in ("collect.warmup", "validate.warmup", "engine.start_lead", "engine.settle"):
        _positive(cfg, p, 0, strict=False)
    _long_enough(cfg, "collect.duration")
    _check_start(cfg)
    for p in (
        "collect.samples",
        "validate.samples",
        "launcher.nodes",
        "launcher.cores_per_node",
        "collect.servers_per_node",
        "collect.clients_per_node",
        "validate.servers_per_node",
        "validate.clients_per_node",
        "engine.concurrency",
    ):
        _positive(cfg, p)
    _positive(cfg, "engine.handler_threads", 0, strict=False)
    _not_years(cfg, "collect")
    if not cfg["metrics"]:
        raise ConfigError(f"metrics: name at least one of {', '.join(metrics.METRICS)}")
    if len(set(cfg["metrics"])) != len(cfg["metrics"]):
        raise ConfigError(f"metrics: {cfg['metrics']} lists a metric twice")
    check_policy(cfg["nic"]["policy"])
    if cfg["nic"].get("server_policy") is not None:
        check_policy(cfg["nic"]["server_policy"], "nic.server_policy")
    prog = re.compile(r"^(busy|block|adaptive|spindown(:\d{1,7}(\.\d{1,3})?)?)$")
    for p in ("engine.server_progress", "engine.client_progress"):
        if not prog.match(_get(cfg, p)):
            raise ConfigError(f"{p}: '{_get(cfg, p)}' is not busy, block, adaptive or spindown[:MS]")
    for m in metrics.METRICS.values():
        m.check(cfg)
    if cfg["engine"]["path"] and not os.access(cfg["engine"]["path"], os.X_OK):
        raise ConfigError(f"engine.path: {cfg['engine']['path']} is not an executable file")

    try:
        launcher = make_launcher(cfg["launcher"])
        nodes = launcher.nodes()
    except LauncherError as e:
        raise ConfigError(f"launcher: {e}") from None
    n = len(nodes)
    binding = cfg["binding"]
    # Servers serve on loopback unless told otherwise: across real hosts an
    # IP provider needs the interface they should listen on (nodes that
    # carry their own address, as emulated ones do, serve on it).
    import socket

    local_names = {"localhost", socket.gethostname(), socket.getfqdn()}
    remote = [
        nd.host for nd in nodes if nd.host not in local_names and not nd.host.startswith("127.") and not nd.address
    ]
    ip_provider = any(p in cfg["fabric"]["provider"] for p in ("tcp", "sockets", "verbs", "udp"))
    if remote and ip_provider and not cfg["fabric"]["domain"]:
        raise ConfigError(
            f"fabric.domain: nodes on other hosts ({remote[0]}, ...) cannot reach servers "
            f"listening on loopback; set the network interface they share, e.g. "
            f"--set fabric.domain=hsn0 (or ib0, eth0)"
        )
    cfg["nodes"] = [node.describe() for node in nodes]
    if cfg["launcher"]["type"] == "local" and cfg["launcher"]["nodes"] is None:
        cfg["launcher"]["nodes"] = n

    def procs(path: str) -> int:
        want = _get(cfg, path)
        have = min(procs_per_node(node, binding) for node in nodes)
        width = binding_width(binding)
        if want is None:
            _set(cfg, path, have)
            return have
        if (
            binding != "none"
            and want * width > min(len(node.cores) for node in nodes)
            and not (
                cfg["launcher"].get("oversubscribe") and "oversubscribe" in LAUNCHERS[cfg["launcher"]["type"]].keys
            )
        ):
            raise ConfigError(
                f"{path}: {want} processes x {width} core(s) do not fit on a node with "
                f"{min(len(node.cores) for node in nodes)} usable cores "
                f"(binding '{binding}')"
            )
        return want

    for p in (
        "collect.servers_per_node",
        "collect.clients_per_node",
        "validate.servers_per_node",
        "validate.clients_per_node",
    ):
        procs(p)

    for name in cfg["metrics"]:  # what measuring each needs on these nodes
        metrics.get(name).check_resolved(cfg)

    needs_two = any(st.enabled(cfg) for st in stages.of_phase("collect"))
    if needs_two and n < 2:
        raise ConfigError(
            f"launcher.nodes: a campaign needs at least 2 nodes (a server node and a client node); {n} available"
        )

    return resolve_grid(cfg)


def resolve_grid(cfg: dict) -> dict:
    """Fills and checks the validation grid against the config's nodes."""
    n = len(cfg["nodes"])
    v = cfg["validate"]
    for p in ("validate.duration",):
        _positive(cfg, p)
        _long_enough(cfg, p)
    _positive(cfg, "validate.warmup", 0, strict=False)
    for p in ("validate.samples", "validate.servers_per_node", "validate.clients_per_node"):
        _positive(cfg, p)
    _not_years(cfg, "validate")
    if cfg["binding"] != "none":
        width = binding_width(cfg["binding"])
        cores = min(len(nd["cores"]) for nd in cfg["nodes"])
        for p in ("servers_per_node", "clients_per_node"):
            if v[p] is not None and v[p] * width > cores:
                raise ConfigError(
                    f"validate.{p}: {v[p]} processes x {width} core(s) do not fit on a "
                    f"node with {cores} usable cores (binding '{cfg['binding']}')"
                )
    if v["server_nodes"] is None:
        v["server_nodes"] = list(range(1, max(1, min(VALIDATE_SERVER_NODES, n - 1)) + 1))
    for s in v["server_nodes"]:
        if not 1 <= s <= n - 1:
            raise ConfigError(f"validate.server_nodes: {s} server nodes leave no client node among {n} nodes")
    if v["client_nodes"] is not None:
        for c in v["client_nodes"]:
            if not 1 <= c <= n - min(v["server_nodes"]):
                raise ConfigError(
                    f"validate.client_nodes: {c} client nodes do not fit beside "
                    f"{min(v['server_nodes'])} server node(s) among {n} nodes"
                )
    return cfg


def build(
    config_file: str | None = None, overrides: dict[str, Any] | None = None, sections: tuple[str, ...] = ()
) -> dict:
    """File + overrides -> resolved config (with the study sections named)."""
    data = load_file(config_file) if config_file else None
    return resolve(merge(data, overrides or {}, sections))


def describe_keys() -> str:
    lines = []
    studies = [(s, k) for s, keys in STUDY_KEYS.items() for k in keys]
    for section, k in [(None, k) for k in KEYS] + studies:
        d = json.dumps(k.default)
        choices = f" ({'|'.join(k.choices)})" if k.choices else ""
        limits = [f"at least {k.minimum:g}"] if k.minimum is not None else []
        limits += [f"at most {k.maximum:g}"] if k.maximum is not None else []
        read = f" [rooftop {STUDY_COMMAND.get(section, section)} only]" if section else ""
        bounds = f", {' and '.join(limits)}" if limits else ""
        lines.append(f"{k.path:30s} {k.kind}{choices}, default {d}{bounds}{read}\n    {k.help}")
    return "\n".join(lines)
