"""The fixed costs a campaign adds to its warmups and windows: one table of
measured constants (CONSTANTS), and the launch modes that use them
(LAUNCH_MODES: how engines are started, and what that costs once per
campaign, per node, per placement and per client round).

`rooftop plan`, `rooftop collect --dry-run`, the warning before a long
campaign and the progress bars' ETAs all read them here, through
rooftop.campaign.estimate. Each constant says what it is, where it was
measured and how; benchmarks/plan_constants.py measures them again on the
machine it runs on (docs/measurement.md, "Planning a campaign").

A launch mode is an entry of LAUNCH_MODES: "process" (fresh engine
processes per placement and per round) is the only one so far. A mode
that starts something once per node for the whole campaign (agents, issue
31) declares its own constants and sets once_per_node: the campaign then
counts one launch per node. launch_mode() reads the config's
launcher.mode, which that mode's code declares as a key with it."""

from __future__ import annotations

from dataclasses import dataclass

from rooftop.config.keys import ConfigError

#: Where and when the constants below were measured (commit d556045, issue
#: 13: the progress bars' expected time, checked on the README's main job,
#: expected 30 s and measured 29.1 s).
HERE = (
    "measured 2026-11-23 on the project's shared 2-core development VM: local launcher, "
    "2 logical nodes of one core, ofi+tcp"
)


@dataclass(frozen=True)
class Constant:
    """One measured fixed cost, in seconds."""

    name: str
    value: float
    #: What it covers.
    what: str
    #: Where and how it was measured.
    measured: str


PLACEMENT_START = Constant(
    "placement_start_s",
    1.0,
    "a placement's servers: from their launch until every server's address file is published",
    f"{HERE}; about 1.0 s for one server process ('placement start' in benchmarks/plan_constants.py)",
)
PLACEMENT_STOP = Constant(
    "placement_stop_s",
    1.3,
    "a placement's servers after its last round: shut down and reaped",
    f"{HERE}; 1.1 to 1.4 s ('placement stop' in benchmarks/plan_constants.py)",
)
ROUND_START = Constant(
    "round_start_s",
    1.1,
    "a client round before its warmup: client start-up and connection",
    f"{HERE}; from the round's launch to its warmup: 0.6 s for rpc, 2.8 s for bw (which fills "
    "its 1 GiB stream buffer first), 1.1 s taken for both ('round start' in "
    "benchmarks/plan_constants.py: launch to the first window's start, less warmup and settle)",
)
ROUND_END = Constant(
    "round_end_s",
    0.4,
    "a client round after its last window: reading its documents, storing its rows, launching the next",
    f"{HERE}; 0.4 s from a round's end to the next round's launch ('round end' in "
    "benchmarks/plan_constants.py: the last window's end until the round returned)",
)
WINDOW = Constant(
    "window_s",
    0.0,
    "a window beyond its duration: none is assumed, a client measures its windows back to back on its clock",
    "not measured apart: the constants above were taken from rounds of several windows, so a "
    "cost per window would have gone into them; 'window overhead' in benchmarks/plan_constants.py "
    "measures it: (the last window's end - the first window's start) / windows - duration",
)

#: Every constant, by name (plan --json, the docs' table).
CONSTANTS: dict[str, Constant] = {c.name: c for c in (PLACEMENT_START, PLACEMENT_STOP, ROUND_START, ROUND_END, WINDOW)}


@dataclass(frozen=True)
class LaunchMode:
    """How a campaign starts its engines, and the fixed costs of doing so."""

    name: str
    #: One line: what it starts when.
    help: str
    placement_start: Constant
    placement_stop: Constant
    round_start: Constant
    round_end: Constant
    window: Constant = WINDOW
    #: Once per campaign (None: nothing).
    campaign: Constant | None = None
    #: Once per node per campaign (None: nothing).
    node: Constant | None = None
    #: One launch per node for the whole campaign (True), or a launch per
    #: server node of each placement and per client node of each round.
    once_per_node: bool = False

    @property
    def placement_s(self) -> float:
        return self.placement_start.value + self.placement_stop.value

    @property
    def round_s(self) -> float:
        return self.round_start.value + self.round_end.value

    def fixed_s(self, nodes: int) -> float:
        """What the mode costs once per campaign on `nodes` nodes."""
        return (self.campaign.value if self.campaign else 0.0) + (self.node.value * nodes if self.node else 0.0)


PROCESS = LaunchMode(
    "process",
    "fresh engine processes: a placement's servers, then each client round's clients",
    PLACEMENT_START,
    PLACEMENT_STOP,
    ROUND_START,
    ROUND_END,
)

#: Every launch mode, by name (launcher.mode).
LAUNCH_MODES: dict[str, LaunchMode] = {m.name: m for m in (PROCESS,)}


def launch_mode(cfg: dict) -> LaunchMode:
    """The launch mode a config names (launcher.mode, once a second mode
    declares that key; until then, and when unset, process)."""
    name = (cfg.get("launcher") or {}).get("mode") or "process"
    if name not in LAUNCH_MODES:
        raise ConfigError(f"launcher.mode: {name!r} is not one of {', '.join(LAUNCH_MODES)}")
    return LAUNCH_MODES[name]
