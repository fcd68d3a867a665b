"""A fixed amount of CPU-bound work: a 2-D Jacobi (5-point) stencil.

The neighbour job of `rooftop bursts --neighbour stencil` and the `cpu`
background load run this, so that their own slowdown can be measured: the
work is fixed (size × size points, `iterations` sweeps), the time is what
varies. It runs in one thread (numpy's slicing arithmetic does not use BLAS
threads), so pinning the process to a core confines it to that core.

Command: `python -m rooftop.stencil --size N --iterations K` (an internal
helper, not installed on PATH) prints one JSON document on stdout:
`{"kernel": "stencil", "size", "iterations", "points", "seconds",
"cpu_seconds", "points_per_sec", "checksum", "cpu_affinity", "pid"}`.
SIGTERM or SIGINT stop it between sweeps; the document then says
`"completed": false` with the sweeps done so far.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time

DEFAULT_SIZE = 512
DEFAULT_ITERATIONS = 400


class Stop:
    """Set by a stop signal (or a load ending the stencil): the sweeps end
    at the next check."""

    requested = False


def _ask_stop(signum, frame) -> None:
    Stop.requested = True


def sweep(grid, scratch) -> None:
    """One Jacobi sweep of grid's interior into scratch (borders kept)."""
    scratch[1:-1, 1:-1] = 0.25 * (grid[:-2, 1:-1] + grid[2:, 1:-1] + grid[1:-1, :-2] + grid[1:-1, 2:])


def run(size: int = DEFAULT_SIZE, iterations: int = DEFAULT_ITERATIONS) -> dict:
    """Runs the stencil; returns the document the command prints."""
    import numpy as np

    if size < 3 or iterations < 1:
        raise ValueError(f"stencil: size must be >= 3 and iterations >= 1 (got size={size}, iterations={iterations})")
    grid = np.zeros((size, size))
    grid[0, :] = 1.0  # a hot edge: the values change every sweep
    scratch = grid.copy()
    wall0, cpu0 = time.perf_counter(), time.process_time()
    done = 0
    while done < iterations and not Stop.requested:
        sweep(grid, scratch)
        grid, scratch = scratch, grid
        done += 1
    seconds = time.perf_counter() - wall0
    cpu = time.process_time() - cpu0
    points = (size - 2) ** 2 * done
    return {
        "kernel": "stencil",
        "size": size,
        "iterations": done,
        "iterations_asked": iterations,
        "completed": done == iterations,
        "points": points,
        "seconds": seconds,
        "cpu_seconds": cpu,
        "points_per_sec": points / seconds if seconds > 0 else 0.0,
        "checksum": float(grid.sum()),
        "cpu_affinity": sorted(os.sched_getaffinity(0)),
        "pid": os.getpid(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rooftop.stencil",
        description="A fixed amount of CPU-bound work (2-D Jacobi stencil); prints its run time as JSON.",
    )
    parser.add_argument("--size", type=int, default=DEFAULT_SIZE, help=f"grid points per side (default {DEFAULT_SIZE})")
    parser.add_argument(
        "--iterations", type=int, default=DEFAULT_ITERATIONS, help=f"sweeps (default {DEFAULT_ITERATIONS})"
    )
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _ask_stop)
    signal.signal(signal.SIGINT, _ask_stop)
    try:
        doc = run(args.size, args.iterations)
    except ValueError as err:
        print(f"rooftop.stencil: {err}", file=sys.stderr)
        return 2
    print(json.dumps(doc))
    return 0 if doc["completed"] else 1


if __name__ == "__main__":
    sys.exit(main())
