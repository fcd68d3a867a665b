"""The learned model file (issue 27, item 3): JSON that loading cannot
execute, refitted and checked on load; pickles (an older rooftop's
METRIC.joblib, or a crafted file) are refused without being opened as
pickles. And `rooftop learn` on a run that measured only bw.

On copies of the dataset fixture tests/data/learn-dataset (real short
campaigns on this machine)."""

from __future__ import annotations

import json
import pickle
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from rooftop.cli import main
from rooftop.learn import LearnError, dataset, modelfile
from rooftop.learn.evaluate import all_models
from rooftop.store.db import Store

FIXTURE = Path(__file__).resolve().parent.parent / "data" / "learn-dataset"


def fixture_runs() -> list[str]:
    db = sqlite3.connect(FIXTURE / "rooftop.db")
    return [r for (r,) in db.execute("SELECT id FROM runs ORDER BY created")]


def cli(capsys, *args) -> tuple[int, str, str]:
    rc = main(list(args))
    out = capsys.readouterr()
    return rc, out.out, out.err


class Payload:
    """A pickle that, when unpickled, writes a marker file (as a hostile
    results folder's would run any command)."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.write_text, (self.marker, "unpickled"))


def crafted(path: Path, marker: Path) -> Path:
    path.write_bytes(pickle.dumps(Payload(marker), protocol=pickle.HIGHEST_PROTOCOL))
    return path


@pytest.fixture(scope="module")
def learned(tmp_path_factory) -> tuple[Path, str]:
    """A copy of the fixture in which `rooftop learn RUN --metrics bw` saved a model."""
    results = tmp_path_factory.mktemp("modelfile") / "results"
    shutil.copytree(FIXTURE, results)
    run = fixture_runs()[0]
    assert main(["learn", run, "--metrics", "bw", "--results", str(results), "--json"]) == 0
    return results, run


def test_every_model_round_trips_through_the_file(tmp_path):
    """Each model of the comparison (pipelines, GP, SVR, kNN, forests,
    boosting, the roofline models' own classes) saved and loaded predicts
    what the fitted one does, also off the training rows; the rooflines
    and the encoder come back equal."""
    shutil.copytree(FIXTURE, tmp_path / "r")
    ds = dataset.load(Store(tmp_path / "r", create=False), fixture_runs()[:2], "bw")
    X = ds.X()
    query = X.copy()
    query[:, -1] *= 1.7  # another roofline rate
    base = {
        "metric": "bw",
        "unit": ds.unit,
        "kind": "?",
        "features": ds.features,
        "encoder": ds.encoder,
        "constants": ds.constants,
        "runs": ds.runs,
        "knobs": {r: ds.knobs(r) for r in ds.runs},
        "rooflines": ds.rooflines,
        "interval": (0.8, 1.2),
        "cv_median_ape": 1.0,
        "seed": 3,
        "folds": 5,
        "ranges": {},
        "per_node": (2.0, 4.0),
    }
    for name, (_, est) in all_models(3).items():
        fitted = est.fit(X, ds.y)
        path = tmp_path / "m.model.json"
        modelfile.save_model(path, dict(base, model=name), X, ds.y, fitted.predict(X))
        doc = modelfile.load_model(path)
        assert np.allclose(doc["estimator"].predict(query), fitted.predict(query), rtol=1e-6), name
    assert doc["rooflines"] == ds.rooflines and doc["encoder"] == ds.encoder
    assert not list(tmp_path.glob(".*.tmp"))


def test_the_saved_model_is_json_and_predict_reads_it(learned, capsys):
    results, run = learned
    folder = results / run / "learned"
    assert sorted(p.name for p in folder.iterdir()) == ["bw.json", "bw.model.json"]
    doc = json.loads((folder / "bw.model.json").read_text())
    assert doc["metric"] == "bw" and doc["model"] in all_models(0) and len(doc["training"]["y"]) > 0
    rc, out, err = cli(capsys, "predict", run, "--servers", "2", "--clients", "4", "--json", "--results", str(results))
    assert rc == 0, err
    assert json.loads(out)["model"] == doc["model"]
    # The report reads the comparison, not the model file.
    from rooftop.learn import report_section

    assert [d["metric"] for d in report_section.load(results / run)] == ["bw"]


def test_a_crafted_pickle_is_refused_without_running_it(learned, tmp_path, capsys):
    results, run = learned
    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    marker = tmp_path / "PWNED"
    crafted(copy / run / "learned" / "bw.model.json", marker)
    rc, out, err = cli(capsys, "predict", run, "--servers", "1", "--clients", "1", "--results", str(copy))
    assert rc == 2 and "pickle" in err and f"rooftop learn {run}" in err
    for name in ("evil.json", "evil.pkl", "evil"):
        rc, out, err = cli(
            capsys,
            "predict",
            run,
            "--servers",
            "1",
            "--clients",
            "1",
            "--results",
            str(copy),
            "--model",
            str(crafted(tmp_path / name, marker)),
        )
        assert rc == 2 and "rooftop learn" in err
    with pytest.raises(LearnError, match="pickle"):
        modelfile.load_model(crafted(tmp_path / "x.model.json", marker))
    assert not marker.exists()


def test_an_old_joblib_file_is_refused_with_the_relearn_command(learned, tmp_path, capsys):
    results, run = learned
    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    marker = tmp_path / "PWNED"
    folder = copy / run / "learned"
    (folder / "bw.model.json").unlink()
    crafted(folder / "bw.joblib", marker)
    rc, out, err = cli(capsys, "predict", run, "--servers", "1", "--clients", "1", "--results", str(copy))
    assert rc == 2 and "bw.joblib" in err and "older rooftop" in err and f"rooftop learn {run}" in err
    rc, out, err = cli(
        capsys,
        "predict",
        run,
        "--servers",
        "1",
        "--clients",
        "1",
        "--results",
        str(copy),
        "--model",
        str(folder / "bw.joblib"),
    )
    assert rc == 2 and "older rooftop" in err
    assert not marker.exists()
    # Learning again replaces it.
    assert cli(capsys, "learn", run, "--metrics", "bw", "--results", str(copy))[0] == 0
    assert sorted(p.name for p in folder.iterdir()) == ["bw.json", "bw.model.json"]


def test_a_model_file_whose_refit_differs_is_refused(learned, tmp_path, capsys):
    """JSON edited (or another scikit-learn): the refit must give the
    predictions the file was saved with."""
    results, run = learned
    doc = json.loads((results / run / "learned" / "bw.model.json").read_text())
    doc["training"]["y"] = [v * 3 for v in doc["training"]["y"]]
    edited = tmp_path / "bw.model.json"
    edited.write_text(json.dumps(doc))
    rc, out, err = cli(
        capsys, "predict", run, "--servers", "1", "--clients", "1", "--results", str(results), "--model", str(edited)
    )
    assert rc == 2 and "does not reproduce" in err and "rooftop learn" in err
    for bad in (
        {**doc, "model": "os.system"},
        {**doc, "training": {"X": [[1]], "y": [1], "predictions": [1]}},
        {k: v for k, v in doc.items() if k != "rooflines"},
        {**doc, "format": 1},
    ):
        edited.write_text(json.dumps(bad))
        rc, out, err = cli(
            capsys,
            "predict",
            run,
            "--servers",
            "1",
            "--clients",
            "1",
            "--results",
            str(results),
            "--model",
            str(edited),
        )
        assert rc == 2 and "rooftop learn" in err and "Traceback" not in err


def _only_bw(folder: Path, run: str, validated: bool) -> None:
    """Makes run a run that measured only bw (without its validation: collect only)."""
    db = sqlite3.connect(folder / "rooftop.db")
    gone = "metric = 'rpc'" + ("" if validated else " OR stage = 'validate'")
    db.execute(
        f"DELETE FROM quantities WHERE sample_id IN (SELECT id FROM samples WHERE run_id = ? AND ({gone}))", (run,)
    )
    db.execute(f"DELETE FROM samples WHERE run_id = ? AND ({gone})", (run,))
    db.commit()


def test_learn_on_a_run_that_measured_only_bw(tmp_path, capsys):
    run = fixture_runs()[0]
    shutil.copytree(FIXTURE, tmp_path / "v")
    _only_bw(tmp_path / "v", run, validated=True)
    rc, out, err = cli(capsys, "learn", run, "--folds", "3", "--results", str(tmp_path / "v"), "--json")
    assert rc == 0, err
    assert [d["metric"] for d in json.loads(out)] == ["bw"]
    rc, out, err = cli(capsys, "learn", run, "--metrics", "rpc", "--results", str(tmp_path / "v"))
    assert rc == 2 and "measured no rpc" in err and "they measured bw" in err
    # Collected, never validated: the metric it measured is named, with the command that validates.
    shutil.copytree(FIXTURE, tmp_path / "c")
    _only_bw(tmp_path / "c", run, validated=False)
    rc, out, err = cli(capsys, "learn", run, "--results", str(tmp_path / "c"))
    assert rc == 2 and "bw: no successful validation samples" in err and "rpc" not in err
    assert f"rooftop validate {run}" in err
