"""Source 'slurm': Slurm's switch tree ('scontrol show topology', written
from topology.conf under TopologyPlugin=topology/tree), when the campaign
runs under Slurm (an allocation: SLURM_JOB_ID, or the node list the srun
launcher reads)."""

from __future__ import annotations

import os

from rooftop.launchers.srun import scontrol
from rooftop.topology import tree
from rooftop.topology.base import Context, Topology, Unavailable

NAME = "slurm"
HELP = "Slurm's switch tree ('scontrol show topology'), under Slurm"


def find(ctx: Context) -> Topology:
    if not any(os.environ.get(v) for v in ("SLURM_JOB_ID", "SLURM_JOB_NODELIST", "SLURM_NODELIST")):
        raise Unavailable("not under Slurm (no SLURM_JOB_ID: not in an allocation)")
    out = scontrol(["show", "topology"], os.environ)
    if not out or "SwitchName=" not in out:
        raise Unavailable("'scontrol show topology' shows no switch (Slurm without TopologyPlugin=topology/tree)")
    where = tree.parse(out, "scontrol show topology")
    missing = [h for h in ctx.hosts if h not in where]
    if missing:
        raise Unavailable(f"'scontrol show topology' places no switch above {', '.join(missing[:4])}")
    return Topology(NAME, [where[h][0] for h in ctx.hosts], [where[h][1] for h in ctx.hosts], "scontrol show topology")
