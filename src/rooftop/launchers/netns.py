"""The netns launcher: the emulated cluster of 'rooftop cluster up'.

Nodes are read from the cluster's state file (rooftop.cluster.state); each is
a network namespace with its own address, shaped link and cgroup. One command
line per engine process, which joins the node's cgroups, enters its
namespace and becomes the engine (every step execs, so the engine keeps the
pid the campaign started, and stays in its process group):

  /bin/sh -c 'echo $$ > <cpu cgroup>/cgroup.procs && echo $$ > <cpuset cgroup>/cgroup.procs
              && exec "$@"' rooftop-n1 \\
      ip netns exec rooftop-n1 [extra_args...] ENGINE ... --rank R --cpus C

The cgroups are joined before entering the namespace: 'ip netns exec'
remounts /sys for the namespace, hiding the cgroup mounts. Ranks and cores
as in the local launcher (--rank R --cpus a,b; "{rank}" replaced). Servers
serve on the node's address (Node.address: the campaign passes --address;
on a node with several NICs, every NIC's address, and the NIC policy picks),
and clients reach them over the node's veth; the root namespace, where the
campaign runs ping/stat/shutdown, reaches every node through the bridge.
Under engine.launch = agents (the default) the line starts one node agent
per node instead (agent_launches), which forks every engine there: its
children stay in the node's namespace and cgroups. Use an IP provider (ofi+tcp): ofi+shm would run too, since shared memory
ignores network namespaces, but it would bypass the shaped links.

Configuration (the resolved config's "launcher" section): nodes (the first
N nodes of the cluster, default all); extra_args (placed before the engine,
inside the namespace, e.g. a profiler); oversubscribe (bind more processes
than a node has cores under core or 2cores: process k takes the k-th core
set mod the node's, as Figure 2 of Carns et al. (CUG 2025) places 16 clients on a node
that here has 2 cores). hosts, hostfile, cores_per_node and
command belong to other launchers and are refused: the cluster's shape is
set by 'rooftop cluster up'.
"""

from __future__ import annotations

import os
import shutil

from rooftop.cluster import state as cluster_state
from rooftop.cluster.cgroups import join_script
from rooftop.cluster.spec import ClusterError
from rooftop.launchers.base import (
    Launch,
    Launcher,
    LauncherError,
    LauncherSpec,
    LauncherUnreachable,
    Node,
    first_nodes,
    pinned_argvs,
)

NOT_UP = "run 'rooftop cluster up --nodes N' first (as root)"


class NetnsLauncher(Launcher):
    name = "netns"

    def __init__(self, cfg: dict | None = None, state_path=None):
        cfg = dict(cfg or {})
        for key in ("hosts", "hostfile", "cores_per_node", "command"):
            if cfg.get(key) not in (None, [], ""):
                raise LauncherError(
                    f"launcher.{key} does not apply to the netns launcher: the "
                    f"emulated cluster's nodes and cores are set by 'rooftop cluster up'"
                )
        self._extra = list(cfg.get("extra_args") or [])
        self.shares_cores = bool(cfg.get("oversubscribe"))
        try:
            st = cluster_state.load(state_path)
        except ClusterError as e:
            raise LauncherError(f"{e}; then {NOT_UP}") from None
        where = state_path or cluster_state.path()
        if st is None or not st["nodes"]:
            raise LauncherUnreachable(f"no emulated cluster is up (no state at {where}): {NOT_UP}")
        self._state = st
        self._join = join_script
        nodes = []
        for n in st["nodes"]:
            emulation = {
                "netns": n["netns"],
                "cpu_percent": n["cpu_percent"],
                "link_rate_bits": n["link_rate_bits"],
                "shared_with": list(n["shared_with"]),
                **cluster_state.group_of(n, st),
            }
            if len(n.get("nics") or []) > 1:  # rails: servers may serve on any of them
                emulation["nics"] = [{"name": x["name"], "rail": x["rail"], "address": x["address"]} for x in n["nics"]]
            nodes.append(Node(n["index"], n["netns"], tuple(n["cores"]), n["address"], emulation))
        self._nodes = first_nodes(
            nodes, cfg.get("nodes"), "the emulated cluster has {count} nodes ('rooftop cluster status')"
        )
        self._procs = {n["index"]: list(n["cgroup_procs"]) for n in st["nodes"]}
        self._sh = "/bin/sh"
        self._ip = shutil.which("ip") or "ip"
        if state_path is None:
            missing = [n.host for n in self._nodes if not os.path.exists(f"/run/netns/{n.host}")]
            if missing:
                raise LauncherUnreachable(
                    f"the emulated cluster's namespace {missing[0]} is missing; 'rooftop cluster down' then {NOT_UP}"
                )

    def nodes(self) -> list[Node]:
        return list(self._nodes)

    def wrap(self, node: Node, argv: list[str]) -> list[str]:
        """argv run inside node's cgroups and namespace."""
        files = self._procs[node.index]
        script = self._join(files)
        return [self._sh, "-c", script, node.host, self._ip, "netns", "exec", node.host, *self._extra, *argv]

    def launches(self, node, engine_argv, nprocs, binding, first_rank):
        return [
            Launch(self.wrap(node, argv), node, [rank])
            for rank, argv in pinned_argvs(node, engine_argv, nprocs, binding, first_rank, self.shares_cores)
        ]

    def agent_launches(self, nodes, agent_argv):
        """An agent per node, inside its cgroups and namespace (its children,
        forked, stay there); launcher.extra_args wrap the agent."""
        return [Launch(self.wrap(n, [*agent_argv, "--rank", str(n.index)]), n, [n.index]) for n in nodes]

    def describe(self) -> dict:
        st = self._state
        return {
            "type": self.name,
            "nodes": [n.describe() for n in self.nodes()],
            "cluster": {
                "created": st["created"],
                "bridge": st["bridge"],
                "cgroup": st["cgroup"],
                "machine_cores": st["machine_cores"],
            },
        }


SPEC = LauncherSpec(
    "netns",
    "the emulated cluster of 'rooftop cluster up' (network namespaces on this machine)",
    NetnsLauncher,
    default_nodes="all of the emulated cluster's",
    keys=("nodes", "extra_args", "oversubscribe"),
    on_this_machine=True,
    per_process=True,
)
