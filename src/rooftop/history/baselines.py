"""Named baselines in the results database: a run's ceilings per metric
(with what makes them comparable) kept under a name, so that `rooftop check
RUN --against NAME` compares with them even after the run is gone. Their
table, baselines, is in the store's numbered migrations (rooftop.store.schema,
migration 18; before it, it was created on first use)."""

from __future__ import annotations

import json

from rooftop.history.series import RunCeilings, of_run
from rooftop.store.records import StoreError, now_iso
from rooftop.store.schema import BASELINES_DDL as DDL


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


def load(store, name: str) -> tuple[str, dict[str, RunCeilings]] | None:
    """(run id, {metric: ceilings}) of baseline `name`, None when there is none."""
    if not _exists(store):
        return None
    row = store.db.execute("SELECT run_id, ceilings FROM baselines WHERE name = ?", (name,)).fetchone()
    if row is None:
        return None
    return row[0], {m: RunCeilings.from_dict(d) for m, d in json.loads(row[1]).items()}


def names(store) -> list[tuple[str, str, str]]:
    """(name, run id, saved) of every baseline."""
    if not _exists(store):
        return []
    return [tuple(r) for r in store.db.execute("SELECT name, run_id, created FROM baselines ORDER BY name")]
