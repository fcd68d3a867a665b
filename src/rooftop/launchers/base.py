"""What a launcher is: where the nodes are, and the exact command lines that
start K engine processes on one node with a given core binding."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field

from rooftop.exits import Unreachable

#: Core-binding scenarios (Carns et al., CUG 2025, Figure 2): one process per core,
#: two cores per process, or no binding at all.
BINDINGS = ("core", "2cores", "none")
#: Cores each process is bound to under a binding (None: unbound).
BINDING_WIDTH = {"core": 1, "2cores": 2, "none": None}
#: The room a node agent needs in its own command line to show each child's
#: (/proc/PID/cmdline: the engine's kTitleRoom), given as an argument of
#: spaces only, which the agent drops before reading its options. Without
#: it the agent runs itself again, padded, and loads libfabric twice (its
#: Debian build's constructors sleep ~0.2 s each time). A launcher whose
#: line repeats the agent's per node (mpiexec) leaves it out.
TITLE_ROOM = " " * 8192


def binding_width(binding: str) -> int:
    """Cores a process takes under a binding, for fitting processes on a
    node ('none' counts as one: unbound processes still need a core each)."""
    return BINDING_WIDTH[binding] or 1


@dataclass(frozen=True)
class Node:
    """One node of the campaign: a real host, or a logical slice of this one."""

    index: int
    host: str
    cores: tuple[int, ...]
    #: IP address servers on this node serve on (None: the engine's default).
    address: str | None = None
    #: Emulated cluster (netns launcher) only: what the node was built with --
    #: netns, cpu_percent (None: no cap), link_rate_bits (None: unshaped),
    #: shared_with (nodes using one of its cores). Not part of equality.
    emulation: dict | None = field(default=None, compare=False)

    def nic_addresses(self) -> list[str]:
        """Every address servers on this node may serve on: one per NIC of an
        emulated multi-NIC node (emulation["nics"]), else the node's address."""
        nics = (self.emulation or {}).get("nics")
        if nics:
            return [n["address"] for n in nics]
        return [self.address] if self.address else []

    def describe(self) -> dict:
        d = {"index": self.index, "host": self.host, "cores": list(self.cores), "address": self.address}
        if self.emulation is not None:
            d["emulation"] = dict(self.emulation)
        return d


@dataclass
class Launch:
    """One command line to run, and what it starts. agent: an engine
    command the node's agent starts (engine.launch = agents; argv is then
    the engine's own, with its --rank and --cpus), not a process of its own;
    for an agents' launch (Launcher.agent_launches), ranks are the nodes
    it serves."""

    argv: list[str]
    node: Node
    ranks: list[int]
    env: dict[str, str] = field(default_factory=dict)
    agent: bool = False


class LauncherError(RuntimeError):
    """A launcher cannot do what was asked (names the reason)."""


class LauncherUnreachable(LauncherError, Unreachable):
    """The nodes are not there to reach (no emulated cluster up, or its
    namespaces gone): rooftop exits 3."""


def first_nodes(names: list, n: int | None, too_many: str) -> list:
    """The first n of names (all if n is None). too_many completes the error
    "launcher.nodes = N but ..." and may use {count}."""
    if n is None:
        return names
    if n < 1:
        raise LauncherError("launcher.nodes must be at least 1")
    if n > len(names):
        raise LauncherError(f"launcher.nodes = {n} but " + too_many.format(count=len(names)))
    return names[:n]


def procs_per_node(node: Node, binding: str) -> int:
    """Default number of processes a node holds under a binding."""
    return max(1, len(node.cores) // binding_width(binding))


def core_sets(node: Node, nprocs: int, binding: str, wrap: bool = False) -> list[tuple[int, ...] | None]:
    """The cores each of nprocs processes is bound to (None: unbound).
    wrap: more processes than fit take the node's core sets again, in
    order (process k: set k mod sets), so processes share cores."""
    if binding == "none":
        return [None] * nprocs
    width = binding_width(binding)
    if wrap and len(node.cores) >= width:
        sets = len(node.cores) // width
        return [tuple(node.cores[(i % sets) * width : (i % sets + 1) * width]) for i in range(nprocs)]
    if nprocs * width > len(node.cores):
        raise LauncherError(
            f"node {node.index} ({node.host}) has {len(node.cores)} usable cores: "
            f"{nprocs} processes x {width} core(s) do not fit (binding '{binding}')"
        )
    return [tuple(node.cores[i * width : (i + 1) * width]) for i in range(nprocs)]


def pinned_argvs(
    node: Node, engine_argv: list[str], nprocs: int, binding: str, first_rank: int, wrap: bool = False
) -> list[tuple[int, list[str]]]:
    """(rank, argv) of each of nprocs engine processes started one by one on
    node, each bound with the engine's own --cpus ('none': all of the
    node's cores; wrap: as core_sets); "{rank}" in engine_argv becomes the
    rank, "{local_rank}" the process's index on the node."""
    out = []
    for i, cores in enumerate(core_sets(node, nprocs, binding, wrap)):
        cpus = cores if cores is not None else node.cores
        rank = first_rank + i
        argv = [a.replace("{rank}", str(rank)).replace("{local_rank}", str(i)) for a in engine_argv]
        out.append((rank, argv + ["--rank", str(rank), "--cpus", ",".join(map(str, cpus))]))
    return out


class Launcher(ABC):
    """Starts engine processes on nodes."""

    name = "base"

    @abstractmethod
    def nodes(self) -> list[Node]:
        """The nodes this launcher can use, in order."""

    @abstractmethod
    def launches(self, node: Node, engine_argv: list[str], nprocs: int, binding: str, first_rank: int) -> list[Launch]:
        """Command lines starting nprocs engine processes with ranks
        first_rank..first_rank+nprocs-1 on node.

        engine_argv is the engine command without rank options (e.g.
        [engine, "serve", ...]); "{rank}" in its arguments is replaced by the
        engine with each process's rank.
        """

    def agent_launches(self, nodes: list[Node], agent_argv: list[str]) -> list[Launch]:
        """Command lines that start one agent (`rooftop-engine agent`) on
        each of nodes for a whole campaign (engine.launch = agents).
        agent_argv lacks the agent's --rank (its node index), which each
        line adds. Default: a process per node on this machine, unbound (the
        agent binds each process it starts with --cpus)."""
        return [Launch([*agent_argv, "--rank", str(n.index)], n, [n.index]) for n in nodes]

    def agent_argvs(
        self, node: Node, engine_argv: list[str], nprocs: int, binding: str, first_rank: int
    ) -> list[tuple[int, list[str]]]:
        """(rank, argv) of each of nprocs engine processes the agent on node
        starts, bound with the engine's own --cpus (pinned_argvs). Under a
        launcher whose Node.cores are positions, not cpu numbers (srun;
        mpiexec on other hosts), its agent_launches give the agent
        --relative-cpus and the agent maps them to its own cpus."""
        return pinned_argvs(node, engine_argv, nprocs, binding, first_rank, self.shares_cores)

    def agent_misplaced(self, node: Node, ready: dict) -> str:
        """Why the agent that reported ready (its ready file: host,
        slurm_node, cpus) is not on node ('' when it is)."""
        return ""

    #: Processes beyond a node's cores take its core sets again (the netns
    #: launcher's launcher.oversubscribe).
    shares_cores = False

    def describe(self) -> dict:
        return {"type": self.name, "nodes": [n.describe() for n in self.nodes()]}


@dataclass(frozen=True)
class LauncherSpec:
    """One launcher, as `launcher.type` names it: the entry each launcher
    file declares (SPEC) and rooftop.launchers.LAUNCHERS lists. Config
    choices, CLI choices and help, the cores lock, the memory and process
    checks, the clock, the NIC preflight and policy, plans and summaries read
    its fields; nothing else names a launcher.
    """

    name: str
    #: One line: what it runs on (`--launcher` and `launcher.type` help).
    help: str
    #: The resolved config's "launcher" section -> the launcher.
    make: Callable[[dict], Launcher]
    #: What launcher.nodes defaults to, in words the help shows (from the
    #: launcher's own constant where there is one).
    default_nodes: str
    #: The launcher.* keys it reads, besides type.
    keys: tuple[str, ...]
    #: Core bindings it can express (the `binding` key's choices are BINDINGS).
    bindings: tuple[str, ...] = BINDINGS
    #: Its engines run on this machine's cores: the campaign then takes the
    #: machine's cores lock, counts every node's processes against this
    #: machine's memory and process limits (rooftop.config.resources), and
    #: its nodes share one clock.
    on_this_machine: bool = False
    #: Its engines use this machine's own network interfaces: a
    #: fabric.domain this machine lacks is refused before anything starts
    #: (rooftop.nics.check); otherwise the engine on the node refuses it.
    interfaces_here: bool = False
    #: Its nodes are logical slices of this machine's cores: launcher.nodes
    #: then defaults to a split of them (the count used is stored with the
    #: run), a plan's nodes share this machine's cores, and summaries say
    #: "N logical nodes" rather than naming hosts.
    logical_nodes: bool = False
    #: It starts each engine process with its own command line
    #: (pinned_argvs), so it can give each its node-local rank
    #: (--local-rank); the others start several per line and the engine
    #: reads the rank from the environment (OMPI_COMM_WORLD_LOCAL_RANK,
    #: MPI_LOCALRANKID, SLURM_LOCALID).
    per_process: bool = False
