"""Results store: SQLite, one database per results folder.

runs     one campaign: its resolved config, environment, status, timing
samples  one measurement: stage, metric, which nodes and how many processes,
         the aggregate and per-process rates, the engine's errors, and the
         folder holding every engine document of that sample

Each sample is committed the moment it is measured, so an interrupted
campaign loses nothing it finished.
"""

from __future__ import annotations

import functools
import json
import secrets
import os
import socket
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
    status        TEXT NOT NULL,        -- ok | failed | invalid (measured, unusable: error says why)
    aggregate     REAL,                 -- sum of the client processes' rates
    per_server    REAL,                 -- aggregate / server processes
    per_client    REAL,                 -- aggregate / client processes
    measured_s    REAL NOT NULL DEFAULT 0,
    error         TEXT NOT NULL DEFAULT '',
    raw_dir       TEXT NOT NULL DEFAULT '',
    late_s        REAL NOT NULL DEFAULT 0,  -- latest client's lateness to the common start (--measure-at)
    skew_s        REAL NOT NULL DEFAULT 0,  -- latest client's first-window start - earliest client's
    overlap       REAL NOT NULL DEFAULT 1,  -- share of the window all clients measured together
    barrier_s     REAL NOT NULL DEFAULT 0,  -- longest a client waited at the start barrier
    attempt       INTEGER NOT NULL DEFAULT 1, -- which measurement of the round this is (retries)
    concurrent    INTEGER NOT NULL DEFAULT 0, -- 1: measured with --allow-concurrent (locks not exclusive)
    foreign_cpu   REAL DEFAULT NULL,    -- cores' worth of CPU others used on the measured cores (NULL: not measured)
    created       TEXT NOT NULL,
    UNIQUE (run_id, key)
);
"""

# --- Which ceilings a sample stands for (issue 10, item 7) -------------------
# A placement that several collect stages would run identically (2 nodes:
# server peak, client peak and client node are one server and one client) is
# measured once; its rows say every stage they stand for. The stages are
# named in the key's first part ("server_peak+client_peak+client_node/rpc/...")
# and stored as a JSON list. '' (databases written before): just `stage`.
CEILINGS_DDL = "ALTER TABLE samples ADD COLUMN ceilings TEXT NOT NULL DEFAULT ''"

SAMPLE_COLUMNS = ["run_id", "key", "stage", "metric", "unit", "server_nodes", "client_nodes",
                  "server_procs", "client_procs", "x", "sample", "status", "aggregate",
                  "per_server", "per_client", "measured_s", "error", "raw_dir", "late_s", "skew_s", "overlap", "barrier_s",
                  "attempt", "concurrent", "foreign_cpu", "created"]
SAMPLE_COLUMNS += ["ceilings"]  # issue 10 item 7: see CEILINGS_DDL

#: Columns added after the first release, with their declarations (old
#: databases get them with the default).
ADDED_COLUMNS = {"late_s": "REAL NOT NULL DEFAULT 0", "skew_s": "REAL NOT NULL DEFAULT 0",
                 "overlap": "REAL NOT NULL DEFAULT 1", "barrier_s": "REAL NOT NULL DEFAULT 0",
                 "attempt": "INTEGER NOT NULL DEFAULT 1",
                 # issue 11 finding 3: concurrent campaigns and foreign load (rooftop.locks, rooftop.foreign)
                 "concurrent": "INTEGER NOT NULL DEFAULT 0", "foreign_cpu": "REAL DEFAULT NULL"}


def _default(decl: str):
    """The value a column declaration defaults to (a number, or None for NULL)."""
    text = decl.rsplit(" ", 1)[1]
    if text == "NULL":
        return None
    return float(text) if "REAL" in decl else int(text)


#: Columns added to runs: the campaign process that runs it (issue 11,
#: finding 2). A run 'running' whose owner is gone is shown interrupted.
ADDED_RUN_COLUMNS = {"owner_pid": "INTEGER NOT NULL DEFAULT 0", "owner_host": "TEXT NOT NULL DEFAULT ''",
                     "owner_start": "TEXT NOT NULL DEFAULT ''"}


def process_start(pid: int) -> str:
    """Identifies a process beyond its pid: boot id + start time (clock
    ticks since boot); '' if there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""
    return f"{boot}:{stat.rsplit(')', 1)[1].split()[19]}"


def owner_gone(pid: int, host: str, start: str) -> bool:
    """True when the recorded owner is known to be dead: on this host, no
    process with that pid and start time. Another host's: not known (False)."""
    if not pid or host != socket.gethostname():
        return False
    return process_start(pid) != start


def key_stages(key: str) -> list[str]:
    """The stages a sample key stands for: its first part, split on '+'."""
    return key.split("/", 1)[0].split("+")


def stands_for(row: dict) -> list[str]:
    """The collect stages (ceilings) a stored sample stands for."""
    text = row.get("ceilings") or ""
    return json.loads(text) if text else [row["stage"]]


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
    owner: tuple = (0, "", "")  # pid, host, process start of the campaign running it

    @property
    def overhead(self) -> float | None:
        """Share of the run's time spent outside measurement windows."""
        if self.wall_s <= 0:
            return None
        return max(0.0, 1.0 - self.measured_s / self.wall_s)


#: Databases up to this size are checked (PRAGMA quick_check) on every open.
QUICK_CHECK_BYTES = 256 << 20


def _guarded(method):
    """SQLite and file-system failures become StoreErrors naming the store."""
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as e:
            raise StoreError(self.explain(e)) from None
        except OSError as e:
            raise StoreError(f"results folder {self.dir}: {e.strerror or e}"
                             f"{' (' + str(e.filename) + ')' if e.filename else ''}; "
                             f"check its permissions and free space, or choose another --results") from None
    return call


class Store:
    """create: make the folder and database if missing (collect); else a
    missing store is a StoreError and nothing is created."""

    def __init__(self, results_dir: str | Path, create: bool = True):
        self.dir = Path(results_dir)
        self.path = self.dir / "rooftop.db"
        #: Values every sample this process stores gets (unless the row sets them).
        self.marks: dict = {}
        self._open(create)

    def explain(self, e: Exception) -> str:
        """One message for a database failure: the path and what to do."""
        text = str(e)
        if isinstance(e, sqlite3.DatabaseError) and any(
                w in text for w in ("not a database", "malformed", "corrupt", "damaged")):
            return (f"results database {self.path} is damaged ({text}): "
                    f"'rooftop doctor --results {self.dir} --rebuild' rebuilds it from the engine "
                    f"documents in {self.dir}")
        if "readonly" in text or "read-only" in text or "unable to open" in text:
            return (f"results database {self.path} cannot be written ({text}): make {self.dir} "
                    f"writable or choose another --results")
        return f"results database {self.path}: {text}"

    @staticmethod
    def exists(results_dir: str | Path) -> bool:
        return (Path(results_dir) / "rooftop.db").is_file()

    def _check_folder(self, create: bool) -> None:
        if self.dir.exists() and not self.dir.is_dir():
            raise StoreError(f"results folder {self.dir} is a file, not a folder: give --results "
                             f"a folder (or move the file away)")
        if self.path.exists() and not self.path.is_file():
            raise StoreError(f"results database {self.path} is not a file: move it away")
        if not create and not self.path.exists():
            raise StoreError(f"no results in {self.dir} (no {self.path.name}): start a run with "
                             f"'rooftop collect --results {self.dir}'")
        self.dir.mkdir(parents=True, exist_ok=True)

    @_guarded
    def _open(self, create: bool) -> None:
        self._check_folder(create)
        self.db = sqlite3.connect(self.path, timeout=30)
        self.db.row_factory = sqlite3.Row
        if self.path.stat().st_size <= QUICK_CHECK_BYTES:
            problems = [r[0] for r in self.db.execute("PRAGMA quick_check")]
            if problems != ["ok"]:
                raise sqlite3.DatabaseError("damaged: " + "; ".join(problems[:3]))
        self.db.executescript(SCHEMA)
        # Databases written before a column existed get it (default value).
        have = {r["name"] for r in self.db.execute("PRAGMA table_info(samples)")}
        for name, decl in ADDED_COLUMNS.items():
            if name not in have:
                self.db.execute(f"ALTER TABLE samples ADD COLUMN {name} {decl}")
        have_runs = {r["name"] for r in self.db.execute("PRAGMA table_info(runs)")}
        for name, decl in ADDED_RUN_COLUMNS.items():
            if name not in have_runs:
                self.db.execute(f"ALTER TABLE runs ADD COLUMN {name} {decl}")
        if "ceilings" not in have:  # issue 10 item 7
            self.db.execute(CEILINGS_DDL)
        self.db.commit()

    def close(self) -> None:
        self.db.close()

    def run_dir(self, run_id: str) -> Path:
        return self.dir / run_id

    # runs
    @_guarded
    def new_run(self, config: dict, environment: dict) -> str:
        run_id = time.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)
        t = now_iso()
        pid = os.getpid()  # its owner: a run whose owner died reads as interrupted
        self.db.execute("INSERT INTO runs (id, created, updated, status, config, environment, "
                        "owner_pid, owner_host, owner_start) VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?)",
                        (run_id, t, t, json.dumps(config), json.dumps(environment), pid,
                         socket.gethostname(), process_start(pid)))
        self.db.commit()
        self.run_dir(run_id).mkdir(parents=True, exist_ok=True)
        (self.run_dir(run_id) / "config.json").write_text(json.dumps(config, indent=2))
        return run_id

    @_guarded
    def get_run(self, run_id: str) -> Run:
        row = self.db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            known = [r["id"] for r in self.db.execute("SELECT id FROM runs ORDER BY created DESC LIMIT 5")]
            hint = f"; recent runs: {', '.join(known)}" if known else "; there are no runs yet"
            raise StoreError(f"no run '{run_id}' in {self.path}{hint}")
        run = Run(row["id"], row["created"], row["updated"], row["status"], json.loads(row["config"]),
                  json.loads(row["environment"]), row["wall_s"], row["measured_s"], row["note"],
                  (row["owner_pid"], row["owner_host"], row["owner_start"]))
        if run.status == "running" and owner_gone(*run.owner):
            # Its campaign died without a word (SIGKILL, a crash, a lost node).
            again = "validate --run" if "validate" in row["note"] else "collect --resume"
            run.status = "interrupted"
            run.note = (f"its campaign (pid {run.owner[0]} on {run.owner[1]}) is gone; finish it with "
                        f"'rooftop {again} {run.id}'")
        return run

    @_guarded
    def runs(self) -> list[Run]:
        ids = [r["id"] for r in self.db.execute("SELECT id FROM runs ORDER BY created, id")]
        return [self.get_run(i) for i in ids]

    @_guarded
    def claim(self, run_id: str, note: str = "") -> None:
        """This process runs the run now: status running, owner recorded."""
        pid = os.getpid()
        self.db.execute("UPDATE runs SET status = 'running', note = ?, updated = ?, owner_pid = ?, "
                        "owner_host = ?, owner_start = ? WHERE id = ?",
                        (note, now_iso(), pid, socket.gethostname(), process_start(pid), run_id))
        self.db.commit()

    @_guarded
    def set_status(self, run_id: str, status: str, note: str = "") -> None:
        self.db.execute("UPDATE runs SET status = ?, note = ?, updated = ? WHERE id = ?",
                        (status, note, now_iso(), run_id))
        self.db.commit()

    @_guarded
    def update_config(self, run_id: str, config: dict) -> None:
        self.db.execute("UPDATE runs SET config = ?, updated = ? WHERE id = ?",
                        (json.dumps(config), now_iso(), run_id))
        self.db.commit()
        (self.run_dir(run_id) / "config.json").write_text(json.dumps(config, indent=2))

    @_guarded
    def add_time(self, run_id: str, wall_s: float) -> None:
        self.db.execute("UPDATE runs SET wall_s = wall_s + ?, updated = ? WHERE id = ?",
                        (wall_s, now_iso(), run_id))
        self.db.commit()

    # samples
    @_guarded
    def done_keys(self, run_id: str) -> set[str]:
        return {r["key"] for r in self.db.execute(
            "SELECT key FROM samples WHERE run_id = ? AND status = 'ok'", (run_id,))}

    @_guarded
    def stored_keys(self, run_id: str) -> set[str]:
        """Keys with a row, measured or failed."""
        return {r["key"] for r in self.db.execute("SELECT key FROM samples WHERE run_id = ?", (run_id,))}

    @_guarded
    def add_sample(self, run_time_s: float | None = None, **s) -> None:
        """Stores one sample row. run_time_s: what it adds to the run's
        measured time (default its measured_s; rows measured at the same
        time, such as concurrent pairs, add it once)."""
        s.setdefault("created", now_iso())
        for name, value in self.marks.items():  # e.g. concurrent = 1 for the whole campaign
            s.setdefault(name, value)
        for name, decl in ADDED_COLUMNS.items():
            s.setdefault(name, _default(decl))
        s.setdefault("ceilings", json.dumps(key_stages(s["key"])))
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

    @_guarded
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
