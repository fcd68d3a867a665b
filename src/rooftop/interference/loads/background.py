"""A background load running on chosen nodes: its processes started
through the campaign's launcher (rooftop.launchers, the same command
lines as engines get: pinned with --rank R --cpus C), each in its own
session; stopped with SIGTERM to each process group, SIGKILL after a
grace period; its documents and units read back.

The units (rooftop.interference.loads.worker: one JSON line per finished unit of work)
are split by time (`split`): those done before the stages started (the
load alone) and those done while they ran (beside the service). The
load's own slowdown is the ratio of the two rates, each work per second of
wall time over the span of a process's units (a unit shorter than a
scheduler time slice does not see the time-sharing; the span does)."""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

from rooftop.engine.base import LEASE_FILE
from rooftop.engine.leases import Leases
from rooftop.engine.reaping import Proc, terminate
from rooftop.interference.loads import get
from rooftop.interference.loads.base import Context
from rooftop.launchers import Launch


@dataclass
class Running:
    """One copy of a load, started."""

    load: str  # its name (an entry of rooftop.interference.loads.LOADS)
    knobs: dict
    nodes: list
    folder: Path
    copy: int
    launches: list[Launch] = field(default_factory=list)
    procs: list[Proc] = field(default_factory=list)
    marks: list[float] = field(default_factory=list)
    #: The campaign's leases: this copy's folder holds one its workers
    #: watch, so none outlives a killed campaign.
    leases: Leases | None = None

    def describe(self) -> dict:
        return {
            "load": self.load,
            "copy": self.copy,
            "knobs": self.knobs,
            "nodes": [n.index for n in self.nodes],
            "folder": str(self.folder),
            "processes": [{"node": l.node.index, "ranks": l.ranks, "argv": l.argv} for l in self.launches],
        }


def launches(
    load: str, knobs: dict, nodes: list, launcher, cfg: dict, folder: Path, copy: int = 0, binding: str = "core"
) -> list[Launch]:
    """The command lines of one copy of a load on nodes (nothing started)."""
    entry = get(load)
    out, rank = [], 0
    for pos, node in enumerate(nodes):
        ctx = Context(knobs, pos, nodes, str(folder), cfg, copy)
        n = entry.procs(ctx, len(node.cores))
        argv = [
            sys.executable,
            "-m",
            "rooftop.interference.loads.worker",
            load,
            "--units",
            str(folder / "units-{rank}.jsonl"),
            "--lease",
            str(folder / LEASE_FILE),
            "--lease-timeout",
            str(cfg["engine"]["lease"]),
            *entry.args(ctx),
        ]
        first = pos if entry.multi_node else rank
        width = binding if n <= len(node.cores) else "none"
        out += launcher.launches(node, argv, n, width, first)
        rank += n
    return out


def start(load: str, knobs: dict, nodes: list, runner, folder: Path, copy: int = 0) -> Running:
    """Starts one copy through runner's launcher; its processes join
    runner.procs, so a campaign stopped by Ctrl-C stops them too."""
    folder.mkdir(parents=True, exist_ok=True)
    r = Running(load, knobs, nodes, folder, copy, leases=runner.leases)
    runner.leases.add(folder)
    r.launches = launches(load, knobs, nodes, runner.launcher, runner.cfg, folder, copy)
    for i, l in enumerate(r.launches):
        r.procs.append(runner.procs.start(l, folder / f"worker-{i}.log"))
    return r


def stop(r: Running, grace: float = 5.0) -> dict:
    """SIGTERM (then SIGKILL after grace) to its processes; what they did."""
    killed = terminate(r.procs, grace)
    if r.leases is not None:
        r.leases.drop(r.folder)
    docs = []
    for i, _ in enumerate(r.launches):
        doc = _last_json(r.folder / f"worker-{i}.log")
        docs.append(doc)
    return {"killed": len(killed), "documents": docs, "units": _units(r.folder)}


def _last_json(path: Path) -> dict | None:
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


def _unit_records(f: Path) -> list[dict]:
    """A units file's complete records. A worker's buffered writes can end
    mid-line while it runs (or when it is killed): a last line without its
    newline is not a unit yet, and is left for the next read."""
    text = f.read_text()
    return [json.loads(line) for line in text[: text.rfind("\n") + 1].splitlines() if line.strip()]


def units_done(r: Running) -> int:
    """Units its processes have finished so far with some work done (a
    flood's window can end before its first operation does)."""
    return sum(1 for f in r.folder.glob("units-*.jsonl") for u in _unit_records(f) if u["work"] > 0)


def _units(folder: Path) -> list[dict]:
    out: list[dict] = []
    for f in sorted(folder.glob("units-*.jsonl")):
        rank = int(f.stem.split("-", 1)[1])
        out.extend(dict(u, rank=rank) for u in _unit_records(f))
    return out


def _rate(units: list[dict], intervals: list[tuple[float, float]] | None = None) -> float | None:
    """Work per second of wall time, per process: each process's units'
    work over the span from its first unit's start to its last unit's end
    (the gaps count: a process preempted between its units is slowed down
    as much as one preempted inside them), averaged over the processes.
    With intervals (the service's measuring windows), the span is summed
    per interval, so the time between them (a bursts run's gaps, a server
    restarting) is not counted as time the load was slow."""
    by_rank: dict[int, list[dict]] = {}
    for u in units:
        by_rank.setdefault(u.get("rank", 0), []).append(u)
    rates = []
    for us in by_rank.values():
        span = sum(max(u["t1"] for u in g) - min(u["t0"] for u in g) for g in _by_interval(us, intervals))
        if span > 0:
            rates.append(sum(u["work"] for u in us) / span)
    return sum(rates) / len(rates) if rates else None


def _by_interval(units: list[dict], intervals: list[tuple[float, float]] | None) -> list[list[dict]]:
    """The units grouped by the interval holding them (one group without intervals)."""
    if not intervals:
        return [units] if units else []
    groups = [[u for u in units if a <= u["t0"] and u["t1"] <= b] for a, b in intervals]
    return [g for g in groups if g]


def split(units: list[dict], t_mark: float, beside_in: list[tuple[float, float]]) -> dict:
    """Units alone (ended before t_mark, when the stages started) and beside
    the service (each inside one of the intervals beside_in: when its
    clients measured); rates per process (_rate); slowdown = rate alone /
    rate beside (None when either side has no unit)."""
    alone = [u for u in units if u["t1"] <= t_mark]
    beside = [u for u in units if any(a <= u["t0"] and u["t1"] <= b for a, b in beside_in)]
    ra, rb = _rate(alone), _rate(beside, beside_in)
    return {
        "units_alone": len(alone),
        "units_beside": len(beside),
        "rate_alone": ra,
        "rate_beside": rb,
        "slowdown": ra / rb if ra and rb else None,
        "unit_s_alone": statistics.mean(u["t1"] - u["t0"] for u in alone) if alone else None,
        "unit_s_beside": statistics.mean(u["t1"] - u["t0"] for u in beside) if beside else None,
    }
