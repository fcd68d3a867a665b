"""Source 'emulated': the groups of the emulated cluster ('rooftop cluster
up --groups G'), as the launcher recorded them in each node's emulation
(netns, or srun and mpiexec on the cluster's nodes): each group is one
switch, the groups joined through the top switch."""

from __future__ import annotations

from rooftop.topology.base import Context, Topology, Unavailable

NAME = "emulated"
HELP = "the emulated cluster's groups ('rooftop cluster up --groups G')"


def find(ctx: Context) -> Topology:
    ems = [n.get("emulation") or {} for n in ctx.cfg["nodes"]]
    if not ems or not all("switch" in e for e in ems):
        raise Unavailable("the nodes are not on an emulated cluster with groups ('rooftop cluster up --groups G')")
    switches = [e["switch"] for e in ems]
    return Topology(NAME, switches, list(switches), f"{len(set(switches))} groups of 'rooftop cluster up --groups'")
