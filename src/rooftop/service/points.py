"""A service's points (ServicePoint) and their table in the results database.

One point is one window of a third-party service at one placement (its
`window`: 0, 1, ...): server processes, client processes, and the rate its
clients reached, in the unit of the rooftop metric it is compared with
(rpc: ops/s, bw: bytes/s, …), measured by rooftop or imported (its
`origin`: ORIGINS).
Points are stored beside the run's engine samples, in a table of their own
(service_points), so that nothing computed from engine samples (ceilings,
outliers, learned models) ever takes a service point by mistake; and the
spec of each service in service_specs. Both tables are in the store's
numbered migrations (rooftop.store.schema, migration 18; migration 19
renamed the columns sample and source to window and origin); before it they
were created on first use, and a database a reader finds without them
(one opened without the store) has no service points.

load is the one reader of points: a row damaged in the database (an
aggregate that is not a rate, counts that are not counts) is named once
and left out (rooftop.store.damage), never a traceback. add_all stores
many points (an import) in one transaction, all or none.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from rooftop.store import damage
from rooftop.store.records import StoreError, now_iso
from rooftop.store.schema import POINTS_DDL, SPECS_DDL

#: Where a point came from (its origin).
ORIGINS = ("measured", "imported")

#: An add_all's points before they are written: the columns of
#: service_points, a key once per service.
STAGED_DDL = """CREATE TEMP TABLE staged_points (
    run_id TEXT, service TEXT, key TEXT, metric TEXT, unit TEXT, server_procs INTEGER, client_procs INTEGER,
    x REAL, window INTEGER, status TEXT, aggregate REAL, per_client REAL, measured_s REAL, error TEXT,
    origin TEXT, detail TEXT, created TEXT,
    PRIMARY KEY (service, key)
)"""


@dataclass(frozen=True)
class ServicePoint:
    service: str
    metric: str
    unit: str
    server_procs: int
    client_procs: int
    window: int
    status: str
    aggregate: float | None
    key: str = ""
    error: str = ""
    origin: str = "measured"
    measured_s: float = 0.0
    detail: dict = field(default_factory=dict)

    @property
    def x(self) -> float:
        """Server processes per client process (the roofline's x)."""
        return self.server_procs / self.client_procs

    @property
    def per_client(self) -> float | None:
        return None if self.aggregate is None else self.aggregate / self.client_procs

    def the_key(self) -> str:
        return self.key or f"s{self.server_procs}-c{self.client_procs}-{self.window}"


def _ensure(db) -> None:
    """Creates the tables (before a write)."""
    db.execute(POINTS_DDL)
    db.execute(SPECS_DDL)


def _exists(db) -> bool:
    """Whether the tables are there (a reader creates nothing: the results
    folder may be someone else's, or read-only)."""
    return (
        db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'service_points'").fetchone()
        is not None
    )


def save_spec(store, run_id: str, service: str, metric: str, spec: dict) -> None:
    """Records (or replaces) the resolved spec a run's service points came from."""
    _ensure(store.db)
    store.db.execute(
        "INSERT OR REPLACE INTO service_specs (run_id, service, metric, spec) VALUES (?, ?, ?, ?)",
        (run_id, service, metric, json.dumps(spec, sort_keys=True)),
    )
    store.db.commit()


def specs(store, run_id: str) -> dict[str, dict]:
    """The resolved specs of a run's services, by name."""
    if not _exists(store.db):
        return {}
    rows = store.db.execute("SELECT service, spec FROM service_specs WHERE run_id = ? ORDER BY service", (run_id,))
    return {name: json.loads(spec) for name, spec in rows}


#: The columns a point is written to, in _row's order.
_WRITTEN = (
    "run_id", "service", "key", "metric", "unit", "server_procs", "client_procs", "x", "window", "status",
    "aggregate", "per_client", "measured_s", "error", "origin", "detail", "created",
)  # fmt: skip


def _row(run_id: str, point: ServicePoint, created: str) -> tuple:
    if point.origin not in ORIGINS:
        raise ValueError(f"point origin {point.origin!r} is not one of {', '.join(ORIGINS)}")
    return (
        run_id, point.service, point.the_key(), point.metric, point.unit, point.server_procs,
        point.client_procs, point.x, point.window, point.status, point.aggregate, point.per_client,
        point.measured_s, point.error, point.origin, json.dumps(point.detail, sort_keys=True), created,
    )  # fmt: skip


def add(store, run_id: str, point: ServicePoint) -> None:
    """Stores one point at once (committed: a Ctrl-C after it loses nothing)."""
    _ensure(store.db)
    store.db.execute(
        f"INSERT OR REPLACE INTO service_points ({', '.join(_WRITTEN)}) VALUES ({', '.join('?' * len(_WRITTEN))})",
        _row(run_id, point, now_iso()),
    )
    store.db.commit()


class DuplicatePoint(ValueError):
    """Two points of one add_all with the same service and key: the later
    point, and the earlier one's detail (an import's file and line)."""

    def __init__(self, point: ServicePoint, earlier: dict):
        super().__init__(f"{point.service} point {point.the_key()} given twice")
        self.point, self.earlier = point, earlier


def add_all(store, run_id: str, pts: Iterable[ServicePoint]) -> int:
    """Stores points in one transaction, all or none, and returns how many:
    pts is consumed one at a time (a generator reading a file keeps the
    memory flat), staged in a temporary table that refuses a key given
    twice (DuplicatePoint), then written over the run's points of the same
    keys and committed once. Any error from pts, a duplicate, Ctrl-C or a
    kill before the commit leaves the run's points as they were."""
    created = now_iso()
    db = store.db
    current: list[ServicePoint] = []

    def rows():
        for p in pts:
            current[:] = [p]
            yield _row(run_id, p, created)

    cols, marks = ", ".join(_WRITTEN), ", ".join("?" * len(_WRITTEN))
    try:
        db.execute("BEGIN IMMEDIATE")  # the write lock first: no other writer between the lines
        _ensure(db)
        db.execute("DROP TABLE IF EXISTS temp.staged_points")
        db.execute(STAGED_DDL)
        try:
            db.executemany(f"INSERT INTO temp.staged_points ({cols}) VALUES ({marks})", rows())
        except sqlite3.IntegrityError:
            p = current[0]
            got = db.execute(
                "SELECT detail FROM temp.staged_points WHERE service = ? AND key = ?", (p.service, p.the_key())
            ).fetchone()
            raise DuplicatePoint(p, json.loads(got[0]) if got else {}) from None
        count = db.execute("SELECT COUNT(*) FROM temp.staged_points").fetchone()[0]
        db.execute(f"INSERT OR REPLACE INTO service_points ({cols}) SELECT {cols} FROM temp.staged_points")
        db.execute("DROP TABLE temp.staged_points")
        db.commit()
        return count
    except BaseException as e:
        db.rollback()
        if isinstance(e, sqlite3.Error):
            raise StoreError(store.explain(e)) from None
        raise


def done_keys(store, run_id: str, service: str) -> set[str]:
    """Keys of the points of a service already stored in a run (--resume skips them)."""
    if not _exists(store.db):
        return set()
    rows = store.db.execute("SELECT key FROM service_points WHERE run_id = ? AND service = ?", (run_id, service))
    return {k for (k,) in rows}


#: The columns load reads, in ServicePoint's order (detail last).
_COLUMNS = (
    "service", "metric", "unit", "server_procs", "client_procs", "window", "status", "aggregate", "key", "error",
    "origin", "measured_s", "detail",
)  # fmt: skip


def load(store, run_id: str, service: str | None = None) -> list[ServicePoint]:
    """A run's service points (of one service, or all), in placement order;
    damaged rows as _checked reads them."""
    if not _exists(store.db):
        return []
    sql = f"SELECT {', '.join(_COLUMNS)} FROM service_points WHERE run_id = ?"
    args: tuple = (run_id,)
    if service is not None:
        sql += " AND service = ?"
        args += (service,)
    sql += " ORDER BY service, x, server_procs, client_procs, window"
    out = []
    for r in store.db.execute(sql, args):
        p = _checked(run_id, dict(r))
        if p is not None:
            out.append(p)
    return out


def _checked(run_id: str, r: dict) -> ServicePoint | None:
    """A stored row as a point; a damaged one (rooftop.store.damage) is
    noted by name: one whose rate is not a rate reads invalid, its
    aggregate null; one whose detail is not JSON reads {}; one whose
    process counts are not counts (the point has no x) is left out."""
    where = f"run {run_id} service {r['service']} point {r['key']}"
    counts = [c for c in ("server_procs", "client_procs") if isinstance(r[c], bool) or not isinstance(r[c], int)]
    counts += [c for c in ("server_procs", "client_procs") if c not in counts and r[c] < 1]
    if counts:
        damage.note(f"{where}: " + ", ".join(f"{c} = {r[c]!r} (not a process count)" for c in counts))
        return None
    try:
        detail = json.loads(r["detail"])
    except (TypeError, ValueError):
        damage.note(f"{where}: detail = {str(r['detail'])[:40]!r} (not JSON)")
        detail = {}
    damage.mark(r, ("aggregate",), where)
    return ServicePoint(**{c: r[c] for c in _COLUMNS[:12]}, detail=detail)


def as_dict(point: ServicePoint) -> dict:
    """A point as plain data (JSON output), with x and per_client."""
    return {**asdict(point), "x": point.x, "per_client": point.per_client}
