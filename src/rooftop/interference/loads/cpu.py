"""cpu: the fixed-work Jacobi stencil (rooftop.stencil) in a loop, one
process per core of each of its nodes (or `procs`), each pinned to its
core. One unit = one stencil run of `size`² points and `iterations`
sweeps; its rate is in Mpoints/s."""

from __future__ import annotations

import argparse

from rooftop import stencil
from rooftop.interference.loads.base import Load, knob
from rooftop.interference.loads.worker import repeat


def run(argv, stopping, record, rank):
    p = argparse.ArgumentParser(prog="rooftop.interference.loads.worker cpu")
    p.add_argument("--size", type=int, default=256)
    p.add_argument("--iterations", type=int, default=50)
    a = p.parse_args(argv)
    stencil.Stop.requested = False

    def unit():
        doc = stencil.run(a.size, a.iterations)
        return doc["points"] / 1e6 if doc["completed"] else None

    repeat(unit, stopping, record)
    return {"size": a.size, "iterations": a.iterations}


def on_stop() -> None:
    stencil.Stop.requested = True  # the stencil checks it between sweeps


def _args(ctx):
    return ["--size", str(ctx.knobs["size"]), "--iterations", str(ctx.knobs["iterations"])]


LOAD = Load(
    "cpu",
    "a fixed-work Jacobi stencil per core (rooftop.stencil), repeated",
    "CPU cores",
    (
        knob("cpu", "procs", "int", 0, "processes per node (0: one per core of the node)", minimum=0),
        knob("cpu", "size", "int", 256, "grid points per side of one unit", minimum=3),
        knob("cpu", "iterations", "int", 50, "sweeps per unit", minimum=1),
    ),
    "Mpoints/s",
    procs=lambda ctx, cores: ctx.knobs["procs"] or cores,
    args=_args,
)
