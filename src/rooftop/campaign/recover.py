"""What a run's engine documents hold that its database may lack: every
measured window rebuilt into its sample row by the campaign's own row
computation (Rows), and stored once (rooftop doctor --recover, a resumed
campaign). The documents: per client round raw/<measurement>/client-<rank>.json
(every measured window) with round.json (which window is which sample),
and each client's window log, windows-<rank>.jsonl: the windows of a
client whose document was never written (a full disk, a crash) are read
from it, marked so in their rows."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

from rooftop import metrics
from rooftop.campaign import windows
from rooftop.campaign.plan import client_rounds, plan_collect, plan_validate
from rooftop.campaign.rows import Rows, RunTime
from rooftop.engine import enginedoc
from rooftop.engine.enginedoc import full_windows, unusable
from rooftop.keys import ConfigError
from rooftop.launchers import on_this_machine
from rooftop.launchers.base import Node
from rooftop.store.db import Store

KEY = re.compile(
    r"^(?P<stage>[\w+]+)/(?P<metric>\w+)/s(?P<s>[\d-]+)x(?P<spn>\d+)/"
    r"c(?P<c>[\d-]+)x(?P<cpn>\d+)/(?P<i>\d+)$"
)


def planned_rounds(cfg: dict) -> dict[str, list[list[str]]]:
    """Folder name of each client round -> its row keys, window by window."""
    out = {}
    for placement in plan_collect(cfg) + plan_validate(cfg):
        for rnd in client_rounds(placement.measurements):
            out[rnd.folder] = rnd.row_keys()
    return out


def _round_keys(sdir: Path, docs: dict[int, dict], planned: dict) -> list[list[str]]:
    """Row keys per window of one round's documents: from round.json, else
    the plan (a resumed round measured the last samples of its measurement)."""
    recorded = enginedoc.round_keys(sdir)
    if recorded is not None:
        return recorded
    keys = planned.get(sdir.name, [])
    asked = max((enginedoc.windows_asked(doc) for doc in docs.values()), default=0)
    return keys[len(keys) - asked :] if 0 < asked <= len(keys) else []


def _row_maker(run_id: str, cfg: dict):
    """The campaign's own row computation (Rows.row: aggregate over
    the clients' common time, validity checks), for a run rebuilt from disk."""
    return Rows(
        run_id,
        cfg,
        [Node(n["index"], n["host"], tuple(n["cores"]), n.get("address"), n.get("emulation")) for n in cfg["nodes"]],
    ).row


def _client_results(sdir: Path, op_bytes: int | None) -> tuple[dict[int, dict], dict[int, dict], dict[int, str]]:
    """(rank -> document, rank -> result, rank -> why it ended early) of one
    round. A client that ended early (its campaign killed: "lease lapsed",
    a signal) gives the windows it measured in full (result.full_windows),
    as the campaign itself keeps them on Ctrl-C. A client whose document
    was never written (a full disk, a crash) gives the windows its window
    log holds (logged_result; op_bytes: what its document would say; None:
    unknown, the window logs are not read)."""
    docs, results, early = {}, {}, {}
    for f in enginedoc.client_documents(sdir):
        try:
            rank = enginedoc.rank_of(f)
            docs[rank] = doc = enginedoc.load(f)
        except (OSError, ValueError):
            continue
        if not isinstance(doc, dict) or not isinstance(doc.get("result"), dict):
            docs.pop(rank)
            continue
        if doc.get("complete"):
            results[rank] = doc["result"]
            continue
        try:
            if unusable(doc, cut=True):
                continue
            results[rank] = full_windows(doc)["result"]
        except (KeyError, TypeError, ValueError):
            continue
        early[rank] = str(doc["result"].get("end") or "; ".join(doc.get("errors") or []) or "stopped")
    for f in enginedoc.window_logs(sdir):
        try:
            rank = enginedoc.rank_of(f)
        except ValueError:
            continue
        if rank in docs or op_bytes is None:  # its document, read above, is the record
            continue
        events = enginedoc.window_log(f)
        result = enginedoc.log_result(events, op_bytes)
        if result is not None:
            results[rank] = result
            docs[rank] = {"config": {"windows": enginedoc.log_windows_asked(events)}}
    return docs, results, early


def logged_result(sdir: Path, rank: int, op_bytes: float) -> dict | None:
    """A client's result from its window log (rooftop.engine.enginedoc.log_result),
    for a client whose document was never written; None when it holds no measured window."""
    return enginedoc.log_result(enginedoc.window_log(enginedoc.window_log_path(sdir, rank)), op_bytes)


def _op_bytes(cfg: dict, keys: list[list[str]]) -> int | None:
    """The op_bytes of the documents of a round of these keys (Metric.op_bytes:
    every key of a round names one metric); None when the config cannot say."""
    metric = next((m["metric"] for window in keys for key in window if (m := KEY.match(key))), None)
    try:
        return metrics.get(metric).op_bytes(cfg) if metric else None
    except (KeyError, TypeError, ValueError, ConfigError):
        return None


def _round_dirs(run_dir: Path) -> list[Path]:
    """Each round's folder, then the documents of its earlier sessions
    (earlier-N: kept when a resumed campaign measured the round again)."""
    out = []
    for sdir in sorted(p for p in (run_dir / "raw").glob("*") if p.is_dir()):
        out.append(sdir)
        out += sorted(
            (p for p in sdir.glob("earlier-*") if p.is_dir()),
            key=lambda p: -int(p.name.split("-", 1)[1]) if p.name.split("-", 1)[1].isdigit() else 0,
        )
    return out


def rows_from_documents(run_dir: Path, cfg: dict) -> list[dict]:
    """Every measured sample row (ok or invalid) the run's client documents hold."""
    planned, rows, make = planned_rounds(cfg), [], _row_maker(run_dir.name, cfg)
    hosts = {n["host"] for n in cfg["nodes"]}
    same_clock = on_this_machine(cfg["launcher"]["type"]) or len(hosts) == 1
    seen: set[str] = set()  # a round's newest documents win over its earlier sessions'
    for sdir in _round_dirs(run_dir):
        named = sdir.parent if sdir.name.startswith("earlier-") else sdir
        plan = {sdir.name: planned.get(named.name, [])}
        docs, results, early = _client_results(sdir, _op_bytes(cfg, _round_keys(sdir, {}, plan) or plan[sdir.name]))
        if not results:
            continue
        offs = windows.offsets({r: res["measure_start_s"] for r, res in results.items()}, same_clock)
        for w, keys in enumerate(_round_keys(sdir, docs, plan)):
            for j, key in enumerate(keys):
                m = KEY.match(key)
                if not m or key in seen:
                    continue
                snodes, cnodes = [int(v) for v in m["s"].split("-")], [int(v) for v in m["c"].split("-")]
                nclients = len(cnodes) * int(m["cpn"])
                ranks = list(range(nclients)) if len(keys) == 1 else [j]  # pairs: rank j, pair j
                errors = {r: "no complete document" for r in ranks if r not in results}
                sp = SimpleNamespace(stage=m["stage"].split("+")[0], metric=m["metric"])
                part = (key, snodes, cnodes, len(snodes) * int(m["spn"]), ranks)
                row = make(sp, int(m["i"]), part, w, results, errors, offs, sdir)
                if row["status"] == "failed":
                    continue
                ended = sorted({early[r] for r in ranks if r in early})
                if ended and row["status"] == "ok":  # marked: what it is
                    row["error"] = (
                        f"recovered from client documents that ended early ({', '.join(ended)}); "
                        f"window {w + 1} was measured in full"
                    )
                seen.add(key)
                rows.append(row)
    return rows


def unstored_rows(store: Store, run_id: str, cfg: dict) -> list[dict]:
    """Rows the run's engine documents hold that the database lacks (keys
    with no row: a row the campaign stored, failed ones included, stands)."""
    have = store.stored_keys(run_id)
    run_dir = store.run_dir(run_id)
    if not (run_dir / "raw").is_dir():
        return []
    return [r for r in rows_from_documents(run_dir, cfg) if r["key"] not in have]


def recover_run(store: Store, run_id: str, cfg: dict) -> list[dict]:
    """Stores the windows of a run's engine documents missing from its
    database (each once: keys already stored are kept); returns them."""
    rows = unstored_rows(store, run_id, cfg)
    store_rows(store, rows)
    return rows


def store_rows(store: Store, rows: list[dict]) -> None:
    """Stores rows rebuilt from documents, each window's time counted once
    in the run's measured time: the rows of one window of a round (the
    pairs of a pair round) were measured at once, as the campaign counts
    them (Runner._store)."""
    run_time = RunTime()
    for r in rows:
        at = (r.get("raw_dir"), r.get("metric"), r.get("window"), r.get("attempt", 1))
        row = {k: v for k, v in r.items() if k not in ("id", "run_time_s")}
        store.add_sample(**row, run_time_s=run_time.add(at, float(r.get("measured_s") or 0.0)))
