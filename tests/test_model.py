"""The roofline model: arithmetic against hand-computed cases, parameter
files, and `rooftop model` on a real run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rooftop import model
from rooftop.model import Ceiling, ModelError, Roofline

ROOT = Path(__file__).resolve().parent.parent
AURORA = ROOT / "examples" / "aurora-table2.json"


def test_aurora_rpc_from_the_paper():
    r = model.load_params(AURORA)["rpc"]
    assert r.unit == "ops/s"
    assert (r.client.lo, r.client.hi) == (148e3, 173e3)
    assert (r.server.lo, r.server.hi) == (524e3, 530e3)
    # Ridge x* = client / server: 148/530 .. 173/524.
    assert r.ridge.lo == pytest.approx(0.2792, abs=1e-4)
    assert r.ridge.hi == pytest.approx(0.3302, abs=1e-4)
    # Server-bound at 1/16: 1/16 of a server; client-bound at 1:1.
    assert r.rate(1 / 16, "lo") == pytest.approx(524e3 / 16)
    assert r.rate(1 / 16, "hi") == pytest.approx(530e3 / 16)
    assert r.rate(1, "lo") == 148e3 and r.rate(1, "hi") == 173e3
    assert r.binding(1 / 8) == "server" and r.binding(1 / 2) == "client"
    # Smallest practical ratio reaching the client ceiling: 1 server per 3 clients.
    rec = r.recommended()
    assert (rec["servers"], rec["clients"]) == (1, 3) and 1 / 3 >= rec["x"]
    bw = model.load_params(AURORA)["bw"]
    assert bw.unit == "bytes/s" and bw.client.lo == pytest.approx(20.2 * 2 ** 30)
    assert bw.ridge.mid == pytest.approx(20.35 / 1.75)
    assert bw.recommended()["servers"] == 12  # bandwidth needs ~12 servers per client


def test_validation_against_hand_computed_predictions():
    r = Roofline("rpc", "ops/s", Ceiling(90, 110, 100), Ceiling(380, 420, 400))
    samples = [
        {"stage": "validate", "metric": "rpc", "status": "ok", "x": 0.125, "per_client": 45.0,
         "server_nodes": [0], "client_nodes": [1, 2]},   # server-bound: predicted 50
        {"stage": "validate", "metric": "rpc", "status": "ok", "x": 1.0, "per_client": 80.0,
         "server_nodes": [0], "client_nodes": [1]},      # client-bound: predicted 100
        {"stage": "validate", "metric": "rpc", "status": "ok", "x": 0.5, "per_client": 120.0,
         "server_nodes": [0], "client_nodes": [1]},      # above the roofline
        {"stage": "validate", "metric": "rpc", "status": "failed", "x": 0.5, "per_client": None},
        {"stage": "validate", "metric": "bw", "status": "ok", "x": 0.5, "per_client": 1.0},
    ]
    ev = model.evaluate(r, samples)
    assert [c.x for c in ev.checks] == [0.125, 0.5, 1.0]
    a, b, c = ev.checks
    assert (a.predicted, a.binding, a.error_pct, a.efficiency) == (50, "server", -10, 0.9)
    assert (a.predicted_lo, a.predicted_hi) == (47.5, 52.5)
    assert (c.predicted, c.binding, c.error_pct) == (100, "client", -20)
    assert b.predicted == 100 and b.above_roofline and not a.above_roofline
    assert ev.median_abs_error("server") == pytest.approx(10)
    assert ev.median_abs_error("client") == pytest.approx(20)  # |-20| and |+20|
    d = ev.to_dict()
    assert d["ridge"]["median"] == pytest.approx(0.25)
    assert d["validation"][0]["binding"] == "server"


def test_ceilings_from_run_samples():
    rows = ([{"stage": "client_peak", "metric": "rpc", "status": "ok", "per_client": v} for v in (80, 100, 90)]
            + [{"stage": "server_peak", "metric": "rpc", "status": "ok", "per_server": v} for v in (300, 310)]
            + [{"stage": "client_peak", "metric": "rpc", "status": "failed", "per_client": None}])
    r = model.from_run(rows, "rpc")
    assert (r.client.lo, r.client.mid, r.client.hi) == (80, 90, 100)
    assert (r.server.lo, r.server.mid, r.server.hi) == (300, 305, 310)
    with pytest.raises(ModelError, match="no successful server peak"):
        model.from_run(rows[:3], "rpc")


@pytest.mark.parametrize("text, why", [
    ('{"metrics": {"rpc": {"unit": "furlongs", "client": 1, "server": 2}}}', "metrics.rpc.unit"),
    ('{"metrics": {"rpc": {"unit": "GiB/s", "client": 1, "server": 2}}}', "does not measure rpc"),
    ('{"metrics": {"rpc": {"unit": "ops/s", "client": [1, 2, 3], "server": 2}}}', "metrics.rpc.client"),
    ('{"metrics": {"rpc": {"unit": "ops/s", "client": -1, "server": 2}}}', "metrics.rpc.client"),
    ('{"metrics": {"iops": {}}}', "metrics.iops: unknown metric"),
    ('{"name": "x"}', "expected"),
    ('{"metrics": ', "not valid JSON"),
])
def test_bad_params_files_are_named(tmp_path, text, why):
    f = tmp_path / "p.json"
    f.write_text(text)
    with pytest.raises(ModelError, match=why.replace("(", r"\(")) as e:
        model.load_params(f)
    assert str(f) in str(e.value)


def cli(*args):
    return subprocess.run([sys.executable, "-m", "rooftop", *args], capture_output=True, text=True,
                          timeout=300)


def test_model_command_on_a_real_run_and_params(tmp_path):
    res = tmp_path / "res"
    quick = ["--duration", "0.3", "--warmup", "0.1", "--samples", "2", "--results", str(res)]
    p = cli("collect", "--metrics", "rpc", *quick)
    assert p.returncode == 0, p.stderr
    run = p.stdout.strip().splitlines()[-1]
    assert cli("validate", "--run", run, *quick).returncode == 0
    doc = json.loads(cli("model", run, "--results", str(res), "--json").stdout)
    (m,) = doc["metrics"]
    assert m["metric"] == "rpc" and m["client"]["min"] > 0 and m["server"]["min"] > 0
    # The model's client ceiling is the lower of the lone and the node-full one.
    # (On 2 nodes the client-node stage may be server-bound: then it is not used, and says why.)
    if m["client_node"] is None:
        assert "server-bound" in m["client_node_rejected"]
        bound = m["client"]["median"]
    else:
        bound = min(m["client"]["median"], m["client_node"]["median"])
        assert m["client_node"]["binds"] == (m["client_node"]["median"] < m["client"]["median"])
        assert m["median_abs_error_pct_without_client_node"]["all"] >= 0
    assert m["ridge"]["median"] == pytest.approx(bound / m["server"]["median"])
    assert len(m["validation"]) == 2
    for v in m["validation"]:
        assert v["x"] == 1.0 and v["binding"] in ("server", "client")
        assert v["predicted"] == pytest.approx(min(bound, m["server"]["median"]))
    text = cli("model", run, "--results", str(res)).stdout
    assert "ridge x*" in text and "validation (2 samples)" in text
    # The run's samples against published ceilings.
    doc = json.loads(cli("model", run, "--results", str(res), "--params", str(AURORA), "--json").stdout)
    rpc = [m for m in doc["metrics"] if m["metric"] == "rpc"][0]
    assert rpc["source"].startswith("Aurora") and rpc["validation"][0]["predicted"] == pytest.approx(160.5e3)
    p = cli("model")
    assert p.returncode == 2 and "--params" in p.stderr
    p = cli("model", "--params", str(tmp_path / "missing.json"))
    assert p.returncode == 2 and "cannot read parameters file" in p.stderr


def test_client_node_ceiling_binds_where_lower_and_error_is_shown_both_ways():
    # Seed 000, section 5.2: a lone client reaches 100, but with its node
    # full each client gets 40; servers give 400 each.
    iso = Roofline("bw", "bytes/s", Ceiling(90, 110, 100), Ceiling(380, 420, 400))
    full = Roofline("bw", "bytes/s", Ceiling(90, 110, 100), Ceiling(380, 420, 400),
                    client_node=Ceiling(36, 44, 40))
    assert full.node_binds and full.client_bound.mid == 40
    assert full.rate(1.0) == 40 and iso.rate(1.0) == 100
    assert full.rate(1 / 16) == iso.rate(1 / 16) == 25  # server-bound: unchanged
    # The ridge moves left: 40 / 400 instead of 100 / 400.
    assert full.ridge.mid == pytest.approx(0.1) and iso.ridge.mid == pytest.approx(0.25)
    assert (full.ridge.lo, full.ridge.hi) == pytest.approx((36 / 420, 44 / 380))
    # Validation saturates at 1:1 near 40: only the third ceiling explains it.
    samples = [{"stage": "validate", "metric": "bw", "status": "ok", "x": x, "per_client": m,
                "server_nodes": [0], "client_nodes": [1]} for x, m in ((0.5, 38.0), (1.0, 42.0))]
    ev = model.evaluate(full, samples)
    assert [round(c.error_pct) for c in ev.checks] == [-5, 5]
    assert [round(c.error_pct) for c in ev.without_node.checks] == [-62, -58]
    d = ev.to_dict()
    assert d["client_node"]["binds"] and d["median_abs_error_pct"]["all"] == pytest.approx(5)
    assert d["median_abs_error_pct_without_client_node"]["all"] == pytest.approx(60)
    # A higher node ceiling changes nothing.
    high = Roofline("bw", "bytes/s", Ceiling(90, 110, 100), Ceiling(380, 420, 400),
                    client_node=Ceiling(150, 160, 155))
    assert not high.node_binds and high.rate(1.0) == 100 and high.ridge.mid == iso.ridge.mid


def test_params_file_takes_an_optional_client_node_ceiling(tmp_path):
    f = tmp_path / "p.json"
    f.write_text(json.dumps({"metrics": {"bw": {"unit": "GiB/s", "client": [20, 21], "server": 2,
                                                "client_node": [6, 7]}}}))
    r = model.load_params(f)["bw"]
    assert r.client_node.lo == 6 * 2 ** 30 and r.node_binds
    f.write_text(json.dumps({"metrics": {"bw": {"unit": "GiB/s", "client": 20, "server": 2,
                                                "client_node": "fast"}}}))
    with pytest.raises(ModelError, match=r"metrics.bw.client_node"):
        model.load_params(f)


def test_outlier_node_is_flagged_and_left_out_of_the_ceiling():
    from rooftop import outliers

    # Seed 000's Polaris picture in small: 6 nodes, every pair with node 4 slow.
    rates = {(a, b): (60.0 if 4 in (a, b) else 100.0 + (a + b) % 3) for a in range(6) for b in range(a + 1, 6)}
    scores = {s.node: s for s in outliers.score_nodes(rates)}
    assert outliers.flagged(list(scores.values())) == [4]
    assert scores[4].z < -outliers.THRESHOLD and all(abs(scores[n].z) < 1 for n in (0, 1, 2, 3, 5))
    assert [p for p, _ in scores[4].pairs][:1] and all(4 in p for p, _ in scores[4].pairs)
    # Uniform noise (3 %) flags nothing: the spread has a 5 % floor.
    noisy = {(a, b): 100.0 + 3 * ((a * 7 + b * 3) % 3 - 1) for a in range(6) for b in range(a + 1, 6)}
    assert outliers.flagged(outliers.score_nodes(noisy)) == []
    # Two nodes: no node medians to compare.
    assert outliers.score_nodes({(0, 1): 5.0}) == []
    # Ceilings without the flagged node.
    rows = [{"stage": "client_peak", "metric": "rpc", "status": "ok", "per_client": v,
             "server_nodes": [a], "client_nodes": [b]} for (a, b), v in rates.items()]
    rows.append({"stage": "server_peak", "metric": "rpc", "status": "ok", "per_server": 400.0,
                 "server_nodes": [0], "client_nodes": [1, 2]})
    assert model.from_run(rows, "rpc").client.lo == 60
    assert model.from_run(rows, "rpc", exclude_nodes=[4]).client.lo == 100


def test_a_server_bound_client_node_stage_is_not_a_client_ceiling():
    def rows(node_rate, x):
        return ([{"stage": "client_peak", "metric": "rpc", "status": "ok", "per_client": 100.0,
                  "server_nodes": [0], "client_nodes": [1]},
                 {"stage": "server_peak", "metric": "rpc", "status": "ok", "per_server": 120.0,
                  "server_nodes": [0], "client_nodes": [1]}]
                + [{"stage": "client_node", "metric": "rpc", "status": "ok", "per_client": node_rate,
                    "x": x, "server_nodes": [0], "client_nodes": [1]}])
    # 1 server per client (a 2-node machine): 110 of at most 120 is the servers' limit.
    r = model.from_run(rows(110.0, 1.0), "rpc")
    assert r.client_node is None and "server-bound" in r.client_node_rejected
    # 8 servers per client could give 960: 40 is what a busy client node allows.
    r = model.from_run(rows(40.0, 8.0), "rpc")
    assert r.client_node.mid == 40 and r.node_binds and not r.client_node_rejected


@pytest.mark.parametrize("ridge, want", [(0.3046, (1, 3)), (1.002, (1, 1)), (1.05, (1, 1)), (1.06, (2, 1)),
                                         (1.2, (2, 1)), (11.63, (12, 1)), (0.09, (1, 11)),
                                         (0.5, (1, 2))])
def test_practical_ratio_reaches_the_client_ceiling_within_5_percent(ridge, want):
    r = Roofline("rpc", "ops/s", Ceiling(ridge * 100, ridge * 100, ridge * 100), Ceiling(100, 100, 100))
    rec = r.recommended()
    assert (rec["servers"], rec["clients"]) == want
    assert rec["reaches"] >= 0.95 - 1e-9 and rec["x"] == pytest.approx(ridge)
