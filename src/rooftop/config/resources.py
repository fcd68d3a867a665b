"""What a campaign's processes need of the machine, checked before any is
forked: memory and the number of processes and threads, for every metric
and binding (issue 42: `--binding none` with 100,000 rpc clients per node
was accepted, and a real run of 200 used 3.4 GB and failed every sample
after two minutes).

A stage runs S servers on some nodes and C clients on the others; the
busiest layout puts one node of servers beside every other node's clients
(server peak) or one node of clients beside every other node's servers
(client node). Each process costs the engine's own footprint plus its
metric's buffers: a client's data buffer (the metric table's
`client_memory`), a server's bulk slots and message buffers (read from the
metric's server arguments). On a launcher whose nodes are this machine
every node counts against its memory and process limits; on other hosts
one node's share is compared with this machine's memory, as nothing else
is known before the launch (their process limits are not).

Binding does not change the count: with `none` nothing bounds the
processes a node holds (with a binding the cores do, unless the launcher
oversubscribes), so these checks are what stands between a typo and a
machine out of memory.
"""

from __future__ import annotations

from rooftop import metrics
from rooftop.keys import ConfigError
from rooftop.launchers import on_this_machine
from rooftop.launchers.local import mem_available, task_room
from rooftop.units import parse_size

#: Resident memory of one engine process before its metric's buffers: a
#: lower bound (ofi+tcp processes were seen at 17 to 90 MiB), so the check
#: never refuses a campaign that fits.
ENGINE_MEMORY = 16 << 20
#: Threads of a client (load) and a server (serve) process, besides a
#: server's --handler-threads; a node agent is one.
CLIENT_THREADS = 3
SERVER_THREADS = 2
#: The engine's serve defaults the server's buffers follow (engine/src/server.cpp).
SERVE_DEFAULTS = {"--max-size": 16 << 20, "--max-msg": 64 << 10, "--bulk-slots": 4, "--rx-depth": 64}
#: Share of the available memory a campaign may plan to use.
MEMORY_SHARE = 0.9


def server_memory(args: list[str]) -> int:
    """Bytes a server's buffers take under its metric's arguments: the bulk
    slots and the receive ring, response pool and spare messages."""
    o = dict(SERVE_DEFAULTS)
    for flag, value in zip(args, args[1:]):
        if flag in o:
            o[flag] = parse_size(value, flag) if flag.startswith("--max") else int(value)
    slots, depth = o["--bulk-slots"], o["--rx-depth"]
    return o["--max-size"] * slots + (depth * 2 + slots + 16) * o["--max-msg"]


def _mib(n: float) -> str:
    return f"{n / (1 << 30):,.1f} GiB" if n >= 10 << 30 else f"{n / (1 << 20):,.0f} MiB"


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def check(cfg: dict) -> None:
    """Refuses (ConfigError naming the key and the numbers) a resolved
    config whose processes do not fit this machine's memory or process
    limits. Needs cfg["nodes"] and the processes per node filled in."""
    n = len(cfg["nodes"])
    here = on_this_machine(cfg["launcher"]["type"])
    binding = cfg["binding"]
    handlers = cfg["engine"]["handler_threads"] or 0
    avail = mem_available()
    worst: tuple[int, list[str], str] | None = None  # (bytes, keys to lower, what)
    most: tuple[int, int, str] | None = None  # (threads, processes, key)
    for stage in ("collect", "validate"):
        s, c = cfg[stage]["servers_per_node"], cfg[stage]["clients_per_node"]
        # (server nodes, client nodes) of the busiest layouts, on this machine or one node elsewhere
        layouts = [(1, n - 1), (n - 1, 1)] if here and n > 1 else [(1, 0), (0, 1)]
        for k, m in layouts:
            key = f"{stage}.{'clients' if m * c >= k * s else 'servers'}_per_node"
            for name in cfg["metrics"]:
                metric = metrics.get(name)
                buffer, buffer_key = metric.client_memory(cfg)
                per_server = ENGINE_MEMORY + server_memory(metric.server_args(cfg))
                per_client = ENGINE_MEMORY + buffer
                need = k * s * per_server + m * c * per_client
                if worst is None or need > worst[0]:
                    what = (
                        f"{_count(k * s, 'server')} of {_mib(per_server)} and {_count(m * c, 'client')} of "
                        f"{_mib(per_client)} for {name}: {s} servers, {c} clients per node, binding {binding}"
                        + (f", {n} nodes on this machine" if here else ", per node")
                    )
                    # a client's own buffer larger than the engine's footprint: its key comes first
                    keys = [buffer_key, key] if m * c and buffer > ENGINE_MEMORY else [key]
                    worst = (need, keys, what)
            procs = k * s + m * c
            threads = k * s * (SERVER_THREADS + handlers) + m * c * CLIENT_THREADS
            if here and (most is None or threads > most[0]):
                most = (threads + n, procs + n, key)  # + one node agent each
    if worst and avail and worst[0] > avail * MEMORY_SHARE:
        need, keys, what = worst
        raise ConfigError(
            f"{keys[0]}: the engine processes need at least {_mib(need)} of memory ({what}) but this machine "
            f"has {_mib(avail)} available: lower {' or '.join(keys)}"
        )
    if most:
        threads, procs, key = most
        for limit, room in task_room():
            if threads > room:
                raise ConfigError(
                    f"{key}: the engine processes ({procs} processes, at least {threads} threads, binding "
                    f"{binding}) exceed {limit}, which leaves room for {room}: lower {key}"
                )
