"""net: a network flood between the load's nodes through the engine's own
bulk operations (GPCNeT's congestors), one worker per node:

- incast: the load's first node (the hub) runs a `rooftop-engine serve`,
  every other node a `rooftop-engine load --op write` against it: the data
  flows into the hub's link;
- broadcast: the same nodes, `--op read`: the data flows out of the hub's
  link to every other node;
- alltoall: every node serves, and every node's client loads every
  server round-robin (`--server all`), reading (or `op=write`).

`op` (auto) is the pattern's direction; incast and alltoall take an
explicit read or write, broadcast only read.

A client measures windows of `window` seconds back to back until stopped
(`--windows` large, `--window-log`); each window but the first (a
warm-up) is one unit, its work the
bytes it moved (GB, rate GB/s). The servers run in the load's own group
folder (no shutdown token: nothing can stop them by RPC), with the campaign's
progress modes (engine.server_progress, engine.client_progress); SIGTERM stops
them with the worker."""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from pathlib import Path

from rooftop import metrics
from rooftop.engine import enginedoc
from rooftop.engine.base import engine_path
from rooftop.interference.loads.base import Load, knob
from rooftop.units import parse_size


class _Children:
    procs: list[subprocess.Popen] = []


def _start(argv: list[str], log: Path) -> subprocess.Popen:
    with open(log, "w") as f:
        p = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT)
    _Children.procs.append(p)
    return p


def _wait_servers(gdir: Path, n: int, stopping, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not stopping.is_set():
        if len(list(gdir.glob("*.addr"))) >= n:
            return True
        time.sleep(0.05)
    return False


class _Tail:
    """Records the client's windows from its window log as they end."""

    def __init__(self, log: Path, size: int, record):
        self.log, self.size, self.record, self.windows = enginedoc.WindowLog(log), size, record, 0

    def read(self) -> None:
        for ev in self.log.read():  # (a line still being written waits)
            if ev["event"] == "window" and ev["elapsed_s"] > 0 and ev["window"] > 0:  # 0: warm-up
                self.record(ev["end_s"] - ev["elapsed_s"], ev["end_s"], ev["ops"] * self.size / 1e9)
                self.windows += 1


def run(argv, stopping, record, rank):
    p = argparse.ArgumentParser(prog="rooftop.interference.loads.worker net")
    for name in ("engine", "group", "serve", "client", "window"):
        p.add_argument(f"--{name}", required=True)
    p.add_argument("--nservers", type=int, required=True)
    p.add_argument("--size", type=int, required=True)
    a = p.parse_args(argv)
    serve, client = json.loads(a.serve), json.loads(a.client)
    gdir = Path(a.group)
    gdir.mkdir(mode=0o700, parents=True, exist_ok=True)
    if serve:
        _start([a.engine, *serve, "--rank", str(rank)], gdir / f"server-{rank}.log")
    wlog = enginedoc.window_log_path(gdir, rank)
    tail = _Tail(wlog, a.size, record)
    if client and _wait_servers(gdir, a.nservers, stopping):
        _start(
            [
                a.engine,
                *client,
                "--rank",
                str(rank),
                "--window-log",
                str(wlog),
                "--output",
                str(enginedoc.client_document(gdir, rank)),
            ],
            gdir / f"client-{rank}.log",
        )
    while not stopping.wait(0.2):
        tail.read()
        dead = [c for c in _Children.procs if c.poll() is not None]
        if dead:  # an engine of the flood ended by itself: the flood is over
            _stop_children()
            logs = " ".join(p.read_text()[-300:] for p in sorted(gdir.glob("*.log")))
            raise RuntimeError(f"net load: an engine exited (code {dead[0].returncode}): {logs}")
    _stop_children()
    tail.read()
    return {"role": ("server+" if serve else "") + ("client" if client else ""), "windows": tail.windows}


def _stop_children() -> None:
    for c in _Children.procs:
        if c.poll() is None:
            c.terminate()
    for c in _Children.procs:
        try:
            c.wait(timeout=5)
        except subprocess.TimeoutExpired:
            c.kill()
            c.wait()


def on_stop() -> None:
    pass  # run() waits on the stop event, then stops its engines


def _args(ctx):
    """One worker per node: the engine lines it runs, as JSON lists."""
    k, cfg = ctx.knobs, ctx.cfg
    if len(ctx.nodes) < 2:
        raise ValueError("load 'net' needs at least two nodes (its flood goes between them)")
    op = direction(k["pattern"], k["op"])
    gdir = Path(ctx.folder) / "group"
    fab = ["--fabric", cfg["fabric"]["provider"]] + (
        ["--domain", cfg["fabric"]["domain"]] if cfg["fabric"]["domain"] else []
    )
    bw = dict(cfg["bw"], op=op, size=k["size"], buffer="reuse")  # a flood needs no fresh pages
    flood_cfg = dict(cfg, bw=bw)
    incast = k["pattern"] != "alltoall"  # incast and broadcast: a hub and its spokes
    node = ctx.nodes[ctx.position]
    serve = []
    if ctx.position == 0 or not incast:
        serve = [
            "serve",
            *fab,
            "--group-dir",
            str(gdir),
            "--progress",
            cfg["engine"]["server_progress"],
            "--output",
            str(gdir / enginedoc.SERVER_DOCUMENT.format(rank=ctx.position)),
            *metrics.get("bw").server_args(flood_cfg),
        ]  # the flood is bw operations
        if node.address:
            serve += ["--address", node.address]
    client = []
    if ctx.position > 0 or not incast:
        nservers = 1 if incast else len(ctx.nodes)
        client = [
            "load",
            *fab,
            "--group-dir",
            str(gdir),
            "--nservers",
            str(nservers),
            "--server",
            "0" if incast else "all",
            "--duration",
            str(k["window"]),
            "--windows",
            "100000",
            "--warmup",
            "0",
            "--concurrency",
            str(k["concurrency"]),
            "--progress",
            cfg["engine"]["client_progress"],
            "--timeout",
            "30",
            *metrics.get("bw").client_args(flood_cfg),
        ]
    return [
        "--engine",
        cfg["engine"]["path"] or engine_path(),
        "--group",
        str(gdir),
        "--serve",
        json.dumps(serve),
        "--client",
        json.dumps(client),
        "--window",
        str(k["window"]),
        "--nservers",
        str(1 if incast else len(ctx.nodes)),
        "--size",
        str(parse_size(k["size"])),
    ]


PATTERNS = {"incast": "write", "broadcast": "read", "alltoall": "read"}


def direction(pattern: str, op: str) -> str:
    """The bulk operation of a pattern (ValueError names a bad knob)."""
    if pattern not in PATTERNS:
        raise ValueError(f"net.pattern={pattern}: one of {', '.join(PATTERNS)}")
    if op not in ("auto", "read", "write"):
        raise ValueError(f"net.op={op}: auto, read or write")
    if pattern == "broadcast" and op == "write":
        raise ValueError(
            "net.op=write with net.pattern=broadcast: a broadcast sends out of the hub "
            "(op read); data into the hub is net.pattern=incast"
        )
    return PATTERNS[pattern] if op == "auto" else op


LOAD = Load(
    "net",
    "a network flood between its nodes (GPCNeT's congestors: incast into the first, broadcast "
    "out of it, or all-to-all) through the engine's bulk operations",
    "network links",
    (
        knob(
            "net",
            "pattern",
            "str",
            "incast",
            "incast (every other node sends into the first), broadcast (the first sends to every other) or alltoall",
        ),
        knob(
            "net", "op", "str", "auto", "bulk direction: auto (the pattern's), read (data leaves the servers) or write"
        ),
        knob("net", "size", "str", "1MiB", "bytes per bulk operation"),
        knob("net", "concurrency", "int", 4, "operations in flight per client", minimum=1),
        knob("net", "window", "float", 0.5, "seconds per measured unit", minimum=0.01),
    ),
    "GB/s",
    procs=lambda ctx, cores: 1,
    args=_args,
    multi_node=True,
    links=True,
)
