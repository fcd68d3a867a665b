"""rooftop tune (issue 17, item 3): the proposer on synthetic rates
(determinism, the loop's stopping), the search space and model files that
are refused, and one small tune on the real engine (local launcher)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from rooftop.cli import main
from rooftop.learn import LearnError, dataset
from rooftop.learn.keys import MIN_CONFIGS
from rooftop.learn.propose import Observation, Proposer
from rooftop.learn.roofline_models import Efficiency
from rooftop.learn.space import parse
from rooftop.learn.tune import PATIENCE, Settings, best_step, loop, prior_scores, stalled
from rooftop.store.db import Store

FIXTURE = Path(__file__).resolve().parent.parent / "data" / "learn-dataset"
SPACE = {
    "bw.size": ["64KiB", "256KiB", "1MiB", "4MiB"],
    "engine.concurrency": [1, 2, 4, 8],
    "engine.server_progress": ["busy", "spindown"],
}
DEFAULT = {"bw.size": "4MiB", "engine.concurrency": 1, "engine.server_progress": "spindown"}


def synthetic(params: dict) -> float:
    """A bw-like rate: grows with size and concurrency, saturates, busy a bit faster."""
    size = {"64KiB": 64, "256KiB": 256, "1MiB": 1024, "4MiB": 4096}[params["bw.size"]]
    k = params["engine.concurrency"]
    return 1e9 * min(1.0, size * k / 8192) ** 0.7 * (1.1 if params["engine.server_progress"] == "busy" else 1.0)


def noisy(seed: int):
    """measure(step, params) with 3 % multiplicative noise, reproducible."""

    def measure(step, params):
        rng = np.random.default_rng([seed, step])
        return [synthetic(params) * (1 + 0.03 * rng.standard_normal()) for _ in range(3)], [f"k{step}"], ""

    return measure


def run_loop(seed: int, budget: int = 10):
    space = parse(dict(SPACE), "bw", "test")
    return loop(Proposer(space, seed, dict(DEFAULT)), Settings(budget=budget, seed=seed), noisy(seed))


def test_same_seed_same_proposals():
    a, _ = run_loop(7)
    b, _ = run_loop(7)
    assert [s.params for s in a] == [s.params for s in b]
    assert [s.predicted for s in a] == [s.predicted for s in b]
    assert a[0].params == DEFAULT and a[0].how == "default"
    assert [s.how for s in a[1:MIN_CONFIGS]] == ["random"] * (MIN_CONFIGS - 1)
    assert all(s.how == "model" for s in a[MIN_CONFIGS:])
    assert len({json.dumps(s.params, sort_keys=True) for s in a}) == len(a)  # never measured twice


def test_the_loop_finds_the_best_of_a_synthetic_space_within_its_budget():
    space = parse(dict(SPACE), "bw", "test")
    truth = max(synthetic(c) for c in space.grid())
    steps, reason = run_loop(0, budget=12)
    assert len(steps) <= 12 and reason
    assert synthetic(best_step(steps).params) >= 0.9 * truth
    assert synthetic(DEFAULT) < 0.75 * truth  # the default is far from it


def test_stops_when_the_best_prediction_stalls():
    assert not stalled([1.0] * PATIENCE)
    assert stalled([1.0] * (PATIENCE + 1))
    assert not stalled([1.0] * PATIENCE + [1.5])
    steps, reason = loop(
        Proposer(
            parse({"engine.concurrency": {"min": 1, "max": 1024, "factor": 2}}, "rpc", "t"),
            0,
            {"engine.concurrency": 1},
        ),
        Settings(budget=11),
        lambda step, p: ([5.0, 5.0], [], ""),
    )
    # A flat rate: the 3 initial steps, then PATIENCE + 1 model steps.
    assert "improved by less than" in reason and len(steps) == MIN_CONFIGS + PATIENCE + 1


def test_too_few_samples_to_learn_says_how_many_are_needed():
    p = Proposer(parse(dict(SPACE), "bw", "test"), 0, dict(DEFAULT))
    with pytest.raises(LearnError, match=f"needs at least {MIN_CONFIGS} measured configurations, 2 have"):
        p.fit([Observation(DEFAULT, [1.0]), Observation(dict(DEFAULT, **{"bw.size": "1MiB"}), [2.0])])
    with pytest.raises(LearnError, match=f"tune.init \\(--init\\) 1: too few samples.*at least {MIN_CONFIGS}"):
        Settings(init=1).check()


def test_unknown_knob_names_the_key():
    with pytest.raises(LearnError, match="unknown knob 'engine.concurency' \\(did you mean engine.concurrency"):
        parse({"engine.concurency": [1, 2]}, "rpc", "space.json")
    with pytest.raises(LearnError, match="unknown knob 'collect.duration'"):  # how a campaign measures
        parse({"collect.duration": [1, 2]}, "rpc", "space.json")


def test_space_files_lists_ranges_and_nested_tables(tmp_path):
    from rooftop.config.resolve import build
    from rooftop.learn import space

    f = tmp_path / "space.toml"
    f.write_text(
        'metric = "bw"\nclients_per_node = [1]\n[engine]\nconcurrency = {min = 1, max = 16, factor = 2}\n'
        'handler_threads = {min = 0, max = 2, step = 1}\n[bw]\nsize = ["1MiB", "4MiB"]\n'
    )
    s = space.load(str(f), None, build(None, {}))
    assert s.metric == "bw" and s.knobs == {
        "clients_per_node": [1],
        "engine.concurrency": [1, 2, 4, 8, 16],
        "engine.handler_threads": [0, 1, 2],
        "bw.size": ["1MiB", "4MiB"],
    }
    assert s.size() == len(s.grid()) == 30
    with pytest.raises(LearnError, match="bw.size: give a non-empty list"):
        parse({"bw.size": []}, "bw", "f")
    with pytest.raises(LearnError, match="a range is"):
        parse({"engine.concurrency": {"min": 1, "max": 4}}, "rpc", "f")


def _fixture_model(folder: Path, metric: str = "bw") -> tuple[dict, dict]:
    """A model file's contents (as `rooftop learn` saves them) fitted on a
    copy of the fixture (opening migrates it), and the first run's parameters."""
    import shutil

    shutil.copytree(FIXTURE, folder)
    store = Store(folder, create=False)
    runs = [r for (r,) in store.db.execute("SELECT id FROM runs ORDER BY created")]
    ds = dataset.load(store, runs, metric)
    est = Efficiency("ridge").fit(ds.X(), ds.y)
    doc = {
        "metric": metric,
        "features": ds.features,
        "constants": ds.constants,
        "encoder": ds.encoder,
        "estimator": est,
        "rooflines": ds.rooflines,
        "runs": ds.runs,
    }
    params = dict(store.db.execute("SELECT key, value FROM run_params WHERE run_id = ?", (runs[0],)).fetchall())
    return doc, params


def test_a_model_file_is_used_when_it_matches_and_refused_when_not(tmp_path):
    doc, params = _fixture_model(tmp_path / "results")
    ok = parse({"bw.size": ["64KiB", "1MiB"], "engine.server_progress": ["busy", "spindown"]}, "bw", "f")
    scores = prior_scores(doc, ok, ok.grid(), params, "r")
    assert len(scores) == 4 and all(v > 0 and math.isfinite(v) for v in scores)
    with pytest.raises(LearnError, match="models bw, the tune measures rpc"):
        prior_scores(doc, parse({"engine.concurrency": [1, 2]}, "rpc", "f"), [], params, "r")
    with pytest.raises(LearnError, match="never saw engine.concurrency vary"):
        prior_scores(doc, parse({"engine.concurrency": [1, 2]}, "bw", "f"), [], params, "r")
    other = dict(params, **{"bw.stream_size": "1GiB"})  # the fixture: 64MiB
    with pytest.raises(
        LearnError,
        match="trained with bw.stream_size = 67108864 bytes in every sample; this tune's base configuration has 1GiB",
    ):
        prior_scores(doc, ok, ok.grid(), other, "this tune")


def test_a_model_prior_orders_the_initial_steps():
    space = parse(dict(SPACE), "bw", "test")
    p = Proposer(space, 0, dict(DEFAULT))
    p.prior = [synthetic(c) for c in p.candidates]
    steps, _ = loop(p, Settings(budget=3), noisy(0))
    assert [s.how for s in steps] == ["default", "prior", "prior"]
    assert synthetic(steps[1].params) == max(p.prior)


@pytest.fixture(scope="module")
def small_tune(tmp_path_factory):
    """A 4-step rpc tune on the local launcher, short windows."""
    import contextlib
    import io
    import os

    os.environ.setdefault("ROOFTOP_CORES_LOCK", str(tmp_path_factory.mktemp("lock") / "cores.lock"))
    res = tmp_path_factory.mktemp("tune") / "results"
    space = res.parent / "space.json"
    space.write_text(
        json.dumps({"metric": "rpc", "engine.concurrency": [1, 4, 16], "engine.server_progress": ["busy", "spindown"]})
    )
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(
            [
                "tune",
                "--space",
                str(space),
                "--budget",
                "4",
                "--repeats",
                "2",
                "--duration",
                "0.3",
                "--warmup",
                "0.2",
                "--seed",
                "3",
                "--results",
                str(res),
                "--json",
            ]
        )
    return rc, json.loads(buf.getvalue()), res


def test_a_small_tune_stores_every_step(small_tune, capsys):
    rc, out, res = small_tune
    assert rc == 0 and len(out["steps"]) == 4 and out["steps"][0]["how"] == "default"
    store = Store(res, create=False)
    steps = store.tune_steps(out["run"])
    assert [s["step"] for s in steps] == [1, 2, 3, 4]
    assert steps[0]["params"] == {"engine.concurrency": 1, "engine.server_progress": "spindown"}
    samples = store.samples(out["run"], stage="tune")
    assert len(samples) == 8 and {s["key"] for s in samples} == {k for s in steps for k in s["keys"]}
    assert all(s["measured"] > 0 for s in steps) and steps[-1]["best_predicted"] > 0
    assert "no ceilings to compare against" in out["roofline_note"]
    assert store.get_run(out["run"]).status == "complete"
    capsys.readouterr()
    assert main(["runs", "--results", str(res), "--json"]) == 0
    listed = {r["id"]: r for r in json.loads(capsys.readouterr().out)}
    assert listed[out["run"]]["samples"] == 8 and listed[out["run"]]["note"].startswith("tune rpc: 4 steps")
    assert main(["report", out["run"], "--results", str(res)]) == 0
    page = Path(capsys.readouterr().out.strip())
    assert "Trajectory" in page.read_text() and (page.parent / "trajectory.png").is_file()


def test_the_tune_flags_are_keys_recorded_in_the_runs_config(small_tune):
    _, out, res = small_tune
    tune = Store(res, create=False).get_run(out["run"]).config["tune"]  # rooftop.learn.keys
    assert (tune["budget"], tune["repeat"], tune["duration"], tune["seed"], tune["init"]) == (4, 2, 0.3, 3, 3)


def test_tune_refuses_bad_inputs_before_a_run_exists(tmp_path, capsys):
    space = tmp_path / "space.json"
    space.write_text(json.dumps({"engine.concurency": [1, 2]}))
    assert main(["tune", "--space", str(space), "--results", str(tmp_path / "r")]) == 2
    assert "unknown knob 'engine.concurency'" in capsys.readouterr().err
    space.write_text(json.dumps({"engine.concurrency": [1, 0]}))
    assert main(["tune", "--space", str(space), "--results", str(tmp_path / "r")]) == 2
    assert "engine.concurrency = 0" in capsys.readouterr().err
    assert not Store(tmp_path / "r", create=False).runs()  # no run created
    assert main(["tune", "--init", "2", "--results", str(tmp_path / "r2")]) == 2
    assert "tune.init: 2 is too small (at least 3)" in capsys.readouterr().err
    assert main(["tune", "--set", "tune.budget=many", "--results", str(tmp_path / "r2")]) == 2
    assert "tune.budget: expected an integer" in capsys.readouterr().err
    assert not (tmp_path / "r2").exists()  # nothing created


class _Roof:
    """A roofline: client ceiling 10, server ceiling 4 per server process."""

    def rate(self, x):
        return min(10.0, 4.0 * x)

    def binding(self, x):
        return "server" if 4.0 * x < 10.0 else "client"


def test_the_outcome_compares_the_best_with_the_roofline_or_says_it_cannot(tmp_path):
    from rooftop.learn.tune import Step
    from rooftop.learn.tune_report import outcome_lines, write
    from rooftop.learn.tune_run import summary

    space = parse({"clients_per_node": [1, 2]}, "rpc", "f")
    steps = [
        Step(1, {"clients_per_node": 1}, "default", None, 3.0, None, ["a"]),
        Step(2, {"clients_per_node": 2}, "random", None, 1.5, None, ["b"]),
    ]
    out = summary(steps, "budget", space, _Roof(), "RUN", {"servers_per_node": 1, "clients_per_node": 1})
    assert out["best"]["step"] == 1 and out["roofline"] == {
        "run": "RUN",
        "x": 1.0,
        "rate": 4.0,
        "binds": "server",
        "share": 0.75,
    }
    lines = outcome_lines(out, "ops/s")
    assert any("server ceiling binds; the best reaches 75 % of it" in line for line in lines)
    assert any("best / default = 1.00" in line for line in lines)
    bare = summary(steps, "budget", space, None, None, {})
    assert "no ceilings to compare against" in " ".join(outcome_lines(bare, "ops/s"))
    page, md = write(out, "ops/s", "RUN", tmp_path)
    assert "75 %" in page.read_text() and "| 2 | random | clients_per_node=2 |" in md.read_text()


def test_concurrency_and_handler_threads_reach_the_engine_only_when_set(tmp_path, capsys):
    res = str(tmp_path / "r")
    assert main(["collect", "--dry-run", "--results", res, "--metrics", "rpc"]) == 0
    plain = capsys.readouterr().out
    assert "--concurrency" not in plain and "--handler-threads" not in plain
    assert (
        main(
            [
                "collect",
                "--dry-run",
                "--results",
                res,
                "--metrics",
                "rpc",
                "--set",
                "engine.concurrency=4",
                "--set",
                "engine.handler_threads=2",
            ]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert all("--concurrency 4" in l for l in lines if " load " in l) and any(" load " in l for l in lines)
    assert all("--handler-threads 2" in l for l in lines if " serve " in l)


def test_with_a_roofline_the_model_learns_the_efficiency():
    space = parse({"clients_per_node": [1, 2, 4, 8], "engine.concurrency": [1, 2, 4]}, "rpc", "f")
    truth = lambda p: _Roof().rate(1 / p["clients_per_node"]) * (0.5 + 0.1 * p["engine.concurrency"])  # noqa: E731
    base = {"servers_per_node": 1, "clients_per_node": 1}
    proposer = Proposer(space, 0, {"clients_per_node": 1, "engine.concurrency": 1}, _Roof(), placement=base)
    steps, _ = loop(proposer, Settings(budget=8), lambda step, p: ([truth(p)] * 2, [], ""))
    assert [s.params for s in steps] == [
        s.params
        for s in loop(
            Proposer(space, 0, dict(steps[0].params), _Roof(), placement=base),
            Settings(budget=8),
            lambda step, p: ([truth(p)] * 2, [], ""),
        )[0]
    ]
    later = [s for s in steps if s.how == "model"]
    assert later and all(abs(s.predicted / truth(s.params) - 1) < 0.5 for s in later)
