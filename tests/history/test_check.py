"""The regression gate on synthetic runs with known ceilings
(tests/synthetic.py): one results folder holding a comparable history with
a planted outlier run and a planted step change, and a run on another
fabric. The rule finds the step at the right run and calls the outlier an
outlier; `rooftop check` exits 1 on a fall, 0 otherwise (the first run
starts the history), 4 when nothing is comparable (it cannot tell: the
message names the field that differs), 2 for a usage error; JUnit XML has one test case
per ceiling and a failure for each that fell; the report says what changed
since the last comparable run."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from rooftop import exits
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
    assert rc == exits.CANNOT_TELL and "fabric.provider: 'ofi+shm' vs 'ofi+tcp'" in err, err
    assert err.startswith("rooftop check: could not tell: "), err
    rc, _, err = cli(capsys, "check", shm, "--against", ids[0], *r)
    assert rc == exits.CANNOT_TELL and "fabric.provider" in err, err
    rc, _, err = cli(capsys, "check", ids[2], "--against", "nosuch", *r)
    assert rc == 2 and "no baseline of that name" in err, err
    rc, _, err = cli(capsys, "check", ids[2], "--against", "history", "--threshold", "bw=200", *r)
    assert rc == 2 and "--threshold bw=200" in err, err


def test_the_first_run_starts_the_history_and_passes(folder, capsys, tmp_path):
    """A weekly job's first run: nothing older to fall from, so `check
    --against history` says so and exits 0 (earlier runs that are all
    incomparable cannot tell: above, the shm run exits 4)."""
    _, res, ids, _ = folder
    r = ("--results", str(res))
    rc, out, _ = cli(capsys, "check", ids[0], "--against", "history", *r)
    assert rc == 0 and f"run {ids[0]} starts the history" in out, out
    assert "no other complete run measured" in out and "fell beyond noise" not in out, out
    rc, out, _ = cli(capsys, "check", ids[0], "--against", "history", "--json", "--junit", str(tmp_path / "j.xml"), *r)
    doc = json.loads(out)
    assert rc == 0 and doc["starts_history"] is True and doc["fell"] is False and doc["metrics"] == []
    suite = ET.parse(tmp_path / "j.xml").getroot()
    assert suite.get("failures") == "0" and int(suite.get("skipped")) == len(doc["not_compared"]) >= 1
    rc, out, _ = cli(capsys, "check", ids[1], "--against", "history", "--json", *r)
    assert rc == 0 and json.loads(out)["starts_history"] is False


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
    rc, out, _ = cli(capsys, "history", "--results", str(res), "--json", "--threshold", "rpc=12", "--k", "2.5")
    assert rc == 0
    doc = json.loads(out)
    # The rule it applied, as check --json records it: every metric's threshold, K and k.
    assert (doc["check"]["threshold"], doc["check"]["last"], doc["check"]["k"]) == (10, 8, 2.5)
    assert doc["check"]["rpc"] == {"threshold": 12} and doc["check"]["bw"] == {"threshold": 10}
    big = [g for g in doc["groups"] if len(g["runs"]) == len(SCALES)]
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


def test_check_keys_from_a_file_set_and_flags_and_recorded(folder, capsys, tmp_path):
    """The rule's settings are check.* keys: a config file's [check] table,
    --set, then the flags; `check --json` records what it used."""
    _, res, ids, _ = folder
    r = ("--results", str(res))
    site = tmp_path / "site.toml"
    site.write_text("[check]\nthreshold = 40\nlast = 5\n[check.rpc]\nthreshold = 60\n")
    argv = ("check", ids[STEP], "--against", "history", "--config", str(site), "--json", *r)
    rc, out, _ = cli(capsys, *argv, "--set", "check.k=4")
    doc = json.loads(out)
    assert rc == 1  # the server ceilings fell 47 %: beyond bw's 40 %, within rpc's 60 %
    assert doc["check"]["threshold"] == 40 and doc["check"]["last"] == 5 and doc["check"]["k"] == 4
    assert doc["check"]["rpc"] == {"threshold": 60} and doc["check"]["bw"] == {"threshold": 40}
    by = {m["metric"]: m for m in doc["metrics"]}
    assert by["rpc"]["threshold_pct"] == 60 and by["bw"]["threshold_pct"] == 40
    assert not any(c["beyond_noise"] for c in by["rpc"]["changes"])
    assert {c["ceiling"] for c in by["bw"]["changes"] if c["beyond_noise"]} == {"server"}
    assert by["bw"]["against"].startswith("history of 5 runs")  # check.last from the file
    assert "4 x 1.4826 x MAD" in by["bw"]["changes"][0]["why"]  # check.k from --set
    # The flags win over the file and --set.
    rc, out, _ = cli(capsys, *argv, "--set", "check.k=4", "--threshold", "bw=55", "--last", "3", "--k", "5")
    doc = json.loads(out)
    assert rc == 0 and doc["check"]["bw"] == {"threshold": 55} and (doc["check"]["last"], doc["check"]["k"]) == (3, 5)
    assert all(m["against"].startswith("history of 3 runs") for m in doc["metrics"])
    rc, out, _ = cli(capsys, "check", ids[STEP], "--against", "history", "--threshold", "55", *r)
    assert rc == 0 and out.startswith("rule: threshold bw 55 %, rpc 55 %; history window K = 8 runs, band k = 3")
    for bad, why in (
        (("--set", "check.k=0"), "check.k: 0.0 is too small (at least 0.01)"),
        (("--set", "check.bw.threshold=500"), "check.bw.threshold: 500.0 is beyond any sensible value"),
        (("--set", "collect.windows=3"), "collect.windows: not read by rooftop check or rooftop history"),
        (("--threshold", "bw=200"), "--threshold bw=200: expected PCT or METRIC=PCT"),
    ):
        rc, _, err = cli(capsys, "check", ids[STEP], "--against", "history", *bad, *r)
        assert rc == 2 and why in err, err
    rc, _, err = cli(capsys, "config", "show", "--set", "check.k=4")
    assert rc == 2 and "check.k: a key of 'rooftop check/history', not read" in err, err


def test_references_written_from_a_baseline_carry_its_ceilings_in_the_models_units(folder, capsys, tmp_path):
    """`check --against NAME --write-references FILE`: the ReFrame check's
    references file, the baseline's server and client medians with the
    units `rooftop model --json` gives, lower bound the metric's threshold."""
    _, res, ids, _ = folder
    r = ("--results", str(res))
    assert cli(capsys, "check", "--save-baseline", "refs-base", ids[0], *r)[0] == 0
    path = tmp_path / "refs.json"
    rc, _, err = cli(
        capsys, "check", "--against", "refs-base", "--write-references", str(path), "--threshold", "bw=20", *r
    )
    assert rc == 0 and str(path) in err, err
    refs = json.loads(path.read_text())
    rc, out, _ = cli(capsys, "model", ids[0], "--json", *r)
    model = {m["metric"]: m for m in json.loads(out)["metrics"]}
    assert set(refs) == {"*"} and sorted(model) == ["bw", "rpc"]
    want = {
        f"{m}_{side}_median": [model[m][side]["median"], -0.2 if m == "bw" else -0.1, None, model[m]["unit"]]
        for m in model
        for side in ("server", "client")
    }
    assert refs["*"] == want
    assert {refs["*"]["rpc_server_median"][3], refs["*"]["bw_server_median"][3]} == {"ops/s", "bytes/s"}
    for argv in (("--against", "history"), (ids[1], "--against", "refs-base"), ()):
        rc, _, err = cli(capsys, "check", *argv, "--write-references", str(tmp_path / "x.json"), *r)
        assert rc == 2 and "--write-references FILE takes --against BASELINE|RUN" in err, err


def test_report_judges_since_the_last_run_by_the_check_keys(folder, capsys, tmp_path):
    """The report's "since the last comparable run" and its history figure
    follow the check.* keys as `rooftop check` does: per-metric thresholds
    (the server ceilings fell 47 % since the run before: beyond bw's 40 %,
    within rpc's 70 %) and k (a band of 100 robust deviations finds no step)."""
    from rooftop import results
    from rooftop.history.keys import Rule
    from rooftop.kinds.sections import judged_by

    st, res, ids, _ = folder
    site = tmp_path / "site.toml"
    site.write_text("[check]\nthreshold = 40\n[check.rpc]\nthreshold = 70\n")
    out = tmp_path / "rep"
    argv = ("report", ids[STEP], "--results", str(res), "--out-dir", str(out), "--config", str(site))
    rc, _, err = cli(capsys, *argv, "--k", "100")
    assert rc == 0, err
    md = (out / "report.md").read_text()
    section = md.split("## Since the last comparable run", 1)[1].split("\n## ", 1)[0]
    assert "rule: threshold bw 40 %, rpc 70 %; history window K = 8 runs, band k = 100" in section, section
    bw, rpc = (
        next(x for x in section.splitlines() if x.startswith(f"- {m}: against run {ids[STEP - 1]}"))
        for m in ("bw", "rpc")
    )
    assert "the server ceiling fell" in bw and "bw server ceiling fell" in bw, bw
    assert "no ceiling moved beyond noise" in rpc and "rpc server ceiling held (-47 %" in rpc, rpc
    # The gate says the same of each ceiling.
    rc, gate, _ = cli(
        capsys, "check", ids[STEP], "--against", ids[STEP - 1], "--config", str(site), "--results", str(res)
    )
    assert rc == 1 and "ok   rpc server ceiling held" in gate and "FELL bw server ceiling fell" in gate, gate
    # k reaches the history figure's markers: the default band marks the outlier and the fall, k = 100 neither.
    data = {k: results.load(st, ids[STEP], judged_by(Rule(k=k))).part("history") for k in (3.0, 100.0)}
    assert [e.kind for e in data[3.0]["bw"]["events"]] == ["outlier", "unconfirmed"]  # the step run is the last
    assert data[100.0]["bw"]["events"] == [] and data[100.0]["rpc"]["rule"].k == 100
    rc, _, err = cli(capsys, *argv, "--set", "check.k=0")
    assert rc == 2 and "check.k: 0.0 is too small" in err, err


def test_history_figures_go_to_out_dir(folder, capsys, tmp_path):
    _, res, _, _ = folder
    rc, out, err = cli(capsys, "history", "--results", str(res), "--out-dir", str(tmp_path / "h"))
    assert rc == 0 and out.startswith("rule: threshold bw 10 %, rpc 10 %"), out
    pngs = sorted(p.name for p in (tmp_path / "h").iterdir())
    assert len(pngs) == 4 and [p.split("-")[1] for p in pngs] == ["bw", "bw", "rpc", "rpc"], (pngs, err)
    assert all(p.stat().st_size > 0 for p in (tmp_path / "h").iterdir())
