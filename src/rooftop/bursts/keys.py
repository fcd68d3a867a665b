"""The config keys of `rooftop bursts` (section `bursts`): every knob of
the command, declared once with its type, default, limits and help, and
registered in the key table (rooftop.config.catalog.register). `rooftop config
keys` lists them; `--set bursts.on=5`, a config file's [bursts] table and
the command's flags (rooftop.cli.bursts: --on, --interval, ...) set them;
the run's config records them under `bursts`, with what they resolve to
(the modes in order, windows per burst, the neighbour's command and cores,
the nodes)."""

from __future__ import annotations

from rooftop import metrics
from rooftop.config.catalog import register
from rooftop.keys import Key
from rooftop.stencil import DEFAULT_ITERATIONS, DEFAULT_SIZE

#: Shortest interval: the server's CPU is read from /proc per interval.
MIN_INTERVAL = 0.1
DEFAULT_PROGRESS = ["busy", "spindown:10", "adaptive", "block"]
DAY = 86400.0

KEYS = [
    Key(
        "bursts.progress",
        "list[str]",
        DEFAULT_PROGRESS,
        "server progress modes, in order; a spindown sweep: spindown:0.1,1,10,50 (milliseconds, down to 0.001)",
    ),
    Key("bursts.metric", "choice", "rpc", "what the client sends", tuple(metrics.METRICS)),
    Key("bursts.clients", "int", 1, "client processes", minimum=1, maximum=100_000),
    Key("bursts.bursts", "int", 3, "bursts per mode", minimum=1, maximum=10_000),
    Key("bursts.on", "float", 10.0, "seconds per burst (at least one interval)", minimum=MIN_INTERVAL, maximum=DAY),
    Key("bursts.off", "float", 20.0, "seconds of gap after each burst", minimum=0, maximum=DAY),
    Key("bursts.interval", "float", 1.0, "seconds per interval", minimum=MIN_INTERVAL, maximum=3600),
    Key(
        "bursts.full_rate",
        "float",
        0.9,
        "'full rate' after a gap: this fraction of the burst rate, in (0, 1]",
        minimum=0.01,
        maximum=1,
    ),
    Key(
        "bursts.neighbour",
        "str",
        None,
        "a compute job pinned to the server's core(s): 'stencil' (python -m rooftop.stencil) or a command line; "
        "run alone, then during each mode (default: none)",
        nullable=True,
        executes=True,
    ),
    Key(
        "bursts.neighbour_timeout",
        "float",
        600.0,
        "a neighbour run longer than this (seconds) is stopped and fails the run",
        minimum=0.01,
        maximum=DAY,
    ),
    Key(
        "bursts.stencil_size",
        "int",
        DEFAULT_SIZE,
        "neighbour stencil: grid points per side",
        minimum=3,
        maximum=1_000_000,
    ),
    Key("bursts.stencil_iterations", "int", DEFAULT_ITERATIONS, "neighbour stencil: sweeps", minimum=1, maximum=10**9),
]

register("bursts", KEYS)
