"""Campaigns: the roofline parameter suite (collect) and validation samples.

A campaign is planned as *placements*: server processes started once (a
server group), then every sample that uses them, measured in client rounds
(one set of client processes measuring consecutive windows). Servers are
ready when their address files exist -- no sleeps. Every sample is stored
the moment it is measured; every process started is stopped on any exit,
Ctrl-C included.

What each stage plans lives in its file under rooftop/stages/ (seed 000,
sections 4.3 and 5); this module runs the plans and names no stage.

The pieces: Commands (engine command lines), Servers (a server group's
lifecycle), RoundMeasurer (one client round), Rows (stored rows from what
clients measured) and Runner (the loop over placements, retries, storing).

Shared stages that would run the identical placement are measured once
(measure_once): on 2 nodes of one core, server peak, client peak and client
node are all one server against one client. The first planned spec stands
for the others; its keys name them all ("server_peak+client_peak+...").
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import signal
import subprocess
import threading
import sys
import time
from contextlib import contextmanager
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from rooftop import emulation, limits, metrics, progress, samplers, stages, windows
from rooftop.engine import (LEASE_FILE, TOKEN_FILE, EngineError, Leases, NotReady, engine_path, private_dir,
                            reap, run_engine, terminate, wait_published, write_private, write_token)
from rooftop.launchers import Launch, Launcher, Node, on_this_machine
from rooftop.nics import check as nic_check
from rooftop.nics import policy as nics
from rooftop.stages import Placement, SampleSpec, sample_key

def _where(placement: Placement, spec: SampleSpec) -> tuple | None:
    """What a sample runs, as far as the measurement goes: (metric, index,
    server nodes, servers per node, client nodes, clients per node, duration,
    warmup); None for pair rounds of several pairs (no other stage runs them)."""
    if spec.pairs is not None and len(spec.pairs) != 1:
        return None
    return (spec.metric, spec.index, tuple(placement.server_nodes), placement.servers_per_node,
            tuple(spec.client_nodes), spec.clients_per_node, spec.duration, spec.warmup)


def measure_once(placements: list[Placement]) -> list[Placement]:
    """Shared stages (Stage.shared) that would run the identical placement
    (2 nodes: one server and one client process for all three) are measured
    once: the first planned spec stands for the others (SampleSpec.also,
    named in its keys), the others are dropped, and so are placements left
    empty."""
    first: dict[tuple, SampleSpec] = {}
    for pl in placements:
        keep = []
        for spec in pl.samples:
            where = _where(pl, spec) if stages.get(spec.stage).shared else None
            if where is None or where not in first:
                if where is not None:
                    first[where] = spec
                keep.append(spec)
                continue
            kept = first[where]
            kept.also += (spec.stage,)
            _, i, snodes, spn, cnodes, cpn, _, _ = where
            kept.key = sample_key(kept.label, kept.metric, list(snodes), spn, list(cnodes), cpn, i)
        pl.samples = keep
    return [pl for pl in placements if pl.samples]


def plan(cfg: dict, phase: str) -> list[Placement]:
    """Every placement of one command's stages, in table order."""
    return [pl for st in stages.of_phase(phase) if st.enabled(cfg) for pl in st.plan(cfg)]


def plan_collect(cfg: dict) -> list[Placement]:
    return split_by_servers(cfg, measure_once(plan(cfg, "collect")))


def plan_validate(cfg: dict) -> list[Placement]:
    return split_by_servers(cfg, plan(cfg, "validate"))


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
    from rooftop.units import parse_size

    merged: dict[str, tuple[str, ...]] = {}
    for args in arg_lists:
        for opt, given in _server_options(args).items():
            if opt in merged and merged[opt] != given:
                if opt not in MERGED_BY_MAX:
                    return None
                given = (opt, str(max(parse_size(merged[opt][1], opt), parse_size(given[1], opt))))
            merged[opt] = given
    return [a for given in merged.values() for a in given]


def server_groups(cfg: dict, names: list[str]) -> list[list[str]]:
    """The measured metrics, grouped so that the metrics of a group can be
    served by one server group (merge_server_args), in planned order."""
    def args(m: str) -> list[str]:
        # A partial config made by hand (a plan's test) may lack a metric's
        # section: it cannot ask for servers of its own then.
        return metrics.get(m).server_args(cfg) if m in cfg else []

    groups: list[list[str]] = []
    for name in names:
        for g in groups:
            if merge_server_args([args(m) for m in (*g, name)]) is not None:
                g.append(name)
                break
        else:
            groups.append([name])
    return groups


def split_by_servers(cfg: dict, placements: list[Placement]) -> list[Placement]:
    """A placement whose metrics need servers started differently (two
    storage directories, two I/O modes) becomes one placement per server
    group (tagged with its metrics), each measuring its metrics' samples."""
    out = []
    for pl in placements:
        groups = server_groups(cfg, pl.metrics)
        if len(groups) == 1:
            out.append(pl)
            continue
        for g in groups:
            out.append(Placement(pl.server_nodes, pl.servers_per_node,
                                 [s for s in pl.samples if s.metric in g], tag="+".join(g)))
    return out


@contextmanager
def _signals_deferred():
    """SIGINT/SIGTERM/SIGHUP received inside the block take effect when it ends
    (main thread only: elsewhere Python delivers no signals anyway)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []
    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    old = {s: signal.signal(s, lambda n, f: got.append(n)) for s in sigs}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        if got:
            signal.raise_signal(got[0])  # now handled as usual


class Processes:
    """Every process a campaign starts, so that all can be stopped."""

    def __init__(self):
        self.procs: list[subprocess.Popen] = []

    def start(self, launch: Launch, log: Path) -> subprocess.Popen:
        env = dict(os.environ, **launch.env)
        # Ctrl-C between fork and registration would orphan the child:
        # signals wait until it is on the list stop_all() walks.
        with _signals_deferred():
            with open(log, "w") as f:
                p = subprocess.Popen(launch.argv, stdout=f, stderr=subprocess.STDOUT, env=env,
                                     start_new_session=True)
            self.procs.append(p)
        return p

    def stop_all(self, grace: float = 5.0) -> None:
        terminate(self.procs, grace)
        self.forget_finished()

    def forget_finished(self) -> None:
        self.procs = [p for p in self.procs if p.poll() is None]


class SampleFailed(RuntimeError):
    pass


class RoundInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) during a round: measured holds the rows of the
    windows every client had fully measured, to store before stopping."""

    def __init__(self, measured: list):
        super().__init__()
        self.measured = measured


def stop_stale_groups(run_dir: Path, wait: float = 5.0) -> list[Path]:
    """Servers (and clients) of a campaign that died: their lease files are
    removed, so they stop at their next check (0.2 s); waits until their
    address files are withdrawn. Returns the group folders still holding one."""
    stale = [p.parent for p in (run_dir / "groups").glob(f"*/{LEASE_FILE}")]
    for gdir in stale:
        (gdir / LEASE_FILE).unlink(missing_ok=True)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and any(any(g.glob("*.addr")) for g in stale):
        time.sleep(0.05)
    if stale:  # its clients too (connecting or at a barrier: the engine's lease watchdog, 1.2 s)
        time.sleep(1.5)
    return [g for g in stale if any(g.glob("*.addr"))]


@dataclass
class ClientRound:
    """One set of client processes measuring consecutive windows (engine
    --samples) after one warmup: one window per spec, one stored sample per
    window (and pair)."""

    specs: list[SampleSpec]

    @property
    def first(self) -> SampleSpec:
        return self.specs[0]

    @property
    def folder(self) -> str:
        """Its folder under RESULTS/<run>/raw/: the measurement's key."""
        return self.first.key.rsplit("/", 1)[0].replace("/", "_")

    def row_keys(self) -> list[list[str]]:
        """Window by window, the keys of its rows (round.json; rooftop doctor)."""
        return [sp.row_keys() for sp in self.specs]


def _pair_schedule(cfg: dict, placements: list[Placement]) -> list[str]:
    """The dry run's account of pair rounds: how many, and the pairs kept
    apart because their nodes share cores (stages.client_peak.pair_rounds)."""
    rounds = [sp.pairs for pl in placements for sp in pl.samples[:1] if sp.pairs]
    if not rounds:
        return []
    from rooftop.stages.client_peak import round_robin

    alone = [r[0] for r in rounds if len(r) == 1]
    planned = len(round_robin(len(cfg["nodes"])))
    line = (f"# pair rounds: {len(rounds)} round(s) of disjoint pairs (a round-robin needs {planned})")
    if len(rounds) > planned:
        line += ("; pairs whose nodes share cores never run at once: "
                 f"{len(alone)} pair(s) run alone (" + ", ".join(f"n{a}-n{b}" for a, b in alone[:6])
                 + (", ..." if len(alone) > 6 else "") + ")")
    return [line]


def client_rounds(specs: list[SampleSpec]) -> list[ClientRound]:
    """Consecutive samples of one measurement share a client round."""
    out: list[ClientRound] = []
    same = lambda sp: (sp.stage, sp.metric, tuple(sp.client_nodes), sp.clients_per_node, sp.duration,
                       sp.warmup)
    for sp in specs:
        if out and same(out[-1].first) == same(sp):
            out[-1].specs.append(sp)
        else:
            out.append(ClientRound([sp]))
    return out


@dataclass
class ServerGroup:
    """The running servers of a placement: their private folder (address,
    token and lease files) and processes."""

    placement: Placement
    gdir: Path
    procs: list[subprocess.Popen]

    @property
    def nservers(self) -> int:
        return len(self.placement.server_nodes) * self.placement.servers_per_node


def _non_default(cfg: dict, key: str, default: int) -> list[str]:
    """--KEY VALUE for engine.KEY when it is not the engine's default (the
    command lines of campaigns that never set it stay as they were)."""
    value = cfg["engine"].get(key, default)
    return [] if value == default else [f"--{key.replace('_', '-')}", str(value)]


class Commands:
    """The engine command lines of a campaign: servers, clients, start options."""

    def __init__(self, cfg: dict, launcher: Launcher, nodes: list[Node], engine: str, lease_s: float):
        self.cfg, self.launcher, self.nodes, self.engine, self.lease_s = cfg, launcher, nodes, engine, lease_s

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
            argv = [self.engine, "serve", *self.fabric_args(), "--group-dir", str(gdir),
                    "--token-file", str(gdir / TOKEN_FILE),
                    "--progress", self.cfg["engine"]["server_progress"],
                    *per_metric, *_non_default(self.cfg, "handler_threads", 0), *self.lease_args(gdir),
                    "--output", str(gdir / "server-{rank}.json")]
            if node.address:
                argv += ["--address", ",".join(node.nic_addresses())]
            argv += nics.engine_args(self.cfg, gdir / "nic-counters", idx, "server")
            launches += self.launcher.launches(node, argv, placement.servers_per_node,
                                               self.cfg["binding"], rank)
            rank += placement.servers_per_node
        return launches

    def start_args(self, spec: SampleSpec, nclients: int, barrier_id: int | None = None,
                   measure_at: str | None = None) -> list[str]:
        """How the clients of a sample start measuring together: a start
        barrier gathered by server rank 0 (default), or a wall-clock instant
        (engine.start = clock: launch time + start lead + warmup)."""
        e = self.cfg["engine"]
        if e.get("start", "barrier") == "barrier":
            bid = barrier_id if barrier_id is not None else secrets.randbits(63)
            return ["--warmup", str(spec.warmup), "--barrier", str(nclients), "--barrier-id", str(bid),
                    "--barrier-timeout", str(e.get("barrier_timeout", 60.0)), "--settle", str(e.get("settle", 0.0))]
        if measure_at is None:
            measure_at = f"{time.time() + e['start_lead'] + spec.warmup:.3f}"
        return ["--measure-at", measure_at]

    def client_launches(self, placement: Placement, spec: SampleSpec, gdir: Path, sdir: Path,
                        nwindows: int = 1, start: list[str] | None = None) -> list[Launch]:
        """start: the start options (default: start_args())."""
        nservers = len(placement.server_nodes) * placement.servers_per_node
        if start is None:
            start = self.start_args(spec, len(spec.client_nodes) * spec.clients_per_node)
        e = self.cfg["engine"]
        launches, rank = [], 0
        for idx in spec.client_nodes:
            node = self.nodes[idx]
            # The engine calls its windows "samples" (--samples).
            argv = [self.engine, "load", *self.fabric_args(), "--group-dir", str(gdir),
                    "--nservers", str(nservers), "--duration", str(spec.duration),
                    "--samples", str(nwindows), *start, "--slices", str(e.get("slices", 20)),
                    "--progress", e["client_progress"], *_non_default(self.cfg, "concurrency", 1),
                    "--timeout", str(e["timeout"]), *self.lease_args(gdir),
                    "--output", str(sdir / "client-{rank}.json"),
                    "--window-log", str(sdir / progress.WINDOW_LOG)]
            argv += metrics.get(spec.metric).client_args(self.cfg)
            argv += nics.engine_args(self.cfg, sdir / "nic-counters", idx, "client")
            launches += self.launcher.launches(node, argv, spec.clients_per_node,
                                               self.cfg["binding"], rank)
            rank += spec.clients_per_node
        return launches


class Servers:
    """The server-group lifecycle: start a placement's servers, wait until
    each is ready, stop them (shutdown RPC, then kill what is left)."""

    def __init__(self, runner: "Runner"):
        self.r = runner

    def start(self, placement: Placement) -> ServerGroup:
        r = self.r
        # Private (0700 directories, 0600 files): another user of a shared
        # file system can neither read the token nor find the servers.
        private_dir(r.run_dir / "groups")
        gdir = private_dir(r.run_dir / "groups" /
                           f"{placement.label}-{time.strftime('%H%M%S')}-{os.getpid()}")
        write_token(gdir, r.token)
        r.leases.add(gdir)
        launches = r.commands.server_launches(placement, gdir)
        procs = []
        for i, launch in enumerate(launches):
            r.log("start: " + shlex.join(launch.argv))
            log = write_private(gdir / f"launch-{i}.log", "")
            procs.append(r.procs.start(launch, log))
        group = ServerGroup(placement, gdir, procs)
        self._wait_ready(gdir, launches, procs, group.nservers)
        return group

    def _wait_ready(self, gdir: Path, launches, procs, nservers: int) -> None:
        started = [(p, launch.ranks, gdir / f"launch-{i}.log")
                   for i, (launch, p) in enumerate(zip(launches, procs))]
        try:
            wait_published(gdir, started, self.r.cfg["engine"]["timeout"] + 10)
        except NotReady as e:
            if e.index is None:
                raise SampleFailed(str(e)) from None
            raise SampleFailed(nic_check.early_exit(launches[e.index], e.missing, e.returncode,
                                                    e.log)) from None
        # No separate ping: a server publishes its address only once its
        # endpoint is up and its receives are posted, and every client's
        # hello checks that it answers (a silent one fails the samples,
        # named, within engine.timeout). A ping process would cost a
        # libfabric start-up per group (0.35 s with Debian's build).
        wrong_nic = nic_check.server_errors(self.r.cfg, gdir, launches)
        if wrong_nic:
            raise SampleFailed("; ".join(wrong_nic[:5]))

    def stop(self, group: ServerGroup) -> None:
        r, gdir = self.r, group.gdir

        def shutdown(rank: int):
            try:
                run_engine(["shutdown", *r.commands.fabric_args(), "--group-dir", str(gdir), "--rank",
                            str(rank), "--token-file", str(gdir / TOKEN_FILE), "--timeout", "5"],
                           timeout=20)
            except EngineError:
                pass  # killed below if it does not stop

        live = [k for k in range(group.nservers) if (gdir / f"{k}.addr").exists()]
        if live:
            with ThreadPoolExecutor(max_workers=min(8, len(live))) as pool:
                list(pool.map(shutdown, live))
        reap(group.procs, 10)
        r.leases.drop(gdir)
        (gdir / TOKEN_FILE).unlink(missing_ok=True)  # no secret left on disk once they stopped
        r.procs.forget_finished()


class Rows:
    """Stored sample rows from what clients measured: the aggregate over
    the time all of a row's clients measured, and whether it can be used.
    rooftop doctor rebuilds rows from engine documents with it."""

    def __init__(self, run_id: str, cfg: dict, nodes: list[Node]):
        self.run_id, self.cfg, self.nodes = run_id, cfg, nodes

    def blank(self, sp: SampleSpec, key: str, snodes, cnodes, ns: int, nc: int, **more) -> dict:
        """A row with nothing measured yet (more: further or other columns)."""
        row = dict(run_id=self.run_id, key=key, stage=sp.stage, metric=sp.metric,
                   unit=metrics.get(sp.metric).unit, sample=sp.index, server_nodes=snodes,
                   client_nodes=cnodes, server_procs=ns, client_procs=nc, measured_s=0.0,
                   aggregate=None, per_server=None, per_client=None)
        row.update(more)
        return row

    def failed(self, placement: Placement, spec: SampleSpec, error: str) -> list[dict]:
        """The rows of a spec whose servers did not start: failed, with their reason."""
        if spec.pairs is None:
            parts = [(spec.key, placement.server_nodes, spec.client_nodes,
                      len(placement.server_nodes) * placement.servers_per_node,
                      len(spec.client_nodes) * spec.clients_per_node)]
        else:
            parts = [(k, [a], [b], 1, 1) for (a, b), k in zip(spec.pairs, spec.row_keys())]
        return [self.blank(spec, key, snodes, cnodes, ns, nc, x=0.0, status="failed", error=error,
                           raw_dir="") for key, snodes, cnodes, ns, nc in parts]

    @staticmethod
    def parts(placement: Placement, sp: SampleSpec, nservers: int, nclients: int) -> list[tuple]:
        """(key, server nodes, client nodes, server processes, client ranks) of each row."""
        if sp.pairs is None:
            return [(sp.key, placement.server_nodes, sp.client_nodes, nservers, list(range(nclients)))]
        # One row per pair: client rank j loaded server rank j.
        return [(k, [a], [b], 1, [j]) for j, ((a, b), k) in enumerate(zip(sp.pairs, sp.row_keys()))]

    def row(self, sp: SampleSpec, part: tuple, w: int, results: dict, errors: dict, offs: dict,
            sdir: Path) -> dict:
        """The row of window w for one part (parts()) of a spec."""
        rkey, snodes, cnodes, ns, ranks = part
        row = self.blank(sp, rkey, snodes, cnodes, ns, len(ranks), raw_dir=str(sdir), x=ns / len(ranks),
                         late_s=0.0, skew_s=0.0, overlap=0.0, barrier_s=0.0, error="")
        errs = [errors[r] for r in ranks if r in errors]
        short = [r for r in ranks if r not in errors and len(windows_of(results[r])) <= w]
        if errs or short:
            row.update(status="failed", error=" | ".join(errs[:5]) or
                       f"client rank {short[0]} reported fewer windows than asked")
            return row
        agg, c = windows.aggregate(results, ranks, w, offs, sp.metric)
        row.update(status="ok", aggregate=agg, per_server=agg / ns, per_client=agg / len(ranks),
                   measured_s=max(0.0, c.hi - c.lo), skew_s=c.skew_s, overlap=c.overlap,
                   late_s=max(float(results[r].get("measure_at_late_s") or 0.0) for r in ranks),
                   barrier_s=max(float(results[r].get("barrier", {}).get("wait_s") or 0.0) for r in ranks))
        row["error"] = self.invalid(sp, snodes, cnodes, agg, c)
        if row["error"]:
            row["status"] = "invalid"
        return row

    def invalid(self, sp: SampleSpec, snodes, cnodes, agg: float, c) -> str:
        """Why a measured window cannot be used ('' when it can)."""
        need = float(self.cfg["engine"].get("min_overlap", 0.95))
        if c.overlap < need:
            return (f"clients measured together for {c.overlap:.0%} of the window (start skew "
                    f"{c.skew_s:.3f} s); engine.min_overlap asks {need:.0%}")
        if metrics.get(sp.metric).link_bound:
            return limits.above_limit(agg, limits.link_limit(self.nodes, snodes, cnodes))
        return ""


class EmulationWatch:
    """The emulation a round's nodes ran under (rooftop.emulation): read
    before the round, once every client has measured a window (from the
    window follower's thread) and at the end. Each row records its nodes'
    emulation after its window; a window whose nodes changed during it, or
    differ from the run's, is invalid with the difference as its reason.
    Off the emulated cluster: nothing read, nothing recorded."""

    def __init__(self, runner: "Runner", placement: Placement, rnd: ClientRound):
        used = set(placement.server_nodes) | {c for sp in rnd.specs for c in sp.client_nodes}
        self.nodes = [runner.nodes[i] for i in sorted(used)]
        self.cfg_nodes = runner.cfg.get("nodes") or []
        self.physical = emulation.physical_cores(runner.cfg)
        self.on = any((n.emulation or {}).get("netns") for n in self.nodes)
        self.reads: list[dict] = [emulation.read(self.nodes)] if self.on else []
        self.index = {id(sp): w for w, sp in enumerate(rnd.specs)}

    def window_done(self, w: int) -> None:
        if self.on and len(self.reads) == w + 1:
            self.reads.append(emulation.read(self.nodes))

    def mark(self, rows: list[tuple[SampleSpec, dict]]) -> list[tuple[SampleSpec, dict]]:
        if not self.on:
            return rows
        end = emulation.read(self.nodes)
        for sp, row in rows:
            w = self.index.get(id(sp), 0)
            before = self.reads[w] if w < len(self.reads) else self.reads[-1]
            after = self.reads[w + 1] if w + 1 < len(self.reads) else end
            mine = [str(i) for i in (*row["server_nodes"], *row["client_nodes"])]
            row["emulation"] = json.dumps({i: after[i] for i in mine if i in after}, sort_keys=True)
            if row["status"] == "failed":
                continue
            changed = emulation.between(before, after, mine)
            other = emulation.against_run({i: after[i] for i in mine if i in after}, self.cfg_nodes,
                                          self.physical) if not changed else []
            why = (f"the emulated cluster changed during the window: {'; '.join(changed[:3])}" if changed
                   else f"{emulation.OTHER}: {'; '.join(other[:3])}" if other
                   else "")
            if why:
                row["status"] = "invalid"
                row["error"] = why + (f" | {row['error']}" if row.get("error") else "")
        return rows


def windows_of(result: dict) -> list[dict]:
    """A client result's measured windows (the engine calls them samples)."""
    return result["samples"]


class RoundMeasurer:
    """Measures one client round against a running server group: starts its
    clients (with the samplers), waits for them, reads their documents and
    makes one row per window (and pair); on Ctrl-C, the rows of the windows
    measured in full."""

    def __init__(self, runner: "Runner"):
        self.r = runner

    def measure(self, group: ServerGroup, rnd: ClientRound, attempt: int) -> list[tuple[SampleSpec, dict]]:
        r, spec = self.r, rnd.first
        sdir = self._folder(rnd, attempt)
        launches = r.commands.client_launches(group.placement, spec, group.gdir, sdir, len(rnd.specs))
        watch = EmulationWatch(r, group.placement, rnd)  # the emulated cluster, read per window
        running = samplers.start_all(r, group.placement, spec)  # e.g. CPU others use meanwhile
        procs = []
        for i, launch in enumerate(launches):
            r.log("start: " + shlex.join(launch.argv))
            procs.append(r.procs.start(launch, sdir / f"launch-{i}.log"))
        e = r.cfg["engine"]
        limit = (spec.duration * len(rnd.specs) + spec.warmup + e.get("settle", 0.0) + e["start_lead"]
                 + e.get("barrier_timeout", 60.0)
                 + 2 * e["timeout"] + 30)
        nclients = sum(len(l.ranks) for l in launches)
        try:  # the bars advance as every client finishes a window (rooftop.progress)
            with progress.WindowFollower(sdir, nclients, len(rnd.specs),
                                         lambda w: (watch.window_done(w), r.on_window(rnd.specs[w]))):
                killed = reap(procs, limit, grace=e["timeout"] + 5)
        except KeyboardInterrupt:
            samplers.stop_all(running)
            self._store_series(rnd, running)
            raise RoundInterrupted(watch.mark(self._cut(group, rnd, launches, procs, sdir, attempt))) from None
        sampled = samplers.stop_all(running)
        self._store_series(rnd, running)
        r.procs.forget_finished()
        results, errors = self._read_clients(launches, procs, killed, sdir, limit)
        name_server_reasons(group.gdir, errors, r.leases.period)
        return watch.mark(self._rows(group, rnd, launches, results, errors, sdir, attempt, sampled=sampled))

    def _store_series(self, rnd: ClientRound, running: dict) -> None:
        """The round's time series (series samplers), saved at once; a
        sampler that recorded nothing says why, once per campaign."""
        from rooftop.store import StoreError

        rows = samplers.series_rows(running)
        if any(rows.values()):
            try:
                self.r.store.add_series(self.r.run_id, rnd.folder, rows)
            except StoreError as e:  # the round's samples come first: their store says what is lost
                print(f"rooftop: the time series of round {rnd.folder} were not stored: {e}", file=sys.stderr)
        for note in samplers.notes(running):
            if note not in self.r.said:
                self.r.said.add(note)
                print(f"rooftop: sampler {note}", file=sys.stderr)

    def _folder(self, rnd: ClientRound, attempt: int) -> Path:
        """The round's raw folder, emptied of an earlier attempt's client
        documents (an invalid attempt's stay on record under attempt-N) and
        window logs (they would advance the bars before this attempt has
        measured anything), with round.json: which window is which sample
        (for rooftop doctor)."""
        sdir = self.r.run_dir / "raw" / rnd.folder
        sdir.mkdir(parents=True, exist_ok=True)
        for old in sdir.glob(progress.WINDOW_LOG.format(rank="*")):
            old.unlink()
        keep = sdir / f"attempt-{attempt - 1}"
        earlier = list(sdir.glob("client-*.json"))
        if earlier and attempt == 1:
            # An earlier session's documents (a resumed run): never overwritten.
            # They were ingested at the start (doctor.recover_run); they stay
            # the record of the rows stored from them, under earlier-N.
            n = 1 + max([int(p.name[8:]) for p in sdir.glob("earlier-*") if p.name[8:].isdigit()] or [0])
            keep = sdir / f"earlier-{n}"
            earlier += [f for f in (sdir / "round.json",) if f.exists()]
        for old in earlier:
            keep.mkdir(exist_ok=True)
            old.rename(keep / old.name)
        if earlier and attempt == 1:
            self.r.store.moved_documents(self.r.run_id, sdir, keep)
        (sdir / "round.json").write_text(json.dumps({"keys": rnd.row_keys()}))
        return sdir

    def _rows(self, group: ServerGroup, rnd: ClientRound, launches, results, errors, sdir, attempt,
              measured_only: bool = False, sampled: dict | None = None) -> list[tuple[SampleSpec, dict]]:
        """One row per window (and pair). measured_only: only the rows of
        windows every client of the row measured in full. sampled: each
        sampler's value over the round (None: not sampled)."""
        r = self.r
        same_clock = on_this_machine(r.launcher.name) or len({l.node.host for l in launches}) == 1
        starts = {k: res["measure_start_s"] for k, res in results.items()}
        offs = windows.offsets(starts, same_clock)
        nclients = sum(len(l.ranks) for l in launches)
        out = []
        for w, sp in enumerate(rnd.specs):
            for part in Rows.parts(group.placement, sp, group.nservers, nclients):
                if measured_only and not all(k in results and len(windows_of(results[k])) > w
                                             for k in part[4]):
                    continue
                row = r.rows.row(sp, part, w, results, errors, offs, sdir)
                row["attempt"] = attempt
                row.update(sampled or {s.name: None for s in samplers.SAMPLERS})
                out.append((sp, row))
        return out

    def _cut(self, group: ServerGroup, rnd: ClientRound, launches, procs, sdir, attempt) -> list:
        """Ctrl-C during a round: stops its clients (each writes what it
        measured), reads them and returns the rows of the full windows.
        Further signals wait until then (a few seconds at most)."""
        rows: list = []
        try:
            with _signals_deferred():
                for p in procs:
                    try:
                        os.killpg(p.pid, signal.SIGTERM)
                    except ProcessLookupError:
                        pass
                killed = reap(procs, 10)
                self.r.procs.forget_finished()
                results, errors = self._read_clients(launches, procs, killed, sdir, 10, cut=True)
                rows = self._rows(group, rnd, launches, results, errors, sdir, attempt, measured_only=True)
        except KeyboardInterrupt:
            pass  # a second Ctrl-C: the round is stopped anyway
        return rows

    def _read_clients(self, launches, procs, killed, sdir: Path, limit: float,
                      cut: bool = False) -> tuple[dict, dict]:
        """Every client's result (rank -> result), and why the others have none.
        cut: the clients were stopped; their results keep only the windows
        they measured in full (result.full_windows; an older engine: none)."""
        errors: dict[int, str] = {}
        node_of = {r: l.node for l in launches for r in l.ranks}
        for launch, p in zip(launches, procs):
            if p in killed:
                for r in launch.ranks:
                    errors[r] = f"clients on node {launch.node.index} did not finish within {limit:g} s"
        results, docs = {}, {}
        for r in sorted(node_of):
            if r in errors:
                continue
            try:
                docs[r] = json.loads((sdir / f"client-{r}.json").read_text())
            except (OSError, json.JSONDecodeError):
                logs = [(sdir / f"launch-{i}.log") for i in range(len(launches))]
                log = "; ".join(l.read_text().strip()[-400:] for l in logs if l.exists())
                errors[r] = f"client rank {r}: no result ({log or 'no output'})"
                continue
            why = _unusable(docs[r], cut)
            if why:
                errors[r] = f"client rank {r}: {why}"
                continue
            results[r] = docs[r]["result"] if not cut else _full_windows(docs[r])["result"]
        for r, why in nic_check.client_errors(self.r.cfg, launches, sdir).items():
            if errors.setdefault(r, why) == why:  # measured, but not on what was asked
                results.pop(r, None)
        if any("start barrier" in m for m in errors.values()):  # name whom it waited for
            never = [r for r in sorted(node_of)
                     if not ((docs.get(r) or {}).get("result") or {}).get("barrier", {}).get("ready_s")]
            who = ", ".join(f"rank {r} on node {node_of[r].index} ({node_of[r].host})" for r in never[:8])
            for r in errors:
                errors[r] += f" [start barrier: never ready: {who or 'unknown'}]"
        return results, errors


def server_reasons(gdir: Path) -> tuple[list[str], list[str]]:
    """What a group's servers said about why they stopped or failed, in the
    documents of those that exited (result.stop_reason) and on stderr (their
    launch logs): (lapsed leases, storage errors)."""
    lapsed, storage = [], []
    for doc in sorted(gdir.glob("server-*.json")):
        try:
            why = (json.loads(doc.read_text()).get("result") or {}).get("stop_reason") or ""
        except (OSError, ValueError, AttributeError):
            continue
        if why.startswith("lease file "):
            lapsed.append(why)
    for log in sorted(gdir.glob("launch-*.log")):
        try:
            lines = log.read_text(errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            said = line.split("rooftop-engine: ", 1)[-1].strip()
            if said.startswith("lease file "):
                lapsed.append(said)
            elif said.startswith("storage error: "):
                storage.append(said[len("storage error: "):])
    return list(dict.fromkeys(lapsed)), list(dict.fromkeys(storage))


def name_server_reasons(gdir: Path, errors: dict[int, str], lease_s: float) -> None:
    """Client errors that only see a symptom (no address file, storage_error)
    get the servers' own reason: a lapsed lease, or the storage call that
    failed (ENOSPC, its path)."""
    if not errors:
        return
    lapsed, storage = server_reasons(gdir)
    for r, why in errors.items():
        if lapsed:
            why = (f"lease lapsed: the servers stopped, as this campaign did not renew their lease for "
                   f"engine.lease = {lease_s:g} s (it was stopped, e.g. SIGSTOP, or starved of CPU); {why}")
        if storage and "storage_error" in why:
            why += f" [server: {'; '.join(storage[:3])}]"
        errors[r] = why


def _full_windows(doc: dict) -> dict:
    """A stopped client's document as if complete, keeping the windows it
    measured in full (result.full_windows)."""
    if (doc.get("result") or {}).get("samples") is None:
        return doc
    doc = dict(doc, complete=True, result=dict(doc["result"]))
    doc["result"]["samples"] = windows_of(doc["result"])[:doc["result"].get("full_windows", 0)]
    return doc


def _unusable(doc: dict, cut: bool) -> str:
    """Why a client document gives no result ('' when it does)."""
    if cut:
        doc = _full_windows(doc)
    if not doc.get("complete"):
        return "; ".join(doc.get("errors") or []) or "incomplete"
    res = doc["result"]
    if sum(x["work_ops"] for x in windows_of(res)) > res["ops"] + res["drained_ops"] + 1e-6:
        return "its windows credit more operations than it completed"
    return ""


class Runner:
    """Runs planned placements for one stored run: a server group per
    placement (Servers), its client rounds (RoundMeasurer, retried while
    invalid), each row stored at once (Rows)."""

    def __init__(self, cfg: dict, store, run_id: str, launcher: Launcher,
                 on_sample: Callable[[SampleSpec, dict], None] | None = None,
                 log: Callable[[str], None] | None = None,
                 on_window: Callable[[SampleSpec], None] | None = None):
        self.cfg = cfg
        self.store = store
        self.run_id = run_id
        self.launcher = launcher
        self.nodes: list[Node] = launcher.nodes()
        self.procs = Processes()
        self.on_sample = on_sample or (lambda spec, row: None)
        #: Called (from a follower thread) once every client of a round has
        #: measured the window of a spec, before its rows are stored.
        self.on_window = on_window or (lambda spec: None)
        self.log = log or (lambda msg: None)
        #: Notes already shown once (e.g. a sampler with nothing to measure here).
        self.said: set[str] = set()
        #: Lets its holder stop the servers: only ever in 0600 files (TOKEN_FILE).
        self.token = os.urandom(16).hex()
        self.run_dir = store.run_dir(run_id)
        self.leases = Leases(float(cfg["engine"].get("lease", 10.0)))
        self.commands = Commands(cfg, launcher, self.nodes, cfg["engine"]["path"] or engine_path(),
                                 self.leases.period)
        self.servers = Servers(self)
        self.rows = Rows(run_id, cfg, self.nodes)
        self.measurer = RoundMeasurer(self)

    def run_round(self, group: ServerGroup, rnd: ClientRound) -> list[dict]:
        """One client round: one row per window. A round with an invalid
        window (clients that did not measure together, an aggregate above a
        link) is measured again, up to engine.retries times; then its rows
        are stored as invalid."""
        tries = 1 + int(self.cfg["engine"].get("retries", 2))
        for attempt in range(1, tries + 1):
            try:
                measured = self.measurer.measure(group, rnd, attempt)
            except RoundInterrupted as stop:
                with _signals_deferred():  # a second Ctrl-C waits until they are stored
                    self._store(stop.measured)  # the windows measured before it: not lost
                raise
            bad = [row for _, row in measured if row["status"] == "invalid"]
            other = [row for row in bad if row["error"].startswith(emulation.OTHER)]
            if other and emulation.OTHER not in self.said:  # said once: every later round would repeat it
                self.said.add(emulation.OTHER)
                print(f"rooftop: warning: {other[0]['key']}: {other[0]['error']}; such samples are stored "
                      f"invalid", file=sys.stderr, flush=True)
            if not bad or attempt == tries or len(other) == len(bad):  # measuring again would not help
                break
            self.log(f"attempt {attempt} of {rnd.first.key} is invalid ({bad[0]['error']}): measuring again")
        return self._store(measured)

    def _store(self, measured: list[tuple[SampleSpec, dict]]) -> list[dict]:
        """Commits each row at once (and tells on_sample). A row the database
        does not take (locked past ROOFTOP_DB_WAIT, a full disk) stops the
        campaign naming every measured row not stored: the round's engine
        documents hold them, and rooftop doctor --recover brings them in."""
        from rooftop.store import StoreError

        rows, window_s = [], {}
        for i, (sp, row) in enumerate(measured):
            # Pairs measured at once share one window of run time.
            counted = window_s.get(sp.index, 0.0)
            try:
                self.store.add_sample(**row, run_time_s=max(0.0, row["measured_s"] - counted))
            except StoreError as e:
                left = [r for _, r in measured[i:] if r["status"] != "failed"]
                if not left:
                    raise
                where = sorted({r["raw_dir"] for r in left})
                raise StoreError(
                    f"{e}. {len(left)} measured sample(s) of run {self.run_id} are NOT in the database: "
                    f"{', '.join(r['key'] for r in left)}; their engine documents are kept in "
                    f"{', '.join(where)}: once the database can be written, "
                    f"'rooftop doctor --results {self.store.dir} --recover' brings them in "
                    f"(or 'rooftop collect --resume {self.run_id}' does, then measures the rest)") from None
            window_s[sp.index] = max(counted, row["measured_s"])
            self.on_sample(sp, row)
            rows.append(row)
        return rows

    def _recover(self) -> None:
        """Windows an earlier session measured but did not store (killed,
        the database locked or full): stored from their documents first,
        so a resumed campaign neither measures them again nor overwrites
        their documents (rooftop.doctor.recover_run)."""
        from rooftop import doctor

        if not (self.run_dir / "raw").is_dir():
            return
        rows = doctor.recover_run(self.store, self.run_id, self.cfg)
        if rows:
            msg = (f"{len(rows)} sample(s) an earlier session measured but did not store were recovered "
                   f"from its engine documents")
            self.log(msg)
            print(f"rooftop: {msg}", file=sys.stderr)

    def run_placements(self, placements: list[Placement], fail_fast: bool = False) -> tuple[int, int]:
        """Runs what is not yet stored; returns (ok, failed) sample counts."""
        left = stop_stale_groups(self.run_dir)  # a dead campaign's, on --resume
        if left:
            self.log(f"servers of an earlier campaign still publish in {', '.join(map(str, left))}")
        self._recover()
        done = self.store.done_keys(self.run_id)
        ok = failed = 0
        try:
            for placement in placements:
                todo = [s for s in placement.samples if not all(k in done for k in s.row_keys())]
                if todo:
                    n_ok, n_failed = self._run_placement(placement, todo, fail_fast)
                    ok, failed = ok + n_ok, failed + n_failed
        finally:
            self.procs.stop_all()
            self.leases.close()
        return ok, failed

    def _run_placement(self, placement: Placement, todo: list[SampleSpec],
                       fail_fast: bool) -> tuple[int, int]:
        ok = failed = 0
        try:
            group = self.servers.start(placement)
        except SampleFailed as e:
            # Every sample of the placement fails with the servers' reason.
            for spec in todo:
                for row in self.rows.failed(placement, spec, str(e)):
                    self.store.add_sample(**row)
                    self.on_sample(spec, row)
                    failed += 1
            self.procs.stop_all()
            if fail_fast:
                raise
            return ok, failed
        try:
            for rnd in client_rounds(todo):
                for row in self.run_round(group, rnd):
                    if row["status"] == "ok":
                        ok += 1
                    else:
                        failed += 1
                        if fail_fast:
                            raise SampleFailed(f"sample {row['key']} failed: {row['error']}")
        finally:
            self.servers.stop(group)
        return ok, failed

    def dry_run(self, placements: list[Placement]) -> list[str]:
        """The exact command lines of every placement and sample, not run."""
        lines = _pair_schedule(self.cfg, placements)
        gdir = self.run_dir / "groups" / "<group>"
        for pl in placements:
            lines.append(f"# servers on node(s) {pl.server_nodes}, {pl.servers_per_node} per node"
                         + (f", serving {', '.join(pl.metrics)}" if pl.tag else ""))
            lines += [shlex.join(l.argv) for l in self.commands.server_launches(pl, gdir)]
            for rnd in client_rounds(pl.samples):
                spec = rnd.first
                sdir = self.run_dir / "raw" / rnd.folder
                at_once = ("; pairs measured at once: " + ", ".join(f"n{a}-n{b}" for a, b in spec.pairs)
                           if spec.pairs and len(spec.pairs) > 1 else
                           f"; pair n{spec.pairs[0][0]}-n{spec.pairs[0][1]} alone" if spec.pairs else "")
                lines.append(f"# {spec.stage} {spec.metric}: clients on node(s) {spec.client_nodes}, "
                             f"{len(rnd.specs)} sample(s) in one round{at_once}")
                nclients = len(spec.client_nodes) * spec.clients_per_node
                at = f"<launch time + {self.cfg['engine']['start_lead']:g} + {spec.warmup:g}>"
                start = self.commands.start_args(spec, nclients, barrier_id=0, measure_at=at)
                if "--barrier-id" in start:
                    start[start.index("--barrier-id") + 1] = "<random>"
                lines += [shlex.join(l.argv) for l in
                          self.commands.client_launches(pl, spec, gdir, sdir, len(rnd.specs), start)]
            lines.append(f"# then: rooftop-engine shutdown --token-file {shlex.quote(str(gdir / TOKEN_FILE))}"
                         " for each server")
        return lines
