"""A service's points (ServicePoint) and their table in the results database.

One point is one sample of a third-party service at one placement: server
processes, client processes, and the rate its clients reached, in the unit
of the rooftop metric it is compared with (rpc: ops/s, bw: bytes/s, …).
Points are stored beside the run's engine samples, in a table of their own
(service_points), so that nothing computed from engine samples (ceilings,
outliers, learned models) ever takes a service point by mistake; and the
spec of each service in service_specs. Both tables are in the store's
numbered migrations (rooftop.store.schema, migration 18); before it they
were created on first use, and a database a reader finds without them
(one opened without the store) has no service points.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from rooftop.store.schema import POINTS_DDL, SPECS_DDL

#: Where a point came from.
SOURCES = ("measured", "imported")


@dataclass(frozen=True)
class ServicePoint:
    service: str
    metric: str
    unit: str
    server_procs: int
    client_procs: int
    sample: int
    status: str
    aggregate: float | None
    key: str = ""
    error: str = ""
    source: str = "measured"
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
        return self.key or f"s{self.server_procs}-c{self.client_procs}-{self.sample}"


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


def add(store, run_id: str, point: ServicePoint) -> None:
    """Stores one point at once (committed: a Ctrl-C after it loses nothing)."""
    from rooftop.store.records import now_iso

    if point.source not in SOURCES:
        raise ValueError(f"point source {point.source!r} is not one of {', '.join(SOURCES)}")
    _ensure(store.db)
    store.db.execute(
        "INSERT OR REPLACE INTO service_points (run_id, service, key, metric, unit, server_procs, client_procs, "
        "x, sample, status, aggregate, per_client, measured_s, error, source, detail, created) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            run_id, point.service, point.the_key(), point.metric, point.unit, point.server_procs,
            point.client_procs, point.x, point.sample, point.status, point.aggregate, point.per_client,
            point.measured_s, point.error, point.source, json.dumps(point.detail, sort_keys=True), now_iso(),
        ),
    )  # fmt: skip
    store.db.commit()


def done_keys(store, run_id: str, service: str) -> set[str]:
    """Keys of the points of a service already stored in a run (--resume skips them)."""
    if not _exists(store.db):
        return set()
    rows = store.db.execute("SELECT key FROM service_points WHERE run_id = ? AND service = ?", (run_id, service))
    return {k for (k,) in rows}


def load(store, run_id: str, service: str | None = None) -> list[ServicePoint]:
    """A run's service points (of one service, or all), in placement order."""
    if not _exists(store.db):
        return []
    sql = (
        "SELECT service, metric, unit, server_procs, client_procs, sample, status, aggregate, key, error, "
        "source, measured_s, detail FROM service_points WHERE run_id = ?"
    )
    args: tuple = (run_id,)
    if service is not None:
        sql += " AND service = ?"
        args += (service,)
    sql += " ORDER BY service, x, server_procs, client_procs, sample"
    out = []
    for r in store.db.execute(sql, args):
        out.append(ServicePoint(*r[:12], detail=json.loads(r[12])))
    return out


def as_dict(point: ServicePoint) -> dict:
    """A point as plain data (JSON output), with x and per_client."""
    return {**asdict(point), "x": point.x, "per_client": point.per_client}
