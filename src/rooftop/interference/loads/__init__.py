"""Background loads: one file per load, listed in LOADS (as launchers are
in rooftop.launchers.LAUNCHERS). Each file declares `LOAD` (a
rooftop.interference.loads.base.Load: name, help, the resource it stresses, its knobs,
its rate unit, its processes per node and their arguments) and the
functions its processes run (`run`, `on_stop`, called by
rooftop.interference.loads.worker). rooftop.interference.loads.background starts a load's processes
on chosen nodes through the campaign's launcher and stops them;
`rooftop interfere` (rooftop.interference.run) runs stages beside them.

Adding one: docs/extending.md, "Adding a background load".

The loads: cpu (the Jacobi stencil, a process per core), mem (a memory-
bandwidth streamer), io (a storage flood), net (a network flood through the
engine's bulk operations), numio (a numio-like stencil job that writes
checkpoints) and cmd (any user command); base (what a load is, and the loop
every load process runs), worker (one load process) and background (a load's
processes started and stopped).
"""

from rooftop.config.catalog import register
from rooftop.interference.loads import cmd, cpu, io, mem, net, numio
from rooftop.interference.loads.base import Context, Load, knob

__all__ = ["LOADS", "Context", "Load", "get", "knob"]

#: Every background load, by name, in the order help lists them.
LOADS: dict[str, Load] = {m.LOAD.name: m.LOAD for m in (cpu, mem, net, io, numio, cmd)}

# Their knobs are config keys (section loads: loads.cpu.procs, ...).
register("loads", [k for load in LOADS.values() for k in load.knobs])


def get(name: str) -> Load:
    if name not in LOADS:
        raise ValueError(f"unknown load '{name}': one of {', '.join(LOADS)}")
    return LOADS[name]
