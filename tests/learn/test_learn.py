"""rooftop learn and rooftop predict (issue 17, items 1 and 2) on the
dataset fixture tests/data/learn-dataset (real short campaigns on this
machine; tests/data/README.md says how it was made)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from rooftop.cli import main
from rooftop.learn import dataset, evaluate
from rooftop.learn.roofline_models import Efficiency, RooflineAlone
from rooftop.store.db import Store

FIXTURE = Path(__file__).resolve().parent.parent / "data" / "learn-dataset"
#: Every model of the comparison (seed 003's Table 5 and the two roofline-informed kinds).
MODELS = {
    "linear",
    "ridge",
    "lasso",
    "elastic net",
    "SVR (linear)",
    "SVR (RBF)",
    "k-nearest neighbours",
    "Gaussian process",
    "decision tree",
    "random forest",
    "gradient boosting",
    "roofline alone",
}


def fixture_runs() -> list[tuple[str, str]]:
    """(run id, provider) of the fixture's runs, oldest first."""
    db = sqlite3.connect(FIXTURE / "rooftop.db")
    return db.execute(
        "SELECT r.id, p.value FROM runs r JOIN run_params p ON p.run_id = r.id "
        "AND p.key = 'fabric.provider' ORDER BY r.created"
    ).fetchall()


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """A copy of the fixture (learn writes model files beside the runs)."""
    out = tmp_path_factory.mktemp("learn") / "results"
    shutil.copytree(FIXTURE, out)
    return out


def cli(capsys, *args) -> tuple[int, str, str]:
    rc = main(list(args))
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.fixture(scope="module")
def learned(results) -> dict:
    """`rooftop learn` of bw over every run, as JSON (run once per module)."""
    import contextlib
    import io

    runs = [r for r, _ in fixture_runs()]
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["learn", *runs, "--metrics", "bw", "--results", str(results), "--json"])
    assert rc == 0
    return json.loads(buf.getvalue())[0]


def test_dataset_features_are_the_parameters_that_vary(results):
    runs = [r for r, _ in fixture_runs()]
    ds = dataset.load(Store(results, create=False), runs, "bw")
    # The knobs varied by benchmarks/learn_dataset.py, and the placement.
    for f in (
        "bw.size",
        "fabric.provider",
        "engine.server_progress",
        "sample.server_procs",
        "sample.client_procs",
        "sample.x",
    ):
        assert f in ds.features
    # Another metric's keys and the campaign's own are not features.
    assert not [f for f in ds.features if f.startswith(("rpc.", "validate.", "collect.", "results"))]
    assert ds.constants["launcher.type"] == "local" and "bw.stream_size" in ds.constants
    # Repeats (validate.windows 3) share a configuration; the roofline is positive.
    assert ds.configurations < len(ds.y) and np.all(ds.roof > 0) and np.all(ds.y > 0)
    assert sorted(set(ds.footprint.tolist()))[-1] == 6  # 2 servers + 4 clients per node


def test_folds_never_split_a_configuration(results):
    runs = [r for r, _ in fixture_runs()]
    ds = dataset.load(Store(results, create=False), runs, "rpc")
    for train, test in evaluate.splits(ds, 5):
        assert not set(ds.groups[train]) & set(ds.groups[test])


def test_learn_compares_every_model_and_saves_the_best(learned, results):
    cv = {m["model"]: m for m in learned["cross_validation"]}
    assert MODELS <= set(cv) and any(n.startswith("roofline x efficiency") for n in cv)
    for m in cv.values():
        lo, hi = m["median_ape_folds"]
        assert 0 <= lo <= hi and m["samples"] == learned["samples"] and m["mean_ape"] >= 0
    medians = [m["median_ape"] for m in learned["cross_validation"]]
    assert medians == sorted(medians) and learned["best"] == learned["cross_validation"][0]["model"]
    assert "tested on the largest, 6" in learned["extrapolation"]["split"]
    assert {m["model"] for m in learned["extrapolation"]["models"]} == set(cv)
    assert Path(learned["model_file"]).is_file()
    assert Path(learned["model_file"]).parent.parent.name == fixture_runs()[0][0]
    if learned["best"] != "roofline alone":
        assert {i["feature"] for i in learned["importances"]} == set(learned["features"])


def test_learn_is_deterministic_given_a_seed(results):
    """The models that draw random numbers give the same errors twice."""
    ds = dataset.load(Store(results, create=False), [r for r, _ in fixture_runs()][:2], "rpc")
    seeded = {
        "Gaussian process",
        "decision tree",
        "random forest",
        "gradient boosting",
        "roofline x efficiency (random forest)",
    }
    a, _ = evaluate.cross_validate(ds, 3, seed=7, only=seeded)
    b, _ = evaluate.cross_validate(ds, 3, seed=7, only=seeded)
    assert len(a) == len(seeded)
    assert [(s.name, s.median, s.mean) for s in a] == [(s.name, s.median, s.mean) for s in b]


def test_too_few_configurations_says_how_many_are_needed(results, capsys):
    run = fixture_runs()[0][0]
    rc, out, err = cli(capsys, "learn", run, "--metrics", "rpc", "--folds", "40", "--results", str(results))
    assert rc == 2 and "needs at least 40" in err and "8 configuration(s)" in err


def test_a_run_without_validation_samples_is_explained(tmp_path, capsys):
    shutil.copytree(FIXTURE, tmp_path / "r")
    run = fixture_runs()[0][0]
    db = sqlite3.connect(tmp_path / "r" / "rooftop.db")
    db.execute("UPDATE samples SET status = 'failed' WHERE run_id = ? AND stage = 'validate'", (run,))
    db.commit()
    rc, out, err = cli(capsys, "learn", run, "--results", str(tmp_path / "r"))
    assert rc == 2 and "no successful validation samples" in err and "rooftop validate" in err


def test_roofline_models_on_a_known_efficiency():
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.uniform(0, 1, 40), rng.uniform(1e3, 1e4, 40)])
    y = 0.6 * X[:, -1]
    assert np.allclose(RooflineAlone().fit(X, y).predict(X), X[:, -1])
    far = np.array([[0.5, 1e6]])  # a roofline rate far beyond every training one
    assert Efficiency("ridge").fit(X, y).predict(far) == pytest.approx(0.6e6, rel=0.01)


def test_predict_caps_by_the_roofline_and_names_the_ceiling(learned, results, capsys):
    run = fixture_runs()[0][0]
    rc, out, err = cli(
        capsys,
        "predict",
        run,
        "--servers",
        "2",
        "--clients",
        "4",
        "--json",
        "--results",
        str(results),
        "--metrics",
        "bw",
    )
    assert rc == 0, err
    p = json.loads(out)
    assert p["model"] == learned["best"] and p["x"] == 0.5
    assert p["interval"][0] <= p["per_client"] <= p["interval"][1] <= p["roofline"]["cap"]
    assert p["roofline"]["binds"] in ("server", "client") and p["roofline"]["run"] == run
    assert p["aggregate"] == pytest.approx(4 * p["per_client"])
    # Far beyond the servers' share: clients bind, and the answer never exceeds the ceiling.
    rc, out, _ = cli(capsys, "predict", run, "--servers", "40", "--clients", "3", "--json", "--results", str(results))
    p = json.loads(out)
    assert p["roofline"]["binds"] == "client" and p["per_client"] <= p["roofline"]["cap"]
    assert any("sample.server_procs = 40" in e for e in p["extrapolating"])
    rc, out, _ = cli(capsys, "predict", run, "--servers", "3", "--clients", "40", "--results", str(results))
    assert rc == 0 and "predicted per client process" in out and "ceiling binds" in out


def test_predict_takes_knobs_and_refuses_what_the_model_never_saw(learned, results, capsys):
    run = fixture_runs()[0][0]
    args = ["predict", run, "--servers", "1", "--clients", "2", "--results", str(results), "--json"]
    rc, out, err = cli(capsys, *args, "--set", "fabric.provider=ofi+shm")
    assert rc == 0, err
    shm = [r for r, prov in fixture_runs() if prov == "ofi+shm"]
    assert json.loads(out)["roofline"]["run"] in shm
    rc, out, err = cli(capsys, *args, "--set", "bw.stream_size=1GiB")
    assert rc == 2 and "bw.stream_size" in err and "trained with" in err
    rc, out, err = cli(capsys, *args, "--set", "engine.server_progress=adaptive")
    assert rc == 2 and "engine.server_progress" in err and "saw only" in err
    rc, out, err = cli(capsys, *args, "--set", "no.such_key=1")
    assert rc == 2 and "no.such_key" in err


def test_a_model_file_of_other_parameters_is_refused(learned, results, tmp_path, capsys):
    """A run whose parameters the model held constant differ (here: its
    nodes' cores) is refused with the key named."""
    shutil.copytree(FIXTURE, tmp_path / "r")
    run = fixture_runs()[0][0]
    db = sqlite3.connect(tmp_path / "r" / "rooftop.db")
    db.execute("UPDATE run_params SET value = '[0, 1]' WHERE run_id = ? AND key = 'nodes.0.cores'", (run,))
    db.commit()
    rc, out, err = cli(
        capsys,
        "predict",
        run,
        "--servers",
        "1",
        "--clients",
        "1",
        "--model",
        learned["model_file"],
        "--results",
        str(tmp_path / "r"),
    )
    assert rc == 2 and "nodes.0.cores" in err and "trained with" in err
    rc, out, err = cli(capsys, "predict", run, "--servers", "1", "--clients", "1", "--results", str(tmp_path / "r"))
    assert rc == 2 and "no learned model" in err and f"rooftop learn {run}" in err


def test_the_report_shows_the_learned_model(learned, results, capsys):
    """Item 4: the comparison, the extrapolation table and predicted against
    measured (a matplotlib figure: both models' points and the diagonal)."""
    from rooftop.learn import report_section

    run = fixture_runs()[0][0]
    rc, out, err = cli(capsys, "report", run, "--results", str(results))
    assert rc == 0, err
    page = Path(out.strip()).read_text()
    md = (Path(out.strip()).parent / "report.md").read_text()
    for text in (page, md):
        assert "Learned model: bw" in text and learned["best"] in text and "Extrapolation" in text
    assert "cross-validated predictions" not in md and "predicted against measured" in page
    doc = report_section.load(results / run)[0]
    fig = report_section.figure(doc)
    ax = fig.axes[0]
    assert len(ax.collections) == 2 and len(ax.lines) == 1
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert {c.get_label() for c in ax.collections} == set(doc["predictions"]["models"])
    assert all(len(c.get_offsets()) == learned["samples"] for c in ax.collections)


def test_a_model_file_written_before_the_keys_renames_reads_the_new_names(learned, tmp_path):
    """A model file names the parameters it held constant; one written before
    issue 28's renames may say sample_interval (or sample, collect.samples),
    which stored runs (migration 15) now call series_interval (series,
    collect.windows): it is read under the new names, so a run is not refused
    as having parameters the model never saw."""
    from rooftop.learn.modelfile import load_model

    doc = json.loads(Path(learned["model_file"]).read_text())
    doc["constants"]["sample_interval"] = 0.5
    old = tmp_path / "old.model.json"
    old.write_text(json.dumps(doc))
    constants = load_model(old)["constants"]
    assert constants["series_interval"] == 0.5 and "sample_interval" not in constants
