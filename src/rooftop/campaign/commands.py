"""The engine command lines of a campaign: servers, clients, their start
options and leases."""

from __future__ import annotations

import secrets
import time
from pathlib import Path

from rooftop import metrics
from rooftop.campaign.costs import launch_mode
from rooftop.engine import enginedoc
from rooftop.engine.base import LEASE_FILE, TOKEN_FILE
from rooftop.launchers import Launch, Launcher, Node
from rooftop.nics import policy as nics
from rooftop.stages import Measurement, Placement
from rooftop.units import parse_size

#: Server options two metrics may both give with different values: the
#: servers get the largest (each is the size of a buffer slot).
MERGED_BY_MAX = ("--max-size", "--max-msg")


def _server_options(args: list[str]) -> dict[str, tuple[str, ...]]:
    """Engine arguments by option: {"--size": ("--size", "4KiB"), "--fill":
    ("--fill=false",), "--verbose": ("--verbose",)}."""
    out: dict[str, tuple[str, ...]] = {}
    for i, a in enumerate(args):
        if a.startswith("--") and "=" in a:
            out[a.split("=", 1)[0]] = (a,)
        elif a.startswith("--"):
            nxt = args[i + 1] if i + 1 < len(args) else None
            out[a] = (a,) if nxt is None or nxt.startswith("--") else (a, nxt)
    return out


def merge_server_args(arg_lists: list[list[str]]) -> list[str] | None:
    """The server arguments serving every one of several metrics, or None
    when two of them give an option different values (MERGED_BY_MAX aside;
    a flag given as --flag=false differs from --flag=true)."""
    merged: dict[str, tuple[str, ...]] = {}
    for args in arg_lists:
        for opt, given in _server_options(args).items():
            if opt in merged and merged[opt] != given:
                if opt not in MERGED_BY_MAX:
                    return None
                given = (opt, str(max(parse_size(merged[opt][1], opt), parse_size(given[1], opt))))
            merged[opt] = given
    return [a for given in merged.values() for a in given]


def _non_default(cfg: dict, key: str, default: int) -> list[str]:
    """--KEY VALUE for engine.KEY when it is not the engine's default (the
    command lines of campaigns that never set it stay as they were)."""
    value = cfg["engine"].get(key, default)
    return [] if value == default else [f"--{key.replace('_', '-')}", str(value)]


class Commands:
    """The engine command lines of a campaign: servers, clients, start options."""

    def __init__(self, cfg: dict, launcher: Launcher, nodes: list[Node], engine: str, lease_s: float):
        self.cfg, self.launcher, self.nodes, self.engine, self.lease_s = cfg, launcher, nodes, engine, lease_s
        #: Engines are started by the node agents (engine.launch = agents:
        #: the launch mode that launches once per node, rooftop.campaign.costs).
        self.agents = launch_mode(cfg).once_per_node

    def launches(self, node: Node, argv: list[str], nprocs: int, first_rank: int) -> list[Launch]:
        """The launches of nprocs engine processes on node: one per process
        for its agent (engine.launch = agents), else the launcher's lines."""
        binding = self.cfg["binding"]
        if self.agents:
            return [
                Launch(a, node, [rank], agent=True)
                for rank, a in self.launcher.agent_argvs(node, argv, nprocs, binding, first_rank)
            ]
        return self.launcher.launches(node, argv, nprocs, binding, first_rank)

    def shutdown_launch(self, placement: Placement, gdir: Path, rank: int) -> Launch:
        """The shutdown of server rank (engine.launch = agents: by the agent
        of its node, which reaches it as a client there)."""
        node = self.nodes[placement.server_nodes[rank // placement.servers_per_node]]
        argv = [
            self.engine,
            "shutdown",
            *self.fabric_args(),
            "--group-dir",
            str(gdir),
            "--rank",
            str(rank),
            "--token-file",
            str(gdir / TOKEN_FILE),
            "--timeout",
            "5",
        ]
        return Launch(argv, node, [rank], agent=True)

    def fabric_args(self) -> list[str]:
        args = ["--fabric", self.cfg["fabric"]["provider"]]
        if self.cfg["fabric"]["domain"]:
            args += ["--domain", self.cfg["fabric"]["domain"]]
        return args

    def lease_args(self, gdir: Path) -> list[str]:
        return ["--lease", str(gdir / LEASE_FILE), "--lease-timeout", str(self.lease_s)]

    def server_launches(self, placement: Placement, gdir: Path) -> list[Launch]:
        # Servers serve the metrics measured against them: their arguments only.
        per_metric = merge_server_args([metrics.get(m).server_args(self.cfg) for m in placement.metrics])
        if per_metric is None:  # split_by_servers plans these apart
            raise ValueError(f"metrics {placement.metrics} need servers started differently")
        launches, rank = [], 0
        for idx in placement.server_nodes:
            node = self.nodes[idx]
            argv = [
                self.engine,
                "serve",
                *self.fabric_args(),
                "--group-dir",
                str(gdir),
                "--token-file",
                str(gdir / TOKEN_FILE),
                "--progress",
                self.cfg["engine"]["server_progress"],
                *per_metric,
                *_non_default(self.cfg, "handler_threads", 0),
                *self.lease_args(gdir),
                "--output",
                str(gdir / enginedoc.SERVER_DOCUMENT),
            ]
            if node.address:
                argv += ["--address", ",".join(node.nic_addresses())]
            argv += nics.engine_args(self.cfg, gdir / "nic-counters", idx, "server")
            launches += self.launches(node, argv, placement.servers_per_node, rank)
            rank += placement.servers_per_node
        return launches

    def start_args(
        self, m: Measurement, nclients: int, barrier_id: int | None = None, measure_at: str | None = None
    ) -> list[str]:
        """How the clients of a measurement start measuring together: a start
        barrier gathered by server rank 0 (default), or a wall-clock instant
        (engine.start = clock: launch time + start lead + warmup). A lone
        client has no one to start with: under the barrier it measures from
        the end of its warmup, without the barrier's drain, round trip and
        settle (0.1 s and more per round it would spend not measuring)."""
        e = self.cfg["engine"]
        if e["start"] == "barrier":
            if nclients == 1:
                return ["--warmup", str(m.warmup)]
            bid = barrier_id if barrier_id is not None else secrets.randbits(63)
            return [
                "--warmup",
                str(m.warmup),
                "--barrier",
                str(nclients),
                "--barrier-id",
                str(bid),
                "--barrier-timeout",
                str(e["barrier_timeout"]),
                "--settle",
                str(e["settle"]),
            ]
        if measure_at is None:
            measure_at = f"{time.time() + e['start_lead'] + m.warmup:.3f}"
        return ["--measure-at", measure_at]

    def client_launches(
        self,
        placement: Placement,
        m: Measurement,
        gdir: Path,
        sdir: Path,
        nwindows: int = 1,
        start: list[str] | None = None,
    ) -> list[Launch]:
        """start: the start options (default: start_args())."""
        nservers = len(placement.server_nodes) * placement.servers_per_node
        if start is None:
            start = self.start_args(m, m.client_procs)
        e = self.cfg["engine"]
        launches, rank = [], 0
        for idx in m.client_nodes:
            node = self.nodes[idx]
            argv = [
                self.engine,
                "load",
                *self.fabric_args(),
                "--group-dir",
                str(gdir),
                "--nservers",
                str(nservers),
                "--duration",
                str(m.duration),
                "--windows",
                str(nwindows),
                *start,
                "--slices",
                str(e["slices"]),
                "--progress",
                e["client_progress"],
                *_non_default(self.cfg, "concurrency", 1),
                "--timeout",
                str(e["timeout"]),
                *self.lease_args(gdir),
                "--output",
                str(sdir / enginedoc.CLIENT_DOCUMENT),
                "--window-log",
                str(sdir / enginedoc.WINDOW_LOG),
            ]
            argv += metrics.get(m.metric).client_args(self.cfg)
            argv += nics.engine_args(self.cfg, sdir / "nic-counters", idx, "client")
            launches += self.launches(node, argv, m.clients_per_node, rank)
            rank += m.clients_per_node
        return launches
