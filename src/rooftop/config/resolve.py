"""The fully resolved config (resolve, build): every default filled in, the
nodes the launcher found, the keys checked against each other, the
validation grid; and the keys described for --help."""

from __future__ import annotations

import copy
import json
import os
import re
import socket
from typing import Any

from rooftop import launchers, metrics, stages
from rooftop.config import resources
from rooftop.config.catalog import (
    DAY,
    KEYS,
    MAX_MEASUREMENT_S,
    MIN_DURATION_S,
    STUDY_COMMAND,
    STUDY_KEYS,
    VALIDATE_SERVER_NODES,
)
from rooftop.config.files import get_key, load_file, merge, set_key
from rooftop.exits import Unreachable
from rooftop.keys import ConfigError
from rooftop.launchers import LAUNCHERS, LauncherError, Node, binding_width, make_launcher
from rooftop.launchers.base import procs_per_node
from rooftop.nics.policy import check_policy


def _positive(cfg: dict, path: str, minimum: float = 0, strict: bool = True) -> None:
    v = get_key(cfg, path)
    if v is None:
        return
    if (strict and v <= minimum) or (not strict and v < minimum):
        op = ">" if strict else ">="
        raise ConfigError(f"{path}: must be {op} {minimum:g}, got {v}")


def _long_enough(cfg: dict, path: str) -> None:
    """A measured window too short to hold a few operations is a mistake,
    not a sample (issue 27)."""
    v = get_key(cfg, path)
    if v < MIN_DURATION_S:
        raise ConfigError(
            f"{path}: {v:g} s is too short for a measured window (at least "
            f"{MIN_DURATION_S:g} s: a window must hold many operations)"
        )


def _not_years(cfg: dict, stage: str) -> None:
    """One measurement (warmup + windows x duration) must end this month."""
    st = cfg[stage]
    total = st["windows"] * st["duration"] + st["warmup"]
    if total > MAX_MEASUREMENT_S:
        raise ConfigError(
            f"{stage}.windows: {st['windows']} windows of {st['duration']:g} s take "
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


def _check_values(cfg: dict) -> None:
    """The config's values against their kinds and each other, before any
    node is known: durations, counts, metrics, NIC policies, progress modes,
    each metric's own checks, the engine's path."""
    for p in ("collect.duration", "validate.duration", "engine.timeout", "engine.barrier_timeout", "engine.lease"):
        _positive(cfg, p)
    for p in ("collect.warmup", "validate.warmup", "engine.start_lead", "engine.settle"):
        _positive(cfg, p, 0, strict=False)
    _long_enough(cfg, "collect.duration")
    _check_start(cfg)
    for p in (
        "collect.windows",
        "validate.windows",
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
    if cfg["nic"]["server_policy"] is not None:
        check_policy(cfg["nic"]["server_policy"], "nic.server_policy")
    prog = re.compile(r"^(busy|block|adaptive|spindown(:\d{1,7}(\.\d{1,3})?)?)$")
    for p in ("engine.server_progress", "engine.client_progress"):
        if not prog.match(get_key(cfg, p)):
            raise ConfigError(f"{p}: '{get_key(cfg, p)}' is not busy, block, adaptive or spindown[:MS]")
    if cfg["collect"]["pairs_share_cores"] and not all(
        get_key(cfg, p) == "block" for p in ("engine.server_progress", "engine.client_progress")
    ):
        raise ConfigError(
            "collect.pairs_share_cores: needs engine.server_progress = block and engine.client_progress = "
            f"block (they are {get_key(cfg, 'engine.server_progress')} and {get_key(cfg, 'engine.client_progress')}): "
            "a process that polls holds its core, so pairs sharing cores would always time-slice them"
        )
    for m in metrics.METRICS.values():
        m.check(cfg)
    if cfg["engine"]["path"] and not os.access(cfg["engine"]["path"], os.X_OK):
        raise ConfigError(f"engine.path: {cfg['engine']['path']} is not an executable file")


def resolve(cfg: dict, nodes: list[Node] | None = None) -> dict:
    """Checks values against each other and the machine, and fills in what
    depends on them (nodes, processes per node, the validation grid).

    nodes: planned nodes instead of the launcher's (`rooftop plan`, before
    any allocation): the checks against the machine (the launcher's nodes,
    a fabric.domain their hosts need, each metric's check on the nodes it
    would run on) are left to the campaign; every other check applies."""
    cfg = copy.deepcopy(cfg)
    _check_values(cfg)

    planned = nodes is not None
    if nodes is None:
        nodes = _launcher_nodes(cfg)
    n = len(nodes)
    binding = cfg["binding"]
    cfg["nodes"] = [node.describe() for node in nodes]
    if launchers.spec(cfg["launcher"]["type"]).logical_nodes and cfg["launcher"]["nodes"] is None:
        cfg["launcher"]["nodes"] = n

    have = min(procs_per_node(node, binding) for node in nodes)  # (once: 100,000 nodes are many)
    fewest_cores = min(len(node.cores) for node in nodes)
    width = binding_width(binding)

    def procs(path: str) -> int:
        want = get_key(cfg, path)
        if want is None:
            set_key(cfg, path, have)
            return have
        if (
            binding != "none"
            and want * width > fewest_cores
            and not (cfg["launcher"]["oversubscribe"] and "oversubscribe" in LAUNCHERS[cfg["launcher"]["type"]].keys)
        ):
            raise ConfigError(
                f"{path}: {want} processes x {width} core(s) do not fit on a node with "
                f"{fewest_cores} usable cores "
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

    if not planned:
        resources.check(cfg)  # memory and processes, before anything forks
        for name in cfg["metrics"]:  # what measuring each needs on these nodes
            metrics.get(name).check_resolved(cfg)

    needs_two = any(st.enabled(cfg) for st in stages.of_phase("collect"))
    if needs_two and n < 2:
        raise ConfigError(
            f"launcher.nodes: a campaign needs at least 2 nodes (a server node and a client node); {n} available"
        )

    return resolve_grid(cfg)


def _launcher_nodes(cfg: dict) -> list[Node]:
    """The launcher's nodes, and a fabric.domain they need: across real hosts
    an IP provider needs the interface servers should listen on (servers
    serve on loopback unless told otherwise; nodes that carry their own
    address, as emulated ones do, serve on it)."""
    try:
        nodes = make_launcher(cfg["launcher"]).nodes()
    except LauncherError as e:
        if isinstance(e, Unreachable):
            raise  # not the config's fault: the nodes are not there to reach (rooftop exits 3)
        raise ConfigError(f"launcher: {e}") from None
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
    return nodes


def resolve_grid(cfg: dict) -> dict:
    """Fills and checks the validation grid against the config's nodes."""
    n = len(cfg["nodes"])
    v = cfg["validate"]
    for p in ("validate.duration",):
        _positive(cfg, p)
        _long_enough(cfg, p)
    _positive(cfg, "validate.warmup", 0, strict=False)
    for p in ("validate.windows", "validate.servers_per_node", "validate.clients_per_node"):
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
    config_file: str | None = None,
    overrides: dict[str, Any] | None = None,
    sections: tuple[str, ...] = (),
    nodes: list[Node] | None = None,
) -> dict:
    """File + overrides -> resolved config (with the study sections named;
    nodes: planned ones, as resolve)."""
    data = load_file(config_file) if config_file else None
    return resolve(merge(data, overrides or {}, sections), nodes)


def describe_keys() -> str:
    lines = []
    studies = [(s, k) for s, keys in STUDY_KEYS.items() for k in keys]
    for section, k in [(None, k) for k in KEYS] + studies:
        d = json.dumps(k.default)
        choices = f" ({'|'.join(k.choices)})" if k.choices else ""
        limits = [f"at least {k.minimum:g}"] if k.minimum is not None else []
        limits += [f"at most {k.maximum:g}"] if k.maximum is not None else []
        read = f" [rooftop {STUDY_COMMAND.get(section, section)} only]" if section else ""
        read += " [executes]" if k.executes else ""  # a stored value is used again only if trusted (config.trust)
        bounds = f", {' and '.join(limits)}" if limits else ""
        lines.append(f"{k.path:30s} {k.kind}{choices}, default {d}{bounds}{read}\n    {k.help}")
    return "\n".join(lines)
