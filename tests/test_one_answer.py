"""Issue 43: one answer per metric. On the README main job's kind of run (2
logical nodes: the client and server ceilings are one measurement) no
command, figure or export shows a located ridge or a single server count,
and each says the same reason; the validation at the ceilings' own
placement is labelled repeatability, and the accuracy says "not tested".
(A run whose ridge is located gives the same numbers everywhere: the
emulated cluster's tests/cluster/test_check_regression.py.)"""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest

import synthetic
from rooftop.cli.main import main

REASON = "the client and server ceilings are one measurement (the same placement)"


@pytest.fixture(scope="module")
def one_measurement(tmp_path_factory):
    """rpc and bw on 2 logical nodes of 1 core, collect and validate at 1:1
    on nodes 0/1 (as the main job measures them), rates 5 % apart."""
    tmp = tmp_path_factory.mktemp("one")
    _store, run = synthetic.one_measurement_run(tmp)
    return tmp / "res", run


def _run(*args) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(list(args)) == 0
    return buf.getvalue()


def test_no_command_or_export_shows_a_located_ridge_or_one_server_count(one_measurement):
    res, run = one_measurement
    r = ("--results", str(res))
    doc = json.loads(_run("model", run, *r, "--json"))
    for m in doc["metrics"]:
        assert m["verdict"]["kind"] == "indistinguishable"
        assert m["ridge"] == {
            "located": False,
            "reason": REASON,
            "min": None,
            "median": None,
            "max": None,
            "ci95": None,
        }
        assert m["recommended"] is None
        # Every validation point repeats the ceilings' placement: no accuracy claimed.
        assert m["validation"] and not any(c["tests_model"] for c in m["validation"])
        assert m["accuracy"]["tested"] == 0 and m["accuracy"]["median_abs_error_pct"] is None
        assert m["accuracy"]["text"].startswith("not tested")
    text = _run("model", run, *r)
    assert "ridge x*" in text and f"not located: {REASON[:40]}" in text.replace("\n", " ").replace("│", "")
    assert not re.search(r"ridge x\*\s+│?\s*\d", text) and "recommended" not in text
    assert "repeatability" in text and "accuracy: not tested" in text
    for metric in ("rpc", "bw"):
        size = json.loads(_run("size", run, *r, "--clients", "10", "--metrics", metric, "--json"))
        assert size["kind"] == "indistinguishable" and size["servers"] == {"fewest": None, "median": None, "most": None}
        assert size["text"].startswith("not sized:") and REASON in size["text"] and not size["rows"]
        # A target gives only an upper bound (each server gave at least what was measured).
        low = json.loads(_run("size", run, *r, "--clients", "10", "--metrics", metric, "--target", "1", "--json"))
        assert low["servers"]["fewest"] is None and low["servers"]["median"] is None
        assert low["servers"]["most"] == 1 and low["text"].startswith("at most 1 server") and REASON in low["text"]
    exported = json.loads(_run("export", run, *r, "--format", "json"))["answers"]
    assert [a["ridge"] for a in exported] == [m["ridge"] for m in doc["metrics"]]
    for a in exported:
        assert all(h["servers"]["median"] is None for h in a["how_many_servers"])
    fom = _run("export", run, *r, "--format", "fom")
    assert ".ridge." not in fom and ".validation.median_abs_error" not in fom
    hist = json.loads(_run("history", *r, "--json"))
    assert [x["ratio"] for g in hist["groups"] for x in g["runs"]] == [None, None]
    assert "no ratio (the verdict locates no ridge)" in _run("history", *r)


def test_the_report_and_figures_say_the_same_reason(one_measurement, tmp_path):
    res, run = one_measurement
    page = Path(_run("report", run, "--results", str(res)).strip().splitlines()[-1])
    html = page.read_text()
    md = (page.parent / "report.md").read_text()
    for text in (html, md):
        assert f"ridge not located: {REASON}" in text and "ridge x* =" not in text
        assert "not sized: with 1 server process per client" in text
        assert "at the median" not in text
    assert md.count("Accuracy: not tested") == 2 and "repeatability" in md
    svg = (page.parent / "figures" / "roofline-rpc.svg").read_text()
    assert 'id="ridge"' not in svg and 'id="ridge-not-located"' in svg
    compared = _run("compare", run, "examples/aurora-table2.json", "--results", str(res), "--out-dir", str(tmp_path))
    rows = [line for line in compared.splitlines() if "2 logical" in line and line.startswith("│")]
    assert len(rows) == 2 and all("not located" in line for line in rows), compared
    assert "(1:1-" not in compared  # one placement gives no span of ratios


def test_a_table_cell_says_the_verdict_the_report_says():
    """rooftop compare's servers:clients cell is the report's renderer
    (rooftop.report.parts.verdict_short): a ratio, a ratio and its span, no
    span for one measurement, and what cannot be told."""
    from rooftop.report.parts import verdict_short

    assert verdict_short({"kind": "ratio", "ratio": [1, 3], "range": None}) == "1:3"
    ranged = {"kind": "range", "ratio": [12, 1], "range": [[11, 1], [12, 1]]}
    assert verdict_short(ranged) == "12:1 (11:1–12:1)"
    same = {"kind": "indistinguishable", "ratio": None, "range": [[1, 2], None]}
    assert verdict_short(same) == "not distinguishable (1:2–?)"
    assert verdict_short(same, one_measurement=True) == "not distinguishable"
    assert verdict_short({"kind": "unknown", "ratio": None, "range": None}) == "cannot tell"
