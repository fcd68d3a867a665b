"""Measuring a service over a run's validation grid (rooftop service).

The grid is `rooftop validate`'s (stages.validate through campaign.plan:
server nodes x client nodes, processes per node and binding as the run's
config has them). Per server placement the servers are started once
through the run's launcher, each under the wrapper
(rooftop.service.barrier) holding the placement's lease, and waited for
with the spec's ready rule; then collect.windows windows (a sample each) per client
placement, each with its client processes started under the wrapper,
released together once all are at the barrier, and read back. A sample
whose clients shared less than engine.min_overlap of their time is
measured again (engine.retries), then stored invalid; a client that never
reaches the barrier makes it invalid too (named). Every command line and
output is kept under RUN/service/NAME/, with the resolved spec (spec.json):
rooftop doctor --rebuild reads the points again from them (service.recover).
"""

from __future__ import annotations

import copy
import glob
import json
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from rooftop import emulation
from rooftop.campaign.lifecycle import Hold
from rooftop.campaign.plan import plan_validate
from rooftop.campaign.processes import Processes
from rooftop.config import trust
from rooftop.config.resolve import resolve_grid
from rooftop.engine.base import LEASE_FILE
from rooftop.engine.leases import Leases
from rooftop.engine.reaping import terminate
from rooftop.keys import ConfigError
from rooftop.launchers import Launch, Node, make_launcher, on_this_machine
from rooftop.service import barrier, points, ready
from rooftop.service.rates import RateError, Window, final_rate, progress_rate, tail
from rooftop.service.spec import ServiceSpec, command, partly, seconds_text
from rooftop.units import fmt_pct

WRAPPER = [sys.executable, "-m", "rooftop.service.barrier"]
#: The resolved spec (ServiceSpec.resolved), kept in RUN/service/NAME/ beside
#: its points' folders: rooftop doctor --rebuild reads their points again with it.
SPEC_FILE = "spec.json"
#: Seconds the stop command of one server may take.
STOP_TIMEOUT = 10.0


@dataclass(frozen=True)
class Placement:
    """Servers on server_nodes (servers_per_node each), clients on
    client_nodes (clients_per_node each): one point per window."""

    server_nodes: tuple[int, ...]
    servers_per_node: int
    client_nodes: tuple[int, ...]
    clients_per_node: int

    @property
    def servers(self) -> int:
        return len(self.server_nodes) * self.servers_per_node

    @property
    def clients(self) -> int:
        return len(self.client_nodes) * self.clients_per_node

    @property
    def server_label(self) -> str:
        return f"s{'-'.join(map(str, self.server_nodes))}x{self.servers_per_node}"

    @property
    def client_label(self) -> str:
        return f"c{'-'.join(map(str, self.client_nodes))}x{self.clients_per_node}"

    def key(self, window: int) -> str:
        return f"{self.server_label}/{self.client_label}/{window}"


def grid(cfg: dict) -> list[Placement]:
    """The run's validation grid (as 'rooftop validate' plans it), one
    entry per server and client placement."""
    c = copy.deepcopy(cfg)
    c["metrics"] = c["metrics"][:1]
    c["validate"]["windows"] = 1
    resolve_grid(c)
    out = []
    for pl in plan_validate(c):
        for m in pl.measurements:
            out.append(
                Placement(tuple(pl.server_nodes), pl.servers_per_node, tuple(m.client_nodes), m.clients_per_node)
            )
    return out


def address(node: Node) -> str:
    """Where a node's servers serve: its address, else loopback on this machine, else its host name."""
    return node.address or ("127.0.0.1" if node.host == "localhost" else node.host)


class ServiceRun:
    def __init__(self, cfg: dict, store, run_id: str, spec: ServiceSpec, launcher, say=None):
        self.cfg, self.store, self.run_id, self.spec, self.launcher = cfg, store, run_id, spec, launcher
        # Absolute: an mpiexec or srun process does not start in this directory.
        self.folder = Path(store.run_dir(run_id)).absolute() / "service" / spec.name
        self.nodes = {n.index: n for n in launcher.nodes()}
        self.windows = int(cfg["collect"]["windows"])
        self.duration = float(cfg["collect"]["duration"])
        self.binding = cfg["binding"]
        self.lease_s = float(cfg["engine"]["lease"])
        self.leases = Leases(self.lease_s)
        self.procs = Processes()
        self.say = say or (lambda m: print(m, file=sys.stderr, flush=True))

    # command lines ---------------------------------------------------------

    def server_launches(self, pl: Placement, gdir: Path) -> list[Launch]:
        s = self.spec.server
        out, rank = [], 0
        for idx in pl.server_nodes:
            node = self.nodes[idx]
            argv = [
                *WRAPPER, "server",
                "--command", partly(s.command, {"node": idx, "address": address(node)}),
                "--base-port", str(s.base_port), "--address", address(node), "--dir-base", str(gdir),
                "--env", json.dumps(s.env), "--lease", str(gdir / LEASE_FILE), "--lease-timeout", str(self.lease_s),
            ]  # fmt: skip
            out += self.launcher.launches(node, argv, pl.servers_per_node, self.binding, rank)
            rank += pl.servers_per_node
        return out

    def client_launches(self, pl: Placement, gdir: Path, sdir: Path) -> list[Launch]:
        c = self.spec.client
        servers = ",".join(
            f"{address(self.nodes[idx])}:{self.spec.server.base_port + r}"
            for r, idx in enumerate(i for i in pl.server_nodes for _ in range(pl.servers_per_node))
        )
        cmd = partly(c.command, {"duration": seconds_text(self.duration), "count": pl.clients})
        argv = [
            *WRAPPER, "client", "--command", cmd, "--servers", servers, "--folder", str(sdir),
            "--release-timeout", str(c.start_timeout + 5.0), "--env", json.dumps(c.env),
            "--lease", str(gdir / LEASE_FILE), "--lease-timeout", str(self.lease_s),
        ]  # fmt: skip
        if c.stop_after_duration:
            argv += ["--stop-after", str(self.duration)]
        if self.spec.rate.progress:
            argv += ["--progress", self.spec.rate.progress]
        out, rank = [], 0
        for idx in pl.client_nodes:
            out += self.launcher.launches(self.nodes[idx], argv, pl.clients_per_node, self.binding, rank)
            rank += pl.clients_per_node
        return out

    def dry_run(self, placements: list[Placement]) -> list[str]:
        """The exact commands, placement by placement (nothing started)."""
        lines = [f"# service {self.spec.name} ({self.spec.metric}); ready: {self.spec.ready.rule()}"]
        for spl, pls in _by_servers(placements).items():
            gdir = self.folder / spl[0]
            lines.append(f"# servers {spl[0]}: {len(self.server_launches(pls[0], gdir))} launch(es)")
            lines += _with_commands(self.server_launches(pls[0], gdir))
            for pl in pls:
                sdir = gdir / f"{pl.client_label}-<window>"
                lines.append(
                    f"# clients {pl.client_label}: {self.windows} window(s) of {pl.clients} client(s) "
                    f"vs {pl.servers} server(s), {seconds_text(self.duration)} s each"
                )
                lines += _with_commands(self.client_launches(pl, gdir, sdir))
        return lines

    # measuring -------------------------------------------------------------

    def run(self, placements: list[Placement], done: set[str], on_point=None) -> list[points.ServicePoint]:
        """Measures every point not in done; each is stored at once."""
        stored = []
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / SPEC_FILE).write_text(json.dumps(self.spec.resolved(), indent=1, sort_keys=True))
        try:
            for spl, pls in _by_servers(placements).items():
                todo = [(pl, i) for pl in pls for i in range(self.windows) if pl.key(i) not in done]
                if todo:
                    stored += self._placement(pls[0], todo, self.folder / spl[0], on_point)
        finally:
            self.leases.close()
        return stored

    def _store(self, pl: Placement, i: int, status: str, agg, error: str, measured_s: float, detail: dict, on_point):
        # what the model's exclusion rule reads: nodes (sharing cores?) and --allow-concurrent
        detail = {**detail, "server_nodes": list(pl.server_nodes), "client_nodes": list(pl.client_nodes)}
        if self.store.marks.get("concurrent"):
            detail["concurrent"] = True
        p = points.ServicePoint(
            self.spec.name, self.spec.metric, self.spec.unit, pl.servers, pl.clients, i, status, agg,
            key=pl.key(i), error=error, measured_s=measured_s, detail=detail,
        )  # fmt: skip
        points.add(self.store, self.run_id, p)
        if on_point:
            on_point(p)
        return p

    def _placement(self, pl0: Placement, todo, gdir: Path, on_point) -> list[points.ServicePoint]:
        gdir.mkdir(parents=True, exist_ok=True)
        self.leases.add(gdir)
        launches = self.server_launches(pl0, gdir)
        servers: list[ready.ServerProc] = []
        out = []
        try:
            _write_commands(gdir / "servers.txt", launches)
            for k, lc in enumerate(launches):
                log = gdir / f"server-launch-{k}.log"
                proc = self.procs.start(lc, log)
                for r in lc.ranks:
                    port = self.spec.server.base_port + r
                    servers.append(
                        ready.ServerProc(r, lc.node.index, address(lc.node), port, gdir / f"server-{r}", proc, log)
                    )
            try:
                ready.wait(self.spec, servers, tail)
            except ready.NotReady as e:
                for pl, i in todo:
                    out.append(self._store(pl, i, "failed", None, str(e), 0.0, {"servers": pl.server_label}, on_point))
                return out
            for pl, i in todo:
                out.append(self._sample(pl, i, gdir, on_point))
        finally:
            self._stop_servers(servers, [p for p in self.procs.procs if p in {s.proc for s in servers}])
            self.leases.drop(gdir)
        return out

    def _stop_servers(self, servers: list[ready.ServerProc], procs) -> None:
        if self.spec.server.stop:
            for s in servers:
                if s.proc.poll() is None:
                    cmd = command(self.spec.server.stop, s.values())
                    try:
                        subprocess.run(cmd, capture_output=True, timeout=STOP_TIMEOUT)
                    except (OSError, subprocess.TimeoutExpired):
                        pass
        terminate(procs, 5.0)
        self.procs.forget_finished()
        for s in servers:  # only the files the spec keeps stay
            keep = {Path(p) for g in self.spec.server.keep for p in glob.glob(str(s.dir / g))}
            for f in sorted(s.dir.rglob("*"), reverse=True) if s.dir.exists() else []:
                if f.is_file() and f not in keep:
                    f.unlink(missing_ok=True)
                elif f.is_dir() and not any(f.iterdir()):
                    f.rmdir()

    def _sample(self, pl: Placement, i: int, gdir: Path, on_point) -> points.ServicePoint:
        tries = 1 + int(self.cfg["engine"]["retries"])
        need = float(self.cfg["engine"]["min_overlap"])
        for t in range(tries):
            sdir = gdir / f"{pl.client_label}-{i}" / f"try{t}"
            if sdir.exists():
                shutil.rmtree(sdir)
            sdir.mkdir(parents=True)
            status, agg, error, measured, detail = self._measure(pl, gdir, sdir, need)
            detail.update(folder=str(sdir.relative_to(self.folder)), tries=t + 1)
            if status != "invalid" or t == tries - 1:
                return self._store(pl, i, status, agg, error, measured, detail, on_point)
            self.say(f"{pl.key(i)}: {error}; measuring again ({t + 2} of {tries})")
        raise AssertionError("unreachable")

    def _measure(self, pl: Placement, gdir: Path, sdir: Path, need: float):
        launches = self.client_launches(pl, gdir, sdir)
        _write_commands(sdir / "commands.txt", launches)
        rank_node = {r: lc.node.index for lc in launches for r in lc.ranks}
        procs = [self.procs.start(lc, sdir / f"wrapper-{k}.log") for k, lc in enumerate(launches)]
        detail: dict = {"servers": pl.server_label, "clients": pl.client_label}
        try:
            missing = _wait_files(sdir, "ready-{}", rank_node, self.spec.client.start_timeout, procs)
            if missing:
                r = missing[0]
                why = (
                    f"client rank {r} on node {rank_node[r]} never reached the barrier within "
                    f"client.start_timeout = {self.spec.client.start_timeout:g} s"
                    + (f" ({len(missing)} clients missing)" if len(missing) > 1 else "")
                )
                return "invalid", None, why, 0.0, detail
            (sdir / "release").write_text(f"{time.time()}\n")
            ends = _wait_ends(procs, launches, self.duration + self.spec.client.end_grace)
            if ends is None:
                return (
                    "failed", None, f"clients still running {self.spec.client.end_grace:g} s (client.end_grace) "
                    f"after the {seconds_text(self.duration)} s duration: stopped", 0.0, detail,
                )  # fmt: skip
        finally:
            terminate(procs, 3.0)
            self.procs.forget_finished()
        return self._read(pl, sdir, rank_node, ends, procs, launches, need, detail)

    def _read(self, pl, sdir: Path, rank_node, ends, procs, launches, need, detail):
        return read_sample(
            self.spec,
            sdir,
            rank_node,
            need,
            detail,
            lambda r: next(ends[k] for k, lc in enumerate(launches) if r in lc.ranks),
            [(lc.ranks[0], p.returncode) for lc, p in zip(launches, procs)],
        )


def read_sample(spec: ServiceSpec, sdir: Path, rank_node: dict, need: float, detail: dict, ended, exits):
    """(status, aggregate, error, measured_s, detail) of one sample from
    what its clients left in sdir (start-R.json, end-R.json, client-R.out,
    progress-R.jsonl): as `rooftop service` reads it once its clients
    ended, and as rooftop doctor --rebuild reads it again. ended(r): when
    rank r's launch ended, for a rank without end-R.json (None: unknown);
    exits: (first rank, exit code) of each launch."""
    starts, end = {}, {}
    for r in rank_node:
        f = sdir / f"start-{r}.json"
        if not f.exists():
            return "failed", None, f"client rank {r}: released, but it never started; {tail(sdir / 'wrapper-0.log')}", 0.0, detail  # fmt: skip
        starts[r] = json.loads(f.read_text())["t"]
        e = sdir / f"end-{r}.json"
        end[r] = json.loads(e.read_text())["t"] if e.exists() else ended(r)
        if end[r] is None:
            return "failed", None, f"client rank {r}: no record of its end ({e.name})", 0.0, detail
    stopped = spec.client.stop_after_duration
    for r, code in exits:
        if code not in (0, None) and not (stopped and code in (130, -2)):
            return "failed", None, f"client rank {r} on node {rank_node[r]} exited with code {code}; last lines: {tail(sdir / f'client-{r}.out')}", 0.0, detail  # fmt: skip
    w = Window(starts, end)
    detail.update(skew_s=w.skew_s, overlap=w.overlap, shared_s=w.shared_s)
    progress = bool(spec.rate.progress)
    if progress and w.overlap < need:  # progress rates are read over the shared time
        return "invalid", None, _apart(w, need), w.shared_s, detail
    rates = {}
    for r in sorted(rank_node):
        out = sdir / f"client-{r}.out"
        try:
            raw = (
                progress_rate(spec, sdir / f"progress-{r}.jsonl", out, w.lo, w.hi)
                if progress
                else final_rate(spec, out)
            )
        except RateError as e:
            return "failed", None, f"client rank {r} on node {rank_node[r]}: {e}", w.shared_s, detail
        rates[r] = spec.to_metric(raw)
    if w.overlap < need:
        return "invalid", None, _apart(w, need), w.shared_s, detail
    detail["per_client_rates"] = [rates[r] for r in sorted(rates)]
    return "ok", sum(rates.values()), "", w.shared_s, detail


def _apart(w: Window, need: float) -> str:
    return (
        f"clients ran together for {fmt_pct(w.overlap)} of their time (start skew {w.skew_s:.3f} s); "
        f"engine.min_overlap asks {fmt_pct(need)}"
    )


def _by_servers(placements: list[Placement]) -> dict[tuple, list[Placement]]:
    out: dict[tuple, list[Placement]] = {}
    for pl in placements:
        out.setdefault((pl.server_label,), []).append(pl)
    return out


def _with_commands(launches: list[Launch]) -> list[str]:
    """Each launch's command line, then, per process it starts, the
    service's own command as the wrapper will run it (placeholders filled:
    the same functions the wrapper calls)."""
    lines = []
    for lc in launches:
        lines.append(shlex.join(lc.argv))
        at = lc.argv.index(WRAPPER[-1]) + 1
        a = barrier.parse(lc.argv[at:])
        for r in lc.ranks:
            a.rank = r
            argv = (barrier.server_command if a.role == "server" else barrier.client_command)(a, a.cpus or "")
            lines.append(f"#   {a.role} rank {r} on node {lc.node.index}: {shlex.join(argv)}")
    return lines


def _write_commands(path: Path, launches: list[Launch]) -> None:
    path.write_text("".join(f"node {lc.node.index} ranks {lc.ranks}: {shlex.join(lc.argv)}\n" for lc in launches))


def _wait_files(sdir: Path, pattern: str, ranks, timeout: float, procs) -> list[int]:
    """Ranks whose file has not appeared within timeout (or whose launch ended first)."""
    deadline = time.monotonic() + timeout
    while True:
        missing = [r for r in ranks if not (sdir / pattern.format(r)).exists()]
        if not missing or time.monotonic() > deadline or all(p.poll() is not None for p in procs):
            return missing
        time.sleep(0.005)


def _wait_ends(procs, launches, timeout: float) -> list[float] | None:
    """When each launch ended (time.time()); None if one was still running after timeout."""
    deadline = time.monotonic() + timeout
    ends: list[float | None] = [None] * len(procs)
    while any(e is None for e in ends):
        for k, p in enumerate(procs):
            if ends[k] is None and p.poll() is not None:
                ends[k] = time.time()
        if time.monotonic() > deadline and any(e is None for e in ends):
            return None
        time.sleep(0.005)
    return [e for e in ends if e is not None]


def prepare(store, run_id: str, spec: ServiceSpec, restated) -> tuple[dict, list[Placement], ServiceRun]:
    """(the run's config, its validation grid, the service's runner) for
    `rooftop service`: the config checked for reuse (rooftop.config.trust)
    before anything runs, --dry-run too."""
    run = store.get_run(run_id)
    cfg = json.loads(json.dumps(run.config))
    trust.check_reuse(store, run.id, cfg, restated, "service")
    return cfg, grid(cfg), ServiceRun(cfg, store, run.id, spec, make_launcher(cfg["launcher"]))


def measure(
    runner: ServiceRun, placements: list[Placement], programs, install: str, resume: bool, locks, on_point, say
) -> None:
    """Measures the runner's service over placements (prepare) as `rooftop
    service` does: its programs on PATH (install: the hint said when not),
    the emulation's preflight, refusing points already there without
    resume, then under locks(cfg) (the results folder's and the cores') and
    the run's lifecycle (campaign.lifecycle.Hold beside the run: claimed,
    its status kept) each point measured and stored, on_point(p) told of
    each (as it is stored), say(m) of the count to measure. A Ctrl-C
    propagates, the points measured stored."""
    cfg, store, run_id, spec = runner.cfg, runner.store, runner.run_id, runner.spec
    if on_this_machine(cfg["launcher"]["type"]):
        missing = [p for p in programs if shutil.which(p) is None]
        if missing:
            raise ConfigError(f"{spec.source}: {', '.join(missing)} not found on PATH{install}")
    emulation.preflight(cfg)
    done = points.done_keys(store, run_id, spec.name)
    if done and not resume:
        raise ConfigError(
            f"run {run_id} already has {len(done)} points of service {spec.name}: "
            f"--resume measures the others (or use another spec name)"
        )
    total = sum(1 for pl in placements for i in range(runner.windows) if pl.key(i) not in done)
    with locks(cfg) as held:
        held.name_run(run_id)
        with Hold(store, run_id, "service", beside=True):
            try:
                points.save_spec(store, run_id, spec.name, spec.metric, spec.resolved())
                say(f"service {spec.name}: {total} point(s) to measure on run {run_id}")
                runner.run(placements, done, on_point)
            finally:
                runner.procs.stop_all(3.0)
