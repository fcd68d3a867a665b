"""A campaign's server groups: which metrics one group of servers can serve
(their arguments merged), a group's lifecycle in a campaign (Servers:
start through the campaign's launcher and leases, wait until ready, stop),
the groups a dead campaign left, and the servers' own reasons. The engine
servers themselves (started, waited for, stopped): rooftop.engine.servers."""

from __future__ import annotations

import os
import shlex
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from rooftop import metrics
from rooftop.campaign.commands import Commands, merge_server_args
from rooftop.campaign.processes import Processes, SampleFailed
from rooftop.engine import enginedoc
from rooftop.engine.agents import AGENTS_DIR
from rooftop.engine.base import LEASE_FILE, TOKEN_FILE, EngineError, private_dir, write_private, write_token
from rooftop.engine.commands import run_engine
from rooftop.engine.leases import Leases
from rooftop.engine.reaping import reap
from rooftop.engine.servers import NotReady, wait_published
from rooftop.nics import check as nic_check
from rooftop.stages import Placement


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


def stop_stale_groups(run_dir: Path, wait: float = 5.0) -> list[Path]:
    """Servers (and clients) of a campaign that died, and its node agents:
    their lease files are removed, so they stop at their next check (0.2
    s); waits until their address files are withdrawn (and the agents'
    ready files). Returns the group folders still holding one."""
    stale = [p.parent for p in (run_dir / "groups").glob(f"*/{LEASE_FILE}")]
    agents = [p.parent for p in (run_dir / AGENTS_DIR).glob(f"*/{LEASE_FILE}")]
    for folder in stale + agents:
        (folder / LEASE_FILE).unlink(missing_ok=True)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and (
        any(any(g.glob("*.addr")) for g in stale) or any(any(a.glob("node-*/ready")) for a in agents)
    ):
        time.sleep(0.05)
    if stale:  # its clients too (connecting or at a barrier: the engine's lease watchdog, 1.2 s)
        time.sleep(1.5)
    return [g for g in stale if any(g.glob("*.addr"))]


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


class Servers:
    """The server-group lifecycle: start a placement's servers, wait until
    each is ready, stop them (shutdown RPC, then kill what is left).

    cfg: the run's config; run_dir: its folder (groups/ under it);
    commands: the campaign's command lines; procs: its live processes;
    leases: the leases its processes hold; token: what stops its servers
    (only ever in 0600 files); log: the progress log."""

    def __init__(
        self,
        cfg: dict,
        run_dir: Path,
        commands: Commands,
        procs: Processes,
        leases: Leases,
        token: str,
        log: Callable[[str], None],
    ):
        self.cfg, self.run_dir, self.commands, self.procs = cfg, run_dir, commands, procs
        self.leases, self.token, self.log = leases, token, log

    def start(self, placement: Placement) -> ServerGroup:
        # Private (0700 directories, 0600 files): another user of a shared
        # file system can neither read the token nor find the servers.
        private_dir(self.run_dir / "groups")
        gdir = private_dir(self.run_dir / "groups" / f"{placement.label}-{time.strftime('%H%M%S')}-{os.getpid()}")
        write_token(gdir, self.token)
        self.leases.add(gdir)
        launches = self.commands.server_launches(placement, gdir)
        procs = []
        for i, launch in enumerate(launches):
            self.log("start: " + shlex.join(launch.argv))
            log = write_private(gdir / f"launch-{i}.log", "")
            procs.append(self.procs.start(launch, log))
        group = ServerGroup(placement, gdir, procs)
        self._wait_ready(gdir, launches, procs, group.nservers)
        return group

    def _wait_ready(self, gdir: Path, launches, procs, nservers: int) -> None:
        started = [(p, launch.ranks, gdir / f"launch-{i}.log") for i, (launch, p) in enumerate(zip(launches, procs))]
        try:
            wait_published(gdir, started, self.cfg["engine"]["timeout"] + 10)
        except NotReady as e:
            if e.index is None:
                raise SampleFailed(str(e)) from None
            raise SampleFailed(nic_check.early_exit(launches[e.index], e.missing, e.returncode, e.log)) from None
        # No separate ping: a server publishes its address only once its
        # endpoint is up and its receives are posted, and every client's
        # hello checks that it answers (a silent one fails the samples,
        # named, within engine.timeout). A ping process would cost a
        # libfabric start-up per group (0.35 s with Debian's build).
        wrong_nic = nic_check.server_errors(self.cfg, gdir, launches)
        if wrong_nic:
            raise SampleFailed("; ".join(wrong_nic[:5]))

    def stop(self, group: ServerGroup) -> None:
        """Each server still publishing is stopped: under engine.launch =
        agents its node's agent sends it SIGTERM (on which a server stops as
        on a shutdown RPC: its document complete, its address withdrawn,
        exit 0), without forking a shutdown process whose libfabric
        endpoint alone costs more than the rest of the stop; otherwise it
        gets the shutdown command (its token) from here. What is left after
        10 s is killed."""
        gdir = group.gdir
        live = [k for k in range(group.nservers) if (gdir / f"{k}.addr").exists()]
        if live and self.commands.agents:
            for p in group.procs:
                p.terminate()
            live = []
        shutdowns = [self.commands.shutdown_launch(group.placement, gdir, k) for k in live]

        def shutdown(launch):
            try:
                run_engine(launch.argv[1:], timeout=20)
            except EngineError:
                pass  # killed below if it does not stop

        if shutdowns:
            with ThreadPoolExecutor(max_workers=min(8, len(shutdowns))) as pool:
                list(pool.map(shutdown, shutdowns))
        reap(group.procs, 10)
        self.leases.drop(gdir)
        (gdir / TOKEN_FILE).unlink(missing_ok=True)  # no secret left on disk once they stopped
        self.procs.forget_finished()


def server_reasons(gdir: Path) -> tuple[list[str], list[str]]:
    """What a group's servers said about why they stopped or failed, in the
    documents of those that exited (result.stop_reason) and on stderr (their
    launch logs): (lapsed leases, storage errors)."""
    lapsed, storage = [], []
    for doc in enginedoc.server_documents(gdir):
        try:
            why = (enginedoc.load(doc).get("result") or {}).get("stop_reason") or ""
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
                storage.append(said[len("storage error: ") :])
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
            why = (
                f"lease lapsed: the servers stopped, as this campaign did not renew their lease for "
                f"engine.lease = {lease_s:g} s (it was stopped, e.g. SIGSTOP, or starved of CPU); {why}"
            )
        if storage and "storage_error" in why:
            why += f" [server: {'; '.join(storage[:3])}]"
        errors[r] = why
