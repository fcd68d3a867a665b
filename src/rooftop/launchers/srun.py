"""The srun launcher: job steps inside a Slurm allocation (salloc/sbatch).

Nodes are the allocation's (SLURM_JOB_NODELIST, else SLURM_NODELIST),
expanded by Slurm itself ('scontrol show hostnames'; rooftop's own parser,
rooftop.launchers.hostlist, only where scontrol is missing or has no
configuration to read), optionally only the first launcher.nodes of them.
Before anything starts, 'scontrol show node' gives each node's state: a
node drained, down, failed or not responding is refused with its reason
(Slurm keeps running an allocation's steps on a node drained after it was
allocated, so the allocation alone does not guarantee it). When scontrol
cannot be run, the check is skipped.

On the emulated cluster ('rooftop cluster up --slurm': the nodes are its
rooftop-n<I> with NodeAddr their own address), servers serve on the node's
NodeAddr, as Slurm reports it, so no fabric.domain is needed, and each node
carries its emulation record (netns, CPU cap, link rate, shared cores) as
with the netns launcher.

One srun step starts the K processes of one node:

  srun --nodes=1 --ntasks=K --nodelist=HOST --exact --cpus-per-task=C
       --cpu-bind=cores|none --kill-on-bad-exit=1 [extra_args]
       ENGINE ... --rank FIRST --rank-from-env

with C = 1 for binding 'core', 2 for '2cores', and no --cpus-per-task for
'none' (Slurm's default of one CPU per task; --cpu-bind=none leaves the
tasks free to run on all CPUs of the step). Each task adds its SLURM_PROCID
to FIRST and replaces "{rank}" in its arguments (the engine does both).

Several steps run at the same time in one allocation (all servers, then the
clients). --exact gives each step only the CPUs it asks for, so steps on one
node get disjoint CPUs and a later step is not blocked by an earlier one
that would otherwise hold the whole node; a step asking for CPUs that are
taken waits until they are free. (--overlap would instead let steps share
CPUs -- not wanted here, it would put clients on the servers' cores; it can
be given through launcher.extra_args.) If the job has memory allocated per
node, concurrent steps may also need an explicit --mem / --mem-per-cpu in
extra_args so that the first step does not claim all of it.

Under engine.launch = agents (the default) none of those steps runs: one
step for the whole campaign starts a node agent per node (agent_launches:
--nodes=N --ntasks=N --ntasks-per-node=1 --nodelist=<every node> --overlap
--cpu-bind=none, task i on node i), each with all of the node's CPUs in the
job, and the agent forks every engine, binding it with --cpus to positions
in its own CPUs (--relative-cpus). A step of the agents' does not hold
CPUs from other steps (--overlap): interference loads still start theirs.

The servers' shutdown token travels as a file, as with mpiexec: --token-file
<group dir>/token (0600 in a 0700 group directory on the shared file system
the address files need anyway), never argv or --export.

Cores per node: SLURM_JOB_CPUS_PER_NODE ("64(x4),32") gives each node's
count; else SLURM_CPUS_ON_NODE (the node running rooftop, assumed for all);
else os.cpu_count(). Slurm counts CPUs, i.e. hardware threads on SMT nodes
(add --hint=nomultithread to extra_args to bind to whole cores there).
Node.cores is 0..count-1: Slurm picks the actual CPUs inside the step.
"""

from __future__ import annotations

import os
import re
import subprocess

from rooftop.cluster.spec import ClusterError
from rooftop.cluster.state import emulated_nodes
from rooftop.launchers.base import BINDINGS, Launch, Launcher, LauncherError, LauncherSpec, Node, core_sets, first_nodes
from rooftop.launchers.hostlist import HostlistError, expand, expand_counts

#: How long one scontrol call may take.
SCONTROL_TIMEOUT = 20.0
#: Node state flags (scontrol's State=A+B) under which nothing is started.
BAD_STATES = ("DRAIN", "DOWN", "FAIL", "NOT_RESPONDING", "FUTURE", "POWERED_DOWN", "POWER_DOWN")


def scontrol(args: list[str], env) -> str | None:
    """scontrol's output; None when it cannot run here (not installed, no
    configuration). A scontrol that hangs is an error."""
    try:
        p = subprocess.run(
            ["scontrol", *args],
            capture_output=True,
            text=True,
            env=dict(env),
            timeout=SCONTROL_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        return None
    except subprocess.TimeoutExpired:
        raise LauncherError(
            f"srun launcher: 'scontrol {' '.join(args)}' did not answer within {SCONTROL_TIMEOUT:g} s"
        ) from None
    return p.stdout if p.returncode == 0 else None


def slurm_hosts(nodelist: str, env) -> list[str] | None:
    """The host names of a Slurm node list, expanded by scontrol."""
    out = scontrol(["show", "hostnames", nodelist], env)
    return out.split() or None if out is not None else None  # "Invalid hostlist": exit 0, no output


def slurm_nodes(hosts: list[str], env) -> dict[str, dict] | None:
    """{host: {"state", "addr", "reason"}} from 'scontrol show node -o'."""
    out = scontrol(["show", "node", "-o", ",".join(hosts)], env)
    if out is None:
        return None
    info = {}
    for line in out.splitlines():
        fields = dict(re.findall(r"(\w+)=(\S*)", line.split(" Reason=")[0]))
        if "NodeName" in fields:
            reason = line.split(" Reason=", 1)[1].strip() if " Reason=" in line else ""
            info[fields["NodeName"]] = {
                "state": fields.get("State", ""),
                "addr": fields.get("NodeAddr"),
                "reason": reason,
            }
    return info


def check_states(info: dict[str, dict]) -> None:
    for host, n in info.items():
        flags = re.split(r"[+]", n["state"].upper())
        if n["state"].endswith("*") or any(f.rstrip("*") in BAD_STATES for f in flags):
            why = f" (reason: {n['reason']})" if n["reason"] else ""
            raise LauncherError(
                f"srun launcher: Slurm node {host} is {n['state']}{why}; nothing was started. "
                f"Resume it (scontrol update nodename={host} state=resume) or use an allocation "
                f"without it"
            )


class SrunLauncher(Launcher):
    name = "srun"

    def __init__(self, cfg: dict, environ: dict[str, str] | None = None):
        env = os.environ if environ is None else environ
        self.command = cfg.get("command") or "srun"
        self.extra_args = [str(a) for a in (cfg.get("extra_args") or [])]

        var = "SLURM_JOB_NODELIST" if env.get("SLURM_JOB_NODELIST") else "SLURM_NODELIST"
        nodelist = env.get(var)
        if not nodelist:
            raise LauncherError("srun launcher needs a Slurm allocation (salloc/sbatch); SLURM_JOB_NODELIST is not set")
        hosts = slurm_hosts(nodelist, env)
        if hosts is None:
            try:
                hosts = expand(nodelist)
            except HostlistError as e:
                raise LauncherError(f"srun launcher: cannot read {var}: {e}") from None
        if not hosts:
            raise LauncherError(f"srun launcher: {var}='{nodelist}' names no nodes")
        self.job_id = env.get("SLURM_JOB_ID")

        counts = self._cpu_counts(env, len(hosts))
        hosts = first_nodes(
            hosts, cfg.get("nodes"), "the Slurm allocation has only {count} nodes (" + f"{var}={nodelist})"
        )
        info = slurm_nodes(hosts, env)
        if info is not None:
            check_states(info)
        self._nodes = self._make_nodes(hosts, counts, info or {})

    @staticmethod
    def _make_nodes(hosts: list[str], counts: list[int], info: dict[str, dict]) -> list[Node]:
        try:
            emulated = emulated_nodes(hosts) if info else None
        except ClusterError as e:
            raise LauncherError(f"srun launcher: {e}") from None
        nodes = []
        for i, h in enumerate(hosts):
            em = (emulated or {}).get(h)
            if em is not None and (info.get(h) or {}).get("addr") == em["address"]:
                nodes.append(Node(i, h, tuple(range(counts[i])), em["address"], em["emulation"]))
            else:
                nodes.append(Node(i, h, tuple(range(counts[i]))))
        return nodes

    @staticmethod
    def _cpu_counts(env, nhosts: int) -> list[int]:
        per_node = env.get("SLURM_JOB_CPUS_PER_NODE")
        if per_node:
            try:
                counts = expand_counts(per_node)
            except HostlistError as e:
                raise LauncherError(f"srun launcher: cannot read SLURM_JOB_CPUS_PER_NODE: {e}") from None
            if len(counts) == nhosts and all(c > 0 for c in counts):
                return counts
        on_node = env.get("SLURM_CPUS_ON_NODE")
        if on_node:
            try:
                return [int(on_node)] * nhosts
            except ValueError:
                raise LauncherError(f"srun launcher: SLURM_CPUS_ON_NODE='{on_node}' is not a number") from None
        if per_node:  # a count list that does not match the node list: use its first value
            return [expand_counts(per_node)[0]] * nhosts
        return [os.cpu_count() or 1] * nhosts

    def nodes(self) -> list[Node]:
        return list(self._nodes)

    def launches(self, node, engine_argv, nprocs, binding, first_rank):
        if binding not in BINDINGS:
            raise LauncherError(f"binding '{binding}': must be one of {', '.join(BINDINGS)}")
        if nprocs < 1:
            raise LauncherError(f"node {node.index}: nprocs must be at least 1, not {nprocs}")
        core_sets(node, nprocs, binding)  # raises if the processes do not fit
        argv = [self.command, "--nodes=1", f"--ntasks={nprocs}", f"--nodelist={node.host}", "--exact"]
        if binding == "core":
            argv.append("--cpus-per-task=1")
        elif binding == "2cores":
            argv.append("--cpus-per-task=2")
        argv += [
            f"--cpu-bind={'none' if binding == 'none' else 'cores'}",
            "--kill-on-bad-exit=1",
            *self.extra_args,
            *engine_argv,
            "--rank",
            str(first_rank),
            "--rank-from-env",
        ]
        return [Launch(argv, node, list(range(first_rank, first_rank + nprocs)))]

    def agent_launches(self, nodes, agent_argv):
        """One job step for every agent: a task per node (task i on the i-th
        node of the list, which keeps Slurm's order), each with all of the
        node's CPUs in the job (no --exact, --cpu-bind=none) that it binds
        its processes within (--relative-cpus: Node.cores are positions);
        --overlap leaves the CPUs to other steps too (interference loads)."""
        if [n.index for n in nodes] != list(range(len(nodes))):
            raise LauncherError("srun launcher: agents start on every node of the launcher, in order")
        argv = [
            self.command,
            f"--nodes={len(nodes)}",
            f"--ntasks={len(nodes)}",
            "--ntasks-per-node=1",
            f"--nodelist={','.join(n.host for n in nodes)}",
            "--overlap",
            "--cpu-bind=none",
            *self.extra_args,
            *agent_argv,
            "--rank",
            "0",
            "--rank-from-env",
            "--relative-cpus",
        ]
        return [Launch(argv, nodes[0], [n.index for n in nodes])]

    def agent_misplaced(self, node, ready):
        where = ready.get("slurm_node")
        return f"started on Slurm node {where}, not {node.host}" if where and where != node.host else ""


SPEC = LauncherSpec(
    "srun",
    "Slurm job steps inside an allocation (salloc/sbatch)",
    SrunLauncher,
    default_nodes="all of the allocation's",
    keys=("nodes", "command", "extra_args"),
)
