"""The search's power, stated (issue 45, item 3): rooftop.campaign.simulate
runs the campaign's own sampling and naming on a described platform, no
engine; `rooftop plan --pairs sample` quotes what it finds."""

from __future__ import annotations

import json
from pathlib import Path

from campaign_util import docs_table, rooftop

import synthetic
from rooftop.campaign import simulate
from rooftop.config.resolve import resolve_grid
from synthetic import config_for, sampled_run


def _cfg(nodes: int) -> dict:
    cfg = config_for(nodes, 1)
    cfg["metrics"] = ["rpc"]
    cfg["collect"]["pairs"] = "sample"
    return resolve_grid(cfg)


def test_a_seed_gives_the_same_power_twice_and_another_seed_other_noise():
    platform, cfg = simulate.Platform.even(17, 3), _cfg(17)
    one = simulate.power(platform, cfg, runs=4, seed=3).as_dict()
    assert one == simulate.power(platform, cfg, runs=4, seed=3).as_dict()
    a = simulate.run(platform, cfg, {("node", "5"): 0.7}, seed=1)
    b = simulate.run(platform, cfg, {("node", "5"): 0.7}, seed=1)
    assert (a.named, a.pairs, a.batches, a.rounds, a.planned_s) == (b.named, b.pairs, b.batches, b.rounds, b.planned_s)
    assert a.planned_s and a.rounds >= 1 and a.pairs >= 17 * 3 // 2


def test_a_node_at_a_third_of_the_others_is_named_every_run_on_a_quiet_platform():
    """17 nodes in 3 groups, pairs spread by 1 %: a node at 0.3 x is named
    in each of 10 runs (power 1), nothing else."""
    quiet = simulate.Platform.even(17, 3, noise={"switch": 0.01, "global": 0.01})
    p = simulate.power(quiet, _cfg(17), runs=10, node=0.3, link=None)
    assert p.runs == {"node": 10} and p.power("node") == 1.0 and p.false_names == 0
    assert p.interval("node")[0] > 0.6 and "finds a node at 0.3 x with 100 % power" in p.line()


def test_nothing_planted_names_next_to_nothing():
    p = simulate.power(simulate.Platform.even(17, 3), _cfg(17), runs=20, node=None, link=None)
    assert p.total_runs == 20 and p.factors == {} and p.false_per_run <= 0.05


def test_a_slow_link_lowers_only_the_pairs_that_cross_it():
    """A pair's rate is the least of what it crosses, planted factors
    multiplying their items' rates."""
    platform = simulate.Platform.even(8, 2, 2)  # groups g0 (nodes 0-3), g1; two switches each
    slow = {("group", "g1"): 0.5, ("switch", "g0s0"): 0.8, ("node", "7"): 0.3}
    t = platform.topology
    assert t.klass(0, 1) == "switch" and t.klass(0, 2) == "group" and t.klass(2, 4) == "global"
    assert platform.rate(0, 1, slow) == 1.0  # same switch: the nodes only
    assert platform.rate(0, 2, slow) == 0.8  # leaves switch g0s0
    assert platform.rate(2, 4, slow) == 0.5  # across groups: g1's link
    assert platform.rate(4, 7, slow) == 0.3  # node 7


def test_the_noise_fitted_to_a_stored_run_is_the_runs_spread(tmp_path):
    """A stored --pairs sample run whose pairs' log rates spread by 0.08
    within a switch and 0.2 across groups: fit_noise (the exclusion rule,
    slow nodes' pairs left out) reads those back per class."""
    store, run_id = sampled_run(tmp_path, nodes=24, groups=2, sigma={"switch": 0.08, "global": 0.2})
    noise = simulate.fit_noise(store, run_id)
    assert set(noise) == {"switch", "global"}
    assert abs(noise["switch"] - 0.08) < 0.02 and abs(noise["global"] - 0.2) < 0.04, noise
    assert simulate.Platform.even(24, 2, noise=noise).sigma("global") == noise["global"]


def test_wilson_interval():
    lo, hi = simulate.wilson(20, 20)
    assert hi == 1.0 and 0.83 < lo < 0.84
    assert simulate.wilson(0, 0) == (0.0, 1.0)


def test_plan_quotes_the_power_of_its_sample_search():
    args = ("plan", "--nodes", "17", "--groups", "3", "--launcher", "srun", "--pairs", "sample", "--metrics", "rpc")
    d = json.loads(rooftop(*args, "--json").stdout)["power"]
    node = d["found"]["node"]
    assert node["factor"] == 0.7 and node["runs"] == simulate.RUNS and node["power"] >= 0.9
    assert d["found"]["group link"]["factor"] == 0.5 and d["false_names_per_run"] >= 0
    assert d["noise"] == {"switch": 0.05, "global": 0.05} and d["pairs"] >= 17 * 3 // 2
    text = rooftop(*args).stdout
    assert "search power: finds a node at 0.7 x with" in text and "expected false names per run: " in text
    assert json.loads(rooftop("plan", "--nodes", "17", "--launcher", "srun", "--json").stdout)["power"] is None


def test_the_docs_power_table_is_what_plan_quotes():
    """docs/topology.md's table for 17, 128, 1,000 and 10,000 nodes, as
    scripts/power_table.py makes it from `rooftop plan --json` now."""
    root = Path(__file__).resolve().parents[2]
    table = docs_table("power_table")
    assert "| 10,000 | 500 |" in table
    assert table in (root / "docs" / "topology.md").read_text(), "run scripts/power_table.py into docs/topology.md"


def test_plan_says_it_does_not_simulate_beyond_its_node_limit(monkeypatch):
    from rooftop.campaign.forecast import forecast, resolve_planned

    monkeypatch.setattr(simulate, "PLAN_MAX_NODES", 10)
    cfg, topo = resolve_planned(None, {"launcher.nodes": 17, "launcher.type": "srun", "collect.pairs": "sample"}, 3)
    f = forecast(cfg, topo)
    f.quote_power()
    assert f.power is None and f.as_dict()["power"] is None
    assert "search power: not simulated on more than 10 nodes" in f.lines()[-1] == f.as_dict()["power_note"]


def test_a_run_records_how_likely_its_own_search_was_to_miss_one(tmp_path, monkeypatch):
    """When a sampled search ends, collect records its power at the run's
    own noise (simulate.record_power: once, in the run's config); the
    model's text, the report's what-to-do and `model --json`
    (`search_power`, valid against the schema) all say that record. A
    noisier run says a lower power: the same search on the same 24 nodes
    at 0.05 and at 0.4 per class. (20 runs of each kind, not 100: seconds.)"""
    import jsonschema

    monkeypatch.setattr(simulate, "RUNS", 20)

    from rooftop import export, results
    from rooftop.report import advice

    said = {}
    for sigma in (0.05, 0.4):
        store, run_id = sampled_run(
            tmp_path / str(sigma), nodes=24, groups=2, sigma=dict.fromkeys(("switch", "global"), sigma)
        )
        cfg = store.get_run(run_id).config
        simulate.record_power(cfg, store, run_id)
        rec = store.get_run(run_id).config["pair_sample"]["power"]["rpc"]
        assert rec["found"]["node"]["runs"] == simulate.RUNS and rec["line"].startswith("finds a node at 0.7 x")
        simulate.record_power(cfg, store, run_id)  # once: a resumed run keeps what it recorded
        assert store.get_run(run_id).config["pair_sample"]["power"]["rpc"] == rec
        res = results.load(store, run_id)
        line = f"search power (this search, simulated at this run's noise): {rec['line']}"
        assert res.pairs["rpc"].power == rec and line in res.pairs["rpc"].outlier_lines()
        assert (("rpc", line + ".")) in advice.pairs(res)
        said[sigma] = rec["found"]["node"]["power"]
    assert said[0.05] > said[0.4], said
    # model --json on a run with a roofline (every pair measured, its search's power recorded as collect does).
    store, run_id = synthetic.realistic_run(tmp_path / "roofline", nodes=12, groups=3)
    cfg = store.get_run(run_id).config
    every = [[a, b] for a in range(12) for b in range(a + 1, 12)]
    cfg["pair_sample"] = {"pairs": every, "batches": [len(every)], "stop": ""}
    simulate.record_power(cfg, store, run_id)
    res = results.load(store, run_id)
    doc = export.model_doc(run_id, None, list(res.evaluations.values()), res.samples, res)
    schema = json.loads((Path(simulate.__file__).parents[1] / "schemas" / "model.schema.json").read_text())
    jsonschema.validate(doc, schema)
    for m in doc["metrics"]:
        assert m["search_power"] == cfg["pair_sample"]["power"][m["metric"]] and "line" in m["search_power"]
