"""The results store's numbered migrations (issue 12, item 3): databases
written by earlier releases (tests/data/results-*) open, keep every row and
get the quantities and parameter tables filled; a newer database is
refused; two openers at once migrate once; campaigns and 'rooftop doctor
--rebuild' fill the new tables."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path

import jsonschema
import pytest
from campaign_util import rooftop

from rooftop import export
from rooftop.keys import rename_old
from rooftop.store import connection, schema
from rooftop.store.db import Store
from rooftop.store.records import StoreError, flatten
from rooftop.store.schema import LATENCY_QUANTILES, MIGRATIONS, QUANTITIES, SCHEMA_VERSION
from synthetic import sample_row

DATA = Path(__file__).resolve().parents[1] / "data"
#: results folder -> (schema version as written, samples it holds)
FIXTURES = {"results-19dee6e": 8, "results-2c33362": 16}


def old_copy(name: str, tmp_path: Path) -> Path:
    dst = tmp_path / name
    shutil.copytree(DATA / name, dst)
    return dst


def raw_rows(res: Path, table: str) -> list[dict]:
    db = sqlite3.connect(res / "rooftop.db")
    db.row_factory = sqlite3.Row
    rows = [dict(r) for r in db.execute(f"SELECT * FROM {table} ORDER BY 1")]
    db.close()
    return rows


def user_version(res: Path) -> int:
    db = sqlite3.connect(res / "rooftop.db")
    try:
        return db.execute("PRAGMA user_version").fetchone()[0]
    finally:
        db.close()


def check_filled(res: Path, samples: list[dict]) -> None:
    """Every measured sample has its quantities (columns and latency from
    its documents) and every parameter of its run and placement."""
    st = Store(res, create=False)
    try:
        for s in samples:
            q = st.sample_quantities(s["id"])
            for name in ("aggregate", "per_server", "per_client", "measured_s"):
                assert q[name] == (pytest.approx(s[name]), QUANTITIES[name][0] or s["unit"]), (s["key"], name)
            assert q["overlap"] == (s["overlap"], "1")
            # The documents are found in the copied folder (raw_dir names where they were written).
            lat = [q[n][0] for n in LATENCY_QUANTILES]
            assert lat == sorted(lat) and lat[0] > 0 and {q[n][1] for n in LATENCY_QUANTILES} == {"us"}
            assert ("foreign_cpu" in q) == (s.get("foreign_cpu") is not None)
            params = st.sample_params(s["id"])
            # as the run stored it (get_run brings it up to date: keys declared since, at their default)
            cfg = json.loads(st.db.execute("SELECT config FROM runs WHERE id = ?", (s["run_id"],)).fetchone()[0])
            assert {k: params[k] for k, _ in flatten(cfg)} == dict(flatten(cfg))
            assert (
                params["sample.stage"],
                params["sample.metric"],
                params["sample.server_procs"],
                params["sample.x"],
            ) == (s["stage"], s["metric"], s["server_procs"], s["x"])
            assert json.loads(params["sample.client_nodes"]) == json.loads(s["client_nodes"])
    finally:
        st.close()


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_old_database_migrates_and_keeps_every_row(name, tmp_path):
    res = old_copy(name, tmp_path)
    assert user_version(res) == 0  # written before migrations were numbered
    runs, samples = raw_rows(res, "runs"), raw_rows(res, "samples")
    assert len(samples) == FIXTURES[name] and all(s["status"] == "ok" for s in samples)
    # Opening migrates, here on a machine 6 hours behind UTC (POSIX TZ: no tzdata needed).
    listed = json.loads(rooftop("runs", "--json", "--results", str(res), env=dict(os.environ, TZ="CST6")).stdout)
    assert user_version(res) == SCHEMA_VERSION
    assert [(r["id"], r["status"], r["samples"]) for r in listed] == [(runs[0]["id"], "complete", len(samples))]
    new_runs, new_samples = raw_rows(res, "runs"), raw_rows(res, "samples")
    moved = {"raw_dir", "created", "updated", "config"}
    named = schema.RENAMED_COLUMNS["samples"].get  # sample -> window (migration 16)
    for old, new in zip(runs + samples, new_runs + new_samples, strict=True):
        # Every value as it was, but raw_dir: written absolute (/tmp/store-mig-*/RUN/raw/ROUND),
        # now relative to the results folder (migration 13); the times: written local
        # without a zone ('2026-11-23T01:42:45'), now UTC with it (migration 14); the
        # config's renamed keys under their new names (migration 15: collect.samples ->
        # collect.windows, ...), and the renamed columns (migration 16: samples.sample ->
        # samples.window), every value kept.
        assert {named(k, k): new[named(k, k)] for k in old if k not in moved} == {
            named(k, k): v for k, v in old.items() if k not in moved
        }
        if "config" in old:
            was, now = json.loads(old["config"]), json.loads(new["config"])
            assert "samples" in was["collect"] and "samples" not in now["collect"]
            assert rename_old(was) and now == was
        for k in ("created", "updated"):
            if k in old:
                assert "+" not in old[k] and not old[k].endswith("Z")  # the old format, local
                utc = datetime.fromisoformat(old[k]) + timedelta(hours=6)
                assert new[k] == utc.isoformat(timespec="seconds") + "+00:00", (k, old[k], new[k])
    assert listed[0]["created"] == new_runs[0]["created"]
    for old, new in zip(samples, new_samples):
        assert "sample" in old and "sample" not in new and new["window"] == old["sample"]
        assert Path(old["raw_dir"]).is_absolute() and not (res / old["raw_dir"]).is_dir()
        assert new["raw_dir"] == str(Path(*Path(old["raw_dir"]).parts[-3:]))
        assert new["raw_dir"].startswith(f"{new['run_id']}/raw/") and (res / new["raw_dir"]).is_dir()
    assert raw_rows(res, "unmapped_paths") == []
    for old, new in zip(samples, new_samples):  # columns added later: their defaults
        assert {c: new[c] for c in schema.SAMPLE_DEFAULTS if c not in old} == {
            c: v for c, v in schema.SAMPLE_DEFAULTS.items() if c not in old
        }
        assert new["ceilings"] == old.get("ceilings", "")
    check_filled(res, new_samples)


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_commands_work_on_a_migrated_database(name, tmp_path):
    res = old_copy(name, tmp_path)
    run = raw_rows(res, "runs")[0]["id"]
    exported = json.loads(rooftop("export", run, "--format", "json", "--results", str(res)).stdout)
    assert len(exported["samples"]) == FIXTURES[name]
    assert list(exported["samples"][0]) == export.COLUMNS  # one column order
    csv = rooftop("export", run, "--results", str(res)).stdout.splitlines()
    assert csv[0] == ",".join(export.CSV_COLUMNS) and len(csv) == 1 + FIXTURES[name]
    jsonschema.validate(exported, export.schema("export"))
    out = rooftop("model", run, "--results", str(res)).stdout
    assert "rpc" in out and "bw" in out


def test_migrated_paths_carry_and_what_cannot_be_mapped_is_recorded(tmp_path):
    """Migration 13: old paths (absolute, of a folder since moved; relative
    to where collect ran) map into the folder; one that cannot is left, in
    unmapped_paths, and doctor reports it. The old database's report has
    its latency figures (read from the documents its folder holds)."""
    res = old_copy("results-19dee6e", tmp_path)
    run = raw_rows(res, "runs")[0]["id"]
    db = sqlite3.connect(res / "rooftop.db")
    keys = [r[0] for r in db.execute("SELECT key FROM samples ORDER BY id")]
    round_ = "validate_rpc_s0x1_c1x1"
    db.execute(  # as collect wrote it when run with --results rooftop-results
        "UPDATE samples SET raw_dir = ? WHERE key = ?", (f"rooftop-results/{run}/raw/{round_}", keys[-1])
    )
    db.execute("UPDATE samples SET raw_dir = ? WHERE key = ?", ("/nowhere/documents", keys[0]))
    db.commit()
    db.close()
    p = rooftop("doctor", "--results", str(res), check=False)  # opening migrates
    assert user_version(res) == SCHEMA_VERSION
    new = {s["key"]: s["raw_dir"] for s in raw_rows(res, "samples")}
    assert new[keys[-1]] == f"{run}/raw/{round_}"
    assert new[keys[0]] == "/nowhere/documents"
    assert all(new[k].startswith(f"{run}/raw/") for k in keys[1:])
    assert [(r["tbl"], r["run_id"], r["key"], r["path"]) for r in raw_rows(res, "unmapped_paths")] == [
        ("samples", run, keys[0], "/nowhere/documents")
    ]
    assert p.returncode == 1
    assert f"run {run}: 1 sample(s) name an engine documents folder that does not resolve" in p.stdout, p.stdout
    assert f"sample {keys[0]}: /nowhere/documents" in p.stdout
    assert "could not be mapped" in p.stdout
    out = tmp_path / "rep"
    rooftop("report", run, "--results", str(res), "--out-dir", str(out))
    assert {f"latency-{m}.png" for m in ("rpc", "bw")} <= {f.name for f in (out / "figures").iterdir()}


def test_rebuild_fills_quantities_and_params(tmp_path):
    res = old_copy("results-19dee6e", tmp_path)
    before = {s["key"]: s for s in raw_rows(res, "samples")}
    (res / "rooftop.db").unlink()
    p = rooftop("doctor", "--results", str(res), "--rebuild")
    assert f"{len(before)} samples from engine documents" in p.stdout, p.stdout
    assert user_version(res) == SCHEMA_VERSION
    rebuilt = raw_rows(res, "samples")
    assert {s["key"] for s in rebuilt} == set(before)
    check_filled(res, rebuilt)


def test_rebuild_keeps_the_rows_of_a_database_older_than_its_columns(tmp_path):
    """A row only the old database holds (its documents gone) is kept by
    --rebuild under the columns' new names (samples.sample: window)."""
    res = old_copy("results-19dee6e", tmp_path)  # unopened: samples.sample
    before = {s["key"]: s for s in raw_rows(res, "samples")}
    gone = Path(next(s["raw_dir"] for s in before.values() if s["key"].startswith("validate/")))
    shutil.rmtree(res / Path(*gone.parts[-3:]))
    p = rooftop("doctor", "--results", str(res), "--rebuild", check=False)
    assert p.returncode == 1 and "does not resolve" in p.stdout  # the folder removed, said
    kept = sum(1 for s in before.values() if s["raw_dir"] == str(gone))
    assert f"{len(before) - kept} samples from engine documents, {kept} from the old database" in p.stdout
    after = {s["key"]: s for s in raw_rows(res, "samples")}
    assert set(after) == set(before) and kept > 0
    assert all(after[k]["window"] == s["sample"] for k, s in before.items())


def test_newer_database_is_refused(tmp_path):
    res = old_copy("results-19dee6e", tmp_path)
    Store(res, create=False).close()
    db = sqlite3.connect(res / "rooftop.db")
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.commit()
    db.close()
    with pytest.raises(
        StoreError,
        match=f"{res / 'rooftop.db'} has schema version {SCHEMA_VERSION + 1}, "
        f"newer than this rooftop knows \\(up to {SCHEMA_VERSION}\\)",
    ):
        Store(res, create=False)
    p = rooftop("runs", "--results", str(res), check=False)
    assert p.returncode == 2 and "Traceback" not in p.stderr and "newer than this rooftop" in p.stderr
    assert user_version(res) == SCHEMA_VERSION + 1  # left as it was


def _open_slowly(res: str, log: str, go) -> None:
    """A second rooftop opening the store: its migrations say when they run
    and take their time, so the other opener arrives meanwhile."""
    import time

    def logged(m):
        def apply(store):
            with open(log, "a") as f:
                f.write(f"{m.number}\n")
            time.sleep(0.05)
            m.apply(store)

        return schema.Migration(m.number, m.reason, apply)

    schema.MIGRATIONS[:] = [logged(m) for m in MIGRATIONS]
    go.wait()
    Store(res, create=False).close()


def test_concurrent_openers_migrate_once(tmp_path):
    res = old_copy("results-2c33362", tmp_path)
    log = tmp_path / "applied"
    ctx = multiprocessing.get_context("fork")
    go = ctx.Event()
    procs = [ctx.Process(target=_open_slowly, args=(str(res), str(log), go)) for _ in range(3)]
    for p in procs:
        p.start()
    go.set()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    assert log.read_text().split() == [str(m.number) for m in MIGRATIONS]  # once, in order
    assert user_version(res) == SCHEMA_VERSION
    check_filled(res, raw_rows(res, "samples"))


def test_failed_migration_leaves_the_database_as_it_was(tmp_path, monkeypatch):
    res = old_copy("results-2c33362", tmp_path)
    before = (res / "rooftop.db").read_bytes()

    def broken(store):
        store.db.execute("SELECT no_such_column FROM samples")

    # Store._migrate (rooftop.store.connection) reads the list it imported.
    monkeypatch.setattr(
        connection, "MIGRATIONS", [*MIGRATIONS[:-1], schema.Migration(SCHEMA_VERSION, "broken", broken)]
    )
    with pytest.raises(StoreError, match="while upgrading its schema from version 0 to"):
        Store(res, create=False)
    assert user_version(res) == 0 and (res / "rooftop.db").read_bytes() == before
    assert "late_s" not in raw_rows(res, "samples")[0]  # the earlier migrations rolled back too


def test_replaced_sample_keeps_no_stale_quantities(tmp_path):
    st = Store(tmp_path / "res")
    run = st.new_run({"metrics": ["rpc"], "nodes": [{"index": 0, "host": "a"}]}, {})
    st.add_sample(**sample_row(run, aggregate=10.0, per_server=10.0, per_client=10.0, foreign_cpu=0.25))
    first = st.samples(run)[0]["id"]
    assert st.sample_quantities(first)["foreign_cpu"] == (0.25, "cores")
    st.add_sample(**sample_row(run, status="failed", aggregate=None, per_server=None, per_client=None, measured_s=0.0))
    assert st.sample_quantities(first) == {}
    assert st.sample_quantities(st.samples(run)[0]["id"]) == {}  # a failed sample measured nothing
    assert st.db.execute("SELECT COUNT(*) FROM quantities").fetchone()[0] == 0
    assert st.sample_params(st.samples(run)[0]["id"])["nodes.0.host"] == "a"
    st.close()


def test_latency_of_pairs_and_of_whole_rounds(tmp_path):
    """A pair's row takes its own client's bins (round.json: rank j is the
    j-th row of a window); a row of the whole round merges every client's."""
    st = Store(tmp_path / "res")
    run = st.new_run({}, {})
    bins = {0: [[10.0, 11.0, 100]], 1: [[20.0, 21.0, 50], [40.0, 42.0, 50]]}
    for name, keys in (("pairs", [["p/rpc/s0x1/c1x1/0", "p/rpc/s1x1/c0x1/0"]]), ("round", [["r/rpc/s0x1/c1-2x1/0"]])):
        docs = st.run_dir(run) / "raw" / name
        docs.mkdir(parents=True)
        (docs / "round.json").write_text(json.dumps({"keys": keys}))
        for rank, b in bins.items():
            (docs / f"client-{rank}.json").write_text(json.dumps({"result": {"latency_us": {"bins": b}}}))
        for key in keys[0]:
            st.add_sample(
                **sample_row(
                    run,
                    key,
                    stage="client_peak",
                    client_procs=len(keys) + 1,
                    aggregate=1.0,
                    per_server=1.0,
                    per_client=1.0,
                    raw_dir=str(docs),
                )
            )
    lat = {s["key"].split("/")[0] + s["key"].split("/")[2]: st.sample_quantities(s["id"]) for s in st.samples(run)}
    assert [lat["ps0x1"][n][0] for n in LATENCY_QUANTILES] == [11.0, 11.0, 11.0]
    assert [lat["ps1x1"][n][0] for n in LATENCY_QUANTILES] == [21.0, 42.0, 42.0]
    assert [lat["rs0x1"][n][0] for n in LATENCY_QUANTILES] == [11.0, 42.0, 42.0]  # 200 merged
    st.close()


def test_the_store_takes_the_latency_bins_the_campaign_loaded(tmp_path, monkeypatch):
    """A campaign's row carries its clients' latency bins, merged from the
    documents it loaded (Rows.row): the store computes the quantiles from
    them and does not open the documents again."""
    import synthetic
    from rooftop.campaign import Rows, plan_collect
    from rooftop.engine import enginedoc
    from rooftop.launchers.base import Node

    cfg = synthetic.config_for(2)
    st = Store(tmp_path / "res")
    run = st.new_run(cfg, {})
    rows = Rows(run, cfg, [Node(n["index"], n["host"], tuple(n["cores"])) for n in cfg["nodes"]])
    pl = next(p for p in plan_collect(cfg) if p.measurements[0].pairs is None)
    m = pl.measurements[0]
    part = Rows.parts(pl, m, 0, 1, 2)[0]
    bins = {0: [[10.0, 11.0, 100]], 1: [[20.0, 21.0, 50], [40.0, 42.0, 50]]}
    results = {
        r: {"measure_start_s": 100.0, "windows": [{"elapsed_s": 1.0, "work_ops": 10.0}], "latency_us": {"bins": b}}
        for r, b in bins.items()
    }
    raw = st.run_dir(run) / "raw" / "r"
    raw.mkdir(parents=True)
    for r in bins:  # on disk as well: the store could read them, and must not
        (raw / f"client-{r}.json").write_text(json.dumps({"result": {"latency_us": {"bins": [[1.0, 2.0, 1]]}}}))
    row = rows.row(m, 0, part, 0, results, {}, {0: 0.0, 1: 0.0}, raw)
    assert row["status"] == "ok" and row["latency_bins"] == [(10.0, 11.0, 100), (20.0, 21.0, 50), (40.0, 42.0, 50)]

    def reopened(path):
        raise AssertionError(f"the store opened {path} again")

    monkeypatch.setattr(enginedoc, "load", reopened)
    st.add_sample(**row)
    got = st.sample_quantities(st.samples(run)[0]["id"])
    assert [got[n][0] for n in LATENCY_QUANTILES] == [11.0, 42.0, 42.0]
    st.close()


def test_migrations_are_numbered_in_order_with_a_reason():
    assert [m.number for m in MIGRATIONS] == list(range(1, SCHEMA_VERSION + 1))
    assert all(m.reason and "\n" not in m.reason for m in MIGRATIONS)


def test_flatten_config():
    cfg = {
        "bw": {"size": "4MiB", "verify": False},
        "metrics": ["rpc", "bw"],
        "engine": {"path": None},
        "nodes": [{"index": 0, "cores": [0, 1]}, {"index": 1, "cores": [2]}],
        "extra": {},
        "none": [],
    }
    assert flatten(cfg) == [
        ("bw.size", "4MiB"),
        ("bw.verify", False),
        ("metrics", '["rpc", "bw"]'),
        ("engine.path", None),
        ("nodes.0.index", 0),
        ("nodes.0.cores", "[0, 1]"),
        ("nodes.1.index", 1),
        ("nodes.1.cores", "[2]"),
        ("extra", "{}"),
        ("none", "[]"),
    ]


def test_fresh_campaign_fills_quantities_and_params(tmp_path):
    res = tmp_path / "res"
    run = (
        rooftop(
            "collect",
            "--metrics",
            "rpc",
            "--duration",
            "0.3",
            "--warmup",
            "0.1",
            "--windows",
            "2",
            "--results",
            str(res),
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    assert user_version(res) == SCHEMA_VERSION
    samples = raw_rows(res, "samples")
    assert len(samples) == 2 and {s["run_id"] for s in samples} == {run}
    check_filled(res, samples)
    assert {r["key"] for r in raw_rows(res, "run_params")} >= {"collect.windows", "engine.min_overlap"}


def test_times_of_every_table_move_to_utc_once(tmp_path, monkeypatch):
    """Migration 14 on the tables the fixtures lack (a baseline and its copy
    of its run's time): local times are read in the migrating machine's
    zone, a time with a zone is moved to UTC, a UTC one is left as it is."""
    import time

    from rooftop.history import baselines

    st = Store(tmp_path / "res")
    run = st.new_run({}, {})
    st.db.execute(baselines.DDL)
    st.db.execute(
        "INSERT INTO baselines VALUES ('b', ?, '2026-01-01T12:00:00', ?)",
        (run, json.dumps({"bw": {"created": "2026-01-01T11:00:00+02:00"}})),
    )
    st.db.execute("UPDATE runs SET created = '2026-01-01T10:00:00', updated = '2026-01-01T09:00:00+00:00'")
    st.db.execute("PRAGMA user_version = 13")
    st.db.commit()
    st.close()
    monkeypatch.setenv("TZ", "CST6")  # 6 hours behind UTC
    time.tzset()
    try:
        Store(tmp_path / "res", create=False).close()
    finally:
        monkeypatch.undo()
        time.tzset()
    (r,) = raw_rows(tmp_path / "res", "runs")
    (b,) = raw_rows(tmp_path / "res", "baselines")
    assert (r["created"], r["updated"]) == ("2026-01-01T16:00:00+00:00", "2026-01-01T09:00:00+00:00")
    assert b["created"] == "2026-01-01T18:00:00+00:00"
    assert json.loads(b["ceilings"])["bw"]["created"] == "2026-01-01T09:00:00+00:00"


def test_columns_renamed_once_every_value_kept(tmp_path):
    """Migration 16 on a store written before it (version 15): samples.sample
    becomes samples.window and series.sampler series.source, every row kept;
    the store and the export read them under the new names."""
    st = Store(tmp_path / "res")
    run = st.new_run({"metrics": ["rpc"]}, {})
    for k in (0, 1):
        st.add_sample(
            **sample_row(
                run, f"server_peak/rpc/s0x1/c1x1/{k}", window=k, aggregate=10.0 + k, per_server=10.0, per_client=10.0
            )
        )
    st.add_series(run, "r0", {"cpu": [(0.5, "cpu_user", 0.25, "cores")], "power": [(0.5, "power", 80.0, "W")]})
    renamed16 = {t: schema.RENAMED_COLUMNS[t] for t in ("samples", "series")}
    for table, names in renamed16.items():  # as version 15 wrote them
        for old, new in names.items():
            st.db.execute(f"ALTER TABLE {table} RENAME COLUMN {new} TO {old}")
    st.db.execute("PRAGMA user_version = 15")
    st.db.commit()
    st.close()
    before = {t: raw_rows(tmp_path / "res", t) for t in renamed16}
    assert [s["sample"] for s in before["samples"]] == [0, 1]
    st = Store(tmp_path / "res", create=False)  # migrates
    try:
        assert user_version(tmp_path / "res") == SCHEMA_VERSION
        for table, names in renamed16.items():
            after = raw_rows(tmp_path / "res", table)
            assert [{names.get(k, k): v for k, v in r.items()} for r in before[table]] == after
        assert [s["window"] for s in st.samples(run)] == [0, 1]
        assert [(p["source"], p["quantity"]) for p in st.series(run)] == [("cpu", "cpu_user"), ("power", "power")]
        doc = export.json_doc(st, run)
        assert [s["window"] for s in doc["samples"]] == [0, 1] and "sample" not in doc["samples"][0]
        defs = export.schema("export")["$defs"]
        for row in doc["samples"]:
            jsonschema.validate(row, {"$defs": defs, "$ref": "#/$defs/sample"})
        assert export.series_text(st, run, "csv").splitlines()[0] == "run_id,round,source,t,quantity,value,unit"
    finally:
        st.close()


def tables(res: Path) -> set[str]:
    db = sqlite3.connect(res / "rooftop.db")
    try:
        return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        db.close()


def test_service_points_and_baselines_tables_are_in_the_numbered_migrations(tmp_path):
    """Migration 18: an old database gets service_points, service_specs and
    baselines when it is opened (before, they were made on first write, so
    a rebuild or a reader never saw them); one that made them on first
    write keeps every row."""
    from rooftop.history import baselines
    from rooftop.service import points

    res = old_copy("results-2c33362", tmp_path)
    assert not {"service_points", "service_specs", "baselines"} & tables(res)
    Store(res, create=False).close()
    assert {"service_points", "service_specs", "baselines"} <= tables(res)
    # Version 17 with the tables made on first write: their rows are kept.
    st = Store(tmp_path / "res")
    run = st.new_run({}, {})
    points.add(st, run, points.ServicePoint("kv", "rpc", "ops/s", 1, 2, 0, "ok", 10.0, origin="imported"))
    points.save_spec(st, run, "kv", "rpc", {"name": "kv"})
    st.db.execute("INSERT INTO baselines VALUES ('b', ?, '2026-01-01T12:00:00+00:00', '{}')", (run,))
    st.db.execute("PRAGMA user_version = 17")
    st.db.commit()
    st.close()
    before = {t: raw_rows(tmp_path / "res", t) for t in ("service_points", "service_specs", "baselines")}
    st = Store(tmp_path / "res", create=False)
    try:
        assert user_version(tmp_path / "res") == SCHEMA_VERSION
        assert {t: raw_rows(tmp_path / "res", t) for t in before} == before
        assert [p.aggregate for p in points.load(st, run)] == [10.0]
        assert [n for n, _, _ in baselines.names(st)] == ["b"]
    finally:
        st.close()


def columns(res: Path, table: str) -> list[str]:
    db = sqlite3.connect(res / "rooftop.db")
    try:
        return [r[1] for r in db.execute(f"PRAGMA table_info({table})")]
    finally:
        db.close()


def test_service_points_sample_and_source_renamed_window_and_origin_every_value_kept(tmp_path):
    """Migration 19 (issue 44): service_points.sample (a window's index at
    its placement) becomes window and service_points.source (measured,
    imported) origin, values kept: on a database that made the table on
    first write (learn-dataset, version 12) and on one that got it from
    migration 18 (results-2c33362, unnumbered); the store, the export and
    doctor --rebuild's salvage read them under the new names."""
    from rooftop.service import points

    res = old_copy("learn-dataset", tmp_path)
    assert user_version(res) == 12 and {"sample", "source"} <= set(columns(res, "service_points"))
    run = raw_rows(res, "runs")[0]["id"]
    db = sqlite3.connect(res / "rooftop.db")
    for window, origin, agg in ((0, "measured", 10.0), (1, "imported", 12.0)):
        db.execute(
            "INSERT INTO service_points (run_id, service, key, metric, unit, server_procs, client_procs, x, sample, "
            "status, aggregate, per_client, measured_s, error, source, detail, created) "
            "VALUES (?, 'kv', ?, 'rpc', 'ops/s', 1, 2, 0.5, ?, 'ok', ?, ?, 1.0, '', ?, '{}', '2026-01-01T12:00:00+00:00')",
            (run, f"s1-c2-{window}", window, agg, agg / 2, origin),
        )
    db.commit()
    db.close()
    before = raw_rows(res, "service_points")
    assert schema.renamed("service_points", dict(before[1])) == {
        {"sample": "window", "source": "origin"}.get(k, k): v for k, v in before[1].items()
    }
    st = Store(res, create=False)  # migrates
    try:
        assert user_version(res) == SCHEMA_VERSION
        cols = columns(res, "service_points")
        assert {"window", "origin"} <= set(cols) and not {"sample", "source"} & set(cols)
        named = schema.RENAMED_COLUMNS["service_points"]
        assert raw_rows(res, "service_points") == [{named.get(k, k): v for k, v in r.items()} for r in before]
        assert [(p.window, p.origin, p.aggregate) for p in points.load(st, run)] == [
            (0, "measured", 10.0),
            (1, "imported", 12.0),
        ]
        doc = export.json_doc(st, run)
        assert [(p["window"], p["origin"]) for p in doc["service_points"]] == [(0, "measured"), (1, "imported")]
        defs = export.schema("export")["$defs"]
        for p in doc["service_points"]:
            jsonschema.validate(p, {"$defs": defs, "$ref": "#/$defs/service_point"})
        header = export.services_text(st, run, "csv").splitlines()[0].split(",")
        assert "window" in header and "origin" in header and "sample" not in header and "source" not in header
    finally:
        st.close()
    # A database before migration 18: the table it makes gets the new names too.
    old = old_copy("results-2c33362", tmp_path)
    Store(old, create=False).close()
    cols = columns(old, "service_points")
    assert {"window", "origin"} <= set(cols) and not {"sample", "source"} & set(cols)


def test_doctor_says_upgrade_rooftop_for_a_newer_database_and_never_rebuilds_it(tmp_path):
    """A database of a newer schema: doctor names both versions and says to
    upgrade rooftop (never to rebuild: an older schema would drop what only
    the newer one holds), and --rebuild refuses it, leaving it in place."""
    res = old_copy("results-19dee6e", tmp_path)
    Store(res, create=False).close()
    db = sqlite3.connect(res / "rooftop.db")
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.commit()
    db.close()
    p = rooftop("doctor", "--results", str(res), check=False)
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert f"schema version {SCHEMA_VERSION + 1}" in p.stdout and f"up to {SCHEMA_VERSION}" in p.stdout, p.stdout
    assert "upgrade rooftop" in p.stdout and "--rebuild" not in p.stdout, p.stdout
    assert json.loads(rooftop("doctor", "--results", str(res), "--json", check=False).stdout)["advice"].startswith(
        "upgrade rooftop"
    )
    p = rooftop("doctor", "--results", str(res), "--rebuild", check=False)
    assert p.returncode == 2 and "upgrade rooftop" in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert sorted(f.name for f in res.glob("rooftop.db*")) == ["rooftop.db"]  # not moved aside
    assert user_version(res) == SCHEMA_VERSION + 1
    p = rooftop("doctor", "--results", str(res), "--recover", check=False)
    assert p.returncode != 0 and "upgrade rooftop" in p.stderr, p.stderr
    assert user_version(res) == SCHEMA_VERSION + 1
