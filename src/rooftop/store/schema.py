"""The results database's schema: the quantities a sample measured, the tables, and
every schema change as a numbered migration (issue 12); see rooftop.store for the tables."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from rooftop.keys import RENAMED, rename_old
from rooftop.store.paths import UNMAPPED_DDL
from rooftop.store.records import utc_stamp

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
    "cores_busy": ("1", "busy share of the measured cores' time while the round ran (anyone's work, interrupts too)"),
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

# Issue 31: the busy share of a round's cores while it ran (rooftop.foreign
# BusyMeter): where nodes share cores, whether their processes time-sliced
# them (rooftop.model.exclude). NULL: not measured (other hosts, older rows).
BUSY_COLUMNS = {"cores_busy": "REAL DEFAULT NULL"}

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
    sampler     TEXT NOT NULL,          -- its meter (rooftop.meters: cpu, power); source since 16
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
    load            TEXT NOT NULL,      -- a load of rooftop.interference.loads (cpu, mem, net, ...)
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
    normalized   REAL,                  -- one copy alone / rate_beside (Fuchs et al.'s (ISPDC 2024) normalized slowdown)
    units_alone  INTEGER, units_beside INTEGER,
    processes    TEXT                   -- JSON: each process's node, ranks and command line
)"""

# rooftop service (rooftop.service.points): a real service's points, beside
# the engine's samples so that nothing derived from samples takes one, and
# the resolved spec of each service of a run. Made on first write before
# migration 18, as POINTS_DDL_V18 (migration 19 renamed two columns).
POINTS_DDL_V18 = """CREATE TABLE IF NOT EXISTS service_points (
    run_id        TEXT NOT NULL REFERENCES runs(id),
    service       TEXT NOT NULL,        -- the spec's name: redis-get
    key           TEXT NOT NULL,        -- identifies the point within the run and service
    metric        TEXT NOT NULL,        -- the rooftop metric it is compared with: rpc | bw | ...
    unit          TEXT NOT NULL,        -- that metric's unit: ops/s | bytes/s
    server_procs  INTEGER NOT NULL,
    client_procs  INTEGER NOT NULL,
    x             REAL NOT NULL,        -- server processes / client processes
    sample        INTEGER NOT NULL,
    status        TEXT NOT NULL,        -- ok | failed | invalid (measured, unusable: error says why)
    aggregate     REAL,                 -- sum of the client processes' rates
    per_client    REAL,                 -- aggregate / client processes
    measured_s    REAL NOT NULL DEFAULT 0,
    error         TEXT NOT NULL DEFAULT '',
    source        TEXT NOT NULL,        -- measured | imported
    detail        TEXT NOT NULL DEFAULT '{}',  -- JSON: nodes, per-client rates, files kept, import line
    created       TEXT NOT NULL,
    PRIMARY KEY (run_id, service, key)
)"""

#: The table as this code writes it (migration 19: window, origin).
POINTS_DDL = """CREATE TABLE IF NOT EXISTS service_points (
    run_id        TEXT NOT NULL REFERENCES runs(id),
    service       TEXT NOT NULL,        -- the spec's name: redis-get
    key           TEXT NOT NULL,        -- identifies the point within the run and service
    metric        TEXT NOT NULL,        -- the rooftop metric it is compared with: rpc | bw | ...
    unit          TEXT NOT NULL,        -- that metric's unit: ops/s | bytes/s
    server_procs  INTEGER NOT NULL,
    client_procs  INTEGER NOT NULL,
    x             REAL NOT NULL,        -- server processes / client processes
    window        INTEGER NOT NULL,     -- the window's index at its placement (0, 1, ...)
    status        TEXT NOT NULL,        -- ok | failed | invalid (measured, unusable: error says why)
    aggregate     REAL,                 -- sum of the client processes' rates
    per_client    REAL,                 -- aggregate / client processes
    measured_s    REAL NOT NULL DEFAULT 0,
    error         TEXT NOT NULL DEFAULT '',
    origin        TEXT NOT NULL,        -- measured | imported (ORIGINS)
    detail        TEXT NOT NULL DEFAULT '{}',  -- JSON: nodes, per-client rates, files kept, import line
    created       TEXT NOT NULL,
    PRIMARY KEY (run_id, service, key)
)"""

SPECS_DDL = """CREATE TABLE IF NOT EXISTS service_specs (
    run_id        TEXT NOT NULL REFERENCES runs(id),
    service       TEXT NOT NULL,
    metric        TEXT NOT NULL,
    spec          TEXT NOT NULL,        -- JSON: the resolved spec, every field, defaults included
    PRIMARY KEY (run_id, service)
)"""

# rooftop check --save-baseline (rooftop.history.baselines): a run's ceilings
# under a name. Made on first write before migration 18.
BASELINES_DDL = """CREATE TABLE IF NOT EXISTS baselines (
    name      TEXT PRIMARY KEY,      -- what `check --against` names
    run_id    TEXT NOT NULL,         -- the run it was taken from
    created   TEXT NOT NULL,         -- when it was saved
    ceilings  TEXT NOT NULL          -- JSON: {metric: RunCeilings.to_dict()}
)"""

#: The tables migration 18 put into the numbered schema (made on first write
#: before it), with their DDL: rooftop doctor --rebuild carries their rows over.
STUDY_TABLES = {"service_points": POINTS_DDL, "service_specs": SPECS_DDL, "baselines": BASELINES_DDL}

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


#: Every column that holds a time (table -> columns), the studies' tables
#: (service_points, baselines: made on first use before migration 18)
#: included: UTC with its zone since schema version 14 (records.now_iso).
TIME_COLUMNS = {
    "runs": ("created", "updated"),
    "samples": ("created",),
    "tune_steps": ("created",),
    "service_points": ("created",),
    "baselines": ("created",),
}


def _utc(text):
    """text as utc_stamp gives it; a value that is no time is left as it is."""
    try:
        return utc_stamp(text)
    except (ValueError, TypeError, AttributeError):
        return text


def _utc_times(store: Migrating) -> None:
    """Migration 14: every stored time to UTC with its zone. Times without
    a zone were the writing machine's local time, which the database never
    recorded: they are read in the zone of the machine that migrates (the
    one that, most often, wrote them). A baseline's copy of its run's time
    (ceilings JSON, "created") is moved too."""
    have = {r[0] for r in store.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    for table, columns in TIME_COLUMNS.items():
        if table not in have:
            continue
        for col in columns:
            for (old,) in store.db.execute(f"SELECT DISTINCT {col} FROM {table}").fetchall():
                if _utc(old) != old:
                    store.db.execute(f"UPDATE {table} SET {col} = ? WHERE {col} = ?", (_utc(old), old))
    if "baselines" in have:
        for name, text in store.db.execute("SELECT name, ceilings FROM baselines").fetchall():
            doc = json.loads(text)
            for d in doc.values():
                if isinstance(d, dict) and isinstance(d.get("created"), str):
                    d["created"] = _utc(d["created"])
            store.db.execute("UPDATE baselines SET ceilings = ? WHERE name = ?", (json.dumps(doc), name))


def _renamed_keys(store: Migrating) -> None:
    """Migration 15: every run's config and run_params under the keys'
    new names (rooftop.keys.RENAMED: collect.samples -> collect.windows,
    sample -> series, ...), so that old and new runs compare and learn
    together; every value kept. The run folder's config.json is left as
    written (rooftop doctor reads either)."""
    for run_id, text in store.db.execute("SELECT id, config FROM runs").fetchall():
        cfg = json.loads(text)
        if isinstance(cfg, dict) and rename_old(cfg):
            store.db.execute("UPDATE runs SET config = ? WHERE id = ?", (json.dumps(cfg), run_id))
    for old, new in RENAMED.items():  # each row renamed in place (its value kept as stored)
        store.db.execute("UPDATE OR REPLACE run_params SET key = ? WHERE key = ?", (new, old))
        store.db.execute(
            "UPDATE OR REPLACE run_params SET key = ? || substr(key, ?) WHERE key LIKE ? ESCAPE '\\'",
            (new, len(old) + 1, old.replace("_", "\\_") + ".%"),
        )


#: Columns renamed, one word per meaning: table -> {old name: new name}.
#: Migration 16 (issue 28): samples.sample was the window's index within its
#: measurement (a "sample" is a stored row); series.sampler names the series'
#: source (a meter of rooftop.meters). Migration 19 (issue 44):
#: service_points.sample was again a window's index, and
#: service_points.source a point's origin (measured, imported; ORIGINS in
#: rooftop.service.points), not a series' source.
RENAMED_COLUMNS = {
    "samples": {"sample": "window"},
    "series": {"sampler": "source"},
    "service_points": {"sample": "window", "source": "origin"},
}


def renamed(table: str, row: dict) -> dict:
    """A row read from a database of any version under its columns' new
    names (RENAMED_COLUMNS); the same dict."""
    for old, new in RENAMED_COLUMNS.get(table, {}).items():
        if old in row and new not in row:
            row[new] = row.pop(old)
    return row


def _renamed_columns(*tables: str) -> Callable[[Migrating], None]:
    """RENAMED_COLUMNS of these tables, every value kept (an unnumbered
    database that already has a new name is left as it is)."""

    def apply(store: Migrating) -> None:
        for table in tables:
            have = {r[1] for r in store.db.execute(f"PRAGMA table_info({table})")}
            for old, new in RENAMED_COLUMNS[table].items():
                if old in have and new not in have:
                    store.db.execute(f"ALTER TABLE {table} RENAME COLUMN {old} TO {new}")

    return apply


class Migrating(Protocol):
    """What a migration step uses of the store it upgrades (rooftop.store.db.Store)."""

    db: sqlite3.Connection

    def fill_quantities(self) -> None: ...

    def fill_params(self) -> None: ...

    def relative_paths(self) -> None: ...


def _sql(*statements: str) -> Callable[[Migrating], None]:
    def apply(store: Migrating) -> None:
        for statement in statements:
            store.db.execute(statement)

    return apply


def _add_columns(table: str, columns: dict[str, str]) -> Callable[[Migrating], None]:
    """Adds the columns a table lacks (an unnumbered database may have some)."""

    def apply(store: Migrating) -> None:
        have = {r["name"] for r in store.db.execute(f"PRAGMA table_info({table})")}
        for name, decl in columns.items():
            if name not in have:
                store.db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {decl}")

    return apply


def _then(*steps: Callable[[Migrating], None]) -> Callable[[Migrating], None]:
    def apply(store: Migrating) -> None:
        for step in steps:
            step(store)

    return apply


@dataclass(frozen=True)
class Migration:
    number: int  # the database's user_version once applied
    reason: str  # why (and the commit or issue that needed it)
    apply: Callable[[Migrating], None]


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
    Migration(
        13,
        "samples.raw_dir relative to the results folder, so a folder can be moved or copied; "
        "unmapped_paths: what could not be mapped (issue 30, item 2)",
        _then(_sql(UNMAPPED_DDL), lambda store: store.relative_paths()),
    ),
    Migration(
        14,
        "every stored time in UTC with its zone (were local time without one; read in the migrating "
        "machine's zone) (issue 30, item 6)",
        _utc_times,
    ),
    Migration(
        15,
        "config keys renamed, one word per meaning (collect.samples -> collect.windows, validate.samples -> "
        "validate.windows, sample -> series, sample_interval -> series_interval) in runs.config and run_params "
        "(issue 28)",
        _renamed_keys,
    ),
    Migration(
        16,
        "columns renamed, one word per meaning: samples.sample -> samples.window (the window's index in its "
        "measurement), series.sampler -> series.source (issue 28)",
        _renamed_columns("samples", "series"),
    ),
    Migration(
        17,
        "samples.cores_busy: the busy share of a round's cores, which decides whether nodes sharing cores "
        "time-sliced them (issue 31)",
        _add_columns("samples", BUSY_COLUMNS),
    ),
    Migration(
        18,
        "service_points, service_specs, baselines: rooftop service's points and specs and check's named "
        "baselines, made on first write before (a database that made them keeps their rows) (issue 42)",
        _sql(POINTS_DDL_V18, SPECS_DDL, BASELINES_DDL),
    ),
    Migration(
        19,
        "columns renamed, one word per meaning: service_points.sample -> service_points.window (the window's "
        "index at its placement), service_points.source -> service_points.origin (measured, imported) (issue 44)",
        _renamed_columns("service_points"),
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
    "window",
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
SAMPLE_COLUMNS += ["cores_busy"]  # issue 31: see BUSY_COLUMNS


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
SAMPLE_DEFAULTS["cores_busy"] = None  # not measured (another host's engines, a synthetic row)
