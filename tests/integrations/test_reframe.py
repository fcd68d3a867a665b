"""The ReFrame check, run by ReFrame itself: a real campaign inside
ReFrame's job (with the rooftop beside ReFrame's Python, the venv not on
PATH), sanity, performance variables with units, and a site reference that
turns a fallen ceiling into a failure; and its performance variables for
every metric (storage ones too) from `rooftop model --json`."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import synthetic
from rooftop.cli import main

pytest.importorskip("reframe")

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
LOCAL = ROOT / "examples" / "reframe" / "local.py"
#: No `rooftop` variable: the check runs the rooftop beside ReFrame's Python.
QUICK = ["-S", "metrics=rpc", "-S", "duration=0.3", "-S", "samples=2"]


def check_path() -> str:
    """The check file, as `rooftop-reframe-check` prints it (from the rooftop
    under test: its function run by this interpreter)."""
    code = "from rooftop.integrations import reframe_check_path; reframe_check_path()"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    path = out.stdout.strip()
    assert Path(path).is_file() and path.endswith("integrations/reframe.py")
    return path


def reframe(tmp: Path, config: Path, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    report = tmp / "report.json"
    cmd = [
        str(BIN / "reframe"),
        "-C",
        str(config),
        "-c",
        check_path(),
        "-r",
        "--nocolor",
        "--prefix",
        str(tmp / "rfm"),
        "--report-file",
        str(report),
        *QUICK,
        *extra,
    ]
    # The venv's bin is not on PATH: the check finds rooftop beside its Python.
    path = os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep) if d and Path(d) != BIN)
    env = dict(os.environ, PATH=path, RFM_SAVE_LOG_FILES="n", RFM_LOG_FILE=str(tmp / "rfm.log"))
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp, env=env, timeout=900)
    assert report.exists(), p.stdout + p.stderr
    return p, json.loads(report.read_text())["runs"][0]["testcases"][0]


def test_check_reports_ceilings_with_units(tmp_path):
    p, case = reframe(tmp_path, LOCAL)
    assert p.returncode == 0 and case["result"] == "pass", p.stdout[-3000:]
    perf = {k.split(":")[-1]: v for k, v in case["perfvalues"].items()}
    for side in ("client", "server"):
        lo, mid, hi = (perf[f"rpc_{side}_{s}"] for s in ("min", "median", "max"))
        assert 0 < lo[0] <= mid[0] <= hi[0] and lo[4] == mid[4] == hi[4] == "ops/s"
    # Two logical nodes: the ceilings are one measurement, so the answer has
    # no ridge and the validation tests no placement of the model: neither is
    # a performance variable (the 4-node case below has both).
    assert "rpc_ridge" not in perf and "rpc_validation_error" not in perf
    # The campaign's model, export and results folder are kept in ReFrame's output directory.
    out = Path(case["outputdir"])
    model = json.loads((out / "model.json").read_text())
    assert model["metrics"][0]["client"]["median"] == pytest.approx(perf["rpc_client_median"][0])
    assert json.loads((out / "export.json").read_text())["status"] == "complete"
    assert (out / "results" / "rooftop.db").exists()
    # The job script runs the rooftop beside ReFrame's Python, and sets no variable nothing reads.
    script = (out / "rfm_job.sh").read_text()
    assert f"{BIN / 'rooftop'} collect" in script and "ROOFTOP_LAUNCHER" not in script


def test_site_reference_alerts_when_a_ceiling_falls(tmp_path):
    refs = tmp_path / "refs.json"
    refs.write_text(json.dumps({"*": {"rpc_server_median": [1e12, -0.1, None]}}))
    p, case = reframe(tmp_path, LOCAL, "-S", f"references_file={refs}")
    assert p.returncode != 0 and case["result"] == "fail" and case["fail_phase"] == "performance"
    assert "rpc_server_median" in p.stdout and "failed to meet reference" in p.stdout
    ref = {k.split(":")[-1]: v for k, v in case["perfvalues"].items()}["rpc_server_median"]
    assert ref[1] == 1e12 and ref[4] == "ops/s" and ref[5] == "fail"


def test_unknown_reference_name_is_an_error(tmp_path):
    refs = tmp_path / "refs.json"
    refs.write_text(json.dumps({"*": {"rpc_sever_median": [1, -0.1, None]}}))
    p, case = reframe(tmp_path, LOCAL, "-S", f"references_file={refs}")
    assert p.returncode != 0 and case["result"] == "fail"
    assert "rpc_sever_median is not a performance variable" in p.stdout + json.dumps(case)


def test_every_metric_has_its_units_from_the_model(tmp_path):
    """A storage run's `rooftop model --json` (synthetic samples): every
    performance variable of sbw and iops resolves, in the model's unit."""
    from rooftop.integrations import reframe as check

    cfg = dict(synthetic.config_for(), metrics=["sbw", "iops"])
    _store, run_id = synthetic.uniform_run(tmp_path, cfg)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["model", run_id, "--results", str(tmp_path / "res"), "--json"]) == 0
    path = tmp_path / "model.json"
    path.write_text(buf.getvalue())
    variables = check.performance_variables(check._model(str(path)), ["sbw", "iops"])
    assert len(variables) == 2 * 8
    assert variables["sbw_server_median"][2] == "bytes/s" and variables["iops_client_max"][2] == "ops/s"
    assert variables["sbw_ridge"][2] == "servers/client" and variables["iops_validation_error"][2] == "%"
    for metric, keys, _unit in variables.values():
        assert check._model_value(str(path), metric, *keys).evaluate() >= 0
    with pytest.raises(ValueError, match="metric 'meta' is not in rooftop's model"):
        check.performance_variables(check._model(str(path)), ["meta"])


def test_default_rooftop_is_beside_the_interpreter():
    from rooftop.integrations import reframe as check

    assert check.default_rooftop() == str(BIN / "rooftop")


def test_references_from_a_baseline(tmp_path):
    """-S baseline=NAME: the check has the rooftop beside its Python write
    the baseline's references at setup and ReFrame judges the run by them
    (a baseline whose ceilings this machine cannot reach: the performance
    stage fails on the baseline's own values, in the model's unit)."""
    from rooftop.history import series

    st, base_run = synthetic.scaled_run(tmp_path, server=1e6, client=1e6)  # rpc and bw
    res = tmp_path / "res"
    assert main(["check", "--save-baseline", "far", base_run, "--results", str(res)]) == 0
    p, case = reframe(tmp_path, LOCAL, "-S", "baseline=far", "-S", f"baseline_results={res}")
    assert p.returncode != 0 and case["result"] == "fail" and case["fail_phase"] == "performance", p.stdout[-3000:]
    assert "failed to meet reference" in p.stdout
    perf = {k.split(":")[-1]: v for k, v in case["perfvalues"].items()}
    want = series.of_run(st, base_run)["rpc"].ceilings
    for side in ("server", "client"):
        ref = perf[f"rpc_{side}_median"]
        assert ref[1] == pytest.approx(want[side].median) and ref[2] == -0.1 and ref[4] == "ops/s" and ref[5] == "fail"
    assert not any(k.startswith("bw_") for k in perf)  # the baseline's bw: not measured here, left out
    script = Path(case["stagedir"] or case["outputdir"]) / "baseline-references.json"
    assert json.loads(script.read_text())["*"]["bw_server_median"][3] == "bytes/s"
    # A name that is no baseline fails at setup, naming it, before any campaign.
    p, case = reframe(tmp_path, LOCAL, "-S", "baseline=nosuch", "-S", f"baseline_results={res}")
    assert case["result"] == "fail" and case["fail_phase"] == "setup", p.stdout[-3000:]
    assert "no baseline of that name (baselines: far)" in p.stdout + json.dumps(case)


def test_reference_units_and_metrics_are_checked(tmp_path):
    """The loader: a unit that is not the variable's is an error; a
    baseline's metrics the check does not measure are left out, none left
    is an error."""
    from rooftop.integrations import reframe as check

    units = {"rpc_server_median": "ops/s", "rpc_client_median": "ops/s"}
    path = tmp_path / "refs.json"
    path.write_text(json.dumps({"*": {"rpc_server_median": [5.0, -0.1, None, "bytes/s"]}}))
    with pytest.raises(ValueError, match="rpc_server_median is in bytes/s, the check measures it in ops/s"):
        check.load_references(str(path), units)
    path.write_text(
        json.dumps({"*": {"rpc_server_median": [5.0, -0.1, None, "ops/s"], "bw_server_median": [9.0, -0.2, None]}})
    )
    assert check.load_references(str(path), units, only=["rpc"]) == {
        "*": {"rpc_server_median": (5.0, -0.1, None, "ops/s")}
    }
    with pytest.raises(ValueError, match=r"no reference of the metrics measured \(iops\)"):
        check.load_references(str(path), {"iops_server_median": "ops/s"}, only=["iops"])
