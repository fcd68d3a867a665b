"""Numbers checked where they are read (issue 42): rows damaged in the
database -- a sample's rate NULL, 0, negative or infinite, a service
point's infinite aggregate, a baseline's NaN ceiling -- are named once on
stderr (run, sample or point, column, value) and left out of everything
derived, never a traceback, in every command that reads them; every JSON
output parses with a strict parser (no NaN, no Infinity); and `check`
exits 1 only when a ceiling fell, 4 when it could not tell. Synthetic runs
(tests/synthetic.py): nothing is measured."""

from __future__ import annotations

import json
import sqlite3

import pytest

from rooftop import exits
from rooftop.cli.main import main
from rooftop.numbers import json_text


def strict(text: str):
    """json.loads that refuses NaN and Infinity, which are not JSON."""

    def refuse(word):
        raise ValueError(f"not JSON: {word}")

    return json.loads(text, parse_constant=refuse)


def cli(capsys, *argv):
    rc = main(list(argv))
    out = capsys.readouterr()
    assert "Traceback" not in out.err, out.err
    return rc, out.out, out.err


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Two comparable runs, the first saved as baseline `base`; the second
    with damaged samples and a damaged service point, and `base` with a NaN
    bw server ceiling. Returns (results folder, good run, bad run, {what: sample id})."""
    import synthetic
    from rooftop.service import importing

    tmp = tmp_path_factory.mktemp("damaged")
    cfg = synthetic.config_for(4)
    st, good = synthetic.scaled_run(tmp, created="2025-03-01T06:00:00", cfg=cfg)
    _, bad = synthetic.scaled_run(tmp, created="2025-03-02T06:00:00", cfg=cfg)
    res = tmp / "res"
    assert main(["check", "--save-baseline", "base", good, "--results", str(res)]) == 0
    svc = tmp / "kv.csv"
    svc.write_text("server_procs,client_procs,per_client,unit\n1,2,5,K ops/s\n1,2,6,K ops/s\n")
    importing.import_csv(st, bad, svc, metric="rpc")
    db = sqlite3.connect(res / "rooftop.db")
    ids = [
        r[0]
        for r in db.execute(
            "SELECT id FROM samples WHERE run_id = ? AND metric = 'rpc' AND stage = 'client_peak' ORDER BY id", (bad,)
        )
    ]
    server = db.execute(
        "SELECT id FROM samples WHERE run_id = ? AND metric = 'rpc' AND stage = 'server_peak' ORDER BY id", (bad,)
    ).fetchone()[0]
    damaged = {"null": ids[0], "negative": ids[1], "inf": ids[2], "zero": server}
    db.execute("UPDATE samples SET per_client = NULL WHERE id = ?", (damaged["null"],))
    db.execute("UPDATE samples SET per_client = -5 WHERE id = ?", (damaged["negative"],))
    db.execute("UPDATE samples SET aggregate = 9e999 WHERE id = ?", (damaged["inf"],))  # SQLite's Inf
    db.execute("UPDATE samples SET per_server = 0 WHERE id = ?", (damaged["zero"],))
    db.execute("UPDATE service_points SET aggregate = 9e999 WHERE run_id = ? AND window = 1", (bad,))
    (ceilings,) = db.execute("SELECT ceilings FROM baselines WHERE name = 'base'").fetchone()
    doc = json.loads(ceilings)
    doc["bw"]["ceilings"]["server"]["median"] = float("nan")
    db.execute("UPDATE baselines SET ceilings = ? WHERE name = 'base'", (json.dumps(doc),))
    db.commit()
    db.close()
    return res, good, bad, damaged


def test_every_json_output_parses_strictly_and_names_each_damaged_row_once(folder, capsys):
    res, good, bad, damaged = folder
    r = ("--results", str(res))
    point = f"run {bad} service kv point s1-c2-1: aggregate = inf (not finite)"
    for argv, reads_samples, reads_points in (
        (("model", bad, "--json"), True, True),
        (("export", bad, "--format", "json"), True, True),
        (("export", bad, "--services", "--format", "json"), False, True),
        (("history", "--json"), True, False),
        (("check", bad, "--against", good, "--json"), True, False),
        (("size", bad, "--clients", "8", "--json"), True, False),
        (("compare", bad, good, "--json", "--out-dir", str(res.parent / "cmp")), True, True),
        (("runs", "--json"), False, False),
    ):
        rc, out, err = cli(capsys, *argv, *r)
        assert rc == 0, (argv, err)
        strict(out)  # no NaN, no Infinity: JSON
        assert (point in err) == reads_points, (argv, err)
        if not reads_samples:
            continue
        for what, sample in damaged.items():
            lines = [line for line in err.splitlines() if f"run {bad} sample {sample} " in line]
            assert len(lines) == 1, (argv, what, err)  # named once
        assert "per_client = NULL (no rate)" in err and "per_client = -5.0 (negative)" in err, err
        assert "aggregate = inf (not finite)" in err and "per_server = 0 (a measured rate is above 0)" in err, err


def test_a_damaged_row_reads_invalid_with_its_reason_and_the_ceilings_leave_it_out(folder, capsys):
    res, good, bad, damaged = folder
    r = ("--results", str(res))
    _, out, _ = cli(capsys, "export", bad, "--format", "json", *r)
    doc = strict(out)
    rows = {s["id"]: s for s in doc["samples"]}
    for sample in damaged.values():
        assert rows[sample]["status"] == "invalid" and rows[sample]["error"].startswith("damaged in the database: ")
    assert rows[damaged["inf"]]["aggregate"] is None and rows[damaged["negative"]]["per_client"] is None
    point = next(p for p in doc["service_points"] if p["window"] == 1)
    assert point["status"] == "invalid" and point["aggregate"] is None and "aggregate = inf" in point["error"]
    # the model: the same ceilings as the good run's, from the samples left
    _, out, _ = cli(capsys, "model", bad, "--json", *r)
    mine = {m["metric"]: m for m in strict(out)["metrics"]}
    _, out, _ = cli(capsys, "model", good, "--json", *r)
    theirs = {m["metric"]: m for m in strict(out)["metrics"]}
    assert mine["rpc"]["client"]["samples"] == theirs["rpc"]["client"]["samples"] - 3
    assert mine["rpc"]["server"]["samples"] == theirs["rpc"]["server"]["samples"] - 1
    assert mine["bw"] == theirs["bw"] | {"source": mine["bw"]["source"]}
    rc, out, err = cli(capsys, "report", bad, *r)
    assert rc == 0, err
    md = (res / bad / "report" / "report.md").read_text()
    assert "damaged in the database" in md


def test_check_exits_4_when_it_cannot_tell_and_1_only_for_a_fall(folder, capsys, monkeypatch):
    res, good, bad, _ = folder
    r = ("--results", str(res))
    # the baseline's bw server ceiling is NaN: that ceiling cannot be told, none fell
    rc, out, err = cli(capsys, "check", bad, "--against", "base", *r)
    assert rc == exits.CANNOT_TELL, (out, err)
    assert "could not tell: bw server ceiling: baseline base" in out and "median = nan (not finite)" in out, out
    assert f"baseline base (run {good}) bw server ceiling: median = nan (not finite)" in err, err
    rc, out, _ = cli(capsys, "check", bad, "--against", "base", "--json", *r)
    doc = strict(out)
    assert rc == exits.CANNOT_TELL and not doc["fell"] and len(doc["cannot_tell"]) == 1, doc
    # the damaged samples are left out and the run's ceilings still compare: told
    rc, out, _ = cli(capsys, "check", bad, "--against", good, *r)
    assert rc == 0 and "no ceiling fell beyond noise" in out, out
    # an unforeseen error is "could not tell", one line, never exit 1 (a fall)
    from rooftop.history import gate

    def boom(*a, **k):
        raise ZeroDivisionError("float division by zero")

    monkeypatch.setattr(gate, "check", boom)
    rc, _, err = cli(capsys, "check", bad, "--against", good, *r)
    assert rc == exits.CANNOT_TELL and "could not tell: an unexpected error, ZeroDivisionError" in err, err


def test_json_text_writes_null_for_what_json_cannot_hold():
    doc = {"a": float("inf"), "b": [1.5, float("nan"), (float("-inf"),)], "c": {"d": "x"}}
    assert json_text(doc) == '{"a": null, "b": [1.5, null, [null]], "c": {"d": "x"}}'


def test_a_window_in_which_no_operation_completed_is_stored_invalid():
    """Numbers checked where they enter: a rate of 0 is no rate, so the
    campaign stores such a window invalid, as the readers would read it."""
    from types import SimpleNamespace

    import synthetic
    from rooftop.campaign import Rows
    from rooftop.launchers.base import Node

    cfg = synthetic.config_for(2)
    rows = Rows("r", cfg, [Node(n["index"], n["host"], tuple(n["cores"])) for n in cfg["nodes"]])
    sp, c = SimpleNamespace(metric="rpc"), SimpleNamespace(overlap=1.0, skew_s=0.0)
    assert rows.invalid(sp, [0], [1], 0.0, c) == "no operation completed in the clients' common window (rate 0)"
    assert rows.invalid(sp, [0], [1], 5.0, c) == ""
