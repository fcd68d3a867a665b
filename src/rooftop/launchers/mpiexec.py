"""The mpiexec launcher: Open MPI or MPICH (hydra) over a list of hosts.

One mpiexec command line starts all K processes of one node. The engine is
not an MPI program: mpiexec only starts, binds and supervises it. Each
process learns its rank from the MPI launcher's environment
(OMPI_COMM_WORLD_RANK / PMI_RANK) through the engine's --rank-from-env,
offset by --rank <first rank>, and replaces "{rank}" in its own arguments.

Configuration (the resolved config's "launcher" section):

  hosts / hostfile  the hosts, in order (one is required). Host names may use
                    Slurm's bracket notation ("node[01-04]"). A hostfile has
                    one host per line, '#' comments, and Open MPI
                    "host slots=N" or MPICH "host:N" forms (only the name is
                    used). A host listed several times is several logical
                    nodes on that machine (see below).
  nodes             use the first N hosts (default: all).
  cores_per_node    cores of each node. Default: this machine's core count
                    (os.cpu_count()), i.e. the nodes are assumed to be
                    homogeneous with the machine running rooftop; for a host
                    that is this machine, the cores this process may use
                    (os.sched_getaffinity).
  command           the mpiexec to run (default "mpiexec"); a full path
                    selects one of several MPI installations.
  flavor            auto | openmpi | mpich. auto runs `<command> --version`
                    once and looks for "Open MPI"/"OpenRTE" or "HYDRA".
  extra_args        more mpiexec options, inserted before the engine command.

Binding (one node, K processes):

  Open MPI   core    -n K --host H:K --bind-to core --map-by core
             2cores  -n K --host H:K --bind-to core --map-by slot:PE=2
             none    -n K --host H:K --bind-to none --map-by slot
  MPICH      core    -n K -hosts H -bind-to core      (2cores: core:2, none: none)

Open MPI cores are counted by Open MPI within the cores the remote daemon may
use; rooftop's Node.cores for a distinct host is only the count
(0..cores_per_node-1) used to check that K processes fit.

Several nodes on one host (hosts: [localhost, localhost]): the host's cores
are split between its nodes, as the local launcher does, and the processes of
different nodes must not share cores. Open MPI 4.1 cannot express that per
command line: --cpu-set/--cpu-list switch it to a rank-file mapping that
conflicts with --map-by core and with PE=2, and with --bind-to core they bind
every process to the whole set (checked with Open MPI 4.1.4). Its cpu lists
are also hwloc *logical* ids, which differ from the OS ids rooftop knows on
some machines. So on a shared host both flavors use mpiexec's MPMD form, one
application context per process with its exact OS core set through the
engine's own --cpus and mpiexec binding off:

  mpiexec --host H:K --bind-to none -n 1 ENGINE... --cpus 0 : -n 1 ENGINE... --cpus 1

Ranks still come from the environment: MPI numbers the contexts' processes
in order. With binding 'none' each process gets all of its node's cores.

Under engine.launch = agents (the default) one mpiexec for the whole
campaign starts a node agent per node instead (agent_launches: an
application context per node, "-H host:n -n 1 ENGINE agent ... --rank I",
--bind-to none), and the agent forks every engine, binding it with --cpus
(cpu numbers on this machine; positions in the agent's own cpus on other
hosts and the emulated cluster: --relative-cpus). Open MPI ends every agent
once one of them dies.

Running as root: Open MPI's mpiexec refuses to run as root unless told
--allow-run-as-root (or OMPI_ALLOW_RUN_AS_ROOT=1 and
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 in the environment); rooftop adds the option
when it runs as root (containers, CI), and nothing otherwise.

The servers' shutdown token is not on the command line (every user sees it
there) nor exported through mpiexec's environment forwarding: the campaign
writes it to <group dir>/token (mode 0600, in a 0700 group directory) and
passes --token-file. The group directory must be on a file system every
node shares anyway (servers publish their addresses there), so the token
reaches every server the way the addresses reach every client. The engine
refuses a token file others could read, and writes its own files 0600.

Multi-host runs need the usual mpiexec prerequisites (password-less ssh,
the engine at the same path on every host) and servers that listen on a
reachable address, not loopback.

The emulated cluster ('rooftop cluster up'): when the hosts are its nodes
(rooftop-n<I>, names it put in /etc/hosts), Open MPI reaches them through
the cluster's rsh agent, which enters each node's cgroups and namespace (see
rooftop.cluster.mpi): the launcher adds "--mca plm_rsh_agent <agent> --mca
oob_tcp_if_include 10.231.0.0/24 --mca btl_tcp_if_include 10.231.0.0/24",
each node has its cores (launcher.cores_per_node does not apply), servers
serve on the node's address (no fabric.domain needed), and nodes carry their
emulation record as with the netns launcher. Only Open MPI is wired to the
agent; hosts that mix emulated nodes and other hosts are refused.
"""

from __future__ import annotations

import functools
import os
import re
import socket
import subprocess
from pathlib import Path

from rooftop.cluster.mpi import mca_args
from rooftop.cluster.spec import ClusterError
from rooftop.cluster.state import emulated_nodes
from rooftop.launchers.base import (
    BINDINGS,
    TITLE_ROOM,
    Launch,
    Launcher,
    LauncherError,
    LauncherSpec,
    Node,
    core_sets,
    first_nodes,
)
from rooftop.launchers.hostlist import expand

FLAVORS = ("auto", "openmpi", "mpich")

#: How long `<command> --version` may take.
VERSION_TIMEOUT = 10.0


@functools.cache
def detect_flavor(command: str) -> str:
    """'openmpi' or 'mpich', from `<command> --version` (cached per command)."""
    try:
        p = subprocess.run(
            [command, "--version"], capture_output=True, text=True, timeout=VERSION_TIMEOUT, stdin=subprocess.DEVNULL
        )
    except FileNotFoundError:
        raise LauncherError(
            f"mpiexec launcher: command '{command}' not found; install Open MPI or MPICH, "
            "or set launcher.command to the mpiexec to use (a name on PATH or a full path)"
        ) from None
    except PermissionError:
        raise LauncherError(
            f"mpiexec launcher: command '{command}' is not executable; set launcher.command to the mpiexec to use"
        ) from None
    except subprocess.TimeoutExpired:
        raise LauncherError(
            f"mpiexec launcher: '{command} --version' did not finish within "
            f"{VERSION_TIMEOUT:g} s; set launcher.flavor to openmpi or mpich"
        ) from None
    text = p.stdout + p.stderr
    # Hydra first: its build details list configure options and paths, which
    # may mention anything (an Open MPI install prefix, say).
    if re.search(r"HYDRA|MPICH", text):
        return "mpich"
    if re.search(r"Open ?MPI|Open ?RTE", text, re.IGNORECASE):
        return "openmpi"
    first = text.strip().splitlines()[0] if text.strip() else "no output"
    raise LauncherError(
        f"mpiexec launcher: cannot tell which MPI '{command} --version' belongs to "
        f"({first!r}); set launcher.flavor to openmpi or mpich"
    )


def read_hostfile(path: str | os.PathLike) -> list[str]:
    """Host names from a hostfile: one per line, '#' comments, 'host slots=N'
    (Open MPI) or 'host:N' (MPICH) forms; only the name is kept."""
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise LauncherError(f"launcher.hostfile '{path}': {e.strerror or e}") from None
    hosts = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name = line.split()[0]
        m = re.fullmatch(r"(.+):[0-9]+", name)
        hosts.append(m.group(1) if m else name)
    if not hosts:
        raise LauncherError(f"launcher.hostfile '{path}' lists no hosts")
    return hosts


def _local_names() -> set[str]:
    names = {"localhost", "127.0.0.1", "::1"}
    try:
        h = socket.gethostname()
        names |= {h, h.split(".")[0]}
    except OSError:
        pass
    return names


class MpiexecLauncher(Launcher):
    name = "mpiexec"

    def __init__(self, cfg: dict):
        self.command = cfg.get("command") or "mpiexec"
        self._flavor = cfg.get("flavor") or "auto"
        if self._flavor not in FLAVORS:
            raise LauncherError(f"launcher.flavor '{self._flavor}': must be one of " + ", ".join(FLAVORS))
        self.extra_args = [str(a) for a in (cfg.get("extra_args") or [])]

        hosts, hostfile = cfg.get("hosts"), cfg.get("hostfile")
        if hosts and hostfile:
            raise LauncherError("mpiexec launcher: give launcher.hosts or launcher.hostfile, not both")
        if hosts:
            if isinstance(hosts, str):
                hosts = [hosts]
            names = [h for entry in hosts for h in expand(str(entry))]
        elif hostfile:
            names = read_hostfile(hostfile)
        else:
            raise LauncherError(
                "mpiexec launcher needs hosts: set launcher.hosts (a list of host names; "
                "repeat 'localhost' for several nodes on this machine) or launcher.hostfile"
            )
        if not names:
            raise LauncherError("mpiexec launcher: launcher.hosts is empty")

        names = first_nodes(
            names, cfg.get("nodes"), "only {count} hosts are listed (launcher.hosts / launcher.hostfile)"
        )

        cpn = cfg.get("cores_per_node")
        if cpn is not None and cpn < 1:
            raise LauncherError("launcher.cores_per_node must be at least 1")
        self.cores_per_node = cpn
        self._emulated = self._emulated_cluster(names, cpn)
        if self._emulated:
            self._nodes = [
                Node(
                    i,
                    h,
                    tuple(range(len(self._emulated[h]["cores"]))),
                    self._emulated[h]["address"],
                    self._emulated[h]["emulation"],
                )
                for i, h in enumerate(names)
            ]
        else:
            self._nodes = self._make_nodes(names, cpn)
        counts: dict[str, int] = {}
        for h in names:
            counts[h] = counts.get(h, 0) + 1
        #: Hosts holding more than one node (need per-process core sets).
        self.shared_hosts = {h for h, c in counts.items() if c > 1}

    @staticmethod
    def _emulated_cluster(names: list[str], cpn: int | None) -> dict | None:
        """The emulated cluster's node records when the hosts are its nodes."""
        try:
            emulated = emulated_nodes(names)
        except ClusterError as e:
            raise LauncherError(f"mpiexec launcher: {e}") from None
        if emulated and cpn is not None:
            raise LauncherError(
                "launcher.cores_per_node does not apply to the emulated cluster's "
                "nodes: their cores are set by 'rooftop cluster up'"
            )
        if emulated and not next(iter(emulated.values()))["state"].get("mpi"):
            raise LauncherError(
                "mpiexec launcher: the emulated cluster has no rsh agent (built by an "
                "older rooftop): 'rooftop cluster down', then 'rooftop cluster up'"
            )
        return emulated

    def _cluster_args(self) -> list[str]:
        """Open MPI options that reach the emulated cluster's nodes (none elsewhere)."""
        if not self._emulated:
            return []
        if self.flavor != "openmpi":
            raise LauncherError(
                "mpiexec launcher: only Open MPI runs across the emulated cluster's "
                "nodes (its rsh agent); set launcher.command to Open MPI's mpiexec"
            )
        return mca_args(next(iter(self._emulated.values()))["state"])

    @staticmethod
    def _host_cores(host: str, cpn: int | None) -> list[int]:
        if host in _local_names():
            usable = sorted(os.sched_getaffinity(0))
            k = cpn or len(usable)
            return usable[:k] if k <= len(usable) else list(range(k))
        return list(range(cpn or os.cpu_count() or 1))

    def _make_nodes(self, names: list[str], cpn: int | None) -> list[Node]:
        groups: dict[str, list[int]] = {}
        for i, h in enumerate(names):
            groups.setdefault(h, []).append(i)
        nodes: dict[int, Node] = {}
        for host, indices in groups.items():
            cores = self._host_cores(host, cpn)
            per = len(cores) // len(indices)
            if per < 1:
                raise LauncherError(
                    f"host {host} is listed {len(indices)} times (one node each) but has only "
                    f"{len(cores)} cores to split between them"
                )
            for j, i in enumerate(indices):
                nodes[i] = Node(i, host, tuple(cores[j * per : (j + 1) * per]))
        return [nodes[i] for i in range(len(names))]

    @property
    def flavor(self) -> str:
        """openmpi or mpich (auto-detected on first use)."""
        if self._flavor == "auto":
            self._flavor = detect_flavor(self.command)
        return self._flavor

    def nodes(self) -> list[Node]:
        return list(self._nodes)

    def _root_args(self) -> list[str]:
        return ["--allow-run-as-root"] if self.flavor == "openmpi" and os.geteuid() == 0 else []

    def launches(self, node, engine_argv, nprocs, binding, first_rank):
        if binding not in BINDINGS:
            raise LauncherError(f"binding '{binding}': must be one of {', '.join(BINDINGS)}")
        if nprocs < 1:
            raise LauncherError(f"node {node.index}: nprocs must be at least 1, not {nprocs}")
        sets = core_sets(node, nprocs, binding)
        ranks = list(range(first_rank, first_rank + nprocs))
        rank_args = ["--rank", str(first_rank), "--rank-from-env"]
        k = str(nprocs)
        flavor = self.flavor
        if node.host in self.shared_hosts:
            return [Launch(self._mpmd(node, engine_argv, sets, rank_args), node, ranks)]
        if flavor == "openmpi":
            bind, mapping = {"core": ("core", "core"), "2cores": ("core", "slot:PE=2"), "none": ("none", "slot")}[
                binding
            ]
            argv = [
                self.command,
                "-n",
                k,
                "--host",
                f"{node.host}:{k}",
                "--bind-to",
                bind,
                "--map-by",
                mapping,
                *self._root_args(),
                *self._cluster_args(),
            ]
        else:
            bind = {"core": "core", "2cores": "core:2", "none": "none"}[binding]
            argv = [self.command, "-n", k, "-hosts", node.host, "-bind-to", bind]
        argv += [*self.extra_args, *engine_argv, *rank_args]
        return [Launch(argv, node, ranks)]

    def agent_launches(self, nodes, agent_argv):
        """One mpiexec for every agent, an application context per node
        (MPMD) on its host with the agent's --rank, unbound (the agent binds
        its processes with --cpus: cpu numbers on this machine, positions in
        the agent's own cpus elsewhere, --relative-cpus). Open MPI ends
        every agent once one of them dies. The agent command line comes
        once per node here: its room for titles (an argument of spaces
        only, TITLE_ROOM) is left out, so that a thousand nodes stay far
        below the system's argument limit; each agent then makes its room
        by running itself again, once."""
        agent_argv = [a for a in agent_argv if a != TITLE_ROOM]
        per_host: dict[str, int] = {}
        for n in nodes:
            per_host[n.host] = per_host.get(n.host, 0) + 1
        if self.flavor == "openmpi":
            argv = [self.command, "--bind-to", "none", *self._root_args(), *self._cluster_args()]
        else:
            argv = [self.command, "-bind-to", "none"]
        argv += self.extra_args
        here = _local_names()
        for i, n in enumerate(nodes):
            if i:
                argv.append(":")
            host = ["-H", f"{n.host}:{per_host[n.host]}"] if self.flavor == "openmpi" else ["-hosts", n.host]
            relative = ["--relative-cpus"] if self._emulated or n.host not in here else []
            argv += [*host, "-n", "1", *agent_argv, "--rank", str(n.index), *relative]
        return [Launch(argv, nodes[0], [n.index for n in nodes])]

    def _mpmd(self, node: Node, engine_argv: list[str], sets, rank_args) -> list[str]:
        """One application context per process, each with its own --cpus."""
        k = str(len(sets))
        if self.flavor == "openmpi":
            argv = [self.command, "--host", f"{node.host}:{k}", "--bind-to", "none", *self._root_args()]
        else:
            argv = [self.command, "-hosts", node.host, "-bind-to", "none"]
        argv += self.extra_args
        for i, cores in enumerate(sets):
            cpus = cores if cores is not None else node.cores
            if i:
                argv.append(":")
            argv += ["-n", "1", *engine_argv, *rank_args, "--cpus", ",".join(map(str, cpus))]
        return argv


SPEC = LauncherSpec(
    "mpiexec",
    "Open MPI or MPICH hydra over launcher.hosts or launcher.hostfile",
    MpiexecLauncher,
    default_nodes="all hosts listed",
    keys=("nodes", "hosts", "hostfile", "cores_per_node", "command", "flavor", "extra_args"),
)
