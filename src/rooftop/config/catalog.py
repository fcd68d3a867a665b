"""Every common config key declared once (KEYS: type, default, meaning), each
metric's and meter's gathered in, and the limits the checks use."""

from __future__ import annotations

from rooftop import meters, metrics, topology
from rooftop.engine.base import DEFAULT_FABRIC, DEFAULT_LEASE
from rooftop.keys import Key, by_path
from rooftop.launchers import BINDINGS, LAUNCHERS
from rooftop.launchers.mpiexec import FLAVORS
from rooftop.stages import pairs

HOUR, DAY = 3600.0, 86400.0
#: A measurement (windows x duration) longer than this is a mistake.
MAX_MEASUREMENT_S = 30 * DAY
#: Shortest measured window (collect.duration, validate.duration): a window
#: must hold many operations, and 50 ms is ~100x the engine's clock and
#: start-skew noise; 1e-9 s gave 'ok' rates 20-400x below the real one.
MIN_DURATION_S = 0.05
#: The validation grid's server-node counts by default: 1..min(this, N-1).
VALIDATE_SERVER_NODES = 4
#: The results folder when neither --results nor the config's results names one.
DEFAULT_RESULTS = "./rooftop-results"


def _launcher_type_help() -> str:
    return "how processes start: " + "; ".join(f"{s.name}: {s.help}" for s in LAUNCHERS.values())


def _launcher_nodes_help() -> str:
    each = "; ".join(f"{s.name}: {s.default_nodes}" for s in LAUNCHERS.values())
    return f"nodes to use, the first N of the launcher's; default {each}"


def _for_launchers(key: str, text: str) -> str:
    """A launcher.* key's help, led by the launchers that read it (their SPEC.keys)."""
    users = [s.name for s in LAUNCHERS.values() if key in s.keys]
    return f"{_and(users)}: {text}"


def _and(names: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 2 else names)


KEYS: list[Key] = [
    Key(
        "fabric.provider",
        "str",
        DEFAULT_FABRIC,
        f"libfabric provider: {DEFAULT_FABRIC}, ofi+shm, ofi+verbs, ofi+cxi, ...; every command that starts "
        "engines uses it (collect, validate, audit, probe, nics, ...)",
    ),
    Key(
        "fabric.domain",
        "str",
        None,
        "NIC / libfabric domain for every process (e.g. hsn0, cxi0); default: "
        "loopback on one machine. One that does not exist or lacks the provider is refused (before "
        "starting with the local launcher, by the engine on the node otherwise), and every sample "
        "checks each process used it",
        nullable=True,
    ),
    Key(
        "nic.policy",
        "str",
        "package:roundrobin",
        "how each engine process picks its NIC when "
        "fabric.domain is not set: BUCKET:SELECTION (buckets all, package, numa: the NICs near the "
        "process; selections byset, bycore, random, roundrobin, rank) or passthrough (the provider's "
        "first domain, or the interface of the node's address or route). Default as Margo's; with one "
        "NIC every policy picks it. 'rooftop nics' shows what each does here; 'rooftop collect "
        "--nic-policy A,B' measures one run per policy; docs/nic-policies.md",
    ),
    Key(
        "nic.server_policy",
        "str",
        None,
        "the NIC policy of server processes when it differs from "
        "nic.policy (which then applies to clients only), as Figure 2 of Carns et al. (CUG 2025) fixes each server "
        "on its own NIC and varies the clients' policy: e.g. all:roundrobin; default: nic.policy",
        nullable=True,
    ),
    Key("launcher.type", "choice", "local", _launcher_type_help(), tuple(LAUNCHERS)),
    Key("launcher.nodes", "int", None, _launcher_nodes_help(), nullable=True, maximum=100_000),
    Key(
        "launcher.hosts",
        "list[str]",
        None,
        _for_launchers("hosts", "host names, one per node (default none: give hosts or hostfile)"),
        nullable=True,
        executes=True,
    ),
    Key(
        "launcher.hostfile",
        "str",
        None,
        _for_launchers("hostfile", "file with one host per line (default none: give hosts or hostfile)"),
        nullable=True,
        executes=True,
    ),
    Key(
        "launcher.cores_per_node",
        "int",
        None,
        _for_launchers("cores_per_node", "usable cores per node (default: this machine's)"),
        nullable=True,
        maximum=100_000,
    ),
    Key(
        "launcher.command",
        "str",
        None,
        _for_launchers("command", "the launcher's executable (default: its name, e.g. mpiexec / srun)"),
        nullable=True,
        executes=True,
    ),
    Key(
        "launcher.flavor",
        "choice",
        "auto",
        _for_launchers("flavor", "MPI flavour (auto: from 'mpiexec --version')"),
        FLAVORS,
    ),
    Key(
        "launcher.extra_args",
        "list[str]",
        [],
        _for_launchers("extra_args", "extra launcher arguments, placed before the engine"),
        executes=True,
    ),
    Key(
        "launcher.oversubscribe",
        "bool",
        False,
        _for_launchers(
            "oversubscribe",
            "under binding core "
            "or 2cores, start more processes than a node's cores hold: process k takes the k-th core set "
            "mod the node's, so processes share cores (for placements such as 16 clients on an emulated "
            "node of 2 cores; rates that need CPU then share it)",
        ),
    ),
    Key("binding", "choice", "core", "core binding: one process per core, two cores per process, or none", BINDINGS),
    Key("metrics", "list[choice]", metrics.defaults(), metrics.help_text(), tuple(metrics.METRICS)),
    # Each metric's own keys (declared in its file, rooftop/metrics/), in table order.
    *(k for m in metrics.METRICS.values() for k in m.keys),
    Key("collect.duration", "float", 5.0, f"measured seconds per window (at least {MIN_DURATION_S:g})", maximum=DAY),
    Key("collect.warmup", "float", 1.0, "warmup seconds before a measurement's first window", maximum=HOUR),
    Key("collect.windows", "int", 5, "engine windows per measurement, each stored as one sample", maximum=10_000),
    Key(
        "collect.pair_windows",
        "int",
        None,
        "engine windows per node pair of the client ceiling (default: collect.windows); the spread "
        "over many pairs is what a pair ceiling samples, so one window each (as Carns et al., CUG 2025, "
        "measured their 136 pairs) lets more pairs fit the same time",
        nullable=True,
        minimum=1,
        maximum=10_000,
    ),
    Key(
        "collect.pairs_share_cores",
        "bool",
        False,
        "measure node pairs whose nodes share cores in one pair round (an emulated cluster of more nodes "
        "than this machine has cores; needs engine.server_progress and engine.client_progress = block); "
        "whether each such sample counts is then decided by how busy its round kept those cores "
        "(samples.cores_busy, at most 50 %: rooftop.model.exclude)",
    ),
    Key("collect.server_peak", "bool", True, "measure the server ceiling (saturated server node)"),
    Key("collect.client_peak", "bool", True, "measure the client ceiling (the node pairs collect.pairs picks)"),
    Key(
        "collect.pairs",
        "choice",
        "serial",
        "client peak node pairs: " + "; ".join(f"{s.name}: {s.help}" for s in pairs.PAIRS.values()),
        tuple(pairs.PAIRS),
    ),
    # The pair strategies' keys (rooftop/stages/pairs/) and where sample reads the topology.
    *pairs.KEYS,
    *topology.KEYS,
    Key(
        "collect.client_node",
        "bool",
        True,
        "measure the node-saturated client ceiling: one client "
        "node fully populated against the servers of every other node (Carns et al., CUG 2025, section 5.2)",
    ),
    Key(
        "collect.sweep_servers",
        "bool",
        False,
        "measure one server node's aggregate as its server processes grow 1..max",
    ),
    Key(
        "collect.servers_per_node",
        "int",
        None,
        "server processes on the server node (default: one per usable core under the binding)",
        nullable=True,
        maximum=100_000,
    ),
    Key(
        "collect.clients_per_node",
        "int",
        None,
        "client processes per client node (default: one per usable core under the binding)",
        nullable=True,
        maximum=100_000,
    ),
    Key(
        "validate.server_nodes",
        "list[int]",
        None,
        f"server-node counts of the validation grid (default 1..min({VALIDATE_SERVER_NODES}, N-1))",
        nullable=True,
        maximum=100_000,
    ),
    Key(
        "validate.client_nodes",
        "list[int]",
        None,
        "client-node counts (default 1..16, then doubling up to N-servers: 32, 64, ..., N-servers)",
        nullable=True,
        maximum=100_000,
    ),
    Key(
        "validate.servers_per_node",
        "int",
        None,
        "server processes per server node (default: one per usable core under the binding)",
        nullable=True,
        maximum=100_000,
    ),
    Key(
        "validate.clients_per_node",
        "int",
        None,
        "client processes per client node (default: one per usable core under the binding)",
        nullable=True,
        maximum=100_000,
    ),
    Key(
        "validate.duration",
        "float",
        5.0,
        f"measured seconds per validation window (at least {MIN_DURATION_S:g})",
        maximum=DAY,
    ),
    Key("validate.warmup", "float", 1.0, "warmup seconds before a validation measurement's first window", maximum=HOUR),
    Key("validate.windows", "int", 1, "engine windows per grid point, each stored as one sample", maximum=10_000),
    Key("engine.server_progress", "str", "spindown", "server progress mode: busy, block, adaptive, spindown[:MS]"),
    Key("engine.client_progress", "str", "busy", "client progress mode"),
    Key(
        "engine.concurrency",
        "int",
        1,
        "operations each client process keeps outstanding (1: sequential, synchronous, as Carns et al. (CUG 2025) measures)",
        maximum=4096,
    ),
    Key(
        "engine.handler_threads",
        "int",
        0,
        "server threads running RPC handlers (0: all in the single progress loop, the paper's single-threaded daemon)",
        maximum=256,
    ),
    Key(
        "engine.start",
        "choice",
        "barrier",
        "how the clients of a sample start measuring together: barrier "
        "(each warms up, reports ready to server rank 0 over the fabric and keeps loading; its one answer "
        "starts every client's first window; a sample of one client process needs none: it measures from "
        "the end of its warmup) or clock (a wall-clock instant, launch time + start_lead + "
        "warmup: a guess, kept to compare with)",
        ("barrier", "clock"),
    ),
    Key(
        "engine.barrier_timeout",
        "float",
        60.0,
        "seconds a ready client waits at the start barrier for "
        "the others: allow for the slowest start-up (a CPU-capped node populating its 1 GiB stream buffer "
        "takes several seconds); a client that never becomes ready fails its sample after this",
    ),
    Key(
        "engine.settle",
        "float",
        0.1,
        "seconds clients load again after the start barrier's release "
        "before their first window (they drained to report ready: pipelines and TCP windows refill); "
        "a lone client, started without the barrier, has none",
    ),
    Key(
        "engine.start_lead",
        "float",
        0.5,
        "engine.start = clock: seconds allowed for client processes to start before their warmup",
        maximum=HOUR,
    ),
    Key(
        "engine.min_overlap",
        "float",
        0.95,
        "share of each window that all clients of a sample must "
        "measure together; a round below it is measured again, then stored invalid",
    ),
    Key(
        "engine.retries",
        "int",
        2,
        "times an invalid round (clients apart, an aggregate above a known "
        "link rate, foreign CPU above engine.foreign_cpu_gate) is measured again before its samples are stored invalid",
    ),
    Key(
        "engine.foreign_cpu_gate",
        "float",
        0.5,
        "cores' worth of CPU other processes (not the campaign's, not the kernel's) may use on a round's "
        "cores while it runs (local and netns launchers: each sample's foreign_cpu); above it the round "
        "is invalid: measured again, then stored invalid, so no ceiling, outlier score, learned row, "
        "validation error or fitted line uses it (the summary warns from 0.1)",
        minimum=0.0,
        maximum=100_000,
    ),
    Key(
        "engine.slices",
        "int",
        20,
        "slices per window in which clients report their work, to sum it over the time all of them measured",
    ),
    Key("engine.timeout", "float", 10.0, "seconds before a missing or silent server is an error", maximum=DAY),
    Key(
        "engine.lease",
        "float",
        DEFAULT_LEASE,
        "seconds an engine runs on without hearing from its campaign "
        "(a lease file in its group folder, renewed every lease/5 s): engines never outlive a campaign "
        "that was killed",
        maximum=DAY,
    ),
    Key("engine.path", "str", None, "rooftop-engine executable (default: installed one)", nullable=True, executes=True),
    Key(
        "engine.launch",
        "choice",
        "agents",
        "how a campaign starts its engines: agents (one `rooftop-engine agent` per node for the whole "
        "campaign, launched once -- one srun step, one mpiexec, a process per node here -- which forks each "
        "placement's servers and clients, so libfabric loads once per node) or per-placement (a launch per "
        "placement and round: srun steps, mpiexec lines, a process each; the older way, kept to compare). "
        "docs/measurement.md, 'How a campaign launches'",
        ("agents", "per-placement"),
    ),
    Key("results", "str", DEFAULT_RESULTS, "results folder (SQLite database and raw engine output)"),
    Key("fail_fast", "bool", False, "stop the campaign at the first failed sample"),
    # The meters' keys (rooftop/meters.py): time series recorded during rounds.
    *meters.KEYS,
]
KEY_BY_PATH = by_path(KEYS)

#: The studies' own keys (rooftop.bursts.keys, rooftop.learn.keys, ...), by
#: section (the first part of their paths: bursts, tune, audit, loads,
#: interference, probe, check).
#: A study registers its table with register() when its keys module is
#: imported (the layers forbid config from importing a study). They are in
#: KEY_BY_PATH (`--set`, config files, `config keys`) but only in the config
#: of a command that reads them: build(..., sections=("bursts",)).
STUDY_KEYS: dict[str, list[Key]] = {}


def register(section: str, keys: list[Key]) -> None:
    """Adds a study's keys (every path under `section.`); a key declared
    twice, here or in KEYS, is an error, as in by_path."""
    bad = [k.path for k in keys if not k.path.startswith(section + ".")]
    if bad or any(k.path == section or k.path.startswith(section + ".") for k in KEYS):
        raise ValueError(f"study keys of section {section}: {bad or section} not under a section of their own")
    if STUDY_KEYS.get(section) == keys:  # the same table again (a module imported twice)
        return
    new = by_path(keys)
    twice = sorted(set(new) & set(KEY_BY_PATH))
    if twice:
        raise ValueError(f"config key {twice[0]} is declared twice (a study's table and another)")
    STUDY_KEYS.setdefault(section, []).extend(keys)
    KEY_BY_PATH.update(new)


def section_of(path: str) -> str | None:
    """The study section a key belongs to (None: a common key)."""
    head = path.split(".", 1)[0]
    return head if head in STUDY_KEYS else None


#: The command that reads a study section, where it is not the section's name.
STUDY_COMMAND = {"loads": "interfere", "interference": "interfere", "check": "check/history"}
