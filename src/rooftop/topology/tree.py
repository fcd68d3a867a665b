"""Switch trees as Slurm writes them (topology.conf, 'scontrol show
topology'): one line per switch, 'SwitchName=s0 Nodes=n[0-3]' for a leaf,
'SwitchName=top Switches=s[0-2]' above them (Level= and LinkSpeed= are
read and ignored). Host lists are expanded as Slurm does.

A node's switch is the leaf switch holding it; its group is the subtree
under the top switch that holds it: the top switch's child on the way to
the node (a tree of leaves and one top switch: each leaf is a group of its
own; leaves under level-1 switches: each level-1 switch is a group)."""

from __future__ import annotations

import re

from rooftop.launchers.hostlist import HostlistError, expand
from rooftop.topology.base import TopologyError

_FIELD = re.compile(r"(\w+)=(\S+)")


def parse(text: str, where: str) -> dict[str, tuple[str, str]]:
    """host -> (switch, group) of a switch tree; where names the text in
    errors ('FILE' or 'scontrol show topology'), with the line."""
    children: dict[str, list[str]] = {}
    leaves: dict[str, list[str]] = {}
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = {k.lower(): v for k, v in _FIELD.findall(line)}
        name = fields.get("switchname")
        if not name or not ({"nodes", "switches"} & set(fields)):
            raise TopologyError(
                f"{where}:{no}: '{raw.strip()[:80]}' is not 'SwitchName=NAME Nodes=HOSTS' or "
                f"'SwitchName=NAME Switches=SWITCHES'"
            )
        try:
            if "switches" in fields:  # (its Nodes=, as scontrol lists them, are its descendants)
                children[name] = expand(fields["switches"])
            elif "nodes" in fields:
                leaves[name] = expand(fields["nodes"])
        except HostlistError as e:
            raise TopologyError(f"{where}:{no}: {e}") from None
    parent: dict[str, str] = {}
    for up, kids in children.items():
        for k in kids:
            if k in parent and parent[k] != up:
                raise TopologyError(f"{where}: switch {k} is under both {parent[k]} and {up}")
            parent[k] = up

    def group_of(leaf: str) -> str:
        path, s = [leaf], leaf
        while s in parent:
            s = parent[s]
            if s in path:
                raise TopologyError(f"{where}: switches {' > '.join(path)} form a loop")
            path.append(s)
        return path[-2] if len(path) > 1 else path[-1]  # the top switch's child (or a lone leaf)

    out: dict[str, tuple[str, str]] = {}
    for leaf, hosts in leaves.items():
        for h in hosts:
            if h in out and out[h][0] != leaf:
                raise TopologyError(f"{where}: node {h} is on both switch {out[h][0]} and {leaf}")
            out[h] = (leaf, group_of(leaf))
    return out
