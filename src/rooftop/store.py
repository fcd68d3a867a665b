"""Results store: SQLite, one database per results folder.

runs         one campaign: its resolved config, environment, status, timing
samples      one measurement: stage, metric, which nodes and how many
             processes, the aggregate and per-process rates, the engine's
             errors, and the folder holding every engine document of that
             sample
quantities   every measured quantity of a sample in long format:
             (sample_id, quantity, value, unit), one row per quantity the
             sample has (QUANTITIES below names them, with their units)
run_params   every resolved parameter of a run: (run_id, key, value), the
             run's config flattened to dotted keys ("bw.size",
             "engine.min_overlap", "nodes.3.host")
sample_params (a view) every parameter of a sample: (sample_id, key, value),
             its run's run_params plus its own placement ("sample.stage",
             "sample.metric", "sample.server_nodes", "sample.client_nodes",
             "sample.server_procs", "sample.client_procs", "sample.x")

Each sample is committed the moment it is measured, so an interrupted
campaign loses nothing it finished. Its quantities are committed with it.

Parameters are stored per run, and a view joins them to each sample: every
sample of a run shares one resolved config, so a 100k-sample run stores its
~60-100 keys once (not 100k copies) and the placement, which differs per
sample, is read from the sample's own columns. Learned models and exports
read `SELECT key, value FROM sample_params WHERE sample_id = ?` (or the
whole view) without parsing JSON. Values keep their type (numbers are
numbers); a list of plain values is stored as its JSON text ("metrics":
'["rpc", "bw"]'), a list of objects by index ("nodes.0.host").

Quantities are written for every sample that was measured (status ok or
invalid); a failed sample measured nothing and has none, and foreign_cpu
has a row only where it was measured. The rate quantities take the
sample's own `unit` column (each metric's unit, rooftop/metrics);
the others have the fixed unit QUANTITIES gives. Samples stored before a
column existed carry its default there (late_s 0, overlap 1, ...), and so
in quantities too.

Schema versions: the database's `PRAGMA user_version` is the number of the
last migration applied (MIGRATIONS below; 0: a database written before
migrations were numbered, which may hold any columns of its time, so every
migration checks before it adds). Opening a database applies the missing
migrations in one transaction taken with BEGIN IMMEDIATE, so of two
campaigns opening an old database at once one migrates and the other then
finds it done; a database newer than this code knows is refused with its
version. A new migration goes at the end of MIGRATIONS and never changes an
earlier one.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import secrets
import socket
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rooftop import enginedoc

# --- What each sample measured, in long format (issue 12) -----------------
#: Every quantity the quantities table holds: name -> (unit, what it is).
#: Unit None: the sample's own unit (its `unit` column: the metric's rate
#: unit, from rooftop/metrics). The first names are sample columns of the same
#: name; the latency ones come from the sample's client documents.
QUANTITIES: dict[str, tuple[str | None, str]] = {
    "aggregate": (None, "work per second of all the sample's client processes over their common time"),
    "per_server": (None, "aggregate / server processes"),
    "per_client": (None, "aggregate / client processes"),
    "measured_s": ("s", "length of the window all the sample's clients measured together"),
    "late_s": ("s", "latest client's lateness to the common start (--measure-at)"),
    "skew_s": ("s", "latest client's first-window start minus the earliest client's"),
    "overlap": ("1", "share of the window all the sample's clients measured together"),
    "barrier_s": ("s", "longest a client waited at the start barrier"),
    "foreign_cpu": ("cores", "cores' worth of CPU other processes used on the measured cores"),
    "latency_p50": (
        "us",
        "median operation latency of the sample's client round (every window; "
        "its clients' histogram bins merged, the bin's upper edge)",
    ),
    "latency_p90": ("us", "90th percentile latency, as latency_p50"),
    "latency_p99": ("us", "99th percentile latency, as latency_p50"),
}

#: The latency quantities: which quantile of the merged bins each is.
LATENCY_QUANTILES = {"latency_p50": 0.50, "latency_p90": 0.90, "latency_p99": 0.99}

# --- The schema, as numbered migrations (issue 12) ------------------------
SCHEMA_V1 = (
    """CREATE TABLE IF NOT EXISTS runs (
    id          TEXT PRIMARY KEY,
    created     TEXT NOT NULL,
    updated     TEXT NOT NULL,
    status      TEXT NOT NULL,          -- running | complete | interrupted | failed
    config      TEXT NOT NULL,          -- resolved config (JSON)
    environment TEXT NOT NULL,          -- host, launcher, engine version (JSON)
    wall_s      REAL NOT NULL DEFAULT 0,    -- time spent running this campaign
    measured_s  REAL NOT NULL DEFAULT 0,    -- time inside measurement windows
    note        TEXT NOT NULL DEFAULT ''
)""",
    """CREATE TABLE IF NOT EXISTS samples (
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
    created       TEXT NOT NULL,
    UNIQUE (run_id, key)
)""",
)

# Columns added to samples after the first release, with their declarations
# (older rows get the default).
LATE_COLUMNS = {"late_s": "REAL NOT NULL DEFAULT 0"}  # latest client's lateness to the common start
# Which ceilings a sample stands for (issue 10, item 7): a placement that
# several collect stages would run identically (2 nodes: server peak, client
# peak and client node are one server and one client) is measured once; its
# rows say every stage they stand for. The stages are named in the key's
# first part ("server_peak+client_peak+client_node/rpc/...") and stored as a
# JSON list. '' (databases written before): just `stage`.
CEILINGS_COLUMNS = {"ceilings": "TEXT NOT NULL DEFAULT ''"}
BARRIER_COLUMNS = {
    "skew_s": "REAL NOT NULL DEFAULT 0",  # latest client's first-window start - earliest's
    "overlap": "REAL NOT NULL DEFAULT 1",  # share of the window all clients measured together
    "barrier_s": "REAL NOT NULL DEFAULT 0",  # longest a client waited at the start barrier
    "attempt": "INTEGER NOT NULL DEFAULT 1",
}  # which measurement of the round (retries)
# Issue 11 finding 3: concurrent campaigns and foreign load (rooftop.locks, rooftop.foreign).
LOCK_COLUMNS = {
    "concurrent": "INTEGER NOT NULL DEFAULT 0",  # 1: measured with --allow-concurrent
    "foreign_cpu": "REAL DEFAULT NULL",
}  # cores' worth of CPU others used (NULL: not measured)
#: Columns added to runs: the campaign process that runs it (issue 11,
#: finding 2). A run 'running' whose owner is gone is shown interrupted; one
#: whose owner was on another host and holds no results folder lock, unknown.
OWNER_COLUMNS = {
    "owner_pid": "INTEGER NOT NULL DEFAULT 0",
    "owner_host": "TEXT NOT NULL DEFAULT ''",
    "owner_start": "TEXT NOT NULL DEFAULT ''",
}

# Issue 27: the emulation each sample ran under (rooftop.emulation): JSON
# {node index: live record} of its nodes on the emulated cluster, read after
# its window; '' elsewhere and for samples stored before.
EMULATION_COLUMNS = {"emulation": "TEXT NOT NULL DEFAULT ''"}

QUANTITIES_DDL = """CREATE TABLE IF NOT EXISTS quantities (
    sample_id   INTEGER NOT NULL REFERENCES samples(id),
    quantity    TEXT NOT NULL,          -- a name of store.QUANTITIES
    value       REAL NOT NULL,
    unit        TEXT NOT NULL,
    PRIMARY KEY (sample_id, quantity)
) WITHOUT ROWID"""

RUN_PARAMS_DDL = """CREATE TABLE IF NOT EXISTS run_params (
    run_id      TEXT NOT NULL REFERENCES runs(id),
    key         TEXT NOT NULL,          -- dotted config key: bw.size, nodes.0.host
    value,                              -- as typed in the config; a list of plain values as JSON
    PRIMARY KEY (run_id, key)
) WITHOUT ROWID"""

SERIES_DDL = """CREATE TABLE IF NOT EXISTS series (
    run_id      TEXT NOT NULL REFERENCES runs(id),
    round       TEXT NOT NULL,          -- the round's raw folder (RUN/raw/ROUND), its attempt
    sampler     TEXT NOT NULL,          -- a series sampler of rooftop.samplers (cpu, power)
    t           REAL NOT NULL,          -- seconds since the sampler started (just before the clients)
    quantity    TEXT NOT NULL,          -- cpu_user, cpu_sys, context_switches, interrupts, power, energy
    value       REAL NOT NULL,
    unit        TEXT NOT NULL
)"""
SERIES_INDEX_DDL = "CREATE INDEX IF NOT EXISTS series_run ON series (run_id, round)"

TUNE_STEPS_DDL = """CREATE TABLE IF NOT EXISTS tune_steps (
    run_id      TEXT NOT NULL REFERENCES runs(id),
    step        INTEGER NOT NULL,       -- 1, 2, ... in the order measured
    params      TEXT NOT NULL,          -- JSON: the configuration's knob values (key -> value)
    how         TEXT NOT NULL,          -- why it was measured: default, initial, model, ...
    predicted   REAL,                   -- the model's rate for it before it was measured (NULL: none)
    measured    REAL,                   -- median of its samples' per-client rates (NULL: none ok)
    best_predicted REAL,                -- the best rate the model retrained after it predicts
    keys        TEXT NOT NULL,          -- JSON: its samples' keys (samples.key)
    created     TEXT NOT NULL,
    PRIMARY KEY (run_id, step)
) WITHOUT ROWID"""

# rooftop interfere (rooftop.interference.run): per loaded run, the service's impact
# factors per stage and metric, and what each background-load copy did.
INTERFERENCE_DDL = """CREATE TABLE IF NOT EXISTS interference (
    run_id          TEXT NOT NULL REFERENCES runs(id),  -- the isolated run
    loaded_run      TEXT NOT NULL REFERENCES runs(id),  -- the run measured beside the load
    load            TEXT NOT NULL,      -- a load of rooftop.loads (cpu, mem, net, io, numio, cmd)
    copies          INTEGER NOT NULL,   -- concurrent copies of it (ensemble size)
    stage           TEXT NOT NULL,
    metric          TEXT NOT NULL,
    unit            TEXT,
    rate_isolated   REAL, rate_loaded REAL,
    impact_rate     REAL,               -- rate_isolated / rate_loaded
    p99_isolated_us REAL, p99_loaded_us REAL,
    impact_p99      REAL,               -- p99_loaded_us / p99_isolated_us
    shared          TEXT                -- the resource the load shared with the service, in words
)"""
LOAD_RUNS_DDL = """CREATE TABLE IF NOT EXISTS load_runs (
    run_id       TEXT NOT NULL REFERENCES runs(id),     -- the isolated run
    loaded_run   TEXT NOT NULL REFERENCES runs(id),
    load         TEXT NOT NULL,
    copy         INTEGER NOT NULL,      -- which copy of the ensemble (0-based)
    copies       INTEGER NOT NULL,
    nodes        TEXT NOT NULL,         -- JSON list of node indices
    knobs        TEXT NOT NULL,         -- JSON object of every knob, defaults included
    rate_unit    TEXT,
    rate_alone   REAL, rate_beside REAL,
    slowdown     REAL,                  -- rate_alone / rate_beside (same copies, without the service)
    normalized   REAL,                  -- one copy alone / rate_beside (seed 004's normalized slowdown)
    units_alone  INTEGER, units_beside INTEGER,
    processes    TEXT                   -- JSON: each process's node, ranks and command line
)"""

# A sample's parameters: its run's, plus its own placement. (Unary + keeps
# each value's own type: a compound view would otherwise give every value
# the REAL affinity of x.)
SAMPLE_PARAMS_DDL = """CREATE VIEW IF NOT EXISTS sample_params (sample_id, key, value) AS
    SELECT s.id, p.key, +p.value FROM samples AS s JOIN run_params AS p ON p.run_id = s.run_id
    UNION ALL SELECT id, 'sample.stage', +stage FROM samples
    UNION ALL SELECT id, 'sample.metric', +metric FROM samples
    UNION ALL SELECT id, 'sample.server_nodes', +server_nodes FROM samples
    UNION ALL SELECT id, 'sample.client_nodes', +client_nodes FROM samples
    UNION ALL SELECT id, 'sample.server_procs', +server_procs FROM samples
    UNION ALL SELECT id, 'sample.client_procs', +client_procs FROM samples
    UNION ALL SELECT id, 'sample.x', +x FROM samples"""


def _sql(*statements: str) -> Callable[[Store], None]:
    def apply(store: Store) -> None:
        for statement in statements:
            store.db.execute(statement)

    return apply


def _add_columns(table: str, columns: dict[str, str]) -> Callable[[Store], None]:
    """Adds the columns a table lacks (an unnumbered database may have some)."""

    def apply(store: Store) -> None:
        have = {r["name"] for r in store.db.execute(f"PRAGMA table_info({table})")}
        for name, decl in columns.items():
            if name not in have:
                store.db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {decl}")

    return apply


def _then(*steps: Callable[[Store], None]) -> Callable[[Store], None]:
    def apply(store: Store) -> None:
        for step in steps:
            step(store)

    return apply


@dataclass(frozen=True)
class Migration:
    number: int  # the database's user_version once applied
    reason: str  # why (and the commit or issue that needed it)
    apply: Callable[[Store], None]


#: Every schema change, in order. Append; never edit an applied one.
MIGRATIONS = [
    Migration(1, "runs and samples as first released (a9e41f9)", _sql(*SCHEMA_V1)),
    Migration(
        2,
        "samples.late_s: how late the latest client started measuring (6abe78e)",
        _add_columns("samples", LATE_COLUMNS),
    ),
    Migration(
        3,
        "samples.ceilings: the stages a sample measured once stands for (a706a74, issue 10)",
        _add_columns("samples", CEILINGS_COLUMNS),
    ),
    Migration(
        4,
        "samples.skew_s, overlap, barrier_s, attempt: start barrier, common time, retries (54d538a)",
        _add_columns("samples", BARRIER_COLUMNS),
    ),
    Migration(
        5,
        "samples.concurrent, foreign_cpu: campaign locks and foreign load (3588a0a, issue 11)",
        _add_columns("samples", LOCK_COLUMNS),
    ),
    Migration(
        6,
        "runs.owner_pid, owner_host, owner_start: the process running a run (38c09f4, issue 11)",
        _add_columns("runs", OWNER_COLUMNS),
    ),
    Migration(
        7,
        "quantities: each sample's measured quantities in long format, filled for stored samples (issue 12)",
        _then(_sql(QUANTITIES_DDL), lambda store: store.fill_quantities()),
    ),
    Migration(
        8,
        "run_params and the sample_params view: every resolved parameter, filled for stored runs (issue 12)",
        _then(_sql(RUN_PARAMS_DDL, SAMPLE_PARAMS_DDL), lambda store: store.fill_params()),
    ),
    Migration(
        9,
        "series: time series of the series samplers (CPU, power) per round (issue 16)",
        _sql(SERIES_DDL, SERIES_INDEX_DDL),
    ),
    Migration(10, "tune_steps: every step of a 'rooftop tune' run (issue 17, item 3)", _sql(TUNE_STEPS_DDL)),
    Migration(
        11,
        "interference, load_runs: rooftop interfere's impact factors and background loads (issue 18)",
        _sql(INTERFERENCE_DDL, LOAD_RUNS_DDL),
    ),
    Migration(
        12,
        "samples.emulation: the emulated cluster's CPU caps, cores and link rates each sample ran under (issue 27)",
        _add_columns("samples", EMULATION_COLUMNS),
    ),
]
#: The schema version this code writes (and the newest it can read).
SCHEMA_VERSION = MIGRATIONS[-1].number

SAMPLE_COLUMNS = [
    "run_id",
    "key",
    "stage",
    "metric",
    "unit",
    "server_nodes",
    "client_nodes",
    "server_procs",
    "client_procs",
    "x",
    "sample",
    "status",
    "aggregate",
    "per_server",
    "per_client",
    "measured_s",
    "error",
    "raw_dir",
    "late_s",
    "skew_s",
    "overlap",
    "barrier_s",
    "attempt",
    "concurrent",
    "foreign_cpu",
    "created",
]
SAMPLE_COLUMNS += ["ceilings"]  # issue 10 item 7: see CEILINGS_COLUMNS
SAMPLE_COLUMNS += ["emulation"]  # issue 27: see EMULATION_COLUMNS


def _default(decl: str):
    """The value a column declaration defaults to (a number, or None for NULL)."""
    text = decl.rsplit(" ", 1)[1]
    if text == "NULL":
        return None
    return float(text) if "REAL" in decl else int(text)


#: What a sample row gets for the columns added after the first release
#: when the campaign does not set them (ceilings: from its key).
SAMPLE_DEFAULTS = {
    name: _default(decl) for cols in (LATE_COLUMNS, BARRIER_COLUMNS, LOCK_COLUMNS) for name, decl in cols.items()
}
SAMPLE_DEFAULTS["emulation"] = ""


def flatten(value, key: str = "") -> list[tuple[str, object]]:
    """(dotted key, value) of every leaf of a config: objects by key, lists
    of objects by index, other lists as their JSON text."""
    if isinstance(value, dict) and value:
        return [kv for k, v in value.items() for kv in flatten(v, f"{key}.{k}" if key else str(k))]
    if isinstance(value, list) and value and all(isinstance(x, dict) for x in value):
        return [kv for i, x in enumerate(value) for kv in flatten(x, f"{key}.{i}")]
    if isinstance(value, (dict, list, tuple)):
        return [(key, json.dumps(value))]
    return [(key, value)]


def row_ranks(docs: Path, row: dict) -> list[int] | None:
    """The client ranks a sample row stands for within its round's folder
    (round.json: one window's row keys; several are pairs, rank j is row j);
    None: all of them; [] when unknown."""
    try:
        windows = json.loads((docs / "round.json").read_text())["keys"]
    except (OSError, ValueError, KeyError, TypeError):
        # A round written before its manifest: all clients when their number matches.
        return None if len(list(docs.glob("client-*.json"))) == row["client_procs"] else []
    for keys in windows:
        if row["key"] in keys:
            return None if len(keys) == 1 else [keys.index(row["key"])]
    return []


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


def owner_elsewhere(pid: int, host: str, start: str) -> bool:
    """The recorded owner ran on another host (its process cannot be checked here)."""
    return bool(pid) and bool(host) and host != socket.gethostname()


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


#: How long a store operation waits, in all, while another process holds
#: the database (a reader inside a transaction, a backup, a second
#: campaign): seconds, from the environment variable ROOFTOP_DB_WAIT
#: (default 300, at most a day). SQLite waits up to 30 s per try; between
#: tries the transaction is rolled back and tried again after a pause.
DB_WAIT_DEFAULT = 300.0
DB_WAIT_MAX = 86400.0


def db_wait() -> float:
    try:
        value = float(os.environ.get("ROOFTOP_DB_WAIT", DB_WAIT_DEFAULT))
    except ValueError:
        value = DB_WAIT_DEFAULT
    return min(max(value, 0.0), DB_WAIT_MAX) if value == value else DB_WAIT_DEFAULT


def _busy(e: Exception) -> bool:
    return isinstance(e, sqlite3.OperationalError) and any(
        w in str(e) for w in ("database is locked", "database is busy", "database table is locked")
    )


def _guarded(method):
    """SQLite and file-system failures become StoreErrors naming the store.
    A database another process holds is waited for (db_wait(): every try
    rolls back what it began, so a try is repeated whole)."""

    @functools.wraps(method)
    def call(self, *args, **kwargs):
        outer = not getattr(self, "_in_call", False)
        start, pause = time.monotonic(), 0.5
        self._in_call = True
        try:
            while True:
                try:
                    return method(self, *args, **kwargs)
                except sqlite3.Error as e:
                    waited = time.monotonic() - start
                    if outer and _busy(e) and waited < self.wait_s:
                        self._rollback()
                        time.sleep(min(pause, max(0.0, self.wait_s - waited)))
                        pause = min(pause * 2, 10.0)
                        continue
                    self._rollback()
                    raise StoreError(self.explain(e, waited if _busy(e) else None)) from None
                except OSError as e:
                    raise StoreError(self.explain_os(e)) from None
        finally:
            if outer:
                self._in_call = False

    return call


class Store:
    """create: make the folder and database if missing (collect); else a
    missing store is a StoreError and nothing is created."""

    def __init__(self, results_dir: str | Path, create: bool = True):
        self.dir = Path(results_dir)
        self.path = self.dir / "rooftop.db"
        #: Values every sample this process stores gets (unless the row sets them).
        self.marks: dict = {}
        #: Seconds an operation waits for a database another process holds (db_wait).
        self.wait_s = db_wait()
        self._open(create)

    def _rollback(self) -> None:
        """Ends a transaction a failed operation left open (its work is undone)."""
        db = getattr(self, "db", None)
        if db is not None:
            try:
                db.rollback()
            except sqlite3.Error:
                pass

    def explain_os(self, e: OSError) -> str:
        """One message for a file-system failure in the results folder."""
        where = f" ({e.filename})" if e.filename else ""
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            return (
                f"results folder {self.dir}: its file system is full ({e.strerror}){where}; "
                f"free space there or choose another --results"
            )
        return (
            f"results folder {self.dir}: {e.strerror or e}{where}; "
            f"check its permissions and free space, or choose another --results"
        )

    def explain(self, e: Exception, waited: float | None = None) -> str:
        """One message for a database failure: the path and what to do."""
        text = str(e)
        if waited is not None:
            return (
                f"results database {self.path} is locked by another process ({text}; waited "
                f"{waited:.0f} s, ROOFTOP_DB_WAIT={self.wait_s:g}): close what holds it "
                f"(an open sqlite3 shell, a reader inside a transaction)"
            )
        if "disk is full" in text or "disk I/O error" in text:
            return (
                f"results database {self.path}: the file system of {self.dir} is full or failing "
                f"({text}); free space there or choose another --results"
            )
        if isinstance(e, sqlite3.DatabaseError) and any(
            w in text for w in ("not a database", "malformed", "corrupt", "damaged")
        ):
            return (
                f"results database {self.path} is damaged ({text}): "
                f"'rooftop doctor --results {self.dir} --rebuild' rebuilds it from the engine "
                f"documents in {self.dir}"
            )
        if "readonly" in text or "read-only" in text or "unable to open" in text:
            return (
                f"results database {self.path} cannot be written ({text}): make {self.dir} "
                f"writable or choose another --results"
            )
        return f"results database {self.path}: {text}"

    @staticmethod
    def exists(results_dir: str | Path) -> bool:
        return (Path(results_dir) / "rooftop.db").is_file()

    def _check_folder(self, create: bool) -> None:
        if self.dir.exists() and not self.dir.is_dir():
            raise StoreError(
                f"results folder {self.dir} is a file, not a folder: give --results a folder (or move the file away)"
            )
        if self.path.exists() and not self.path.is_file():
            raise StoreError(f"results database {self.path} is not a file: move it away")
        if not create and not self.path.exists():
            raise StoreError(
                f"no results in {self.dir} (no {self.path.name}): start a run with "
                f"'rooftop collect --results {self.dir}'"
            )
        self.dir.mkdir(parents=True, exist_ok=True)

    @_guarded
    def _open(self, create: bool) -> None:
        self._check_folder(create)
        if getattr(self, "db", None) is not None:  # an earlier try found the database busy
            self.db.close()
        self.db = sqlite3.connect(self.path, timeout=min(30.0, self.wait_s))
        self.db.row_factory = sqlite3.Row
        if self.path.stat().st_size <= QUICK_CHECK_BYTES:
            problems = [r[0] for r in self.db.execute("PRAGMA quick_check")]
            if problems != ["ok"]:
                raise sqlite3.DatabaseError("damaged: " + "; ".join(problems[:3]))
        self._bins: tuple = (None, {})  # the last round folder's latency bins (see _latency)
        self._migrate()

    def version(self) -> int:
        """The database's schema version: the last migration applied."""
        return self.db.execute("PRAGMA user_version").fetchone()[0]

    def _migrate(self) -> None:
        """Applies the migrations the database lacks, all in one transaction.
        BEGIN IMMEDIATE takes the write lock first, so a second campaign
        opening the same old database waits, then finds it migrated."""
        start = self._check_version()
        if start == SCHEMA_VERSION:
            return
        try:
            self.db.execute("BEGIN IMMEDIATE")
            start = self._check_version()  # as of holding the lock
            for m in MIGRATIONS[start:]:
                m.apply(self)
                self.db.execute(f"PRAGMA user_version = {m.number}")
            self.db.commit()
        except BaseException as e:
            self.db.rollback()
            if isinstance(e, sqlite3.Error) and not _busy(e):  # busy: tried again (_guarded)
                raise StoreError(
                    f"{self.explain(e)} (while upgrading its schema from version {start} to {SCHEMA_VERSION})"
                ) from None
            raise

    def _check_version(self) -> int:
        have = self.version()
        if have > SCHEMA_VERSION:
            raise StoreError(
                f"results database {self.path} has schema version {have}, newer than this "
                f"rooftop knows (up to {SCHEMA_VERSION}): it was written by a newer rooftop; "
                f"read it with that one, or upgrade this one"
            )
        return have

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
        self.db.execute(
            "INSERT INTO runs (id, created, updated, status, config, environment, "
            "owner_pid, owner_host, owner_start) VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?)",
            (run_id, t, t, json.dumps(config), json.dumps(environment), pid, socket.gethostname(), process_start(pid)),
        )
        self.put_params(run_id, config)
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
        run = Run(
            row["id"],
            row["created"],
            row["updated"],
            row["status"],
            json.loads(row["config"]),
            json.loads(row["environment"]),
            row["wall_s"],
            row["measured_s"],
            row["note"],
            (row["owner_pid"], row["owner_host"], row["owner_start"]),
        )
        if run.status == "running" and owner_gone(*run.owner):
            # Its campaign died without a word (SIGKILL, a crash, a lost node).
            again = "validate --run" if "validate" in row["note"] else "collect --resume"
            run.status = "interrupted"
            run.note = (
                f"its campaign (pid {run.owner[0]} on {run.owner[1]}) is gone; finish it with "
                f"'rooftop {again} {run.id}'"
            )
        elif run.status == "running" and owner_elsewhere(*run.owner):
            from rooftop.locks import held_by_anyone

            if not held_by_anyone(self.dir / ".lock"):
                # A campaign running it would hold the results folder's lock:
                # its owner on another host was most likely killed, but this
                # host cannot look at that host's processes.
                again = "validate --run" if "validate" in row["note"] else "collect --resume"
                run.status = "unknown"
                run.note = (
                    f"its campaign (pid {run.owner[0]} on host {run.owner[1]}) holds no lock on "
                    f"{self.dir / '.lock'}: probably killed (check on {run.owner[1]}); if it is "
                    f"gone, finish it with 'rooftop {again} {run.id}'"
                )
        return run

    @_guarded
    def runs(self) -> list[Run]:
        ids = [r["id"] for r in self.db.execute("SELECT id FROM runs ORDER BY created, id")]
        return [self.get_run(i) for i in ids]

    @_guarded
    def claim(self, run_id: str, note: str = "") -> None:
        """This process runs the run now: status running, owner recorded."""
        pid = os.getpid()
        self.db.execute(
            "UPDATE runs SET status = 'running', note = ?, updated = ?, owner_pid = ?, "
            "owner_host = ?, owner_start = ? WHERE id = ?",
            (note, now_iso(), pid, socket.gethostname(), process_start(pid), run_id),
        )
        self.db.commit()

    @_guarded
    def set_status(self, run_id: str, status: str, note: str = "") -> None:
        self.db.execute(
            "UPDATE runs SET status = ?, note = ?, updated = ? WHERE id = ?", (status, note, now_iso(), run_id)
        )
        self.db.commit()

    @_guarded
    def update_config(self, run_id: str, config: dict) -> None:
        self.db.execute("UPDATE runs SET config = ?, updated = ? WHERE id = ?", (json.dumps(config), now_iso(), run_id))
        self.put_params(run_id, config)
        self.db.commit()
        (self.run_dir(run_id) / "config.json").write_text(json.dumps(config, indent=2))

    @_guarded
    def add_time(self, run_id: str, wall_s: float) -> None:
        self.db.execute("UPDATE runs SET wall_s = wall_s + ?, updated = ? WHERE id = ?", (wall_s, now_iso(), run_id))
        self.db.commit()

    # samples
    @_guarded
    def done_keys(self, run_id: str) -> set[str]:
        return {
            r["key"] for r in self.db.execute("SELECT key FROM samples WHERE run_id = ? AND status = 'ok'", (run_id,))
        }

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
        for name, value in SAMPLE_DEFAULTS.items():
            s.setdefault(name, value)
        s.setdefault("ceilings", json.dumps(key_stages(s["key"])))
        s["server_nodes"] = json.dumps(s["server_nodes"])
        s["client_nodes"] = json.dumps(s["client_nodes"])
        cols = ", ".join(SAMPLE_COLUMNS)
        marks = ", ".join("?" for _ in SAMPLE_COLUMNS)
        # A failed sample retried on resume replaces its earlier attempt (and its quantities).
        self.db.execute(
            "DELETE FROM quantities WHERE sample_id IN (SELECT id FROM samples WHERE run_id = ? AND key = ?)",
            (s["run_id"], s["key"]),
        )
        cur = self.db.execute(
            f"INSERT OR REPLACE INTO samples ({cols}) VALUES ({marks})", [s[c] for c in SAMPLE_COLUMNS]
        )
        self.put_quantities(cur.lastrowid, s)
        self.db.execute(
            "UPDATE runs SET measured_s = measured_s + ?, updated = ? WHERE id = ?",
            (s["measured_s"] if run_time_s is None else run_time_s, now_iso(), s["run_id"]),
        )
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
            d = {c: r[c] for c in ("id", *SAMPLE_COLUMNS)}  # one column order, however the table grew
            d["server_nodes"] = json.loads(d["server_nodes"])
            d["client_nodes"] = json.loads(d["client_nodes"])
            out.append(d)
        return out

    # quantities and parameters (issue 12) -----------------------------------
    def put_quantities(self, sample_id: int, row: dict) -> None:
        """Writes the quantities a sample row measured (in the caller's transaction)."""
        self.db.executemany(
            "INSERT OR REPLACE INTO quantities (sample_id, quantity, value, unit) VALUES (?, ?, ?, ?)",
            [(sample_id, *q) for q in self.quantities(row)],
        )

    def quantities(self, row: dict) -> list[tuple[str, float, str]]:
        """(quantity, value, unit) of everything a sample row measured:
        none when it failed; its columns that hold a value; its latency
        percentiles when its client documents carry latency bins."""
        if row["status"] == "failed":
            return []
        out = [
            (name, float(row[name]), unit or row["unit"])
            for name, (unit, _) in QUANTITIES.items()
            if name not in LATENCY_QUANTILES and row.get(name) is not None
        ]
        try:
            latency = self._latency(row)
        except OSError:  # documents unreadable: the sample is stored all the same
            latency = {}
        out += [(name, value, QUANTITIES[name][0]) for name, value in latency.items()]
        return out

    def docs_dir(self, row: dict) -> Path | None:
        """The folder of a sample's engine documents: its raw_dir, or the same
        folder in this results folder (the folder was moved or copied)."""
        if not row.get("raw_dir"):
            return None
        where = Path(row["raw_dir"])
        if not where.is_dir():  # under raw/: the round's folder (and earlier-N in it)
            parts = where.parts
            inside = parts[len(parts) - 1 - parts[::-1].index("raw") + 1 :] if "raw" in parts else (where.name,)
            where = self.dir / row["run_id"] / "raw" / Path(*inside) if inside else where
        return where if where.is_dir() else None

    @_guarded
    def moved_documents(self, run_id: str, old: Path, new: Path) -> None:
        """A round's documents moved from old to new (an earlier session's,
        kept when the round is measured again): its rows follow them."""
        self.db.execute("UPDATE samples SET raw_dir = ? WHERE run_id = ? AND raw_dir = ?", (str(new), run_id, str(old)))
        self.db.commit()

    def _latency(self, row: dict) -> dict[str, float]:
        """The latency quantities of a sample: its client ranks' bins merged."""
        docs = self.docs_dir(row)
        if docs is None:
            return {}
        bins = self._round_bins(docs)
        ranks = row_ranks(docs, row)
        merged = enginedoc.merge_bins(bins.get(rank, []) for rank in (sorted(bins) if ranks is None else ranks))
        if not merged:
            return {}
        lat = enginedoc.Latency(row["stage"], row["metric"], merged, 0)
        return {name: lat.quantile(q) for name, q in LATENCY_QUANTILES.items()}

    def _round_bins(self, docs: Path) -> dict[int, list]:
        """Client rank -> latency bins of one round's documents (the last
        folder read is kept while its files are unchanged: a round's rows
        are stored one after another)."""
        files = enginedoc.client_documents(docs)
        key = (docs, [(f.name, f.stat().st_mtime_ns) for f in files])
        if self._bins[0] != key:
            bins = {}
            for f in files:
                try:
                    bins[enginedoc.rank_of(f)] = enginedoc.latency_bins(enginedoc.load(f))
                except (OSError, ValueError, KeyError, TypeError):
                    continue
            self._bins = (key, bins)
        return self._bins[1]

    def fill_quantities(self) -> None:
        """Writes the quantities of every stored sample (migration 7)."""
        top = self.db.execute("SELECT MAX(id) FROM samples").fetchone()[0] or 0
        for lo in range(0, top + 1, 1000):
            for r in self.db.execute(
                "SELECT * FROM samples WHERE id BETWEEN ? AND ? ORDER BY id", (lo, lo + 999)
            ).fetchall():
                self.put_quantities(r["id"], dict(r))

    def put_params(self, run_id: str, config: dict) -> None:
        """Writes a run's resolved config, flattened, as its run_params (in
        the caller's transaction)."""
        self.db.execute("DELETE FROM run_params WHERE run_id = ?", (run_id,))
        self.db.executemany(
            "INSERT INTO run_params (run_id, key, value) VALUES (?, ?, ?)", [(run_id, k, v) for k, v in flatten(config)]
        )

    def fill_params(self) -> None:
        """Writes the run_params of every stored run (migration 8)."""
        for r in self.db.execute("SELECT id, config FROM runs").fetchall():
            self.put_params(r["id"], json.loads(r["config"]))

    @_guarded
    def add_series(self, run_id: str, round_name: str, rows: dict[str, list[tuple]]) -> None:
        """Stores a round's time series: sampler -> [(t, quantity, value, unit)].
        A round measured again (a retry) replaces its earlier series."""
        self.db.execute("DELETE FROM series WHERE run_id = ? AND round = ?", (run_id, round_name))
        self.db.executemany(
            "INSERT INTO series (run_id, round, sampler, t, quantity, value, unit) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(run_id, round_name, name, *row) for name, rs in rows.items() for row in rs],
        )
        self.db.commit()

    @_guarded
    def series(self, run_id: str) -> list[dict]:
        """Every time-series point of a run, by round, sampler and time."""
        return [
            dict(r)
            for r in self.db.execute(
                "SELECT run_id, round, sampler, t, quantity, value, unit FROM series WHERE run_id = ? ORDER BY rowid",
                (run_id,),
            )
        ]

    @_guarded
    def add_interference(self, doc: dict) -> None:
        """Stores rooftop interfere's comparison (rooftop.interference.run.summary),
        replacing what an earlier one stored for the same isolated run."""
        base = doc["run"]
        self.db.execute("DELETE FROM interference WHERE run_id = ?", (base,))
        self.db.execute("DELETE FROM load_runs WHERE run_id = ?", (base,))
        for c in doc["conditions"]:
            self.db.executemany(
                "INSERT INTO interference VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        base,
                        c["run"],
                        c["load"],
                        c["copies"],
                        i["stage"],
                        i["metric"],
                        i["unit"],
                        i["rate_isolated"],
                        i["rate_loaded"],
                        i["impact_rate"],
                        i["p99_isolated_us"],
                        i["p99_loaded_us"],
                        i["impact_p99"],
                        c["shared"],
                    )
                    for i in c["impacts"]
                ],
            )
            self.db.executemany(
                "INSERT INTO load_runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        base,
                        c["run"],
                        c["load"],
                        x["copy"],
                        c["copies"],
                        json.dumps(x["nodes"]),
                        json.dumps(x["knobs"]),
                        c["rate_unit"],
                        x["rate_alone"],
                        x["rate_beside"],
                        x["slowdown"],
                        x.get("normalized"),
                        x["units_alone"],
                        x["units_beside"],
                        json.dumps(x["processes"]),
                    )
                    for x in c["loads"]
                ],
            )
        self.db.commit()

    @_guarded
    def interference(self, run_id: str) -> list[dict]:
        """The impact factors stored for an isolated run (rooftop interfere)."""
        return [
            dict(r) for r in self.db.execute("SELECT * FROM interference WHERE run_id = ? ORDER BY rowid", (run_id,))
        ]

    @_guarded
    def load_runs(self, run_id: str) -> list[dict]:
        """The background-load copies stored for an isolated run."""
        return [dict(r) for r in self.db.execute("SELECT * FROM load_runs WHERE run_id = ? ORDER BY rowid", (run_id,))]

    @_guarded
    def sample_quantities(self, sample_id: int) -> dict[str, tuple[float, str]]:
        """quantity -> (value, unit) of one sample."""
        return {
            r["quantity"]: (r["value"], r["unit"])
            for r in self.db.execute("SELECT quantity, value, unit FROM quantities WHERE sample_id = ?", (sample_id,))
        }

    @_guarded
    def add_tune_step(self, run_id: str, step: dict) -> None:
        """One step of a tune run (rooftop.learn.tune), committed at once."""
        self.db.execute(
            "INSERT INTO tune_steps (run_id, step, params, how, predicted, measured, best_predicted, keys, "
            "created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run_id,
                step["step"],
                json.dumps(step["params"]),
                step["how"],
                step["predicted"],
                step["measured"],
                step["best_predicted"],
                json.dumps(step["keys"]),
                now_iso(),
            ),
        )
        self.db.commit()

    @_guarded
    def tune_steps(self, run_id: str) -> list[dict]:
        rows = self.db.execute("SELECT * FROM tune_steps WHERE run_id = ? ORDER BY step", (run_id,))
        return [dict(r, params=json.loads(r["params"]), keys=json.loads(r["keys"])) for r in rows]

    @_guarded
    def sample_params(self, sample_id: int) -> dict[str, object]:
        """key -> value of every parameter of one sample (its run's and its placement)."""
        return {
            r["key"]: r["value"]
            for r in self.db.execute("SELECT key, value FROM sample_params WHERE sample_id = ?", (sample_id,))
        }
