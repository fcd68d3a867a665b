"""Launchers: how engine processes get started on nodes.

local (default): this machine split into logical nodes; netns: the
emulated cluster of 'rooftop cluster up' (namespaces, shaped links, cgroups); mpiexec: Open MPI
or MPICH hydra over a host list; srun: inside a Slurm allocation.

Each launcher is one file declaring its class and its SPEC (a LauncherSpec:
name, help, factory, default node count, the config keys it reads, and
what the rest of rooftop asks of it instead of testing its name);
LAUNCHERS lists them, as IOR's available_aiori[] lists its backends. The
`launcher.type` choices, `--launcher` and their help come from it.

Beside them: base (what a launcher is: the nodes, and the command lines that
start engines on one) and hostlist (Slurm host lists expanded).
"""

from rooftop.launchers import local, mpiexec, netns, srun
from rooftop.launchers.base import BINDINGS, Launch, Launcher, LauncherError, LauncherSpec, Node, binding_width

__all__ = [
    "BINDINGS",
    "LAUNCHERS",
    "Launch",
    "Launcher",
    "LauncherError",
    "LauncherSpec",
    "ON_THIS_MACHINE",
    "Node",
    "binding_width",
    "make_launcher",
    "on_this_machine",
    "spec",
]

#: Every launcher, by name, in the order help lists them (local first: the default).
LAUNCHERS: dict[str, LauncherSpec] = {s.name: s for s in (local.SPEC, netns.SPEC, mpiexec.SPEC, srun.SPEC)}
#: Launchers whose engines run on this machine's cores (their SPEC says so).
ON_THIS_MACHINE = tuple(name for name, spec in LAUNCHERS.items() if spec.on_this_machine)


def make_launcher(cfg: dict) -> Launcher:
    """Builds the launcher a resolved config's "launcher" section names."""
    spec = LAUNCHERS.get(cfg["type"])
    if spec is None:
        raise LauncherError(f"launcher.type '{cfg['type']}': must be one of {', '.join(LAUNCHERS)}")
    return spec.make(cfg)


def spec(name: str) -> LauncherSpec:
    """The entry of launcher `name`: what the rest of rooftop asks of a
    launcher instead of testing its name. A name the table lacks (a run
    stored by a launcher this version does not have) gets an entry with
    every property off."""
    return LAUNCHERS.get(name) or LauncherSpec(name, "not a launcher of this version", _unknown, "", ())


def _unknown(cfg: dict) -> Launcher:
    return make_launcher(cfg)  # raises: the name is not in the table


def on_this_machine(name: str) -> bool:
    """Whether the launcher `name` runs its engines on this machine's cores."""
    return spec(name).on_this_machine
