"""Named baselines in the results database: a run's ceilings per metric
(with what makes them comparable) kept under a name, so that `rooftop check
RUN --against NAME` compares with them even after the run is gone. Their
table, baselines, is created on first use (CREATE TABLE IF NOT EXISTS): a
database without it has no baselines. A stored ceiling that is not a rate
is left out and named (load: RunCeilings.damaged), never a traceback."""

from __future__ import annotations

import json

from rooftop.history.series import RunCeilings, of_run
from rooftop.numbers import rate_problem
from rooftop.store import damage
from rooftop.store.records import StoreError, now_iso

DDL = """CREATE TABLE IF NOT EXISTS baselines (
    name      TEXT PRIMARY KEY,      -- what `check --against` names
    run_id    TEXT NOT NULL,         -- the run it was taken from
    created   TEXT NOT NULL,         -- when it was saved
    ceilings  TEXT NOT NULL          -- JSON: {metric: RunCeilings.to_dict()}
)"""


def _table(store) -> None:
    store.db.execute(DDL)


def save(store, name: str, run_id: str) -> dict[str, RunCeilings]:
    """Stores run_id's ceilings as baseline `name` (replacing one of that name)."""
    if not name or not name.replace("-", "").replace("_", "").replace(".", "").isalnum():
        raise StoreError(f"baseline name {name!r}: use letters, digits, '-', '_' or '.'")
    run = store.get_run(run_id)
    if run.status != "complete":
        raise StoreError(f"run {run_id} is {run.status}: only a complete run can be a baseline")
    got = of_run(store, run_id)
    if not got:
        raise StoreError(f"run {run_id} has no metric whose ceilings can be built (see 'rooftop model {run_id}')")
    _table(store)
    store.db.execute(
        "INSERT OR REPLACE INTO baselines (name, run_id, created, ceilings) VALUES (?, ?, ?, ?)",
        (name, run_id, now_iso(), json.dumps({m: rc.to_dict() for m, rc in got.items()})),
    )
    store.db.commit()
    return got


def _exists(store) -> bool:
    """Whether the table is there (a reader creates nothing: the folder may be read-only)."""
    q = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'baselines'"
    return store.db.execute(q).fetchone() is not None


def load(store, name: str, damaged: dict[str, str] | None = None) -> tuple[str, dict[str, RunCeilings]] | None:
    """(run id, {metric: ceilings}) of baseline `name`, None when there is
    none. damaged: filled with {metric: why} for the metrics that cannot be
    read ('' for all of them: the stored ceilings are not a JSON object)."""
    if not _exists(store):
        return None
    row = store.db.execute("SELECT run_id, ceilings FROM baselines WHERE name = ?", (name,)).fetchone()
    if row is None:
        return None
    where = f"baseline {name} (run {row[0]})"
    try:
        stored = json.loads(row[1])
    except (TypeError, ValueError):
        stored = None
    if not isinstance(stored, dict):
        why = f"ceilings = {str(row[1])[:40]!r} (not a JSON object of metrics)"
        damage.note(f"{where}: {why}")
        if damaged is not None:
            damaged[""] = f"{damage.DAMAGED}: {why}"
        return row[0], {}
    out = {}
    for m, d in stored.items():
        rc = _checked(f"{where} {m}", d)
        if rc is not None:
            out[m] = rc
        elif damaged is not None:
            damaged[m] = f"{damage.DAMAGED}: its stored ceilings cannot be read"
    return row[0], out


def _checked(where: str, d) -> RunCeilings | None:
    """A stored metric's ceilings; a ceiling whose median or interval is not
    a rate (rooftop.numbers.rate_problem) is noted (rooftop.store.damage),
    left out and named in RunCeilings.damaged; a metric that cannot be read
    at all is noted and None."""
    try:
        rc = RunCeilings.from_dict(d)
    except (KeyError, TypeError, ValueError, AttributeError):
        damage.note(f"{where}: {str(d)[:60]!r} (not a stored metric's ceilings)")
        return None
    for name, p in list(rc.ceilings.items()):
        bad = [f"median = {rate_problem(p.median)}"] if rate_problem(p.median) else []
        bounds = p.interval or ()
        if p.interval is not None and (len(bounds) != 2 or any(rate_problem(b, measured=False) for b in bounds)):
            bad.append(f"ci95 = {list(bounds)!r} (not two rates)")
        if bad:
            why = ", ".join(bad)
            damage.note(f"{where} {name} ceiling: {why}")
            rc.damaged[name] = f"{damage.DAMAGED}: {why}"
            del rc.ceilings[name]
    return rc


def names(store) -> list[tuple[str, str, str]]:
    """(name, run id, saved) of every baseline."""
    if not _exists(store):
        return []
    return [tuple(r) for r in store.db.execute("SELECT name, run_id, created FROM baselines ORDER BY name")]
