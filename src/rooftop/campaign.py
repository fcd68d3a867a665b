"""Campaigns: the roofline parameter suite (collect) and validation samples.

A campaign is planned as *groups*: a set of server processes started once,
then every sample that uses them (client rounds). Servers are ready when
their address files exist and each answers a ping -- no sleeps. Every
sample is stored the moment it is measured; every process started is
stopped on any exit, Ctrl-C included.

Stages (seed 000, sections 4.3 and 5):
  server_peak    one node runs S servers, every other node runs C clients;
                 per-server-process rate = aggregate / S
  client_peak    one client process against one idle server process on
                 another node, for every unordered node pair
  client_node    the last node full of client processes against the servers
                 of every other node: the node-saturated client ceiling
                 (seed 000, section 5.2: a lone client outruns a busy node)
  sweep_servers  one server node's aggregate as S grows 1..max
  validate       server nodes x client nodes grid; x = S / C

Ceiling stages that would run the identical placement are measured once
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
import time
from contextlib import contextmanager
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from rooftop import foreign, limits, nic_check, windows
from rooftop.config import parse_size
from rooftop.engine import (TOKEN_FILE, EngineError, NotReady, engine_path, private_dir, reap,
                            run_engine, terminate, wait_published, write_private, write_token)
from rooftop.launchers import Launch, Launcher, Node, on_this_machine

UNITS = {"rpc": "ops/s", "bw": "bytes/s"}


@dataclass
class SampleSpec:
    key: str
    stage: str
    metric: str
    client_nodes: list[int]
    clients_per_node: int
    sample: int
    duration: float
    warmup: float
    #: Pair rounds: (server node, client node) measured at once, one row each.
    pairs: list[tuple[int, int]] | None = None
    #: Other stages this measurement stands for (the same placement).
    also: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """The stages it stands for, as its keys name them: 'server_peak+client_peak'."""
        return "+".join((self.stage, *self.also))

    def row_keys(self) -> list[str]:
        """The store keys this spec produces: its own, or one per pair."""
        if self.pairs is None:
            return [self.key]
        return [_key(self.label, self.metric, [a], 1, [b], 1, self.sample) for a, b in self.pairs]


def round_robin(n: int) -> list[list[tuple[int, int]]]:
    """Round-robin tournament (circle method) over nodes 0..n-1: n-1 rounds
    (n odd: n rounds, one node resting) of disjoint pairs covering every
    unordered pair once. Pairs are (lower, higher)."""
    nodes = list(range(n)) + ([None] if n % 2 else [])
    m = len(nodes)
    rounds = []
    for _ in range(m - 1):
        pairs = []
        for i in range(m // 2):
            a, b = nodes[i], nodes[m - 1 - i]
            if a is not None and b is not None:
                pairs.append((min(a, b), max(a, b)))
        rounds.append(sorted(pairs))
        nodes = [nodes[0], nodes[-1], *nodes[1:-1]]
    return rounds


@dataclass
class Group:
    """Servers started once for several samples."""

    server_nodes: list[int]
    servers_per_node: int
    samples: list[SampleSpec] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"s{'-'.join(map(str, self.server_nodes))}x{self.servers_per_node}"


def _key(stage, metric, server_nodes, spn, client_nodes, cpn, i) -> str:
    s = "-".join(map(str, server_nodes))
    c = "-".join(map(str, client_nodes))
    return f"{stage}/{metric}/s{s}x{spn}/c{c}x{cpn}/{i}"


def _placement(group: Group, spec: SampleSpec) -> tuple | None:
    """What a sample runs, as far as the measurement goes: (metric, sample,
    server nodes, servers per node, client nodes, clients per node, duration,
    warmup); None for pair rounds of several pairs (no other stage runs them)."""
    if spec.pairs is not None and len(spec.pairs) != 1:
        return None
    return (spec.metric, spec.sample, tuple(group.server_nodes), group.servers_per_node,
            tuple(spec.client_nodes), spec.clients_per_node, spec.duration, spec.warmup)


SHARED_STAGES = ("server_peak", "client_peak", "client_node")


def measure_once(groups: list[Group]) -> list[Group]:
    """Ceiling stages that would run the identical placement (2 nodes: one
    server and one client process for all three) are measured once: the
    first planned spec stands for the others (SampleSpec.also, named in its
    keys), the others are dropped, and so are groups left empty."""
    first: dict[tuple, SampleSpec] = {}
    for g in groups:
        keep = []
        for spec in g.samples:
            where = _placement(g, spec) if spec.stage in SHARED_STAGES else None
            if where is None or where not in first:
                if where is not None:
                    first[where] = spec
                keep.append(spec)
                continue
            kept = first[where]
            kept.also += (spec.stage,)
            _, i, snodes, spn, cnodes, cpn, _, _ = where
            kept.key = _key(kept.label, kept.metric, list(snodes), spn, list(cnodes), cpn, i)
        g.samples = keep
    return [g for g in groups if g.samples]


def plan_collect(cfg: dict) -> list[Group]:
    return measure_once(_plan_stages(cfg))


def _plan_stages(cfg: dict) -> list[Group]:
    c = cfg["collect"]
    n = len(cfg["nodes"])
    groups: list[Group] = []
    others = list(range(1, n))
    if c["server_peak"]:
        g = Group([0], c["servers_per_node"])
        for m in cfg["metrics"]:
            for i in range(c["samples"]):
                g.samples.append(SampleSpec(_key("server_peak", m, [0], g.servers_per_node, others,
                                                 c["clients_per_node"], i), "server_peak", m,
                                            others, c["clients_per_node"], i, c["duration"],
                                            c["warmup"]))
        groups.append(g)
    if c["client_peak"] and c["pairs"] == "rounds":
        # Disjoint pairs measured at once: one server on each pair's first
        # node, one client on its second, client i loading server i.
        for pairs in round_robin(n):
            g = Group([a for a, _ in pairs], 1)
            for m in cfg["metrics"]:
                for i in range(c["samples"]):
                    key = _key("client_peak", m, g.server_nodes, 1, [b for _, b in pairs], 1, i)
                    g.samples.append(SampleSpec(key, "client_peak", m, [b for _, b in pairs], 1, i,
                                                c["duration"], c["warmup"], pairs=pairs))
            groups.append(g)
    elif c["client_peak"]:
        for a in range(n - 1):
            g = Group([a], 1)
            for b in range(a + 1, n):
                for m in cfg["metrics"]:
                    for i in range(c["samples"]):
                        g.samples.append(SampleSpec(_key("client_peak", m, [a], 1, [b], 1, i),
                                                    "client_peak", m, [b], 1, i, c["duration"],
                                                    c["warmup"]))
            groups.append(g)
    if c["client_node"]:
        # The last node full of clients against every other node's servers:
        # what one client process gets when its whole node is busy.
        servers, client = list(range(n - 1)), [n - 1]
        g = Group(servers, c["servers_per_node"])
        for m in cfg["metrics"]:
            for i in range(c["samples"]):
                g.samples.append(SampleSpec(_key("client_node", m, servers, g.servers_per_node, client,
                                                 c["clients_per_node"], i), "client_node", m,
                                            client, c["clients_per_node"], i, c["duration"],
                                            c["warmup"]))
        groups.append(g)
    if c["sweep_servers"]:
        for s in range(1, c["servers_per_node"] + 1):
            g = Group([0], s)
            for m in cfg["metrics"]:
                for i in range(c["samples"]):
                    g.samples.append(SampleSpec(_key("sweep_servers", m, [0], s, others,
                                                     c["clients_per_node"], i), "sweep_servers", m,
                                                others, c["clients_per_node"], i, c["duration"],
                                                c["warmup"]))
            groups.append(g)
    return groups


def plan_validate(cfg: dict) -> list[Group]:
    v = cfg["validate"]
    n = len(cfg["nodes"])
    groups = []
    for s in v["server_nodes"]:
        g = Group(list(range(s)), v["servers_per_node"])
        counts = v["client_nodes"] or list(range(1, n - s + 1))
        for c in counts:
            if s + c > n:
                continue
            clients = list(range(s, s + c))
            for m in cfg["metrics"]:
                for i in range(v["samples"]):
                    g.samples.append(SampleSpec(_key("validate", m, g.server_nodes, g.servers_per_node,
                                                     clients, v["clients_per_node"], i), "validate",
                                                m, clients, v["clients_per_node"], i, v["duration"],
                                                v["warmup"]))
        if g.samples:
            groups.append(g)
    return groups


@contextmanager
def _signals_deferred():
    """SIGINT/SIGTERM received inside the block take effect when it ends
    (main thread only: elsewhere Python delivers no signals anyway)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []
    sigs = (signal.SIGINT, signal.SIGTERM)
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


LEASE_FILE = "lease"


class Leases:
    """Lease files (one per group folder) a thread rewrites every period/5
    s: engines started with --lease stop once theirs is removed or left
    unchanged for the period, so none outlives a killed campaign."""

    def __init__(self, period: float):
        self.period = period
        self.paths: set[Path] = set()
        self._n = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, gdir: Path) -> Path:
        path = gdir / LEASE_FILE
        with self._lock:
            self.paths.add(path)
            self._renew(path)
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="rooftop-lease", daemon=True)
            self._thread.start()
        return path

    def drop(self, gdir: Path) -> None:
        with self._lock:
            self.paths.discard(gdir / LEASE_FILE)
        (gdir / LEASE_FILE).unlink(missing_ok=True)

    def _renew(self, path: Path) -> None:
        self._n += 1
        tmp = path.with_name(LEASE_FILE + ".new")
        write_private(tmp, f"{os.getpid()} {self._n}\n")  # group files are 0600
        os.replace(tmp, path)  # readers see the old or the new content, never none

    def _run(self) -> None:
        while not self._stop.wait(self.period / 5):
            with self._lock:
                for path in list(self.paths):
                    try:
                        self._renew(path)
                    except OSError:
                        pass  # the next renewal tries again

    def close(self) -> None:
        self._stop.set()


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


class Runner:
    """Runs planned groups for one stored run."""

    def __init__(self, cfg: dict, store, run_id: str, launcher: Launcher,
                 on_sample: Callable[[SampleSpec, dict], None] | None = None,
                 log: Callable[[str], None] | None = None):
        self.cfg = cfg
        self.store = store
        self.run_id = run_id
        self.launcher = launcher
        self.nodes: list[Node] = launcher.nodes()
        self.procs = Processes()
        self.on_sample = on_sample or (lambda spec, row: None)
        self.log = log or (lambda msg: None)
        self.engine = cfg["engine"]["path"] or engine_path()
        #: Lets its holder stop the servers: only ever in 0600 files (TOKEN_FILE).
        self.token = os.urandom(16).hex()
        self.run_dir = store.run_dir(run_id)
        self.leases = Leases(float(cfg["engine"].get("lease", 10.0)))

    # command lines -------------------------------------------------------
    def _fabric_args(self) -> list[str]:
        args = ["--fabric", self.cfg["fabric"]["provider"]]
        if self.cfg["fabric"]["domain"]:
            args += ["--domain", self.cfg["fabric"]["domain"]]
        return args

    def _lease_args(self, gdir: Path) -> list[str]:
        return ["--lease", str(gdir / LEASE_FILE), "--lease-timeout", str(self.leases.period)]

    def server_launches(self, group: Group, gdir: Path) -> list[Launch]:
        bw = self.cfg["bw"]
        max_size = max(parse_size(bw["size"], "bw.size"), 1 << 20)
        launches, rank = [], 0
        for idx in group.server_nodes:
            node = self.nodes[idx]
            argv = [self.engine, "serve", *self._fabric_args(), "--group-dir", str(gdir),
                    "--token-file", str(gdir / TOKEN_FILE),
                    "--progress", self.cfg["engine"]["server_progress"],
                    "--max-size", str(max_size), *self._lease_args(gdir),
                    "--output", str(gdir / "server-{rank}.json")]
            if node.address:
                argv += ["--address", node.address]
            launches += self.launcher.launches(node, argv, group.servers_per_node,
                                               self.cfg["binding"], rank)
            rank += group.servers_per_node
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

    def client_launches(self, group: Group, spec: SampleSpec, gdir: Path, sdir: Path,
                        nwindows: int = 1, start: list[str] | None = None) -> list[Launch]:
        """start: the start options (default: start_args())."""
        nservers = len(group.server_nodes) * group.servers_per_node
        if start is None:
            start = self.start_args(spec, len(spec.client_nodes) * spec.clients_per_node)
        e = self.cfg["engine"]
        launches, rank = [], 0
        for idx in spec.client_nodes:
            node = self.nodes[idx]
            argv = [self.engine, "load", *self._fabric_args(), "--group-dir", str(gdir),
                    "--nservers", str(nservers), "--duration", str(spec.duration),
                    "--samples", str(nwindows), *start, "--slices", str(e.get("slices", 20)),
                    "--progress", e["client_progress"],
                    "--timeout", str(e["timeout"]), *self._lease_args(gdir),
                    "--output", str(sdir / "client-{rank}.json")]
            if spec.metric == "rpc":
                argv += ["--op", "noop"]
            else:
                bw = self.cfg["bw"]
                argv += ["--op", bw["op"], "--size", str(bw["size"]), "--buffer", bw["buffer"],
                         "--stream-size", str(bw["stream_size"])]
            launches += self.launcher.launches(node, argv, spec.clients_per_node,
                                               self.cfg["binding"], rank)
            rank += spec.clients_per_node
        return launches

    # servers ---------------------------------------------------------------
    def start_servers(self, group: Group) -> tuple[Path, list[subprocess.Popen], int]:
        # Private (0700 directories, 0600 files): another user of a shared
        # file system can neither read the token nor find the servers.
        private_dir(self.run_dir / "groups")
        gdir = private_dir(self.run_dir / "groups" /
                           f"{group.label}-{time.strftime('%H%M%S')}-{os.getpid()}")
        write_token(gdir, self.token)
        self.leases.add(gdir)
        launches = self.server_launches(group, gdir)
        procs = []
        for i, launch in enumerate(launches):
            self.log("start: " + shlex.join(launch.argv))
            log = write_private(gdir / f"launch-{i}.log", "")
            procs.append(self.procs.start(launch, log))
        nservers = len(group.server_nodes) * group.servers_per_node
        self._wait_ready(gdir, launches, procs, nservers)
        return gdir, procs, nservers

    def _wait_ready(self, gdir: Path, launches, procs, nservers: int) -> None:
        started = [(p, launch.ranks, gdir / f"launch-{i}.log")
                   for i, (launch, p) in enumerate(zip(launches, procs))]
        try:
            wait_published(gdir, started, self.cfg["engine"]["timeout"] + 10)
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
        wrong_nic = nic_check.server_errors(self.cfg, gdir, launches)
        if wrong_nic:
            raise SampleFailed("; ".join(wrong_nic[:5]))

    def stop_servers(self, gdir: Path, procs: list[subprocess.Popen], nservers: int) -> None:
        def shutdown(rank: int):
            try:
                run_engine(["shutdown", *self._fabric_args(), "--group-dir", str(gdir), "--rank",
                            str(rank), "--token-file", str(gdir / TOKEN_FILE), "--timeout", "5"],
                           timeout=20)
            except EngineError:
                pass  # killed below if it does not stop

        live = [r for r in range(nservers) if (gdir / f"{r}.addr").exists()]
        if live:
            with ThreadPoolExecutor(max_workers=min(8, len(live))) as pool:
                list(pool.map(shutdown, live))
        reap(procs, 10)
        self.leases.drop(gdir)
        (gdir / TOKEN_FILE).unlink(missing_ok=True)  # no secret left on disk once they stopped
        self.procs.forget_finished()

    # samples ---------------------------------------------------------------
    def run_round(self, group: Group, specs: list[SampleSpec], gdir: Path, nservers: int) -> list[dict]:
        """One set of client processes measuring len(specs) consecutive
        windows (engine --samples) after one warmup: one row per window.
        A round with an invalid window (clients that did not measure
        together, an aggregate above a link) is measured again, up to
        engine.retries times; then its rows are stored as invalid."""
        tries = 1 + int(self.cfg["engine"].get("retries", 2))
        for attempt in range(1, tries + 1):
            try:
                measured = self._measure_round(group, specs, gdir, nservers, attempt)
            except RoundInterrupted as stop:
                with _signals_deferred():  # a second Ctrl-C waits until they are stored
                    self._store(stop.measured)  # the windows measured before it: not lost
                raise
            bad = [row for _, row in measured if row["status"] == "invalid"]
            if not bad or attempt == tries:
                break
            self.log(f"attempt {attempt} of {specs[0].key} is invalid ({bad[0]['error']}): measuring again")
        return self._store(measured)

    def _store(self, measured: list[tuple[SampleSpec, dict]]) -> list[dict]:
        """Commits each row at once (and tells on_sample)."""
        rows, window_s = [], {}
        for sp, row in measured:
            # Pairs measured at once share one window of run time.
            counted = window_s.get(sp.sample, 0.0)
            self.store.add_sample(**row, run_time_s=max(0.0, row["measured_s"] - counted))
            window_s[sp.sample] = max(counted, row["measured_s"])
            self.on_sample(sp, row)
            rows.append(row)
        return rows

    def _measure_round(self, group: Group, specs: list[SampleSpec], gdir: Path, nservers: int,
                       attempt: int) -> list[tuple[SampleSpec, dict]]:
        spec = specs[0]
        sdir = self.run_dir / "raw" / spec.key.rsplit("/", 1)[0].replace("/", "_")
        sdir.mkdir(parents=True, exist_ok=True)
        keep = sdir / f"attempt-{attempt - 1}"  # an invalid attempt's documents stay on record
        for old in sdir.glob("client-*.json"):
            if attempt > 1:
                keep.mkdir(exist_ok=True)
                old.rename(keep / old.name)
            else:
                old.unlink()
        # Which window is which sample ('rooftop doctor' rebuilds rows from it).
        (sdir / "round.json").write_text(json.dumps({"keys": [sp.row_keys() for sp in specs]}))
        launches = self.client_launches(group, spec, gdir, sdir, len(specs))
        load = foreign.meter(self, group, spec)  # CPU others use on these cores meanwhile
        procs = []
        for i, launch in enumerate(launches):
            self.log("start: " + shlex.join(launch.argv))
            procs.append(self.procs.start(launch, sdir / f"launch-{i}.log"))
        e = self.cfg["engine"]
        limit = (spec.duration * len(specs) + spec.warmup + e.get("settle", 0.0) + e["start_lead"]
                 + e.get("barrier_timeout", 60.0)
                 + 2 * e["timeout"] + 30)
        try:
            killed = reap(procs, limit, grace=e["timeout"] + 5)
        except KeyboardInterrupt:
            load.stop()
            raise RoundInterrupted(self._cut_round(group, specs, launches, procs, sdir, nservers,
                                                   attempt)) from None
        foreign_cpu = load.stop()
        self.procs.forget_finished()
        results, errors = self._read_clients(launches, procs, killed, sdir, limit)
        return self._rows(group, specs, launches, results, errors, sdir, nservers, attempt,
                          foreign_cpu=foreign_cpu)

    def _rows(self, group, specs, launches, results, errors, sdir, nservers, attempt,
              measured_only: bool = False, foreign_cpu: float | None = None) -> list[tuple[SampleSpec, dict]]:
        """One row per window (and pair). measured_only: only the rows of
        windows every client of the row measured in full."""
        same_clock = on_this_machine(self.launcher.name) or len({l.node.host for l in launches}) == 1
        starts = {r: res["measure_start_s"] for r, res in results.items()}
        offs = windows.offsets(starts, same_clock)
        out = []
        for w, sp in enumerate(specs):
            for part in self._parts(group, sp, nservers, sum(len(l.ranks) for l in launches)):
                if measured_only and not all(r in results and len(results[r]["samples"]) > w
                                             for r in part[4]):
                    continue
                row = self._row(sp, part, w, results, errors, offs, sdir)
                row["attempt"] = attempt
                row["foreign_cpu"] = foreign_cpu
                out.append((sp, row))
        return out

    def _cut_round(self, group, specs, launches, procs, sdir, nservers, attempt) -> list:
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
                self.procs.forget_finished()
                results, errors = self._read_clients(launches, procs, killed, sdir, 10, cut=True)
                rows = self._rows(group, specs, launches, results, errors, sdir, nservers, attempt,
                                  measured_only=True)
        except KeyboardInterrupt:
            pass  # a second Ctrl-C: the round is stopped anyway
        return rows

    @staticmethod
    def _parts(group: Group, sp: SampleSpec, nservers: int, nclients: int) -> list[tuple]:
        """(key, server nodes, client nodes, server processes, client ranks) of each row."""
        if sp.pairs is None:
            return [(sp.key, group.server_nodes, sp.client_nodes, nservers, list(range(nclients)))]
        # One row per pair: client rank j loaded server rank j.
        return [(k, [a], [b], 1, [j]) for j, ((a, b), k) in enumerate(zip(sp.pairs, sp.row_keys()))]

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
            doc = docs[r]
            if cut and (doc.get("result") or {}).get("samples") is not None:
                doc = dict(doc, complete=True, result=dict(doc["result"]))
                doc["result"]["samples"] = doc["result"]["samples"][:doc["result"].get("full_windows", 0)]
            if not doc.get("complete"):
                errors[r] = f"client rank {r}: " + ("; ".join(doc.get("errors") or []) or "incomplete")
                continue
            res = doc["result"]
            if sum(x["work_ops"] for x in res["samples"]) > res["ops"] + res["drained_ops"] + 1e-6:
                errors[r] = f"client rank {r}: its windows credit more operations than it completed"
                continue
            results[r] = res
        for r, why in nic_check.client_errors(self.cfg, launches, sdir).items():
            if errors.setdefault(r, why) == why:  # measured, but not on what was asked
                results.pop(r, None)
        if any("start barrier" in m for m in errors.values()):  # name whom it waited for
            never = [r for r in sorted(node_of)
                     if not ((docs.get(r) or {}).get("result") or {}).get("barrier", {}).get("ready_s")]
            who = ", ".join(f"rank {r} on node {node_of[r].index} ({node_of[r].host})" for r in never[:8])
            for r in errors:
                errors[r] += f" [start barrier: never ready: {who or 'unknown'}]"
        return results, errors

    def _row(self, sp: SampleSpec, part: tuple, w: int, results: dict, errors: dict, offs: dict,
             sdir: Path) -> dict:
        rkey, snodes, cnodes, ns, ranks = part
        row = dict(run_id=self.run_id, stage=sp.stage, metric=sp.metric, unit=UNITS[sp.metric],
                   sample=sp.sample, raw_dir=str(sdir), measured_s=0.0, key=rkey, server_nodes=snodes,
                   client_nodes=cnodes, server_procs=ns, client_procs=len(ranks), x=ns / len(ranks),
                   late_s=0.0, skew_s=0.0, overlap=0.0, barrier_s=0.0, aggregate=None, per_server=None,
                   per_client=None, error="")
        errs = [errors[r] for r in ranks if r in errors]
        short = [r for r in ranks if r not in errors and len(results[r]["samples"]) <= w]
        if errs or short:
            row.update(status="failed", error=" | ".join(errs[:5]) or
                       f"client rank {short[0]} reported fewer windows than asked")
            return row
        agg, c = windows.aggregate(results, ranks, w, offs, sp.metric)
        row.update(status="ok", aggregate=agg, per_server=agg / ns, per_client=agg / len(ranks),
                   measured_s=max(0.0, c.hi - c.lo), skew_s=c.skew_s, overlap=c.overlap,
                   late_s=max(float(results[r].get("measure_at_late_s") or 0.0) for r in ranks),
                   barrier_s=max(float(results[r].get("barrier", {}).get("wait_s") or 0.0) for r in ranks))
        row["error"] = self._invalid(sp, snodes, cnodes, agg, c)
        if row["error"]:
            row["status"] = "invalid"
        return row

    def _invalid(self, sp: SampleSpec, snodes, cnodes, agg: float, c) -> str:
        """Why a measured window cannot be used ('' when it can)."""
        need = float(self.cfg["engine"].get("min_overlap", 0.95))
        if c.overlap < need:
            return (f"clients measured together for {c.overlap:.0%} of the window (start skew "
                    f"{c.skew_s:.3f} s); engine.min_overlap asks {need:.0%}")
        if sp.metric == "bw":
            return limits.above_limit(agg, limits.link_limit(self.nodes, snodes, cnodes))
        return ""

    @staticmethod
    def rounds(specs: list[SampleSpec]) -> list[list[SampleSpec]]:
        """Consecutive samples of one measurement share a client round."""
        out: list[list[SampleSpec]] = []
        for sp in specs:
            k = (sp.stage, sp.metric, tuple(sp.client_nodes), sp.clients_per_node, sp.duration, sp.warmup)
            if out and (out[-1][0].stage, out[-1][0].metric, tuple(out[-1][0].client_nodes),
                        out[-1][0].clients_per_node, out[-1][0].duration, out[-1][0].warmup) == k:
                out[-1].append(sp)
            else:
                out.append([sp])
        return out

    def run_groups(self, groups: list[Group], fail_fast: bool = False) -> tuple[int, int]:
        """Runs what is not yet stored; returns (ok, failed) sample counts."""
        done = self.store.done_keys(self.run_id)
        ok = failed = 0
        left = stop_stale_groups(self.run_dir)  # a dead campaign's, on --resume
        if left:
            self.log(f"servers of an earlier campaign still publish in {', '.join(map(str, left))}")
        try:
            for group in groups:
                todo = [s for s in group.samples if not all(k in done for k in s.row_keys())]
                if not todo:
                    continue
                try:
                    gdir, procs, nservers = self.start_servers(group)
                except SampleFailed as e:
                    # Every sample of the group fails with the servers' reason.
                    for spec in todo:
                        if spec.pairs is None:
                            parts = [(spec.key, group.server_nodes, spec.client_nodes,
                                      len(group.server_nodes) * group.servers_per_node,
                                      len(spec.client_nodes) * spec.clients_per_node)]
                        else:
                            parts = [(k, [a], [b], 1, 1) for (a, b), k in zip(spec.pairs, spec.row_keys())]
                        for key, snodes, cnodes, ns, nc in parts:
                            row = dict(run_id=self.run_id, key=key, stage=spec.stage,
                                       metric=spec.metric, unit=UNITS[spec.metric],
                                       server_nodes=snodes, client_nodes=cnodes, server_procs=ns,
                                       client_procs=nc, x=0.0, sample=spec.sample, status="failed",
                                       aggregate=None, per_server=None, per_client=None,
                                       measured_s=0.0, error=str(e), raw_dir="")
                            self.store.add_sample(**row)
                            self.on_sample(spec, row)
                            failed += 1
                    self.procs.stop_all()
                    if fail_fast:
                        raise
                    continue
                try:
                    for specs in self.rounds(todo):
                        for row in self.run_round(group, specs, gdir, nservers):
                            if row["status"] == "ok":
                                ok += 1
                            else:
                                failed += 1
                                if fail_fast:
                                    raise SampleFailed(f"sample {row['key']} failed: {row['error']}")
                finally:
                    self.stop_servers(gdir, procs, nservers)
        finally:
            self.procs.stop_all()
            self.leases.close()
        return ok, failed

    def dry_run(self, groups: list[Group]) -> list[str]:
        """The exact command lines of every group and sample, not run."""
        lines = []
        gdir = self.run_dir / "groups" / "<group>"
        for group in groups:
            lines.append(f"# servers on node(s) {group.server_nodes}, {group.servers_per_node} per node")
            lines += [shlex.join(l.argv) for l in self.server_launches(group, gdir)]
            for specs in self.rounds(group.samples):
                spec = specs[0]
                sdir = self.run_dir / "raw" / spec.key.rsplit("/", 1)[0].replace("/", "_")
                lines.append(f"# {spec.stage} {spec.metric}: clients on node(s) {spec.client_nodes}, "
                             f"{len(specs)} sample(s) in one round")
                nclients = len(spec.client_nodes) * spec.clients_per_node
                at = f"<launch time + {self.cfg['engine']['start_lead']:g} + {spec.warmup:g}>"
                start = self.start_args(spec, nclients, barrier_id=0, measure_at=at)
                if "--barrier-id" in start:
                    start[start.index("--barrier-id") + 1] = "<random>"
                lines += [shlex.join(l.argv)
                          for l in self.client_launches(group, spec, gdir, sdir, len(specs), start)]
            lines.append(f"# then: rooftop-engine shutdown --token-file {shlex.quote(str(gdir / TOKEN_FILE))}"
                         " for each server")
        return lines
