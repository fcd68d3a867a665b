"""The config keys of `rooftop interfere` (section `interference`): which
loads run beside which stages, how many copies, where, and for how long;
declared once with type, default, limits and help, and registered in the
key table (rooftop.config.catalog.register). `rooftop config keys` lists
them; `--set interference.ensemble=1,2`, a config file's [interference]
table and the command's flags (rooftop.cli.interfere: --loads, --ensemble,
...) set them; the runs' configs record them under `interference`, with the
placement seed drawn when none was given.

The section is `interference`, not `interfere`: a run's config already has
an `interfere` record (the isolated run's plan, a loaded run's load, copies
and nodes: rooftop.interference.run) that reports read. The loads' own
knobs are the `loads` section (rooftop.interference.loads)."""

from __future__ import annotations

from rooftop import stages
from rooftop.config.catalog import MAX_MEASUREMENT_S, register
from rooftop.interference.loads import LOADS
from rooftop.keys import Key

DEFAULT_STAGES = ["server_peak", "client_peak"]

KEYS = [
    Key(
        "interference.loads",
        "list[choice]",
        None,
        f"background loads, each its own runs: {', '.join(LOADS)} (no default: name at least one)",
        tuple(LOADS),
        nullable=True,
    ),
    Key(
        "interference.stages",
        "list[choice]",
        DEFAULT_STAGES,
        f"stages measured alone and beside each load, any of {', '.join(stages.STAGES)}",
        tuple(stages.STAGES),
    ),
    Key(
        "interference.load_nodes",
        "list[int]",
        None,
        "nodes every load copy runs on (default: the last node; net: the last two)",
        nullable=True,
        minimum=0,
        maximum=100_000,
    ),
    Key(
        "interference.placement",
        "choice",
        "given",
        "given: interference.load_nodes; random: each copy's nodes drawn with interference.seed (recorded)",
        ("given", "random"),
    ),
    Key(
        "interference.seed",
        "int",
        None,
        "seed of placement random (default: drawn and recorded)",
        nullable=True,
        minimum=0,
        maximum=2**63 - 1,
    ),
    Key(
        "interference.load_node_count",
        "int",
        None,
        "nodes per copy with placement random (default 1; net: 2)",
        nullable=True,
        minimum=1,
        maximum=100_000,
    ),
    Key(
        "interference.ensemble",
        "list[int]",
        [1],
        "concurrent copies of each load, one run per count (e.g. 1,2,4)",
        minimum=1,
        maximum=10_000,
    ),
    Key(
        "interference.load_warmup",
        "float",
        3.0,
        "seconds each load runs alone before the stages start: its own baseline",
        minimum=0,
        maximum=MAX_MEASUREMENT_S,
    ),
    Key(
        "interference.grace",
        "float",
        5.0,
        "seconds between SIGTERM and SIGKILL when loads are stopped",
        minimum=0,
        maximum=MAX_MEASUREMENT_S,
    ),
]

register("interference", KEYS)
