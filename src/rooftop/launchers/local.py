"""The default launcher: this machine's cores split into N logical nodes.

No root needed. With 2 cores, 2 nodes of one core each; with 3 or more,
3 nodes (the cores split evenly). Under engine.launch = agents (the
default) one unbound node agent per node forks the engines, each bound as
below. Processes
are bound with the engine's own --cpus, so a logical node's processes stay
on its cores even with binding 'none' (then each may use all of them).
"""

from __future__ import annotations

import os

from rooftop.launchers.base import Launch, Launcher, LauncherError, LauncherSpec, Node, pinned_argvs

#: Logical nodes by default: min(DEFAULT_NODES, usable cores). Three is the
#: smallest campaign whose client and server ceilings are separate
#: measurements (so the ridge can be located); 2 cores give 2 nodes, a
#: server node and a client node, whose ceilings are one measurement.
DEFAULT_NODES = 3


def usable_cores() -> list[int]:
    return sorted(os.sched_getaffinity(0))


def mem_available() -> int | None:
    """This machine's available memory in bytes (MemAvailable), None if unknown."""
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


class LocalLauncher(Launcher):
    name = "local"

    def __init__(self, nodes: int | None = None, cores: list[int] | None = None):
        self._cores = list(cores) if cores is not None else usable_cores()
        n = nodes if nodes is not None else min(DEFAULT_NODES, len(self._cores))
        if n < 1:
            raise LauncherError("launcher.nodes must be at least 1")
        if n > len(self._cores):
            raise LauncherError(
                f"launcher.nodes = {n}: this machine has only {len(self._cores)} usable cores to split into nodes"
            )
        per = len(self._cores) // n
        self._nodes = [Node(i, "localhost", tuple(self._cores[i * per : (i + 1) * per])) for i in range(n)]

    def nodes(self) -> list[Node]:
        return list(self._nodes)

    def launches(self, node, engine_argv, nprocs, binding, first_rank):
        return [
            Launch(argv, node, [rank]) for rank, argv in pinned_argvs(node, engine_argv, nprocs, binding, first_rank)
        ]


SPEC = LauncherSpec(
    "local",
    "this machine's cores split into logical nodes (no root needed)",
    lambda cfg: LocalLauncher(cfg.get("nodes")),
    default_nodes=f"min({DEFAULT_NODES}, cores) logical nodes, this machine's cores split evenly",
    keys=("nodes",),
    on_this_machine=True,
    interfaces_here=True,
)
