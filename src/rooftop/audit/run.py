"""Measuring the audit and storing it as a run.

The audit is a run of the results database like a campaign's: `runs` holds
its config (every pitfall's settings and engine arguments, the repeats,
durations, fabric, cores, storage directory: all of it in run_params too),
and every repeat of every setting is a sample (stage 'audit', metric the
pitfall's name, key audit/<pitfall>/<setting>/<repeat>) whose engine
documents are kept under <run>/raw/. A setting that cannot be measured here
(O_DIRECT on tmpfs) is a failed sample carrying the engine's message; the
audit goes on.

Placement comes from the local launcher, as a campaign's: one logical node
of this machine's usable cores; with binding 'core' the server and the
client (or the storage process) get a core each (launchers.base.core_sets),
with 'none' every usable core. Settings alternate A B, B A, ... over the
repeats, so a drift of the machine falls on both.
"""

from __future__ import annotations

import shutil
import socket
import tempfile
from collections.abc import Callable
from pathlib import Path

from rooftop import files, session
from rooftop.audit import PITFALLS
from rooftop.audit.base import Measured, Pitfall, Setting, summarize
from rooftop.campaign.lifecycle import Hold
from rooftop.engine import enginedoc
from rooftop.engine.base import EngineError, engine_path
from rooftop.engine.commands import run_engine
from rooftop.engine.servers import Group
from rooftop.launchers.base import LauncherError, core_sets
from rooftop.launchers.local import LocalLauncher
from rooftop.numbers import json_text
from rooftop.units import fmt_rate


def config(pitfalls: list[Pitfall], opts: dict, node) -> dict:
    """The run's config: what `rooftop runs` reads, and every audit parameter."""
    return {
        "kind": "audit",
        "launcher": {"type": "local", "nodes": 1},
        "nodes": [node.describe()],
        "metrics": [],
        "results": opts["results"],
        "engine": {"lease": opts["lease"]},
        "fabric": {"provider": opts["fabric"]},
        "audit": {
            "pitfalls": {p.name: p.describe() for p in pitfalls},
            "repeats": opts["repeats"],
            "duration": opts["duration"],
            "warmup": opts["warmup"],
            "storage_dir": opts["storage_dir"] or "",
            "storage_dir_default": "a temporary directory under the run's folder, removed after",
            "order": "settings alternate A B, B A over the repeats",
        },
    }


def _cpus(node, binding: str, n: int) -> list[str]:
    """The --cpus of n processes on node under binding (none: every core)."""
    return [",".join(map(str, c if c is not None else node.cores)) for c in core_sets(node, n, binding)]


def measure_network(p: Pitfall, s: Setting, node, opts: dict, out: Path) -> dict:
    """One server and one client, fresh: the client's document."""
    server_cpus, client_cpus = _cpus(node, s.binding, 2)
    with Group(fabric=opts["fabric"], lease=opts["lease"], under=out) as g:  # not in $TMPDIR
        g.start_server(0, cpus=server_cpus, progress=s.progress, extra=list(s.server))
        try:
            doc = g.load(
                op=p.op, duration=opts["duration"], warmup=opts["warmup"], cpus=client_cpus, extra=[*p.args, *s.client]
            )
        finally:
            server_doc = g.close()[0]
    enginedoc.client_document(out, 0).write_text(json_text(doc, indent=1))
    if server_doc:
        (out / enginedoc.SERVER_DOCUMENT.format(rank=0)).write_text(json_text(server_doc, indent=1))
    return doc


def measure_storage(p: Pitfall, s: Setting, node, opts: dict, out: Path) -> dict:
    """The local storage mode in a fresh directory under the storage dir."""
    (cpus,) = _cpus(node, s.binding, 1)
    work = Path(tempfile.mkdtemp(prefix=f"{p.name}-{s.name.replace('+', '_')}-", dir=opts["storage_path"]))
    try:
        args = [
            "storage",
            "--op",
            p.op,
            *p.args,
            *s.client,
            "--storage-dir",
            str(work),
            "--duration",
            str(opts["duration"]),
            "--warmup",
            str(opts["warmup"]),
            "--cpus",
            cpus,
        ]
        try:
            doc = run_engine(args, timeout=opts["duration"] + opts["warmup"] + 60, guard=True)
        except EngineError as e:
            if e.doc:
                (out / enginedoc.STORAGE_DOCUMENT).write_text(json_text(e.doc, indent=1))
            raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    (out / enginedoc.STORAGE_DOCUMENT).write_text(json_text(doc, indent=1))
    return doc


def _why(e: Exception) -> str:
    """The engine's own message (the knob and the file system), not our wrapper's."""
    if isinstance(e, EngineError) and e.doc and e.doc.get("errors"):
        return "; ".join(e.doc["errors"])
    return str(e)


def where_of(doc: dict) -> str:
    """'ext4 at /mnt (/dev/loop0)' from a storage document, '' otherwise."""
    fs = doc.get("result", {}).get("storage", {}).get("fs", {})
    if not fs:
        return ""
    return f"{fs.get('type', '?')} at {fs.get('mount_point', '?')} ({fs.get('device', '?')})"


def _sample(run_id: str, p: Pitfall, s: Setting, i: int, raw: Path, opts: dict, doc: dict | None, error: str) -> dict:
    rate = enginedoc.rate(doc["result"], p.field) if doc else None
    return {
        "run_id": run_id,
        "key": f"audit/{p.name}/{s.name}/{i}",
        "stage": "audit",
        "metric": p.name,
        "unit": p.unit,
        "server_nodes": [0],
        "client_nodes": [0],
        "server_procs": 1 if p.target == "network" else 0,
        "client_procs": 1,
        "x": 1.0,
        "window": i,
        "status": "ok" if doc else "failed",
        "aggregate": rate,
        "per_server": rate,
        "per_client": rate,
        "measured_s": doc["result"].get("elapsed_s", opts["duration"]) if doc else 0.0,
        "error": error,
        "raw_dir": str(raw),
        # the document's latency, as measured (the store need not read back the file just written)
        "latency_bins": enginedoc.merge_bins([enginedoc.result_bins(doc["result"])]) if doc else [],
    }


def measure_pitfall(store, run_id: str, p: Pitfall, node, opts: dict, say: Callable[[str], None]) -> dict:
    """Every repeat of every setting of p, stored as it is measured: its row."""
    measured = {s.name: Measured(s.name) for s in p.settings}
    where = ""
    how = measure_network if p.target == "network" else measure_storage
    for i in range(opts["repeats"]):
        order = p.settings if i % 2 == 0 else tuple(reversed(p.settings))
        for s in order:
            m = measured[s.name]
            if m.error:  # refused once (a knob the file system refuses): refused again, not re-run
                continue
            raw = store.run_dir(run_id) / "raw" / f"audit-{p.name}-{s.name.replace('+', '_')}-{i}"
            raw.mkdir(parents=True, exist_ok=True)
            doc, error = None, ""
            try:
                doc = how(p, s, node, opts, raw)
                m.rates.append(enginedoc.rate(doc["result"], p.field))
                where = where_of(doc) or where
            except (EngineError, LauncherError) as e:
                error = m.error = _why(e)
            store.add_sample(**_sample(run_id, p, s, i, raw, opts, doc, error))
            say(
                f"  {p.name:10s} {s.name:12s} #{i + 1}: "
                + (fmt_rate(m.rates[-1], p.unit) if doc else f"not measured: {error}")
            )
    if p.target == "storage" and not where:
        where = f"{opts['storage_path']}"
    return summarize(p, measured, where)


def run(store, pitfalls: list[Pitfall], opts: dict, say: Callable[[str], None] = print) -> tuple[str, list[dict]]:
    """Measures pitfalls into a new run of store: (run id, rows)."""
    engine_path()  # fails early, naming where it looked
    node = LocalLauncher(nodes=1).nodes()[0]
    env = {"host": socket.gethostname(), "launcher": "local", "engine": engine_path(), "kind": "audit"}
    env.update(session.recorded(session.versions()))
    run_id = store.new_run(config(pitfalls, opts, node), env)
    tmp = None
    if opts["storage_dir"]:
        opts["storage_path"] = Path(opts["storage_dir"])
    else:
        tmp = opts["storage_path"] = store.run_dir(run_id) / "audit-storage"
        tmp.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    try:
        with Hold(store, run_id, "audit"):  # its status, time and events (campaign.lifecycle)
            for p in pitfalls:
                rows.append(measure_pitfall(store, run_id, p, node, opts, say))
            files.write(store.run_dir(run_id) / "audit.json", json_text(rows, indent=1))
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return run_id, rows


def rows_of(store, run_id: str) -> list[dict]:
    """The audit rows of a stored run, recomputed from its samples (so a
    copied or rebuilt database gives the same table)."""
    run = store.get_run(run_id)
    audit = run.config.get("audit")
    if not audit:
        raise ValueError(f"run {run_id} is not an audit (rooftop audit)")
    rows = []
    for name in audit["pitfalls"]:
        p = PITFALLS[name]
        measured = {s.name: Measured(s.name) for s in p.settings}
        where = ""
        for r in store.samples(run_id, stage="audit", metric=name):
            setting = r["key"].split("/")[2]
            if setting not in measured:
                continue
            if r["status"] == "ok":
                measured[setting].rates.append(r["aggregate"])
            else:
                measured[setting].error = r["error"]
            where = where or _where_from_raw(r["raw_dir"])
        rows.append(summarize(p, measured, where))
    return rows


def _where_from_raw(raw: str) -> str:
    try:
        return where_of(enginedoc.load(Path(raw) / enginedoc.STORAGE_DOCUMENT))
    except (OSError, ValueError):
        return ""
