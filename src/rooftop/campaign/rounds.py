"""One client round measured against a running server group
(RoundMeasurer), and the emulation its nodes ran under (EmulationWatch)."""

from __future__ import annotations

import json
import shlex
import signal
import sys
from collections.abc import Callable
from pathlib import Path

from rooftop import emulation, foreign, meters, metrics
from rooftop.campaign import recover, tracking, windows
from rooftop.campaign.commands import Commands
from rooftop.campaign.groups import ServerGroup, name_server_reasons
from rooftop.campaign.plan import ClientRound
from rooftop.campaign.processes import Processes, RoundInterrupted, _signals_deferred
from rooftop.campaign.rows import Rows
from rooftop.engine import enginedoc
from rooftop.engine.enginedoc import full_windows, unusable, windows_of
from rooftop.engine.leases import Leases
from rooftop.engine.reaping import reap, signal_proc
from rooftop.launchers import Launcher, Node, on_this_machine
from rooftop.nics import check as nic_check
from rooftop.stages import Measurement, Placement
from rooftop.store.records import StoreError


class EmulationWatch:
    """The emulation a round's nodes ran under (rooftop.emulation): read
    before the round, once every client has measured a window (from the
    window follower's thread) and at the end. Each row records its nodes'
    emulation after its window; a window whose nodes changed during it, or
    differ from the run's, is invalid with the difference as its reason.
    Off the emulated cluster: nothing read, nothing recorded."""

    def __init__(self, cfg: dict, nodes: list[Node], placement: Placement, rnd: ClientRound):
        used = set(placement.server_nodes) | set(rnd.measurement.client_nodes)
        self.nodes = [nodes[i] for i in sorted(used)]
        self.cfg_nodes = cfg.get("nodes") or []
        self.physical = emulation.physical_cores(cfg)
        self.on = any((n.emulation or {}).get("netns") for n in self.nodes)
        self.reads: list[dict] = [emulation.read(self.nodes)] if self.on else []
        #: A row's window -> the engine window (of the round) that measured it.
        self.index = {window: w for w, window in enumerate(rnd.windows)}

    def window_done(self, w: int) -> None:
        if self.on and len(self.reads) == w + 1:
            self.reads.append(emulation.read(self.nodes))

    def mark(self, rows: list[tuple[Measurement, dict]]) -> list[tuple[Measurement, dict]]:
        if not self.on:
            return rows
        end = emulation.read(self.nodes)
        for _, row in rows:
            w = self.index.get(row["window"], 0)
            before = self.reads[w] if w < len(self.reads) else self.reads[-1]
            after = self.reads[w + 1] if w + 1 < len(self.reads) else end
            mine = [str(i) for i in (*row["server_nodes"], *row["client_nodes"])]
            row["emulation"] = json.dumps({i: after[i] for i in mine if i in after}, sort_keys=True)
            if row["status"] == "failed":
                continue
            changed = emulation.between(before, after, mine)
            other = (
                emulation.against_run({i: after[i] for i in mine if i in after}, self.cfg_nodes, self.physical)
                if not changed
                else []
            )
            why = (
                f"the emulated cluster changed during the window: {'; '.join(changed[:3])}"
                if changed
                else f"{emulation.OTHER}: {'; '.join(other[:3])}"
                if other
                else ""
            )
            if why:
                row["status"] = "invalid"
                row["error"] = why + (f" | {row['error']}" if row.get("error") else "")
        return rows


class RoundMeasurer:
    """Measures one client round against a running server group: starts its
    clients (with the meters), waits for them, reads their documents and
    makes one row per window (and pair); on Ctrl-C, the rows of the windows
    measured in full.

    Given what it uses of the campaign (keywords): cfg, the store and
    run_id its rows and series go to, the launcher and its nodes, the
    campaign's command lines (commands), live processes (procs) and leases,
    the row computation (rows), on_window(measurement, window) once every
    client has measured a window, log, and said: the notes already shown
    once (shared with the campaign)."""

    def __init__(
        self,
        *,
        cfg: dict,
        store,
        run_id: str,
        launcher: Launcher,
        nodes: list[Node],
        commands: Commands,
        procs: Processes,
        leases: Leases,
        rows: Rows,
        on_window: Callable[[Measurement, int], None],
        log: Callable[[str], None],
        said: set[str],
    ):
        self.cfg, self.store, self.run_id, self.launcher, self.nodes = cfg, store, run_id, launcher, nodes
        self.commands, self.procs, self.leases, self.rows = commands, procs, leases, rows
        self.on_window, self.log, self.said = on_window, log, said
        self.run_dir = store.run_dir(run_id)

    def measure(self, group: ServerGroup, rnd: ClientRound, attempt: int) -> list[tuple[Measurement, dict]]:
        m = rnd.measurement
        sdir = self._folder(rnd, attempt)
        launches = self.commands.client_launches(group.placement, m, group.gdir, sdir, len(rnd.windows))
        watch = EmulationWatch(self.cfg, self.nodes, group.placement, rnd)  # the emulated cluster, read per window
        running = meters.start_all(self, group.placement, m)  # e.g. CPU others use meanwhile
        procs = []
        for i, launch in enumerate(launches):
            self.log("start: " + shlex.join(launch.argv))
            procs.append(self.procs.start(launch, sdir / f"launch-{i}.log"))
        e = self.cfg["engine"]
        limit = (
            m.duration * len(rnd.windows)
            + m.warmup
            + e["settle"]
            + e["start_lead"]
            + e["barrier_timeout"]
            + 2 * e["timeout"]
            + 30
        )
        nclients = sum(len(l.ranks) for l in launches)

        def window_done(w: int) -> None:
            watch.window_done(w)
            self.on_window(m, rnd.windows[w])

        try:  # the bars advance as every client finishes a window (rooftop.campaign.tracking)
            with tracking.WindowFollower(sdir, nclients, len(rnd.windows), window_done):
                killed = reap(procs, limit, grace=e["timeout"] + 5)
        except KeyboardInterrupt:
            meters.stop_all(running)
            self._store_series(rnd, running)
            raise RoundInterrupted(watch.mark(self._cut(group, rnd, launches, procs, sdir, attempt))) from None
        sampled = meters.stop_all(running)
        self._store_series(rnd, running)
        self.procs.forget_finished()
        results, errors = self._read_clients(launches, procs, killed, sdir, limit, self._op_bytes(rnd))
        name_server_reasons(group.gdir, errors, self.leases.period)
        gone = self.procs.gone({*group.placement.server_nodes, *m.client_nodes})
        for k in errors:  # a dead agent took its node's servers or clients with it: named first
            if gone and not any(why in errors[k] for why in gone):
                errors[k] = f"{'; '.join(gone)}: {errors[k]}"
        if watch.on:  # before that, the emulated cluster taken down under the campaign
            emulation.name_removal(watch.nodes, errors)
        rows = self._rows(group, rnd, launches, results, errors, sdir, attempt, sampled=sampled)
        gate = float(self.cfg["engine"]["foreign_cpu_gate"])
        for _, row in rows:  # others took the cores: measured again, then stored invalid
            why = foreign.over_gate(row.get("foreign_cpu"), gate) if row["status"] == "ok" else ""
            if why:  # (an ok row's error says where it was read from: kept)
                row.update(status="invalid", error="; ".join(filter(None, [why, row["error"]])))
        return watch.mark(rows)

    def _store_series(self, rnd: ClientRound, running: dict) -> None:
        """The round's time series (series meters), saved at once; a
        meter that recorded nothing says why, once per campaign."""
        rows = meters.series_rows(running)
        if any(rows.values()):
            try:
                self.store.add_series(self.run_id, rnd.folder, rows)
            except StoreError as e:  # the round's samples come first: their store says what is lost
                print(f"rooftop: the time series of round {rnd.folder} were not stored: {e}", file=sys.stderr)
        for note in meters.notes(running):
            if note not in self.said:
                self.said.add(note)
                print(f"rooftop: meter {note}", file=sys.stderr)

    def _folder(self, rnd: ClientRound, attempt: int) -> Path:
        """The round's raw folder, emptied of an earlier attempt's client
        documents and window logs (an invalid attempt's stay on record under
        attempt-N; window logs left would advance the bars before this
        attempt has measured anything), with round.json: which window is
        which sample (for rooftop doctor)."""
        sdir = self.run_dir / "raw" / rnd.folder
        sdir.mkdir(parents=True, exist_ok=True)
        keep = sdir / f"attempt-{attempt - 1}"
        # (A window log is the record of a client whose document was never written.)
        earlier = enginedoc.client_documents(sdir) + enginedoc.window_logs(sdir)
        if earlier and attempt == 1:
            # An earlier session's documents (a resumed run): never overwritten.
            # They were ingested at the start (recover.recover_run); they stay
            # the record of the rows stored from them, under earlier-N.
            n = 1 + max([int(p.name[8:]) for p in sdir.glob("earlier-*") if p.name[8:].isdigit()] or [0])
            keep = sdir / f"earlier-{n}"
            earlier += [f for f in (sdir / enginedoc.ROUND_DOCUMENT,) if f.exists()]
        for old in earlier:
            keep.mkdir(exist_ok=True)
            old.rename(keep / old.name)
        if earlier and attempt == 1:
            self.store.moved_documents(self.run_id, sdir, keep)
        (sdir / enginedoc.ROUND_DOCUMENT).write_text(json.dumps({"keys": rnd.row_keys()}))
        return sdir

    def _rows(
        self,
        group: ServerGroup,
        rnd: ClientRound,
        launches,
        results,
        errors,
        sdir,
        attempt,
        measured_only: bool = False,
        sampled: dict | None = None,
    ) -> list[tuple[Measurement, dict]]:
        """One row per window (and pair). measured_only: only the rows of
        windows every client of the row measured in full. sampled: each
        meter's value over the round (None: not sampled)."""
        m = rnd.measurement
        same_clock = on_this_machine(self.launcher.name) or len({l.node.host for l in launches}) == 1
        starts = {k: res["measure_start_s"] for k, res in results.items()}
        offs = windows.offsets(starts, same_clock)
        nclients = sum(len(l.ranks) for l in launches)
        out = []
        for w, window in enumerate(rnd.windows):
            for part in Rows.parts(group.placement, m, window, group.nservers, nclients):
                if measured_only and not all(k in results and len(windows_of(results[k])) > w for k in part[4]):
                    continue
                row = self.rows.row(m, window, part, w, results, errors, offs, sdir)
                row["attempt"] = attempt
                row.update(sampled or {s.name: None for s in meters.METERS})
                out.append((m, row))
        return out

    def _cut(self, group: ServerGroup, rnd: ClientRound, launches, procs, sdir, attempt) -> list:
        """Ctrl-C during a round: stops its clients (each writes what it
        measured), reads them and returns the rows of the full windows.
        Further signals wait until then (a few seconds at most)."""
        rows: list = []
        try:
            with _signals_deferred():
                for p in procs:
                    signal_proc(p, signal.SIGTERM)
                killed = reap(procs, 10)
                self.procs.forget_finished()
                results, errors = self._read_clients(launches, procs, killed, sdir, 10, self._op_bytes(rnd), cut=True)
                rows = self._rows(group, rnd, launches, results, errors, sdir, attempt, measured_only=True)
        except KeyboardInterrupt:
            pass  # a second Ctrl-C: the round is stopped anyway
        return rows

    def _op_bytes(self, rnd: ClientRound) -> int:
        """What the round's client documents say of op_bytes (Metric.op_bytes)."""
        return metrics.get(rnd.measurement.metric).op_bytes(self.cfg)

    def _read_clients(
        self, launches, procs, killed, sdir: Path, limit: float, op_bytes: int, cut: bool = False
    ) -> tuple[dict, dict]:
        """Every client's result (rank -> result), and why the others have none.
        cut: the clients were stopped; their results keep only the windows
        they measured in full (result.full_windows; an older engine: none).
        A client whose document was never written (a full disk, a crash)
        gives the windows its window log holds (recover.logged_result; its
        rows say so)."""
        errors: dict[int, str] = {}
        node_of = {r: l.node for l in launches for r in l.ranks}
        for launch, p in zip(launches, procs):
            if getattr(p, "lost", None):  # its node's agent is gone (rooftop.engine.agents)
                for r in launch.ranks:
                    errors[r] = f"client rank {r}: {p.lost}"
            elif p in killed:
                for r in launch.ranks:
                    errors[r] = f"clients on node {launch.node.index} did not finish within {limit:g} s"
        results, docs = {}, {}
        for r in sorted(node_of):
            if r in errors:
                continue
            try:
                docs[r] = enginedoc.load(enginedoc.client_document(sdir, r))
            except (OSError, json.JSONDecodeError):
                logged = recover.logged_result(sdir, r, op_bytes)
                if logged is not None:
                    results[r] = logged
                    continue
                logs = [(sdir / f"launch-{i}.log") for i in range(len(launches))]
                log = "; ".join(l.read_text().strip()[-400:] for l in logs if l.exists())
                errors[r] = f"client rank {r}: no result ({log or 'no output'})"
                continue
            why = unusable(docs[r], cut)
            if why:
                errors[r] = f"client rank {r}: {why}"
                continue
            results[r] = docs[r]["result"] if not cut else full_windows(docs[r])["result"]
        for r, why in nic_check.client_errors(self.cfg, launches, docs).items():
            if errors.setdefault(r, why) == why:  # measured, but not on what was asked
                results.pop(r, None)
        if any("start barrier" in m for m in errors.values()):  # name whom it waited for
            never = [
                r
                for r in sorted(node_of)
                if not ((docs.get(r) or {}).get("result") or {}).get("barrier", {}).get("ready_s")
            ]
            who = ", ".join(f"rank {r} on node {node_of[r].index} ({node_of[r].host})" for r in never[:8])
            for r in errors:
                errors[r] += f" [start barrier: never ready: {who or 'unknown'}]"
        return results, errors
