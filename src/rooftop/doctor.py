"""rooftop doctor: checks a results folder and rebuilds its database.

The engine documents under RESULTS/<run>/ are the primary record: each
run's config.json, and per client round raw/<measurement>/client-<rank>.json
(every measured window) with round.json (which window is which sample),
and each client's window log (windows-<rank>.jsonl: the windows of a client
whose document was never written). A damaged database is moved aside, rows
still readable in it are salvaged, and every sample is rebuilt from the
documents where they hold it. The rebuilt database has every table of the
store: each sample's quantities (its latency from the same documents) and
each run's parameters.

Doctor holds the results folder's lock (RESULTS/.lock, rooftop.locks)
while it reads or mends the folder: while a campaign runs there it
refuses, naming the holder. A database of a newer schema than this
rooftop knows is never rebuilt nor written: doctor says to upgrade rooftop.
"""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

from rooftop.campaign.lifecycle import recover_time, run_status
from rooftop.campaign.recover import planned_rounds, recover_run, rows_from_documents, store_rows, unstored_rows
from rooftop.config.files import up_to_date
from rooftop.interference.run import read_summary
from rooftop.locks import Lock, LockBusy
from rooftop.service import points
from rooftop.service.recover import points_from_documents
from rooftop.store import paths
from rooftop.store.db import Store
from rooftop.store.records import NewerSchema, StoreError, now_iso, utc_stamp
from rooftop.store.schema import SCHEMA_VERSION, STUDY_TABLES, renamed

RUN_ID = re.compile(r"^\d{8}-\d{6}-[0-9a-f]{4}$")


@contextlib.contextmanager
def folder_lock(results: str | Path, writes: bool) -> Iterator[None]:
    """The results folder's lock (RESULTS/.lock), held while doctor looks
    at or mends the folder, as a campaign holds it while it measures: while
    one runs, refused naming it (a rebuild would move its live database
    aside, a recovery store rows it is storing). writes: --recover or
    --rebuild; a check of a folder this user cannot create the lock in
    goes on without it (it changes nothing)."""
    d = Path(results)
    if not d.is_dir():  # nothing to lock (check and Store say what is wrong)
        yield
        return
    try:
        lock = Lock(d / ".lock", f"results folder {d}")
    except (OSError, LockBusy):
        if writes:
            raise
        yield
        return
    try:
        if not lock.acquire(time.monotonic()):
            raise LockBusy(
                f"the lock of results folder {d} is held by {lock.holder()} ({lock.path}): a campaign "
                f"is running there; run 'rooftop doctor' once it has ended (or stop it first)"
            )
        lock.write_holder("(rooftop doctor)")
        yield
    finally:
        lock.release()


#: Words of the problem of a database a newer rooftop wrote: upgrade, never rebuild.
NEWER = "newer than this rooftop knows"


def schema_version(db: Path) -> int | None:
    """A database file's schema version (PRAGMA user_version), read only;
    None when it cannot be read (damaged, missing)."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return int(con.execute("PRAGMA user_version").fetchone()[0])
        finally:
            con.close()
    except sqlite3.Error:
        return None


def refuse_newer(db: Path) -> None:
    """NewerSchema when a newer rooftop wrote the database: never rebuilt."""
    version = schema_version(db)
    if version is not None and version > SCHEMA_VERSION:
        raise NewerSchema(db, version, SCHEMA_VERSION)


def _run_dirs(results: Path) -> list[Path]:
    return sorted(d for d in results.iterdir() if d.is_dir() and RUN_ID.match(d.name) and (d / "config.json").is_file())


def check(results: str | Path) -> list[str]:
    """Problems found in a results folder (none: healthy)."""
    d = Path(results)
    if not d.is_dir():
        return [f"{d} is {'a file' if d.exists() else 'missing'}, not a results folder"]
    db, on_disk = d / "rooftop.db", _run_dirs(d)
    if not db.exists():
        return [f"{db} is missing but {len(on_disk)} run folder(s) hold engine documents"] if on_disk else []
    try:
        store = Store(d, create=False)
        bad = [r[0] for r in store.db.execute("PRAGMA integrity_check")]
        if bad != ["ok"]:
            return [f"{db} is damaged: {'; '.join(bad[:3])}"]
        known = {r.id for r in store.runs()}
        problems = [f"run {p.name}: engine documents in {p} but no row in {db}" for p in on_disk if p.name not in known]
        problems += [
            f"run {r}: its folder {d / r} is missing (its engine documents are gone)"
            for r in sorted(known)
            if not (d / r).is_dir()
        ]
        for run in store.runs():
            if (d / run.id).is_dir():  # (a missing run folder is said above)
                problems += _path_problems(store, run.id)
            if run.status == "running":  # its campaign is alive and stores its rounds itself
                continue
            try:
                rows = unstored_rows(store, run.id, run.config)
            except (KeyError, TypeError, ValueError) as e:
                problems.append(f"run {run.id}: its engine documents cannot be read ({e!r})")
                continue
            if rows:
                problems.append(
                    f"run {run.id}: {len(rows)} measured samples are in its engine documents (client "
                    f"documents, window logs) but not in {db} ({', '.join(r['key'] for r in rows)}): "
                    f"'rooftop doctor --results {d} --recover' brings them in"
                )
    except NewerSchema as e:
        return [f"{e}; doctor neither checks nor rebuilds it (a rebuild would drop what only schema {e.version} holds)"]
    except (StoreError, sqlite3.Error) as e:
        return [str(e)]
    return problems


#: Words of the path problems (_path_problems): a rebuild does not mend them.
PATH_PROBLEMS = ("does not resolve", "could not be mapped")


def needs_rebuild(problem: str) -> bool:
    """A problem `rooftop doctor --rebuild` mends (not a missing documents
    folder, nor a database a newer rooftop wrote)."""
    return not any(w in problem for w in (*PATH_PROBLEMS, NEWER))


def advice(problems: list[str], results: str | Path) -> str | None:
    """What to do about the problems check() found (None: nothing doctor does)."""
    if any(NEWER in p for p in problems):
        return f"upgrade rooftop: {results} was written by a newer one (rooftop doctor rebuilds no newer database)"
    mend = [p for p in problems if needs_rebuild(p)]
    if mend and all("--recover" in p for p in mend):
        return f"bring them in: rooftop doctor --results {results} --recover"
    if mend:
        return f"rebuild from the engine documents: rooftop doctor --results {results} --rebuild"
    return None


def _old_path(store: Store, run_id: str, raw: str) -> str:
    """An old row's documents folder as add_sample takes it (a path to open)."""
    mapped = paths.map_old(store.dir, run_id, raw)
    return raw if mapped is None else paths.resolved(store.dir, mapped)


def _path_problems(store: Store, run_id: str) -> list[str]:
    """A run's stored paths that do not resolve in its results folder:
    each sample's engine documents folder, and what migration 13 could not
    map (store.paths)."""
    out = []
    missing = store.unresolved_paths(run_id)
    if missing:
        shown = "; ".join(f"sample {k}: {p}" for k, p in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        out.append(
            f"run {run_id}: {len(missing)} sample(s) name an engine documents folder that {PATH_PROBLEMS[0]} "
            f"in {store.dir} ({shown}{more}): their latency and the pair rounds' records "
            f"are missing from the report; copy the folders back under {store.dir / run_id / 'raw'}"
        )
    unmapped = store.db.execute(
        "SELECT key, path FROM unmapped_paths WHERE run_id = ? ORDER BY key", (run_id,)
    ).fetchall()
    if unmapped:
        out.append(
            f"run {run_id}: {len(unmapped)} sample path(s) from an older rooftop {PATH_PROBLEMS[1]} "
            f"into {store.dir} when its database was upgraded (e.g. sample {unmapped[0]['key']}: "
            f"{unmapped[0]['path']})"
        )
    return out


def _salvage(db: Path) -> tuple[dict[str, dict], dict[str, list[dict]]]:
    """Rows still readable in a damaged database: runs by id, samples by run
    (columns renamed since it was written under their new names)."""
    runs: dict[str, dict] = {}
    samples: dict[str, list[dict]] = {}
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        con.row_factory = sqlite3.Row
        runs = {r["id"]: dict(r) for r in con.execute("SELECT * FROM runs")}
        top = con.execute("SELECT MAX(id) FROM samples").fetchone()[0] or 0
    except sqlite3.Error:
        return runs, samples
    for lo in range(0, top + 1, 50):  # a damaged page loses its chunk only
        try:
            rows = con.execute("SELECT * FROM samples WHERE id BETWEEN ? AND ?", (lo, lo + 49)).fetchall()
        except sqlite3.Error:
            continue
        for r in rows:
            row = renamed("samples", dict(r))
            samples.setdefault(row["run_id"], []).append(row)
    con.close()
    return runs, samples


def recover(results: str | Path) -> list[str]:
    """Brings every measured window the engine documents hold, and the
    database lacks, into the database (rooftop doctor --recover)."""
    store = Store(results, create=False)
    said = []
    try:
        for run in store.runs():
            if run.status == "running":  # its campaign is alive and stores its rounds itself
                said.append(f"run {run.id}: left alone: its campaign (pid {run.owner[0]}) is running")
                continue
            if run.status != "unknown":  # its owner is gone: the time it could not add is added (once)
                lost, why = recover_time(store, run.id)
                if lost > 0:
                    said.append(f"run {run.id}: run time: {lost:.1f} s added for an earlier {why}")
            try:
                rows = recover_run(store, run.id, run.config)
            except (KeyError, TypeError, ValueError) as e:
                said.append(f"run {run.id}: not recovered: its documents or config cannot be read ({e!r})")
                continue
            if not rows:
                continue
            status, note = run_status(store, run.id, run.config)
            store.set_status(
                run.id, status, "; ".join(filter(None, [f"{len(rows)} samples recovered by rooftop doctor", note]))
            )
            said.append(
                f"run {run.id}: {len(rows)} samples recovered from engine documents: "
                + ", ".join(r["key"] for r in rows)
            )
    finally:
        store.close()
    return said


def _run_config(run_dir: Path, old: dict | None) -> dict:
    """A run's resolved config: its config.json, else the old database's
    copy; raises ValueError (or KeyError) when neither is usable."""
    for text in (lambda: (run_dir / "config.json").read_text(), lambda: old["config"] if old else ""):
        try:
            cfg = json.loads(text())
        except (OSError, ValueError, TypeError):
            continue
        if isinstance(cfg, dict) and isinstance(cfg.get("nodes"), list) and "launcher" in cfg:
            cfg = up_to_date(cfg)  # as the store loads a run's: renamed keys, keys declared since
            planned_rounds(cfg)  # a config the planner cannot read raises here, not halfway
            return cfg
    raise ValueError("no readable config")


def _restore_run(store: Store, run_id: str, cfg: dict, old: dict | None) -> None:
    # A run id starts with the local time it was made (store.runs): UTC, as every stored time.
    created = utc_stamp(
        old["created"] if old else time.strftime("%Y-%m-%dT%H:%M:%S", time.strptime(run_id[:15], "%Y%m%d-%H%M%S"))
    )
    env = old["environment"] if old else json.dumps({"rebuilt_by": "rooftop doctor"})
    store.db.execute(
        "INSERT INTO runs (id, created, updated, status, config, environment, wall_s) "
        "VALUES (?, ?, ?, 'interrupted', ?, ?, ?)",
        (run_id, created, now_iso(), json.dumps(cfg), env, old["wall_s"] if old else 0.0),
    )
    store.put_params(run_id, cfg)
    store.db.commit()


def _move_aside(db: Path) -> Path:
    aside = db.with_name(f"rooftop.db.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
    for suffix in ("", "-journal", "-wal", "-shm"):
        f = Path(str(db) + suffix)
        if f.exists():
            f.rename(Path(str(aside) + suffix))
    return aside


def _restore_interference(store: Store, d: Path) -> list[str]:
    """rooftop interfere's tables, from each isolated run's interference.json."""
    said = []
    for run_dir in _run_dirs(d):
        doc = read_summary(run_dir)
        if doc is not None:
            store.add_interference(doc)
            said.append(f"run {run_dir.name}: interference of {len(doc['conditions'])} loaded run(s) restored")
    return said


def rebuild(results: str | Path) -> list[str]:
    """A new database from the engine documents (and what the old one still
    holds); the old one is kept beside it. Returns what was done."""
    d = Path(results)
    db = d / "rooftop.db"
    refuse_newer(db)  # a newer rooftop's database: never replaced by an older schema
    old_runs, old_samples = _salvage(db) if db.exists() else ({}, {})
    carried = {t: _salvage_table(db, t) for t in CARRIED} if db.exists() else {}
    said = [f"moved {db} to {_move_aside(db)}"] if db.exists() else []
    store = Store(d)
    restored: dict[str, dict] = {}  # run id -> its config
    for run_id in sorted(set(old_runs) | {p.name for p in _run_dirs(d)}):
        try:  # one damaged run never stops the rebuild of the others
            cfg = _run_config(d / run_id, old_runs.get(run_id))
            rows = rows_from_documents(d / run_id, cfg)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
            said.append(
                f"run {run_id}: NOT rebuilt: its config.json ({d / run_id / 'config.json'}) is "
                f"damaged and the old database holds no copy ({type(e).__name__}: {e}); "
                f"its engine documents are left as they are"
            )
            continue
        _restore_run(store, run_id, cfg, old_runs.get(run_id))
        restored[run_id] = cfg
        have = {r["key"] for r in rows}
        kept = [
            dict(
                r,
                server_nodes=json.loads(r["server_nodes"]),
                client_nodes=json.loads(r["client_nodes"]),
                raw_dir=_old_path(store, run_id, r["raw_dir"]),
            )
            for r in old_samples.get(run_id, [])
            if r["key"] not in have
        ]
        store_rows(store, rows + kept)
        status, note = run_status(store, run_id, cfg)
        store.set_status(run_id, status, "; ".join(filter(None, ["rebuilt by rooftop doctor", note])))
        said.append(
            f"run {run_id}: {len(rows)} samples from engine documents, {len(kept)} from the "
            f"old database; {status}" + (f" ({note})" if note else "")
        )
    said += _carry_tables(store, carried, restored)
    said += _restore_service_points(store, d, restored, carried)
    said += _restore_interference(store, d)
    store.close()
    return said


#: Tables that neither the engine documents nor the plan rebuild: --rebuild
#: carries their rows over from the old database (STUDY_TABLES: service
#: points and specs, named baselines; and the time series and tune steps).
#: Measured service points are also read again from their folders
#: (_restore_service_points).
CARRIED = (*STUDY_TABLES, "series", "tune_steps")


def _salvage_table(db: Path, table: str) -> tuple[list[dict], str]:
    """(the rows of a table still readable in the old database, under its
    columns' new names; why some or all could not be read: '' when none
    was lost). A table it never had: no rows, nothing lost."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    except sqlite3.Error as e:
        return [], str(e)
    con.row_factory = sqlite3.Row
    rows: list[dict] = []
    lost = ""
    try:
        if con.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone():
            try:
                rows = [dict(r) for r in con.execute(f"SELECT * FROM {table}")]
            except sqlite3.Error as e:  # a damaged page: read around it, 50 rows at a time
                top = con.execute(f"SELECT MAX(rowid) FROM {table}").fetchone()[0] or 0
                bad = 0
                for lo in range(0, top + 1, 50):
                    try:
                        rows += [
                            dict(r)
                            for r in con.execute(f"SELECT * FROM {table} WHERE rowid BETWEEN ? AND ?", (lo, lo + 49))
                        ]
                    except sqlite3.Error:
                        bad += 1
                lost = f"{bad} damaged part(s) of it could not be read ({e})"
    except sqlite3.Error as e:  # (a table without rowid cannot be read around a damaged page)
        lost = lost or f"it could not be read ({e})"
    finally:
        con.close()
    return [renamed(table, row) for row in rows], lost


def _carry_tables(store: Store, carried: dict[str, tuple[list[dict], str]], restored: dict[str, dict]) -> list[str]:
    """The rows salvaged from the old database's CARRIED tables, into the
    new one: those of runs rebuilt (a baseline outlives its run: every one);
    says what was carried and what could not be."""
    said = []
    for table, (rows, lost) in carried.items():
        cols = {r[1] for r in store.db.execute(f"PRAGMA table_info({table})")}
        n, orphans = 0, set()
        for row in rows:
            if table != "baselines" and row.get("run_id") not in restored:
                orphans.add(str(row.get("run_id")))
                continue
            row = {k: v for k, v in row.items() if k in cols}
            n += store.db.execute(
                f"INSERT OR IGNORE INTO {table} ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                tuple(row.values()),
            ).rowcount
        store.db.commit()
        if n:
            said.append(f"{table}: {n} row(s) carried over from the old database")
        if orphans:
            said.append(f"{table}: the rows of run(s) not rebuilt ({', '.join(sorted(orphans))}) could not be restored")
        if lost:
            why = f"{table}: NOT all restored: {lost}"
            if table == "service_points":
                why += (
                    "; measured points are read again from their folders (RUN/service/NAME/), imported points "
                    "exist only in the database: those in the unreadable part are lost"
                )
            said.append(why)
    return said


def _restore_service_points(
    store: Store, d: Path, restored: dict[str, dict], carried: dict[str, tuple[list[dict], str]]
) -> list[str]:
    """Measured service points the old database did not give, read again
    from each rebuilt run's service folders (rooftop.service.recover)."""

    said = []
    old_specs: dict[str, dict[str, dict]] = {}
    for row in carried.get("service_specs", ([], ""))[0]:
        try:
            old_specs.setdefault(row["run_id"], {})[row["service"]] = json.loads(row["spec"])
        except (KeyError, TypeError, ValueError):
            continue
    for run_id, cfg in restored.items():
        if not (d / run_id / "service").is_dir():
            continue
        pts, specs, lost = points_from_documents(d / run_id, cfg, old_specs.get(run_id, {}))
        have = points.specs(store, run_id)
        for name, spec in specs.items():
            if name not in have:
                points.save_spec(store, run_id, name, spec["metric"], spec)
        done = {name: points.done_keys(store, run_id, name) for name in {p.service for p in pts}}
        new = [p for p in pts if p.key not in done[p.service]]
        for p in new:
            points.add(store, run_id, p)
        if new:
            said.append(
                f"run {run_id}: {len(new)} service point(s) read again from {d / run_id / 'service'}: "
                + ", ".join(f"{p.service} {p.key}" for p in new)
            )
        said += [f"run {run_id}: {line}" for line in lost]
    return said
