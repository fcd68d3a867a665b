"""Results store: SQLite, one database per results folder.

runs     one campaign: its resolved config, environment, status, timing
samples  one measurement: stage, metric, which nodes and how many processes,
         the aggregate and per-process rates, the engine's errors, and the
         folder holding every engine document of that sample

Each sample is committed the moment it is measured, so an interrupted
campaign loses nothing it finished.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id          TEXT PRIMARY KEY,
    created     TEXT NOT NULL,
    updated     TEXT NOT NULL,
    status      TEXT NOT NULL,          -- running | complete | interrupted | failed
    config      TEXT NOT NULL,          -- resolved config (JSON)
    environment TEXT NOT NULL,          -- host, launcher, engine version (JSON)
    wall_s      REAL NOT NULL DEFAULT 0,    -- time spent running this campaign
    measured_s  REAL NOT NULL DEFAULT 0,    -- time inside measurement windows
    note        TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS samples (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id        TEXT NOT NULL REFERENCES runs(id),
    key           TEXT NOT NULL,        -- identifies the measurement within the run
    stage         TEXT NOT NULL,        -- server_peak | client_peak | client_node | sweep_servers | validate
    metric        TEXT NOT NULL,        -- rpc | bw
    unit          TEXT NOT NULL,        -- ops/s | bytes/s
    server_nodes  TEXT NOT NULL,        -- JSON list of node indices
    client_nodes  TEXT NOT NULL,
    server_procs  INTEGER NOT NULL,
    client_procs  INTEGER NOT NULL,
    x             REAL NOT NULL,        -- server processes / client processes
    sample        INTEGER NOT NULL,
    status        TEXT NOT NULL,        -- ok | failed
    aggregate     REAL,                 -- sum of the client processes' rates
    per_server    REAL,                 -- aggregate / server processes
    per_client    REAL,                 -- aggregate / client processes
    measured_s    REAL NOT NULL DEFAULT 0,
    error         TEXT NOT NULL DEFAULT '',
    raw_dir       TEXT NOT NULL DEFAULT '',
    late_s        REAL NOT NULL DEFAULT 0,  -- latest client's lateness to the common start (--measure-at)
    created       TEXT NOT NULL,
    UNIQUE (run_id, key)
);
"""

SAMPLE_COLUMNS = ["run_id", "key", "stage", "metric", "unit", "server_nodes", "client_nodes",
                  "server_procs", "client_procs", "x", "sample", "status", "aggregate",
                  "per_server", "per_client", "measured_s", "error", "raw_dir", "late_s", "created"]


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime())


class StoreError(RuntimeError):
    pass


@dataclass
class Run:
    id: str
    created: str
    updated: str
    status: str
    config: dict
    environment: dict
    wall_s: float
    measured_s: float
    note: str

    @property
    def overhead(self) -> float | None:
        """Share of the run's time spent outside measurement windows."""
        if self.wall_s <= 0:
            return None
        return max(0.0, 1.0 - self.measured_s / self.wall_s)


class Store:
    def __init__(self, results_dir: str | Path):
        self.dir = Path(results_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / "rooftop.db"
        self.db = sqlite3.connect(self.path, timeout=30)
        self.db.row_factory = sqlite3.Row
        self.db.executescript(SCHEMA)
        # Databases written before a column existed get it (default value).
        have = {r["name"] for r in self.db.execute("PRAGMA table_info(samples)")}
        if "late_s" not in have:
            self.db.execute("ALTER TABLE samples ADD COLUMN late_s REAL NOT NULL DEFAULT 0")
        self.db.commit()

    def close(self) -> None:
        self.db.close()

    def run_dir(self, run_id: str) -> Path:
        return self.dir / run_id

    # runs
    def new_run(self, config: dict, environment: dict) -> str:
        run_id = time.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)
        t = now_iso()
        self.db.execute("INSERT INTO runs (id, created, updated, status, config, environment) "
                        "VALUES (?, ?, ?, 'running', ?, ?)",
                        (run_id, t, t, json.dumps(config), json.dumps(environment)))
        self.db.commit()
        self.run_dir(run_id).mkdir(parents=True, exist_ok=True)
        (self.run_dir(run_id) / "config.json").write_text(json.dumps(config, indent=2))
        return run_id

    def get_run(self, run_id: str) -> Run:
        row = self.db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            known = [r["id"] for r in self.db.execute("SELECT id FROM runs ORDER BY created DESC LIMIT 5")]
            hint = f"; recent runs: {', '.join(known)}" if known else "; there are no runs yet"
            raise StoreError(f"no run '{run_id}' in {self.path}{hint}")
        return Run(row["id"], row["created"], row["updated"], row["status"], json.loads(row["config"]),
                   json.loads(row["environment"]), row["wall_s"], row["measured_s"], row["note"])

    def runs(self) -> list[Run]:
        ids = [r["id"] for r in self.db.execute("SELECT id FROM runs ORDER BY created, id")]
        return [self.get_run(i) for i in ids]

    def set_status(self, run_id: str, status: str, note: str = "") -> None:
        self.db.execute("UPDATE runs SET status = ?, note = ?, updated = ? WHERE id = ?",
                        (status, note, now_iso(), run_id))
        self.db.commit()

    def update_config(self, run_id: str, config: dict) -> None:
        self.db.execute("UPDATE runs SET config = ?, updated = ? WHERE id = ?",
                        (json.dumps(config), now_iso(), run_id))
        self.db.commit()
        (self.run_dir(run_id) / "config.json").write_text(json.dumps(config, indent=2))

    def add_time(self, run_id: str, wall_s: float) -> None:
        self.db.execute("UPDATE runs SET wall_s = wall_s + ?, updated = ? WHERE id = ?",
                        (wall_s, now_iso(), run_id))
        self.db.commit()

    # samples
    def done_keys(self, run_id: str) -> set[str]:
        return {r["key"] for r in self.db.execute(
            "SELECT key FROM samples WHERE run_id = ? AND status = 'ok'", (run_id,))}

    def stored_keys(self, run_id: str) -> set[str]:
        """Keys with a row, measured or failed."""
        return {r["key"] for r in self.db.execute("SELECT key FROM samples WHERE run_id = ?", (run_id,))}

    def add_sample(self, run_time_s: float | None = None, **s) -> None:
        """Stores one sample row. run_time_s: what it adds to the run's
        measured time (default its measured_s; rows measured at the same
        time, such as concurrent pairs, add it once)."""
        s.setdefault("created", now_iso())
        s.setdefault("late_s", 0.0)
        s["server_nodes"] = json.dumps(s["server_nodes"])
        s["client_nodes"] = json.dumps(s["client_nodes"])
        cols = ", ".join(SAMPLE_COLUMNS)
        marks = ", ".join("?" for _ in SAMPLE_COLUMNS)
        # A failed sample retried on resume replaces its earlier attempt.
        self.db.execute(f"INSERT OR REPLACE INTO samples ({cols}) VALUES ({marks})",
                        [s[c] for c in SAMPLE_COLUMNS])
        self.db.execute("UPDATE runs SET measured_s = measured_s + ?, updated = ? WHERE id = ?",
                        (s["measured_s"] if run_time_s is None else run_time_s, now_iso(), s["run_id"]))
        self.db.commit()

    def samples(self, run_id: str, stage: str | None = None, metric: str | None = None) -> list[dict]:
        q = "SELECT * FROM samples WHERE run_id = ?"
        args: list = [run_id]
        if stage:
            q += " AND stage = ?"
            args.append(stage)
        if metric:
            q += " AND metric = ?"
            args.append(metric)
        out = []
        for r in self.db.execute(q + " ORDER BY id", args):
            d = dict(r)
            d["server_nodes"] = json.loads(d["server_nodes"])
            d["client_nodes"] = json.loads(d["client_nodes"])
            out.append(d)
        return out
