"""The Runner: the loop over placements (a server group each, its client
rounds retried while invalid), every row stored at once, and what an
earlier session measured but did not store recovered first."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable

from rooftop import emulation
from rooftop.campaign import machine, recover
from rooftop.campaign.commands import Commands
from rooftop.campaign.groups import ServerGroup, Servers, stop_stale_groups
from rooftop.campaign.plan import ClientRound, _pair_schedule, client_rounds
from rooftop.campaign.processes import Processes, RoundInterrupted, SampleFailed, _signals_deferred
from rooftop.campaign.rounds import RoundMeasurer
from rooftop.campaign.rows import Rows, RunTime
from rooftop.engine.agents import Agents, command_line
from rooftop.engine.base import TOKEN_FILE, engine_path
from rooftop.engine.leases import Leases
from rooftop.launchers import Launcher, Node
from rooftop.stages import Measurement, Placement
from rooftop.store.records import StoreError


class Runner:
    """Runs planned placements for one stored run: a server group per
    placement (Servers), its client rounds (RoundMeasurer, retried while
    invalid), each row stored at once (Rows)."""

    def __init__(
        self,
        cfg: dict,
        store,
        run_id: str,
        launcher: Launcher,
        on_sample: Callable[[Measurement, dict], None] | None = None,
        log: Callable[[str], None] | None = None,
        on_window: Callable[[Measurement, int], None] | None = None,
    ):
        self.cfg = cfg
        self.store = store
        self.run_id = run_id
        self.launcher = launcher
        self.nodes: list[Node] = launcher.nodes()
        self.on_sample = on_sample or (lambda m, row: None)
        #: on_window(measurement, window): called (from a follower thread)
        #: once every client of a round has measured one of its windows,
        #: before its rows are stored.
        self.on_window = on_window or (lambda m, window: None)
        self.log = log or (lambda msg: None)
        #: Notes already shown once (e.g. a meter with nothing to measure here).
        self.said: set[str] = set()
        #: Lets its holder stop the servers: only ever in 0600 files (TOKEN_FILE).
        self.token = os.urandom(16).hex()
        self.run_dir = store.run_dir(run_id)
        self.leases = Leases(float(cfg["engine"]["lease"]))
        engine = cfg["engine"]["path"] or engine_path()
        self.commands = Commands(cfg, launcher, self.nodes, engine, self.leases.period)
        #: engine.launch = agents: one agent per node starts every engine,
        #: launched on first use and stopped by procs.close().
        self.agents = (
            Agents(
                launcher,
                engine,
                self.run_dir,
                self.leases,
                float(cfg["engine"]["timeout"]) + 20,
                self.log,
                fabric=cfg["fabric"]["provider"],
            )
            if self.commands.agents
            else None
        )
        self.procs = Processes(self.agents)
        self.servers = Servers(cfg, self.run_dir, self.commands, self.procs, self.leases, self.token, self.log)
        self.rows = Rows(run_id, cfg, self.nodes)
        self.measurer = RoundMeasurer(
            cfg=cfg,
            store=store,
            run_id=run_id,
            launcher=launcher,
            nodes=self.nodes,
            commands=self.commands,
            procs=self.procs,
            leases=self.leases,
            rows=self.rows,
            on_window=self.on_window,
            log=self.log,
            said=self.said,
        )

    def run_round(self, group: ServerGroup, rnd: ClientRound) -> list[dict]:
        """One client round: one row per window. A round with an invalid
        window (clients that did not measure together, an aggregate above a
        link) is measured again, up to engine.retries times; then its rows
        are stored as invalid."""
        tries = 1 + int(self.cfg["engine"]["retries"])
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
                print(
                    f"rooftop: warning: {other[0]['key']}: {other[0]['error']}; such samples are stored invalid",
                    file=sys.stderr,
                    flush=True,
                )
            if not bad or attempt == tries or len(other) == len(bad):  # measuring again would not help
                break
            self.log(f"attempt {attempt} of {rnd.measurement.key} is invalid ({bad[0]['error']}): measuring again")
        return self._store(measured)

    def _store(self, measured: list[tuple[Measurement, dict]]) -> list[dict]:
        """Commits each row at once (and tells on_sample). A row the database
        does not take (locked past ROOFTOP_DB_WAIT, a full disk) stops the
        campaign naming every measured row not stored: the round's engine
        documents hold them, and rooftop doctor --recover brings them in."""
        rows: list[dict] = []
        run_time = RunTime()  # pairs measured at once share one window of run time
        for i, (m, row) in enumerate(measured):
            try:
                self.store.add_sample(**row, run_time_s=run_time.add(row["window"], row["measured_s"]))
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
                    f"(or 'rooftop collect --resume {self.run_id}' does, then measures the rest)"
                ) from None
            self.on_sample(m, row)
            rows.append(row)
        return rows

    def _recover(self) -> None:
        """Windows an earlier session measured but did not store (killed,
        the database locked or full): stored from their documents first,
        so a resumed campaign neither measures them again nor overwrites
        their documents (rooftop.campaign.recover.recover_run)."""
        if not (self.run_dir / "raw").is_dir():
            return
        rows = recover.recover_run(self.store, self.run_id, self.cfg)
        if rows:
            msg = (
                f"{len(rows)} sample(s) an earlier session measured but did not store were recovered "
                f"from its engine documents"
            )
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
                todo = client_rounds(placement.measurements, done)
                if todo:
                    machine.record(self)  # once per command: the machine it measures on
                    n_ok, n_failed = self._run_placement(placement, todo, fail_fast)
                    ok, failed = ok + n_ok, failed + n_failed
        finally:
            self.procs.close()
            self.leases.close()
        return ok, failed

    def _run_placement(self, placement: Placement, todo: list[ClientRound], fail_fast: bool) -> tuple[int, int]:
        ok = failed = 0
        try:
            group = self.servers.start(placement)
        except SampleFailed as e:
            # Every sample of the placement fails with the servers' reason
            # (first, the emulated cluster's removal, if it was removed).
            why = {0: str(e)}
            emulation.name_removal([self.nodes[i] for i in placement.server_nodes], why)
            for rnd in todo:
                for window in rnd.windows:
                    for row in self.rows.failed(placement, rnd.measurement, window, why[0]):
                        self.store.add_sample(**row)
                        self.on_sample(rnd.measurement, row)
                        failed += 1
            self.procs.stop_all()
            if fail_fast:
                raise
            return ok, failed
        try:
            for rnd in todo:
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
        if self.agents is not None:
            folder = self.run_dir / "agents" / "<session>"
            lines.append("# engine.launch = agents: an agent per node for the whole campaign, started once:")
            launches = self.launcher.agent_launches(self.nodes, self.agents.argv(folder))
            lines += [command_line(l.argv) for l in launches]
            lines.append("# each command below is started by the agent of its node (forked: no launch of its own)")
        mdir = self.run_dir / machine.FOLDER
        where = self.nodes[:1] if machine.one_machine(self.cfg, self.nodes) else self.nodes
        lines.append(
            f"# the machine's record, once per node{' (one machine: node 0)' if len(where) < len(self.nodes) else ''}:"
        )
        for node in where:
            lines += [
                shlex.join(l.argv) for l in self.commands.launches(node, machine.argv(self, node, mdir), 1, node.index)
            ]
        for pl in placements:
            lines.append(
                f"# servers on node(s) {pl.server_nodes}, {pl.servers_per_node} per node"
                + (f", serving {', '.join(pl.metrics)}" if pl.tag else "")
            )
            lines += [shlex.join(l.argv) for l in self.commands.server_launches(pl, gdir)]
            for rnd in client_rounds(pl.measurements):
                m = rnd.measurement
                sdir = self.run_dir / "raw" / rnd.folder
                at_once = (
                    "; pairs measured at once: " + ", ".join(f"n{a}-n{b}" for a, b in m.pairs)
                    if m.pairs and len(m.pairs) > 1
                    else f"; pair n{m.pairs[0][0]}-n{m.pairs[0][1]} alone"
                    if m.pairs
                    else ""
                )
                lines.append(
                    f"# {m.stage} {m.metric}: clients on node(s) {m.client_nodes}, "
                    f"{len(rnd.windows)} sample(s) in one round{at_once}"
                )
                nclients = m.client_procs
                at = f"<launch time + {self.cfg['engine']['start_lead']:g} + {m.warmup:g}>"
                start = self.commands.start_args(m, nclients, barrier_id=0, measure_at=at)
                if "--barrier-id" in start:
                    start[start.index("--barrier-id") + 1] = "<random>"
                lines += [
                    shlex.join(l.argv)
                    for l in self.commands.client_launches(pl, m, gdir, sdir, len(rnd.windows), start)
                ]
            lines.append(
                "# then: SIGTERM to each server, from the agent of its node"
                if self.agents is not None
                else f"# then: rooftop-engine shutdown --token-file {shlex.quote(str(gdir / TOKEN_FILE))} for each server"
            )
        return lines
