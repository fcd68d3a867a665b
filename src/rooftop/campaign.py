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
"""

from __future__ import annotations

import json
import os
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

from rooftop.config import parse_size
from rooftop.engine import EngineError, engine_path, run_engine
from rooftop.launchers import Launch, Launcher, Node

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

    def row_keys(self) -> list[str]:
        """The store keys this spec produces: its own, or one per pair."""
        if self.pairs is None:
            return [self.key]
        return [_key(self.stage, self.metric, [a], 1, [b], 1, self.sample) for a, b in self.pairs]


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


def plan_collect(cfg: dict) -> list[Group]:
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


def reap(procs: list[subprocess.Popen], timeout: float) -> list[subprocess.Popen]:
    """Waits for procs until timeout, then kills what is left (its whole
    process group); returns the processes that had to be killed."""
    deadline = time.monotonic() + timeout
    killed = []
    for p in procs:
        try:
            p.wait(timeout=max(0.05, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
            killed.append(p)
    return killed


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
        live = [p for p in self.procs if p.poll() is None]
        for p in live:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        reap(live, grace)
        self.forget_finished()

    def forget_finished(self) -> None:
        self.procs = [p for p in self.procs if p.poll() is None]


class SampleFailed(RuntimeError):
    pass


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
        self.token = os.urandom(16).hex()
        self.run_dir = store.run_dir(run_id)

    # command lines -------------------------------------------------------
    def _fabric_args(self) -> list[str]:
        args = ["--fabric", self.cfg["fabric"]["provider"]]
        if self.cfg["fabric"]["domain"]:
            args += ["--domain", self.cfg["fabric"]["domain"]]
        return args

    def server_launches(self, group: Group, gdir: Path) -> list[Launch]:
        bw = self.cfg["bw"]
        max_size = max(parse_size(bw["size"], "bw.size"), 1 << 20)
        launches, rank = [], 0
        for idx in group.server_nodes:
            node = self.nodes[idx]
            argv = [self.engine, "serve", *self._fabric_args(), "--group-dir", str(gdir),
                    "--token", self.token, "--progress", self.cfg["engine"]["server_progress"],
                    "--max-size", str(max_size), "--output", str(gdir / "server-{rank}.json")]
            if node.address:
                argv += ["--address", node.address]
            launches += self.launcher.launches(node, argv, group.servers_per_node,
                                               self.cfg["binding"], rank)
            rank += group.servers_per_node
        return launches

    def client_launches(self, group: Group, spec: SampleSpec, gdir: Path, sdir: Path,
                        windows: int = 1, measure_at: str | None = None) -> list[Launch]:
        """measure_at: when every client starts measuring (epoch seconds);
        by default the launch time + start lead + warmup."""
        if measure_at is None:
            measure_at = f"{time.time() + self.cfg['engine']['start_lead'] + spec.warmup:.3f}"
        nservers = len(group.server_nodes) * group.servers_per_node
        e = self.cfg["engine"]
        launches, rank = [], 0
        for idx in spec.client_nodes:
            node = self.nodes[idx]
            argv = [self.engine, "load", *self._fabric_args(), "--group-dir", str(gdir),
                    "--nservers", str(nservers), "--duration", str(spec.duration),
                    "--samples", str(windows),
                    "--measure-at", measure_at, "--progress", e["client_progress"],
                    "--timeout", str(e["timeout"]), "--output", str(sdir / "client-{rank}.json")]
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
        gdir = self.run_dir / "groups" / f"{group.label}-{time.strftime('%H%M%S')}-{os.getpid()}"
        gdir.mkdir(parents=True, exist_ok=True)
        launches = self.server_launches(group, gdir)
        procs = []
        for i, launch in enumerate(launches):
            self.log("start: " + shlex.join(launch.argv))
            procs.append(self.procs.start(launch, gdir / f"launch-{i}.log"))
        nservers = len(group.server_nodes) * group.servers_per_node
        self._wait_ready(gdir, launches, procs, nservers)
        return gdir, procs, nservers

    def _wait_ready(self, gdir: Path, launches, procs, nservers: int) -> None:
        timeout = self.cfg["engine"]["timeout"] + 10
        deadline = time.monotonic() + timeout
        missing = set(range(nservers))
        while missing:
            missing = {r for r in missing if not (gdir / f"{r}.addr").exists()}
            if not missing:
                break
            for launch, p in zip(launches, procs):
                if p.poll() is not None and set(launch.ranks) & missing:
                    log = (gdir / f"launch-{launches.index(launch)}.log")
                    text = log.read_text().strip()[-800:] if log.exists() else ""
                    raise SampleFailed(f"server rank(s) {sorted(set(launch.ranks) & missing)} on node "
                                       f"{launch.node.index} ({launch.node.host}) exited with code "
                                       f"{p.returncode} before becoming ready: {text}")
            if time.monotonic() > deadline:
                where = ", ".join(f"rank {r}" for r in sorted(missing)[:8])
                raise SampleFailed(f"servers not ready within {timeout:g} s: {where} published no "
                                   f"address in {gdir}")
            time.sleep(0.005)

        def ping(rank: int):
            try:
                run_engine(["ping", *self._fabric_args(), "--group-dir", str(gdir), "--rank", str(rank),
                            "--count", "1", "--timeout", str(self.cfg["engine"]["timeout"])],
                           timeout=self.cfg["engine"]["timeout"] + 15)
            except EngineError as e:
                raise SampleFailed(f"server rank {rank} published its address but does not answer: {e}")

        with ThreadPoolExecutor(max_workers=min(8, nservers)) as pool:
            list(pool.map(ping, range(nservers)))

    def stop_servers(self, gdir: Path, procs: list[subprocess.Popen], nservers: int) -> None:
        def shutdown(rank: int):
            try:
                run_engine(["shutdown", *self._fabric_args(), "--group-dir", str(gdir), "--rank",
                            str(rank), "--token", self.token, "--timeout", "5"], timeout=20)
            except EngineError:
                pass  # killed below if it does not stop

        live = [r for r in range(nservers) if (gdir / f"{r}.addr").exists()]
        if live:
            with ThreadPoolExecutor(max_workers=min(8, len(live))) as pool:
                list(pool.map(shutdown, live))
        reap(procs, 10)
        self.procs.forget_finished()

    # samples ---------------------------------------------------------------
    def run_round(self, group: Group, specs: list[SampleSpec], gdir: Path, nservers: int) -> list[dict]:
        """One set of client processes measuring len(specs) consecutive
        windows (engine --samples) after one warmup: one row per window."""
        spec = specs[0]
        sdir = self.run_dir / "raw" / spec.key.rsplit("/", 1)[0].replace("/", "_")
        sdir.mkdir(parents=True, exist_ok=True)
        for old in sdir.glob("client-*.json"):
            old.unlink()
        # Which window is which sample ('rooftop doctor' rebuilds rows from it).
        (sdir / "round.json").write_text(json.dumps({"keys": [sp.row_keys() for sp in specs]}))
        launches = self.client_launches(group, spec, gdir, sdir, len(specs))
        nclients = sum(len(l.ranks) for l in launches)
        procs = []
        for i, launch in enumerate(launches):
            self.log("start: " + shlex.join(launch.argv))
            procs.append(self.procs.start(launch, sdir / f"launch-{i}.log"))
        limit = (spec.duration * len(specs) + spec.warmup + self.cfg["engine"]["start_lead"]
                 + self.cfg["engine"]["timeout"] + 30)
        killed = reap(procs, limit)
        # Per client rank: its windows, or why it has none.
        rank_error: dict[int, str] = {}
        for launch, p in zip(launches, procs):
            if p in killed:
                for r in launch.ranks:
                    rank_error[r] = f"clients on node {launch.node.index} did not finish within {limit:g} s"
        self.procs.forget_finished()
        windows: dict[int, list[dict]] = {}
        late: dict[int, float] = {}  # how late each client started measuring
        for r in range(nclients):
            if r in rank_error:
                continue
            f = sdir / f"client-{r}.json"
            try:
                doc = json.loads(f.read_text())
            except (OSError, json.JSONDecodeError):
                logs = [(sdir / f"launch-{i}.log") for i in range(len(launches))]
                log = "; ".join(l.read_text().strip()[-400:] for l in logs if l.exists())
                rank_error[r] = f"client rank {r}: no result ({log or 'no output'})"
                continue
            if not doc.get("complete"):
                rank_error[r] = f"client rank {r}: " + ("; ".join(doc.get("errors") or []) or "incomplete")
                continue
            windows[r] = doc["result"]["samples"]
            late[r] = float(doc["result"].get("measure_at_late_s") or 0.0)
        key = "ops_per_sec" if spec.metric == "rpc" else "bytes_per_sec"
        rows = []
        for w, sp in enumerate(specs):
            base = dict(run_id=self.run_id, stage=sp.stage, metric=sp.metric, unit=UNITS[sp.metric],
                        sample=sp.sample, raw_dir=str(sdir), measured_s=0.0)
            if sp.pairs is None:
                parts = [(sp.key, group.server_nodes, sp.client_nodes, nservers, list(range(nclients)))]
            else:  # one row per pair: client rank j loaded server rank j
                parts = [(k, [a], [b], 1, [j]) for j, ((a, b), k) in enumerate(zip(sp.pairs, sp.row_keys()))]
            window_s = 0.0
            for rkey, snodes, cnodes, ns, ranks in parts:
                row = dict(base, key=rkey, server_nodes=snodes, client_nodes=cnodes, server_procs=ns,
                           client_procs=len(ranks), x=ns / len(ranks),
                           late_s=max((late.get(r, 0.0) for r in ranks), default=0.0))
                errs = [rank_error[r] for r in ranks if r in rank_error]
                short = [r for r in ranks if r not in rank_error and len(windows[r]) <= w]
                if errs or short:
                    row.update(status="failed", aggregate=None, per_server=None, per_client=None,
                               error=" | ".join(errs[:5]) or f"client rank {short[0]} reported fewer "
                                                             f"windows than asked")
                else:
                    agg = sum(windows[r][w][key] for r in ranks)
                    row.update(status="ok", aggregate=agg, per_server=agg / ns,
                               per_client=agg / len(ranks), error="",
                               measured_s=sum(windows[r][w]["elapsed_s"] for r in ranks) / len(ranks))
                # Pairs measured at once share one window of run time.
                self.store.add_sample(**row, run_time_s=max(0.0, row["measured_s"] - window_s))
                window_s = max(window_s, row["measured_s"])
                self.on_sample(sp, row)
                rows.append(row)
        return rows

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
        return ok, failed

    def dry_run(self, groups: list[Group]) -> list[str]:
        """The exact command lines of every group and sample, not run."""
        lines = []
        real_token, self.token = self.token, "<token>"  # printed commands carry no secret
        gdir = self.run_dir / "groups" / "<group>"
        for group in groups:
            lines.append(f"# servers on node(s) {group.server_nodes}, {group.servers_per_node} per node")
            lines += [shlex.join(l.argv) for l in self.server_launches(group, gdir)]
            for specs in self.rounds(group.samples):
                spec = specs[0]
                sdir = self.run_dir / "raw" / spec.key.rsplit("/", 1)[0].replace("/", "_")
                lines.append(f"# {spec.stage} {spec.metric}: clients on node(s) {spec.client_nodes}, "
                             f"{len(specs)} sample(s) in one round")
                at = f"<launch time + {self.cfg['engine']['start_lead']:g} + {spec.warmup:g}>"
                lines += [shlex.join(l.argv)
                          for l in self.client_launches(group, spec, gdir, sdir, len(specs), at)]
            lines.append("# then: rooftop-engine shutdown --token <token> for each server")
        self.token = real_token
        return lines
