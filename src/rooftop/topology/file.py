"""Source 'file': a file mapping hosts to switches and groups, named by
collect.topology_file. Either Slurm's topology.conf format (SwitchName=...
lines: rooftop.topology.tree), or one line per host (or host list):

    # HOST            SWITCH   [GROUP]
    nid[0001-0064]    sw0      g0
    nid[0065-0128]    sw1      g0
    nid[0129-0192]    sw2      g1

A host without a group is in a group of its own switch. Every node of the
campaign must be placed (a file that misses one is an error, not ignored)."""

from __future__ import annotations

import re
from pathlib import Path

from rooftop.launchers.hostlist import HostlistError, expand
from rooftop.topology import tree
from rooftop.topology.base import Context, Topology, TopologyError, Unavailable

NAME = "file"
HELP = "the file collect.topology_file names (host switch [group] per line, or topology.conf)"
KEY = "collect.topology_file"


def parse_columns(text: str, where: str) -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for no, raw in enumerate(text.splitlines(), 1):
        fields = raw.split("#", 1)[0].split()
        if not fields:
            continue
        if len(fields) not in (2, 3):
            raise TopologyError(f"{where}:{no}: '{raw.strip()[:80]}' is not 'HOST SWITCH [GROUP]'")
        try:
            hosts = expand(fields[0])
        except HostlistError as e:
            raise TopologyError(f"{where}:{no}: {e}") from None
        place = (fields[1], fields[2] if len(fields) == 3 else fields[1])
        for h in hosts:
            if h in out and out[h] != place:
                raise TopologyError(f"{where}:{no}: host {h} is placed twice ({out[h][0]}, then {place[0]})")
            out[h] = place
    return out


def read(name: str, key: str = KEY) -> dict[str, tuple[str, str]]:
    """host -> (switch, group) of a topology file, hosts in file order
    (topology.conf or 'HOST SWITCH [GROUP]' lines); errors name `key` (the
    config key or option that named the file), the file and the line."""
    try:
        text = Path(name).read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise TopologyError(f"{key}: cannot read {name}: {getattr(e, 'strerror', None) or e}") from None
    try:
        if re.search(r"(?im)^\s*switchname\s*=", text):
            where = tree.parse(text, name)
        else:
            where = parse_columns(text, name)
    except TopologyError as e:
        raise TopologyError(f"{key}: {e}") from None
    if not where:
        raise TopologyError(f"{key}: {name} places no host (no 'SwitchName=NAME Nodes=HOSTS' nor 'HOST SWITCH' line)")
    return where


def of_hosts(where: dict[str, tuple[str, str]], hosts: list[str], name: str) -> Topology:
    """The topology of these hosts as the file `name` places them."""
    return Topology(NAME, [where[h][0] for h in hosts], [where[h][1] for h in hosts], name)


def find(ctx: Context) -> Topology:
    name = ctx.cfg["collect"]["topology_file"]
    if not name:
        raise Unavailable(f"no file ({KEY} is not set)")
    where = read(name)
    missing = [h for h in ctx.hosts if h not in where]
    if missing:
        raise TopologyError(
            f"{KEY}: {name} places no switch for host(s) {', '.join(missing[:4])}"
            + (" ..." if len(missing) > 4 else "")
            + f" ({len(missing)} of {len(ctx.hosts)} nodes)"
        )
    return of_hosts(where, ctx.hosts, name)
