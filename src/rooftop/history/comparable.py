"""What makes two runs' ceilings comparable: the same hosts, the same
metric, and the same value of every config key that changes a ceiling.

The keys are declared here, one table (CEILING_KEYS: the common ones) plus
each metric's own keys (every key its metric file declares, e.g. bw.size,
rpc.request_size: they define the operation measured). Keys absent from
the tables (durations, samples, warm-up, timeouts, results folder) change
how precisely a ceiling is measured, not what it is. The emulated
cluster's link rates and CPU caps are not compared: they are the platform,
whose change the check is there to find.
"""

from __future__ import annotations

from rooftop.config.catalog import KEYS

#: Common config keys whose value changes a ceiling: the fabric and NIC
#: choice, how processes start and bind, the engine's progress modes and
#: concurrency, and how many processes share a node during the peaks.
CEILING_KEYS: tuple[str, ...] = (
    "fabric.provider",
    "fabric.domain",
    "nic.policy",
    "nic.server_policy",
    "launcher.type",
    "binding",
    "engine.server_progress",
    "engine.client_progress",
    "engine.concurrency",
    "engine.handler_threads",
    "collect.servers_per_node",
    "collect.clients_per_node",
)


def metric_keys(metric: str) -> tuple[str, ...]:
    """The metric's own declared keys (bw: bw.op, bw.size, ...)."""
    return tuple(sorted(k.path for k in KEYS if k.path.startswith(metric + ".")))


def _get(cfg: dict, path: str):
    v = cfg
    for part in path.split("."):
        if not isinstance(v, dict) or part not in v:
            return None
        v = v[part]
    return v


def hosts(cfg: dict) -> list[str]:
    """The run's host set: each node's host, in node order."""
    return [str(n.get("host", "")) for n in cfg.get("nodes") or []]


def signature(cfg: dict, metric: str) -> dict:
    """Every field that must match for two runs' `metric` ceilings to be
    compared: {"metric", "hosts", key path: value}."""
    sig: dict = {"metric": metric, "hosts": hosts(cfg)}
    for path in CEILING_KEYS + metric_keys(metric):
        sig[path] = _get(cfg, path)
    return sig


def group_key(sig: dict) -> str:
    """A stable text key of a signature (groups of comparable runs)."""
    import json

    return json.dumps(sig, sort_keys=True)


def differences(a: dict, b: dict) -> list[str]:
    """Why two signatures are not comparable: 'FIELD: A here, B there' per field."""
    out = []
    for f in sorted(set(a) | set(b), key=lambda f: (f not in ("metric", "hosts"), f)):
        if a.get(f) != b.get(f):
            out.append(f"{f}: {_show(a.get(f))} vs {_show(b.get(f))}")
    return out


def _show(v) -> str:
    if isinstance(v, list) and len(v) > 4:
        return f"{len(v)} nodes ({', '.join(map(str, v[:3]))}, ...)"
    return repr(v)
