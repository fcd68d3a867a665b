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
import resource

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


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def task_room() -> list[tuple[str, int]]:
    """How many more tasks (processes and threads) this machine lets this
    user start, per limit that applies: (the limit named, its room left)."""
    out = []
    loadavg = _read("/proc/loadavg")  # "... running/total last_pid"
    total = int(loadavg.split()[3].split("/")[1]) if loadavg else 0
    for name, path in (
        ("kernel.pid_max", "/proc/sys/kernel/pid_max"),
        ("kernel.threads-max", "/proc/sys/kernel/threads-max"),
    ):
        v = _read(path)
        if v and v.isdigit():
            out.append((f"{name} = {v} ({total} tasks running)", int(v) - total))
    cgroup = _read("/proc/self/cgroup") or ""
    for line in cgroup.splitlines():  # this process's group and its pids limit (cgroup v2, or v1's pids)
        _, controllers, group = line.split(":", 2)
        if controllers in ("", "pids"):
            d = "/sys/fs/cgroup" + ("/pids" if controllers else "") + group.rstrip("/")
            limit, current = _read(d + "/pids.max"), _read(d + "/pids.current")
            if limit and limit.isdigit() and current and current.isdigit():
                out.append((f"the cgroup's pids.max = {limit} ({current} in use)", int(limit) - int(current)))
    soft = resource.getrlimit(resource.RLIMIT_NPROC)[0]
    if soft != resource.RLIM_INFINITY and os.geteuid() != 0:  # root is not held to it
        mine = 0
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    st = os.stat(f"/proc/{pid}/task")
                    if st.st_uid == os.getuid():
                        mine += st.st_nlink - 2  # one subfolder per thread
                except OSError:
                    pass
        out.append((f"ulimit -u = {soft} ({mine} tasks of this user)", soft - mine))
    return out


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
    logical_nodes=True,
    per_process=True,
)
