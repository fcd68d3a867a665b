"""The srun launcher: job steps inside a Slurm allocation (salloc/sbatch).

Nodes are the allocation's (SLURM_JOB_NODELIST, else SLURM_NODELIST,
expanded by rooftop.launchers.hostlist), optionally only the first
launcher.nodes of them. One srun step starts the K processes of one node:

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

from rooftop.launchers.base import (BINDINGS, Launch, Launcher, LauncherError, LauncherSpec, Node,
                                    core_sets, first_nodes)
from rooftop.launchers.hostlist import HostlistError, expand, expand_counts


class SrunLauncher(Launcher):
    name = "srun"

    def __init__(self, cfg: dict, environ: dict[str, str] | None = None):
        env = os.environ if environ is None else environ
        self.command = cfg.get("command") or "srun"
        self.extra_args = [str(a) for a in (cfg.get("extra_args") or [])]

        var = "SLURM_JOB_NODELIST" if env.get("SLURM_JOB_NODELIST") else "SLURM_NODELIST"
        nodelist = env.get(var)
        if not nodelist:
            raise LauncherError("srun launcher needs a Slurm allocation (salloc/sbatch); "
                                "SLURM_JOB_NODELIST is not set")
        try:
            hosts = expand(nodelist)
        except HostlistError as e:
            raise LauncherError(f"srun launcher: cannot read {var}: {e}") from None
        if not hosts:
            raise LauncherError(f"srun launcher: {var}='{nodelist}' names no nodes")
        self.job_id = env.get("SLURM_JOB_ID")

        counts = self._cpu_counts(env, len(hosts))
        hosts = first_nodes(hosts, cfg.get("nodes"),
                            "the Slurm allocation has only {count} nodes (" + f"{var}={nodelist})")
        self._nodes = [Node(i, h, tuple(range(counts[i]))) for i, h in enumerate(hosts)]

    @staticmethod
    def _cpu_counts(env, nhosts: int) -> list[int]:
        per_node = env.get("SLURM_JOB_CPUS_PER_NODE")
        if per_node:
            try:
                counts = expand_counts(per_node)
            except HostlistError as e:
                raise LauncherError(f"srun launcher: cannot read SLURM_JOB_CPUS_PER_NODE: "
                                    f"{e}") from None
            if len(counts) == nhosts and all(c > 0 for c in counts):
                return counts
        on_node = env.get("SLURM_CPUS_ON_NODE")
        if on_node:
            try:
                return [int(on_node)] * nhosts
            except ValueError:
                raise LauncherError(f"srun launcher: SLURM_CPUS_ON_NODE='{on_node}' is not "
                                    "a number") from None
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
        argv = [self.command, "--nodes=1", f"--ntasks={nprocs}", f"--nodelist={node.host}",
                "--exact"]
        if binding == "core":
            argv.append("--cpus-per-task=1")
        elif binding == "2cores":
            argv.append("--cpus-per-task=2")
        argv += [f"--cpu-bind={'none' if binding == 'none' else 'cores'}",
                 "--kill-on-bad-exit=1", *self.extra_args,
                 *engine_argv, "--rank", str(first_rank), "--rank-from-env"]
        return [Launch(argv, node, list(range(first_rank, first_rank + nprocs)))]


SPEC = LauncherSpec(
    "srun", "Slurm job steps inside an allocation (salloc/sbatch)", SrunLauncher,
    default_nodes="all of the allocation's", keys=("nodes", "command", "extra_args"))
