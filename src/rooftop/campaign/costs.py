"""The prices of a campaign's time (of the three time modules: costs
prices, estimate counts and prices, forecast plans `rooftop plan`): the
fixed costs a campaign adds to its warmups and windows, one table of
measured constants (CONSTANTS), and the launch modes that use them
(LAUNCH_MODES: how engines are started, and what that costs once per
campaign, per node, per placement and per client round).

`rooftop plan`, `rooftop collect --dry-run`, the warning before a long
campaign and the progress bars' ETAs all read them here, through
rooftop.campaign.estimate. Each constant says what it is, where it was
measured and how; benchmarks/plan_constants.py measures them again on the
machine it runs on, benchmarks/launch_agents.py a placement's fixed cost
under both launch modes (docs/measurement.md, "Planning a campaign").

A launch mode is an entry of LAUNCH_MODES, named as the config's
engine.launch names it: "per-placement" (fresh engine processes per
placement and per round, a launch each) and "agents" (one node agent per
node for the whole campaign forks every engine, rooftop.engine.agents:
once_per_node, so the campaign counts one launch per node, and its
placements and rounds no longer pay the engine's load). launch_mode()
reads engine.launch."""

from __future__ import annotations

from dataclasses import dataclass, replace

from rooftop.keys import ConfigError

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

LIBFABRIC_LOAD = Constant(
    "libfabric_load_s",
    0.35,
    "an engine process before its main runs: the constructor of Debian's libinfinipath "
    "(libfabric links its PSM provider), paid by every process launched",
    f"{HERE}; about 0.35 s per engine process (docs/measurement.md, 'Measured here')",
)


#: Where and when the agents' constants were measured (issue 31): the
#: Carns et al. suite on the emulated cluster (benchmarks/suite.py) and one
#: placement at a time (benchmarks/plan_constants.py, benchmarks/launch_agents.py).
SUITE = (
    "measured 2026-11-26 on the project's 2-core development VM, quiet: benchmarks/suite.py on 17 "
    "emulated nodes in 3 groups (netns, ofi+tcp, blocking progress, 1 to 16 processes a placement or "
    "round), and benchmarks/plan_constants.py on 2 local nodes"
)

AGENT_PLACEMENT_START = Constant(
    "agent_placement_start_s",
    0.1,
    "a placement's servers forked by their nodes' agents: until every server's address file is published",
    f"{SUITE}; 0.058 s for one server (plan_constants.py 'placement start', median of 6), more for a "
    "placement of many servers on 2 cores",
)
AGENT_PLACEMENT_STOP = Constant(
    "agent_placement_stop_s",
    0.1,
    "a placement's servers after its last round: stopped by their agents' SIGTERM and reaped",
    f"{SUITE}; 0.06 to 0.084 s for one server (plan_constants.py 'placement stop')",
)
AGENT_ROUND_START = Constant(
    "agent_round_start_s",
    0.3,
    "a client round before its warmup: clients forked by their nodes' agents, started and connected",
    f"{SUITE}; 0.078 s for one rpc client (plan_constants.py 'round start'; bw 0.57 s, its stream "
    "buffer's page faults); the suite's rounds of 1 to 16 clients cost 0.3 to 0.5 s with their end",
)
AGENT_ROUND_END = Constant(
    "agent_round_end_s",
    0.1,
    "a client round after its last window: its clients reaped, documents read, rows stored",
    f"{SUITE}; 0.056 s for one rpc client (plan_constants.py 'round end')",
)
AGENTS_START = Constant(
    "agents_start_s",
    0.43,
    "the node agents, once per campaign: launched together (one srun step, one mpiexec, a process per "
    "node here), each loading the engine once before it forks anything",
    f"{SUITE}; 0.426 s for 2 agents (launch_agents.py 'agents' own start')",
)

#: Every constant, by name (each launch mode prices with its own: LaunchMode.constants()).
CONSTANTS: dict[str, Constant] = {
    c.name: c
    for c in (
        PLACEMENT_START,
        PLACEMENT_STOP,
        ROUND_START,
        ROUND_END,
        WINDOW,
        LIBFABRIC_LOAD,
        AGENT_PLACEMENT_START,
        AGENT_PLACEMENT_STOP,
        AGENT_ROUND_START,
        AGENT_ROUND_END,
        AGENTS_START,
    )
}


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
    #: The launchers its constants were measured with (a plan for another
    #: says so: `rooftop plan`).
    measured_with: tuple[str, ...] = ("local",)

    @property
    def placement_s(self) -> float:
        return self.placement_start.value + self.placement_stop.value

    @property
    def round_s(self) -> float:
        return self.round_start.value + self.round_end.value

    def constants(self) -> list[Constant]:
        """The constants this mode prices a campaign with."""
        parts = (self.placement_start, self.placement_stop, self.round_start, self.round_end, self.window)
        return [*parts, *(c for c in (self.campaign, self.node) if c is not None)]

    def fixed_s(self, nodes: int) -> float:
        """What the mode costs once per campaign on `nodes` nodes."""
        return (self.campaign.value if self.campaign else 0.0) + (self.node.value * nodes if self.node else 0.0)


PER_PLACEMENT = LaunchMode(
    "per-placement",
    "fresh engine processes: a placement's servers, then each client round's clients, a launch each "
    "(a job step under srun, an mpiexec)",
    PLACEMENT_START,
    PLACEMENT_STOP,
    ROUND_START,
    ROUND_END,
)
AGENTS = LaunchMode(
    "agents",
    "one node agent per node for the whole campaign, launched once, forks every server and client and stops them",
    AGENT_PLACEMENT_START,
    AGENT_PLACEMENT_STOP,
    AGENT_ROUND_START,
    AGENT_ROUND_END,
    campaign=AGENTS_START,
    once_per_node=True,
    measured_with=("local", "netns"),  # SUITE: the emulated cluster's 17 nodes, and 2 local nodes
)


def calibrated(mode: LaunchMode, k: float, source: str, launcher: str) -> LaunchMode:
    """The mode with every constant multiplied by k, its source saying so:
    the fixed costs a stored run measured (rooftop.campaign.forecast.calibration)."""

    def scaled(c: Constant) -> Constant:
        return Constant(c.name, c.value * k, c.what, f"{source}: {k:.2f} x {c.value:g} s (those {c.measured})")

    return replace(
        mode,
        placement_start=scaled(mode.placement_start),
        placement_stop=scaled(mode.placement_stop),
        round_start=scaled(mode.round_start),
        round_end=scaled(mode.round_end),
        window=scaled(mode.window),
        campaign=scaled(mode.campaign) if mode.campaign else None,
        node=scaled(mode.node) if mode.node else None,
        measured_with=(launcher,),
    )


#: Every launch mode, by name (engine.launch; its choices in rooftop.config.catalog).
LAUNCH_MODES: dict[str, LaunchMode] = {m.name: m for m in (AGENTS, PER_PLACEMENT)}


def launch_mode(cfg: dict) -> LaunchMode:
    """The launch mode a config names (engine.launch; a config without it,
    as a test builds one: per-placement)."""
    name = (cfg.get("engine") or {}).get("launch") or PER_PLACEMENT.name
    if name not in LAUNCH_MODES:
        raise ConfigError(f"engine.launch: {name!r} is not one of {', '.join(LAUNCH_MODES)}")
    return LAUNCH_MODES[name]
