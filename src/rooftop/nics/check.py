"""What was asked is what was measured: the NIC checks of a campaign.

Before anything starts, a ``fabric.domain`` is checked by the engine itself
(``rooftop-engine domains --domain D``) when the launcher runs processes on
this machine (``local``). Other launchers are not checked up front:

* ``netns``: each node is a namespace with its own interfaces, so this
  host's list says nothing about them; nodes carry their own address, which
  servers are given with ``--address`` and the engine checks inside the
  node. A bad ``fabric.domain`` makes the first server exit 2 there.
* ``mpiexec``/``srun``: the interfaces are on other hosts. The engine's own
  exit 2 (its message lists what exists there) fails the group's samples
  with a message naming the node and host.

After servers are ready, each one's address file states the domain,
interface and IP it really serves on; after each sample, each client's
document does. Both must match what the config asked for: ``fabric.domain``
when set, and the node's address when the node has one (IP providers; on
an emulated node with several NICs, the address of one of them).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from rooftop.engine.base import EXIT_USAGE, engine_path
from rooftop.keys import ConfigError
from rooftop.launchers import LAUNCHERS

#: Launchers whose processes run on this machine's own interfaces (their SPEC says so).
LOCAL_LAUNCHERS = tuple(name for name, spec in LAUNCHERS.items() if spec.interfaces_here)
IP_PROVIDERS = ("tcp", "sockets", "verbs", "udp")


def _ip_provider(cfg: dict) -> bool:
    return any(p in cfg["fabric"]["provider"] for p in IP_PROVIDERS)


def preflight(cfg: dict) -> None:
    """Raises ConfigError if fabric.domain does not exist here (or does not
    carry the provider), for launchers that run on this machine."""
    domain = cfg["fabric"]["domain"]
    if not domain or cfg["launcher"]["type"] not in LOCAL_LAUNCHERS:
        return
    cmd = [cfg["engine"]["path"] or engine_path(), "domains", "--fabric", cfg["fabric"]["provider"], "--domain", domain]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if p.returncode == EXIT_USAGE:
        why = p.stderr.strip().removeprefix("rooftop-engine domains: ")
        raise ConfigError(f"fabric.domain: {why}")
    if p.returncode != 0:
        raise ConfigError(f"fabric.domain: '{' '.join(cmd)}' failed (exit {p.returncode}): {p.stderr.strip()}")


def mismatch(cfg: dict, node, used: dict) -> str:
    """Why an endpoint that used {domain, interface, ip} is not what the
    config asked for on this node; "" if it is."""
    asked = cfg["fabric"]["domain"]
    if asked and asked not in (used.get("domain"), used.get("interface")):
        return (
            f"used domain '{used.get('domain')}' (interface {used.get('interface') or 'none'}), "
            f"not fabric.domain '{asked}'"
        )
    allowed = node.nic_addresses() if node.address else []
    if allowed and _ip_provider(cfg) and used.get("ip") not in allowed:
        return (
            f"used address {used.get('ip') or 'none'} (interface {used.get('interface') or 'none'}), "
            f"not the node's address {' or '.join(allowed)}"
        )
    return ""


def _where(kind: str, rank: int, node) -> str:
    return f"{kind} rank {rank} on node {node.index} ({node.host})"


def _address_file(path: Path) -> dict:
    fields = {}
    for line in path.read_text().splitlines():
        k, sep, v = line.partition("=")
        if sep and not line.startswith("#"):
            fields[k] = v
    return fields


def server_errors(cfg: dict, gdir: Path, launches) -> list[str]:
    """Servers whose published address (domain, interface, ip) is not what
    was asked; one message per server, naming rank and node."""
    errors = []
    for launch in launches:
        for r in launch.ranks:
            try:
                used = _address_file(gdir / f"{r}.addr")
            except OSError:
                continue  # withdrawn: the ping that follows reports it
            why = mismatch(cfg, launch.node, used)
            if why:
                errors.append(f"{_where('server', r, launch.node)} {why}")
    return errors


def client_errors(cfg: dict, launches, docs: dict[int, dict]) -> dict[int, str]:
    """Client ranks whose document (docs: rank -> the document the campaign
    loaded) shows an endpoint other than the one asked for: {rank: message
    naming rank and node}. A rank without a document is left to the
    campaign, which reports that already."""
    errors = {}
    for launch in launches:
        for r in launch.ranks:
            engine = (docs.get(r) or {}).get("engine") or {}
            if not engine.get("provider"):
                continue  # the endpoint never opened: its own error says why
            why = mismatch(cfg, launch.node, engine)
            if why:
                errors[r] = f"{_where('client', r, launch.node)} {why}"
    return errors


def early_exit(launch, ranks: list[int], code: int | None, log: str) -> str:
    """The message for servers that exited before becoming ready; an exit 2
    (usage: e.g. a --domain the host lacks) says the host refused it."""
    where = f"server rank(s) {ranks} on node {launch.node.index} ({launch.node.host})"
    if code == EXIT_USAGE:
        return f"{where}: rooftop-engine on host {launch.node.host} refused its arguments (exit 2): {log}"
    return f"{where} exited with code {code} before becoming ready: {log}"
