"""What makes two runs' ceilings comparable: the same hosts, the same
metric, and the same value of every config key that changes a ceiling.

The keys are declared here, one table (CEILING_KEYS: the common ones) plus
each metric's own keys (every key its metric file declares, e.g. bw.size,
rpc.request_size: they define the operation measured). Keys absent from
the tables (durations, samples, warm-up, timeouts, results folder) change
how precisely a ceiling is measured, not what it is. The emulated
cluster's link rates and CPU caps are not compared: they are the platform,
whose change the check is there to find.

Nor is the machine a run was measured on (its identity: CPU, cores,
memory, NICs' drivers and speeds, libfabric and the provider's version;
rooftop.engine.machine): a signature carries it, but it is named, not
required (NAMED). A libfabric upgrade or a new NIC driver on the same hosts
is exactly what a check must judge; each comparison says the runs were
measured on different machines and what differs (machine_note).
"""

from __future__ import annotations

import json

from rooftop.config.catalog import KEYS
from rooftop.config.files import get_key
from rooftop.engine import machine

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


def hosts(cfg: dict) -> list[str]:
    """The run's host set: each node's host, in node order."""
    return [str(n.get("host", "")) for n in cfg.get("nodes") or []]


#: Signature fields that are named, not required: runs that differ in them
#: are still compared, and the comparison says how they differ.
NAMED = ("machine",)


def machine_of(environment: dict | None) -> dict | None:
    """A run's machine as its signature has it: {"identity", "summary"}
    (None: the run recorded none)."""
    m = machine.of_environment(environment)
    return {"identity": m["identity"], "summary": m["summary"]} if m else None


def signature(cfg: dict, metric: str, environment: dict | None = None) -> dict:
    """Every field that must match for two runs' `metric` ceilings to be
    compared: {"metric", "hosts", key path: value}, and the machine the run
    was measured on (NAMED: environment's, None when it recorded none)."""
    sig: dict = {"metric": metric, "hosts": hosts(cfg)}
    for path in CEILING_KEYS + metric_keys(metric):
        sig[path] = get_key(cfg, path)
    sig["machine"] = machine_of(environment)
    return sig


def group_key(sig: dict) -> str:
    """A stable text key of a signature (groups of comparable runs): its
    required fields only."""
    return json.dumps({f: v for f, v in sig.items() if f not in NAMED}, sort_keys=True)


def differences(a: dict, b: dict) -> list[str]:
    """Why two signatures are not comparable: 'FIELD: A here, B there' per
    required field."""
    out = []
    for f in sorted((set(a) | set(b)) - set(NAMED), key=lambda f: (f not in ("metric", "hosts"), f)):
        if a.get(f) != b.get(f):
            out.append(f"{f}: {_show(a.get(f))} vs {_show(b.get(f))}")
    return out


def machine_differences(a: dict, b: dict) -> list[str] | None:
    """What differs between the machines two signatures were measured on
    ([]: the same machine; None: either run recorded none, so nothing can be said)."""
    ma, mb = a.get("machine"), b.get("machine")
    if not ma or not mb:
        return None
    if ma["identity"] == mb["identity"]:
        return []
    return machine.differences(ma["summary"], mb["summary"])


def machine_note(a: dict, b: dict, other: str) -> str | None:
    """ "measured on a different machine than OTHER: libfabric: 1.17 vs
    1.18" when a's machine is not b's; None when they are the same or
    either is unknown."""
    diff = machine_differences(a, b)
    if not diff:
        return None
    return f"measured on a different machine than {other} ({b['machine']['identity']}): " + "; ".join(diff)


def _show(v) -> str:
    if isinstance(v, list) and len(v) > 4:
        return f"{len(v)} nodes ({', '.join(map(str, v[:3]))}, ...)"
    return repr(v)
