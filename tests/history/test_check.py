"""The regression gate on synthetic runs with known ceilings
(tests/synthetic.py): one results folder holding a comparable history with
a planted outlier run and a planted step change, and a run on another
fabric. The rule finds the step at the right run and calls the outlier an
outlier; `rooftop check` exits 1 on a fall, 0 otherwise, 2 when nothing is
comparable (naming the field that differs); JUnit XML has one test case
per ceiling and a failure for each that fell; the report says what changed
since the last comparable run."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from rooftop.cli.main import main
from rooftop.history import check, series

#: Server-ceiling scale per run: run 4 an outlier, runs 7 and 8 a step down.
SCALES = [1.0, 1.02, 0.99, 1.01, 0.4, 1.0, 0.98, 0.4, 0.41]
OUTLIER, STEP = 4, 7


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    import synthetic

    tmp = tmp_path_factory.mktemp("history")
    cfg = synthetic.config_for(4)
    ids = []
    for day, f in enumerate(SCALES):
        st, run = synthetic.scaled_run(
            tmp, server=f, client=1 + 0.01 * (day % 3), created=f"2025-03-{day + 1:02d}T06:00:00", cfg=cfg
        )
        ids.append(run)
    other = json.loads(json.dumps(cfg))
    other["fabric"]["provider"] = "ofi+shm"
    _, shm = synthetic.scaled_run(tmp, created="2025-03-20T06:00:00", cfg=other)
    return st, tmp / "res", ids, shm


def cli(capsys, *argv):
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_history_finds_the_step_at_its_run_and_the_outlier_is_no_step(folder):
    st, _, ids, shm = folder
    groups = list(series.history(st).values())
    assert sorted(len(g) for g in groups) == [1, 1, len(SCALES), len(SCALES)]  # shm: a group of its own, per metric
    for runs in (g for g in groups if len(g) == len(SCALES)):
        assert [r.run for r in runs] == ids
        events = {e.at: e for e in check.steps(runs, check.DEFAULT_THRESHOLD)}
        assert sorted(events) == [OUTLIER, STEP], {k: e.kind for k, e in events.items()}
        assert events[OUTLIER].kind == "outlier" and events[STEP].kind == "step"
        fell = {c.ceiling: c.change for c in events[STEP].check.changes if c.fell}
        # the synthetic client peak shares the slow servers too, less so
        assert fell["server"] < -0.4 and min(fell.values()) == fell["server"], events[STEP].check.bound_moved()
        assert "the server ceiling fell" in events[STEP].check.bound_moved()


def test_check_exit_codes_and_why_nothing_is_comparable(folder, capsys):
    _, res, ids, shm = folder
    r = ("--results", str(res))
    rc, out, _ = cli(capsys, "check", ids[STEP], "--against", "history", *r)
    assert rc == 1 and "FELL" in out and "server ceiling fell" in out, out
    assert f"history of {STEP - 1} runs" in out  # the outlier left out of the window
    rc, out, _ = cli(capsys, "check", ids[6], "--against", "history", *r)  # after the outlier: held
    assert rc == 0 and "no ceiling fell" in out, out
    rc, out, _ = cli(capsys, "check", ids[1], "--against", ids[0], *r)  # noise is no regression
    assert rc == 0, out
    # latest is the run on another fabric: never compared, and it says why
    rc, _, err = cli(capsys, "check", "latest", "--against", "history", *r)
    assert rc == 2 and "fabric.provider: 'ofi+shm' vs 'ofi+tcp'" in err, err
    rc, _, err = cli(capsys, "check", shm, "--against", ids[0], *r)
    assert rc == 2 and "fabric.provider" in err, err
    rc, _, err = cli(capsys, "check", ids[2], "--against", "nosuch", *r)
    assert rc == 2 and "no baseline of that name" in err, err
    rc, _, err = cli(capsys, "check", ids[2], "--against", "history", "--threshold", "bw=200", *r)
    assert rc == 2 and "--threshold bw=200" in err, err


def test_baseline_and_junit(folder, capsys, tmp_path):
    _, res, ids, _ = folder
    r = ("--results", str(res))
    rc, out, _ = cli(capsys, "check", "--save-baseline", "before-upgrade", ids[0], *r)
    assert rc == 0 and "before-upgrade" in out
    xml = tmp_path / "check.xml"
    rc, out, _ = cli(capsys, "check", ids[STEP], "--against", "before-upgrade", "--junit", str(xml), "--json", *r)
    assert rc == 1
    doc = json.loads(out)
    assert doc["fell"] and {m["against"] for m in doc["metrics"]} == {f"baseline before-upgrade (run {ids[0]})"}
    suite = ET.parse(xml).getroot()
    cases = suite.findall("testcase")
    names = sorted((c.get("classname"), c.get("name")) for c in cases)
    want = sorted((f"rooftop.{m}", c) for m in ("bw", "rpc") for c in ("server", "client", "client_node"))
    assert names == want
    failed = sorted((c.get("classname"), c.get("name")) for c in cases if c.find("failure") is not None)
    assert {("rooftop.bw", "server"), ("rooftop.rpc", "server")} <= set(failed)
    assert ("rooftop.bw", "client_node") not in failed and suite.get("failures") == str(len(failed))
    rc, _, _ = cli(capsys, "check", ids[2], "--against", "before-upgrade", *r)
    assert rc == 0


def test_history_command_and_report_section(folder, capsys, tmp_path):
    st, res, ids, _ = folder
    rc, out, _ = cli(capsys, "history", "--results", str(res), "--json")
    assert rc == 0
    doc = json.loads(out)
    big = [g for g in doc if len(g["runs"]) == len(SCALES)]
    assert len(big) == 2 and all(
        {c["run"]: c["kind"] for c in g["changes"]} == {ids[OUTLIER]: "outlier", ids[STEP]: "step"} for g in big
    )
    from rooftop import results
    from rooftop.history import report

    res_step = results.load(st, ids[STEP], (report.SECTION,))
    data = res_step.part("history")
    assert data["bw"]["check"].fell and len(data["bw"]["runs"]) == STEP + 1
    md = report.markdown(res_step, data, {}, tmp_path)
    assert md[0] == "## Since the last comparable run" and "server ceiling fell" in "\n".join(md)
    figs = report.figures(res_step, data)
    assert sorted(figs) == ["history-bw", "history-rpc"]
    res_second = results.load(st, ids[1], (report.SECTION,))
    assert report.figures(res_second, res_second.part("history")) == {}  # 2 comparable runs: no figure
    assert results.load(st, ids[0], (report.SECTION,)).part("history") is None  # nothing earlier
