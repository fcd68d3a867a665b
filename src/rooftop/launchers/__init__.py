"""Launchers: how engine processes get started on nodes.

local (default): this machine split into logical nodes; netns: the
emulated cluster of 'rooftop cluster up' (namespaces, shaped links, cgroups); mpiexec: Open MPI
or MPICH hydra over a host list; srun: inside a Slurm allocation.
"""

from rooftop.launchers.base import BINDINGS, Launch, Launcher, LauncherError, Node

__all__ = ["BINDINGS", "Launch", "Launcher", "LauncherError", "Node", "make_launcher"]


def make_launcher(cfg: dict) -> Launcher:
    """Builds the launcher a resolved config's "launcher" section names."""
    kind = cfg["type"]
    if kind == "local":
        from rooftop.launchers.local import LocalLauncher

        return LocalLauncher(cfg.get("nodes"))
    if kind == "netns":
        from rooftop.launchers.netns import NetnsLauncher

        return NetnsLauncher(cfg)
    if kind == "mpiexec":
        from rooftop.launchers.mpiexec import MpiexecLauncher

        return MpiexecLauncher(cfg)
    if kind == "srun":
        from rooftop.launchers.srun import SrunLauncher

        return SrunLauncher(cfg)
    raise LauncherError(f"launcher.type '{kind}': must be local, netns, mpiexec or srun")
