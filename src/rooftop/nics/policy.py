"""NIC selection policies: the config key nic.policy, the engine arguments
a campaign passes, and what `rooftop nics` shows (run, render; its parser
is rooftop.cli.nics).

The policies themselves live in the engine (engine/src/nic_policy.cpp, one
table): a bucket narrows the node's NICs to those near the process (all,
package, numa), a selection picks one of them (byset, bycore, random,
roundrobin, rank), or passthrough leaves the choice to the provider or the
route. The names below mirror that table (a test keeps them equal);
`rooftop nics` asks the engine (`rooftop-engine nics`) what each policy does,
so there is one implementation.

Round-robin counters live in a fresh directory per node under each group's
(servers) and each round's (clients) folder: every campaign, and every
attempt of a round, starts from the first NIC, so runs are reproducible.
"""

from __future__ import annotations

import copy
import shutil
import subprocess
import sys
from pathlib import Path

from rooftop.engine import enginedoc
from rooftop.keys import ConfigError
from rooftop.launchers import spec

BUCKETS = ("all", "package", "numa")
SELECTIONS = ("byset", "bycore", "random", "roundrobin", "rank")


def policy_names() -> list[str]:
    """passthrough and every BUCKET:SELECTION, in the engine's order."""
    return ["passthrough"] + [f"{b}:{s}" for b in BUCKETS for s in SELECTIONS]


def check_policy(value, key: str = "nic.policy") -> str:
    """The policy if it is one; ConfigError naming the key otherwise."""
    if not isinstance(value, str):
        raise ConfigError(f"{key}: expected a policy such as package:roundrobin, got {value!r}")
    if "," in value:
        raise ConfigError(
            f"{key}: '{value}': one policy per run; 'rooftop collect --nic-policy "
            f"A,B' measures one run per policy, and 'rooftop nics' shows the NIC "
            f"each process gets under each"
        )
    if value == "passthrough":
        return value
    bucket, _, selection = value.partition(":")
    if bucket not in BUCKETS:
        raise ConfigError(
            f"{key}: '{value}': use passthrough or BUCKET:SELECTION; buckets: "
            f"{', '.join(BUCKETS)}; selections: {', '.join(SELECTIONS)}"
        )
    if selection not in SELECTIONS:
        raise ConfigError(f"{key}: '{value}': unknown selection '{selection}'; selections: {', '.join(SELECTIONS)}")
    return value


def role_policy(cfg: dict, role: str = "client") -> str:
    """The policy of servers (nic.server_policy, when set) or clients (nic.policy)."""
    nic = cfg.get("nic", {})
    if role == "server" and nic.get("server_policy"):
        return nic["server_policy"]
    return nic.get("policy", "passthrough")


def engine_args(cfg: dict, counters: Path, node_index: int, role: str = "client") -> list[str]:
    """--nic-policy and its counter directory (fresh: emptied here) for the
    processes one launch starts on one node; none with fabric.domain (it
    wins over any policy) or passthrough (the engine's default). role:
    server or client (servers follow nic.server_policy when it is set)."""
    policy = role_policy(cfg, role)
    if policy == "passthrough" or cfg.get("fabric", {}).get("domain"):
        return []
    node_dir = counters / f"node-{node_index}"
    shutil.rmtree(node_dir, ignore_errors=True)
    args = ["--nic-policy", policy, "--nic-counters", str(node_dir)]
    # A launcher that starts each process with its own argv (LauncherSpec.per_process)
    # gives the node-local rank with --local-rank; so does every node agent
    # (engine.launch = agents: it removes its own rank variables); the others
    # set it in the environment.
    per_process = spec(cfg["launcher"]["type"]).per_process or cfg.get("engine", {}).get("launch") == "agents"
    if policy.endswith(":rank") and per_process:
        args += ["--local-rank", "{local_rank}"]
    return args


def same_policy(cfg: dict, asked: str, run_id: str) -> None:
    """validate --nic-policy: the run's own policy, or ConfigError."""
    check_policy(asked, "--nic-policy")
    own = cfg.get("nic", {}).get("policy", "passthrough")
    if asked != own:
        raise ConfigError(
            f"--nic-policy {asked}: run {run_id} measures under nic.policy {own}; "
            f"a run keeps one policy: start another with 'rooftop collect "
            f"--nic-policy {asked}'"
        )


def collect_each(args, collect) -> int:
    """collect --nic-policy A,B,...: the whole collect once per policy, one
    run each (its config records nic.policy; every engine document records
    the NIC it used), in the order given; then how to compare them. Stops at
    the first run that does not end well and returns its code."""
    policies = [p.strip() for p in args.nic_policy.split(",") if p.strip()]
    for p in policies:
        check_policy(p, "--nic-policy")
    if len(set(policies)) != len(policies):
        raise ConfigError(f"--nic-policy {args.nic_policy}: names a policy twice")
    if args.resume:
        raise ConfigError("--resume continues one run under its own policy: give no --nic-policy")
    for k, p in enumerate(policies):
        print(f"rooftop: nic.policy {p} ({k + 1} of {len(policies)})", file=sys.stderr, flush=True)
        one = copy.copy(args)
        one.nic_policy = p
        rc = collect(one)
        if rc != 0:
            return rc
    if not args.dry_run and not args.json:
        print(
            f"rooftop: one run per NIC policy ({', '.join(policies)}), their ids above: "
            f"'rooftop compare RUN...' puts their rooflines on one figure, 'rooftop report RUN "
            f"--nic-runs RUN2,...' their server-node aggregates per binding and policy",
            file=sys.stderr,
        )
    return 0


# rooftop nics -------------------------------------------------------------


def run(engine: str, fabric: str, topology: str | None, policies: str, bindings: str, processes: int) -> dict:
    """The engine's `nics` result; ConfigError with its message on exit 2."""
    cmd = [
        engine,
        "nics",
        "--fabric",
        fabric,
        "--policy",
        policies,
        "--binding",
        bindings,
        "--processes",
        str(processes),
    ]
    if topology:
        cmd += ["--topology", topology]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        why = p.stderr.strip().removeprefix("rooftop-engine nics: ")
        raise ConfigError(why or f"'{' '.join(cmd)}' failed (exit {p.returncode})")
    doc = enginedoc.parse(p.stdout)
    if not isinstance(doc, dict) or not isinstance(doc.get("result"), dict):
        raise ConfigError(f"'{' '.join(cmd)}' printed no engine document: {p.stdout.strip()[-200:]!r}")
    return doc["result"]


def _where(nic: dict) -> str:
    if not nic["located"]:
        return "no PCI device found: in every bucket"
    packages = ",".join(map(str, nic["packages"])) or "-"
    numa = ",".join(map(str, nic["numa"])) or "-"
    return f"package {packages}, NUMA {numa}"


def render(result: dict, per_process_up_to: int = 16) -> str:
    """The NICs with their locality, then per policy and binding the NIC of
    each process (up to per_process_up_to processes) and the load per NIC."""
    lines = [f"NICs for {result['provider']} ({result['topology']}; {result['cores']} usable cores):"]
    for n in result["nics"] or []:
        lines.append(f"  {n['name']:<12} pci {n['pci'] or '-':<13}  {_where(n)}")
    if not result["nics"]:
        lines.append("  none")
    n = result["processes"]
    lines += [
        "",
        f"{n} processes, placed on the usable cores in order (none: unbound, assumed to run on the k-th core):",
    ]
    width = max([len(a["policy"]) for a in result["assignments"]] + [6])
    for a in result["assignments"]:
        load = (
            ", ".join(f"{nic} x{k}" for nic, k in sorted(a["load"].items())) or "the provider's or the route's choice"
        )
        lines.append(f"  {a['policy']:<{width}}  {a['binding']:<6}  {load}")
        if n <= per_process_up_to and a["load"]:
            lines.append(f"  {'':<{width}}  {'':<6}  per process: " + " ".join(p["nic"] or "-" for p in a["processes"]))
        fell = sum(1 for p in a["processes"] if p["fell_back"])
        if fell:
            lines.append(f"  {'':<{width}}  {'':<6}  {fell} process(es) found no NIC in their bucket and used all")
    return "\n".join(lines)
