"""The roofline model: arithmetic against hand-computed cases, parameter
files, and `rooftop model` on a real run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rooftop import model
from rooftop.model.answer import answer
from rooftop.model.ceilings import Ceiling, ModelError
from rooftop.model.roofline import Roofline

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
    assert bw.unit == "bytes/s" and bw.client.lo == pytest.approx(20.2 * 2**30)
    # One client process alone on its node could use ~12 servers' worth of bandwidth...
    alone = bw.without_client_node()
    assert alone.ridge.centre == pytest.approx(20.35 / 1.75)
    assert alone.recommended()["servers"] == 12
    # ...but with its node full, the node's links share out 1.625 GiB/s per
    # process (8 NICs x 200 Gb/s x 0.89 / 102 cores), and 1:1 is enough, as
    # the paper found on every system (see tests/test_paper_tables.py).
    assert bw.client_node.centre == pytest.approx(1.625 * 2**30)
    assert bw.ridge.centre == pytest.approx(1.625 / 1.75)
    assert (bw.recommended()["servers"], bw.recommended()["clients"]) == (1, 1)


def test_validation_against_hand_computed_predictions():
    r = Roofline("rpc", "ops/s", Ceiling(90, 110, 100), Ceiling(380, 420, 400))
    samples = [
        {
            "stage": "validate",
            "metric": "rpc",
            "status": "ok",
            "x": 0.125,
            "per_client": 45.0,
            "server_nodes": [0],
            "client_nodes": [1, 2],
        },  # server-bound: predicted 50
        {
            "stage": "validate",
            "metric": "rpc",
            "status": "ok",
            "x": 1.0,
            "per_client": 80.0,
            "server_nodes": [0],
            "client_nodes": [1],
        },  # client-bound: predicted 100
        {
            "stage": "validate",
            "metric": "rpc",
            "status": "ok",
            "x": 0.5,
            "per_client": 120.0,
            "server_nodes": [0],
            "client_nodes": [1],
        },  # above the roofline
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
    d = {**ev.to_dict(), **answer(r, ev).to_dict()}
    assert d["ridge"]["median"] == pytest.approx(0.25) and d["ridge"]["located"]
    assert d["validation"][0]["binding"] == "server"


def test_ceilings_from_run_samples():
    rows = (
        [{"stage": "client_peak", "metric": "rpc", "status": "ok", "per_client": v} for v in (80, 100, 90)]
        + [{"stage": "server_peak", "metric": "rpc", "status": "ok", "per_server": v} for v in (300, 310)]
        + [{"stage": "client_peak", "metric": "rpc", "status": "failed", "per_client": None}]
    )
    r = model.from_run(rows, "rpc")
    assert (r.client.lo, r.client.centre, r.client.hi) == (80, 90, 100)
    assert (r.server.lo, r.server.centre, r.server.hi) == (300, 305, 310)
    with pytest.raises(ModelError, match="no successful server peak"):
        model.from_run(rows[:3], "rpc")


@pytest.mark.parametrize(
    "text, why",
    [
        ('{"metrics": {"rpc": {"unit": "furlongs", "client": 1, "server": 2}}}', "metrics.rpc.unit"),
        ('{"metrics": {"rpc": {"unit": "GiB/s", "client": 1, "server": 2}}}', "does not measure rpc"),
        ('{"metrics": {"rpc": {"unit": "ops/s", "client": [1, 2, 3], "server": 2}}}', "metrics.rpc.client"),
        ('{"metrics": {"rpc": {"unit": "ops/s", "client": -1, "server": 2}}}', "metrics.rpc.client"),
        ('{"metrics": {"tput": {}}}', "metrics.tput: unknown metric"),
        ('{"name": "x"}', "expected"),
        ('{"metrics": ', "not valid JSON"),
    ],
)
def test_bad_params_files_are_named(tmp_path, text, why):
    f = tmp_path / "p.json"
    f.write_text(text)
    with pytest.raises(ModelError, match=why.replace("(", r"\(")) as e:
        model.load_params(f)
    assert str(f) in str(e.value)


def cli(*args):
    return subprocess.run([sys.executable, "-m", "rooftop", *args], capture_output=True, text=True, timeout=300)


def test_model_command_on_a_real_run_and_params(tmp_path):
    res = tmp_path / "res"
    quick = ["--duration", "0.3", "--warmup", "0.1", "--windows", "2", "--results", str(res)]
    p = cli("collect", "--metrics", "rpc", *quick)
    assert p.returncode == 0, p.stderr
    run = p.stdout.strip().splitlines()[-1]
    assert cli("validate", run, *quick).returncode == 0
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
    # One measurement: the answer locates no ridge (issue 43), and says why.
    assert m["ridge"]["located"] is False and m["ridge"]["median"] is None and m["recommended"] is None
    assert m["ridge"]["reason"] == "the client and server ceilings are one measurement (the same placement)"
    assert len(m["validation"]) == 2 and not any(v["tests_model"] for v in m["validation"])
    for v in m["validation"]:
        assert v["x"] == 1.0 and v["binding"] in ("server", "client")
        assert v["predicted"] == pytest.approx(min(bound, m["server"]["median"]))
    # 2 logical nodes: the ceilings are one measurement, so the verdict is
    # that they cannot be told apart, with each ceiling's interval.
    assert m["measured_once"] == [["server_peak", "client_peak", "client_node"]]
    assert m["client"]["samples"] == m["server"]["samples"] == 2
    assert m["client"]["ci95"] == m["server"]["ci95"] and m["client"]["ci95"][1] >= m["client"]["median"]
    assert m["verdict"]["kind"] == "indistinguishable" and m["verdict"]["ratio"] is None
    text = cli("model", run, "--results", str(res)).stdout
    assert "ridge x*" in text and "validation (2 samples)" in text
    assert text.startswith("rpc: the ceilings are not distinguishable here")
    assert "measured once" in text and "95 % interval" in text
    # The run's samples against published ceilings.
    doc = json.loads(cli("model", run, "--results", str(res), "--params", str(AURORA), "--json").stdout)
    rpc = [m for m in doc["metrics"] if m["metric"] == "rpc"][0]
    assert rpc["source"].startswith("Aurora") and rpc["validation"][0]["predicted"] == pytest.approx(160.5e3)
    assert rpc["verdict"]["kind"] == "ratio" and rpc["verdict"]["ratio"] == [1, 3]
    text = cli("model", "--params", str(AURORA)).stdout
    assert "rpc: 1:3 (servers:clients)" in text
    assert "bw: 1:1 (servers:clients)" in text  # the node-full ceiling binds
    alone = json.loads(AURORA.read_text())
    del alone["metrics"]["bw"]["client_node"]
    (tmp_path / "alone.json").write_text(json.dumps(alone))
    text = cli("model", "--params", str(tmp_path / "alone.json")).stdout
    assert "bw: about 12:1 (servers:clients): any ratio from 11:1 to 12:1" in text
    p = cli("model")
    assert p.returncode == 2 and "--params" in p.stderr
    p = cli("model", "--params", str(tmp_path / "missing.json"))
    assert p.returncode == 2 and "cannot read parameters file" in p.stderr


def test_client_node_ceiling_binds_where_lower_and_error_is_shown_both_ways():
    # Seed 000, section 5.2: a lone client reaches 100, but with its node
    # full each client gets 40; servers give 400 each.
    iso = Roofline("bw", "bytes/s", Ceiling(90, 110, 100), Ceiling(380, 420, 400))
    full = Roofline("bw", "bytes/s", Ceiling(90, 110, 100), Ceiling(380, 420, 400), client_node=Ceiling(36, 44, 40))
    assert full.node_binds and full.client_bound.centre == 40
    assert full.rate(1.0) == 40 and iso.rate(1.0) == 100
    assert full.rate(1 / 16) == iso.rate(1 / 16) == 25  # server-bound: unchanged
    # The ridge moves left: 40 / 400 instead of 100 / 400.
    assert full.ridge.centre == pytest.approx(0.1) and iso.ridge.centre == pytest.approx(0.25)
    assert (full.ridge.lo, full.ridge.hi) == pytest.approx((36 / 420, 44 / 380))
    # Validation saturates at 1:1 near 40: only the third ceiling explains it.
    samples = [
        {
            "stage": "validate",
            "metric": "bw",
            "status": "ok",
            "x": x,
            "per_client": m,
            "server_nodes": [0],
            "client_nodes": [1],
        }
        for x, m in ((0.5, 38.0), (1.0, 42.0))
    ]
    ev = model.evaluate(full, samples)
    assert [round(c.error_pct) for c in ev.checks] == [-5, 5]
    assert [round(c.error_pct) for c in ev.without_node.checks] == [-62, -58]
    d = ev.to_dict()
    assert d["client_node"]["binds"] and d["median_abs_error_pct"]["all"] == pytest.approx(5)
    assert d["median_abs_error_pct_without_client_node"]["all"] == pytest.approx(60)
    # A higher node ceiling changes nothing.
    high = Roofline("bw", "bytes/s", Ceiling(90, 110, 100), Ceiling(380, 420, 400), client_node=Ceiling(150, 160, 155))
    assert not high.node_binds and high.rate(1.0) == 100 and high.ridge.centre == iso.ridge.centre


def test_params_file_takes_an_optional_client_node_ceiling(tmp_path):
    f = tmp_path / "p.json"
    f.write_text(
        json.dumps({"metrics": {"bw": {"unit": "GiB/s", "client": [20, 21], "server": 2, "client_node": [6, 7]}}})
    )
    r = model.load_params(f)["bw"]
    assert r.client_node.lo == 6 * 2**30 and r.node_binds
    f.write_text(json.dumps({"metrics": {"bw": {"unit": "GiB/s", "client": 20, "server": 2, "client_node": "fast"}}}))
    with pytest.raises(ModelError, match=r"metrics.bw.client_node"):
        model.load_params(f)


def test_outlier_node_is_flagged_and_left_out_of_the_ceiling():
    from rooftop.model import outliers

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
    # 6 nodes whose same-core pairs are left out (3 partners each), n2 capped:
    # n3's one noisy pair and its pair with n2 would name n3 too; once n2 is
    # named its pairs say nothing of n3, so n2 alone is slow...
    cross = {(a, b): 53e3 for a in range(6) for b in range(a + 1, 6) if (b - a) % 2}
    cross.update({p: 3.5e3 for p in cross if 2 in p})
    cross[(3, 4)] = 42e3
    scores = {s.node: s for s in outliers.score_nodes(cross)}
    assert outliers.flagged(list(scores.values())) == [2]
    assert -outliers.THRESHOLD < scores[3].z < 0 and scores[3].median == 47.5e3
    # ... and a partner whose other pairs are slow too is named as well.
    cross.update({(0, 3): 20e3, (3, 4): 20e3})
    assert sorted(outliers.flagged(outliers.score_nodes(cross))) == [2, 3]
    # Ceilings without the flagged node.
    rows = [
        {
            "stage": "client_peak",
            "metric": "rpc",
            "status": "ok",
            "per_client": v,
            "server_nodes": [a],
            "client_nodes": [b],
        }
        for (a, b), v in rates.items()
    ]
    rows.append(
        {
            "stage": "server_peak",
            "metric": "rpc",
            "status": "ok",
            "per_server": 400.0,
            "server_nodes": [0],
            "client_nodes": [1, 2],
        }
    )
    assert model.from_run(rows, "rpc").client.lo == 60
    assert model.from_run(rows, "rpc", exclude_nodes=[4]).client.lo == 100


def test_a_healthy_node_with_unlucky_pairs_is_not_named_where_pairs_are_noisy():
    """The CI run of 2026-11-27 (tests/cluster/test_topology_sample.py): 12
    nodes in 3 groups of 4, node 11 capped to 2 %, 36 sampled rpc pairs
    whose rates spread by +-49 % while the node medians sat within +-10 %.
    Against the node medians' spread alone n8 (two low pairs of four once
    its pair with n11 is set aside) scored -4.05 and was named too; against
    what a median of its pairs wanders by, only n11 is."""
    from rooftop.model import outliers

    rates = {
        (0, 1): 2435,
        (0, 2): 3948,
        (0, 3): 5015,
        (0, 5): 5906,
        (0, 8): 3968,
        (0, 10): 2585,
        (1, 2): 4259,
        (1, 3): 4110,
        (1, 6): 2763,
        (1, 10): 4458,
        (2, 3): 1856,
        (2, 4): 5239,
        (2, 5): 2918,
        (2, 6): 5102,
        (2, 9): 4276,
        (2, 11): 363,
        (3, 5): 3545,
        (3, 7): 2289,
        (3, 10): 4821,
        (4, 5): 5630,
        (4, 6): 3259,
        (4, 7): 2953,
        (4, 9): 4445,
        (4, 11): 172,
        (5, 6): 5908,
        (5, 7): 3007,
        (5, 11): 365,
        (6, 7): 5750,
        (6, 9): 1907,
        (7, 8): 4472,
        (8, 9): 2322,
        (8, 10): 2413,
        (8, 11): 366,
        (9, 10): 6498,
        (9, 11): 454,
        (10, 11): 359,
    }
    classes = {p: "switch" if p[0] // 4 == p[1] // 4 else "global" for p in rates}
    scores = {s.node: s for s in outliers.score_nodes(rates, classes)}
    assert outliers.flagged(list(scores.values())) == [11]
    assert scores[11].z < -outliers.THRESHOLD and all(abs(s.z) < 2 for n, s in scores.items() if n != 11)
    # A quiet machine (the same pairs, healthy ones at 4000 +-1 %): the floor
    # is the 5 % one, and the capped node stands far out.
    quiet = {p: (r if 11 in p else 4000.0 + 40 * ((p[0] + p[1]) % 3 - 1)) for p, r in rates.items()}
    assert outliers.flagged(outliers.score_nodes(quiet, classes)) == [11]
    assert min(s.z for s in outliers.score_nodes(quiet, classes)) < -10


def test_a_node_at_a_tenth_of_the_others_is_named_where_pairs_are_noisy():
    """The CI run of 2026-11-27 (tests/cluster/test_outlier_nodes.py, six
    nodes on 2 cores, n2 capped to 10 %): the 9 cross-core rpc pairs, the
    healthy ones spreading from 22.8k to 40.1k ops/s, n2's at a tenth. On a
    linear scale a median of 3 such pairs could wander by a third of the
    typical rate, and n2 scored -2.75, unnamed with nothing said; rates
    vary by factors, and on a log scale n2 stands 9 spreads below."""
    from rooftop.model import outliers

    rates = {
        (0, 1): 37440,
        (0, 3): 25099,
        (0, 5): 24271,
        (1, 2): 2171,
        (1, 4): 22785,
        (2, 3): 2584,
        (2, 5): 2845,
        (3, 4): 34007,
        (4, 5): 40090,
    }
    scores = {s.node: s for s in outliers.score_nodes(rates)}
    assert outliers.flagged(list(scores.values())) == [2]
    assert scores[2].z < -2 * outliers.THRESHOLD and all(abs(s.z) < 2 for n, s in scores.items() if n != 2)
    assert sorted(p for p, _ in outliers.slow_pairs(rates, [2])) == [(1, 2), (2, 3), (2, 5)]


def test_a_slow_node_among_four_with_two_or_three_partners_is_named_alone():
    """Issue 45's regression: 4 emulated nodes, two per core (the same-core
    pair n0-n2 left out), node 3 capped to 20 % of a core. Its rpc pairs
    ran at 11.9k, 0.05k and 12.4k ops/s against 60-73k for every pair
    without it, bw 20 against 35 MB/s; each healthy node's median took one
    of its 2-3 pairs from node 3 and nobody was named. Scored against the
    others as if it were not there, node 3 is named, alone."""
    from rooftop.model import outliers

    rpc = {(0, 1): 73.0e3, (1, 2): 60.4e3, (0, 3): 11.9e3, (1, 3): 0.05e3, (2, 3): 12.4e3}
    bw = {(0, 1): 35.2e6, (1, 2): 34.6e6, (0, 3): 20.1e6, (1, 3): 19.8e6, (2, 3): 20.4e6}
    for rates in (rpc, bw, {**rpc, (0, 2): 66.0e3}):
        scores = outliers.score_nodes(rates)
        assert outliers.flagged(scores) == [3], scores
        assert outliers.cannot_tell(rates, range(4)) == ""
    # A node below the others by more than their spread, but not by more
    # than a median of its 3 pairs may wander on a noisy machine, is not
    # named, and the account says why: never a silent nothing.
    noisy = {(0, 1): 37440, (0, 3): 25099, (0, 5): 24271, (1, 4): 22785, (3, 4): 34007, (4, 5): 40090}
    noisy.update({(1, 2): 0.6 * 31710, (2, 3): 0.6 * 25840, (2, 5): 0.6 * 28450})
    assert outliers.flagged(outliers.score_nodes(noisy)) == []
    assert outliers.cannot_tell(noisy, range(6)).startswith("cannot tell whether n2 (3 pairs) is slow")


def test_a_server_bound_client_node_stage_is_not_a_client_ceiling():
    def rows(node_rate, x):
        return [
            {
                "stage": "client_peak",
                "metric": "rpc",
                "status": "ok",
                "per_client": 100.0,
                "server_nodes": [0],
                "client_nodes": [1],
            },
            {
                "stage": "server_peak",
                "metric": "rpc",
                "status": "ok",
                "per_server": 120.0,
                "server_nodes": [0],
                "client_nodes": [1],
            },
        ] + [
            {
                "stage": "client_node",
                "metric": "rpc",
                "status": "ok",
                "per_client": node_rate,
                "x": x,
                "server_nodes": [0],
                "client_nodes": [1],
            }
        ]

    # 1 server per client (a 2-node machine): 110 of at most 120 is the servers' limit.
    r = model.from_run(rows(110.0, 1.0), "rpc")
    assert r.client_node is None and "server-bound" in r.client_node_rejected
    # 8 servers per client could give 960: 40 is what a busy client node allows.
    r = model.from_run(rows(40.0, 8.0), "rpc")
    assert r.client_node.centre == 40 and r.node_binds and not r.client_node_rejected


@pytest.mark.parametrize(
    "ridge, want",
    [
        (0.3046, (1, 3)),
        (1.002, (1, 1)),
        (1.05, (1, 1)),
        (1.06, (2, 1)),
        (1.2, (2, 1)),
        (11.63, (12, 1)),
        (0.09, (1, 11)),
        (0.5, (1, 2)),
    ],
)
def test_practical_ratio_reaches_the_client_ceiling_within_5_percent(ridge, want):
    r = Roofline("rpc", "ops/s", Ceiling(ridge * 100, ridge * 100, ridge * 100), Ceiling(100, 100, 100))
    rec = r.recommended()
    assert (rec["servers"], rec["clients"]) == want
    assert rec["reaches"] >= 0.95 - 1e-9 and rec["x"] == pytest.approx(ridge)


# --- confidence intervals and the verdict (issue 10, item 7) -----------------


def _row(stage, value, key, server_nodes=(0,), client_nodes=(1,), sp=1, cp=1, ceilings=None):
    rate = "per_server" if stage == "server_peak" else "per_client"
    return {
        "stage": stage,
        "metric": "rpc",
        "status": "ok",
        "key": key,
        rate: value,
        "server_nodes": list(server_nodes),
        "client_nodes": list(client_nodes),
        "server_procs": sp,
        "client_procs": cp,
        "x": sp / cp,
        "ceilings": json.dumps(ceilings) if ceilings else "",
    }


def _run(client, server):
    return [_row("client_peak", v, f"client_peak/rpc/s0x1/c1x1/{i}") for i, v in enumerate(client)] + [
        _row("server_peak", v, f"server_peak/rpc/s0x1/c1-2x1/{i}", client_nodes=(1, 2), cp=2)
        for i, v in enumerate(server)
    ]


def test_t_interval_of_the_mean():
    assert model.t975(2) == 4.303 and model.t975(1000) == pytest.approx(1.962, abs=1e-3)
    lo, hi = model.t_interval([1.0, 2.0, 3.0])  # mean 2, s 1, n 3
    assert (lo, hi) == pytest.approx((0.0, 2 + 4.303 / 3**0.5))  # lower end floored at 0
    assert model.t_interval([10.0, 10.0, 10.0]) == (10.0, 10.0)
    assert model.t_interval([5.0]) is None
    c = Ceiling.of([98.0, 100.0, 102.0])
    assert c.n == 3 and c.interval == pytest.approx((100 - 4.303 * 2 / 3**0.5, 100 + 4.303 * 2 / 3**0.5))
    assert Ceiling(90, 110, 100).interval == (90, 110)  # a range given without samples


def test_overlapping_ceilings_are_not_distinguishable():
    # Server and client per process both about 100 with 10 % noise: the
    # medians alone would say 1:1 or 2:1 by chance.
    r = model.from_run(_run([92, 104, 110, 97], [101, 89, 108, 95]), "rpc")
    ri = r.ridge_interval
    assert ri[0] < 1 < ri[1]
    v = r.verdict()
    assert v["kind"] == "indistinguishable" and v["ratio"] is None
    assert v["text"].startswith("the ceilings are not distinguishable here: any ratio from 1:")
    assert "to 2:1" in v["text"] and v["text"].endswith("is within noise")
    assert v["range"][0][0] == 1 and v["range"][0][1] >= 1 and v["range"][1] == [2, 1]
    a = answer(r, model.evaluate(r, []))
    assert a.to_dict()["verdict"] == v
    # The verdict locates no ridge, so the answer gives none, nor a ratio.
    assert not a.ridge.located and a.ridge.centre is None and a.to_dict()["recommended"] is None
    assert a.ridge.reason.startswith("the ceilings' intervals overlap: any ratio from 1:")


def test_well_separated_ceilings_give_one_ratio():
    # Client 100, server 400 per process, 2 % noise: 1 server per 4 clients.
    r = model.from_run(_run([98, 100, 102, 101], [396, 404, 400, 398]), "rpc")
    v = r.verdict()
    rec = r.recommended()
    assert v["kind"] == "ratio" and v["ratio"] == [1, 4] == [rec["servers"], rec["clients"]]
    assert v["text"] == "1:4 (servers:clients)"
    ev = model.evaluate(r, [])
    d = {**ev.to_dict(), **answer(r, ev).to_dict()}
    assert d["client"]["samples"] == 4 and d["client"]["ci95"][0] < 100 < d["client"]["ci95"][1]
    assert d["ridge"]["located"] and d["ridge"]["ci95"][0] < 0.25 < d["ridge"]["ci95"][1]
    assert d["recommended"]["servers"] == 1 and d["recommended"]["clients"] == 4


def test_separated_but_noisy_ceilings_give_a_range_around_the_best_estimate():
    r = model.from_run(_run([95, 100, 105], [300, 400, 500]), "rpc")
    v = r.verdict()
    assert v["kind"] == "range" and v["ridge_interval"][1] < 1
    lo, hi = v["range"]
    assert lo[0] / lo[1] <= v["ratio"][0] / v["ratio"][1] <= hi[0] / hi[1] and lo != hi
    assert v["text"].startswith(f"about {v['ratio'][0]}:{v['ratio'][1]} (servers:clients): any ratio from")


def test_one_measurement_for_client_and_server_is_not_distinguishable():
    # 2 logical nodes: one placement stood for all three stages.
    stages = ["server_peak", "client_peak", "client_node"]
    rows = []
    for i, v in enumerate((100.0, 101.0, 99.0)):
        row = _row("server_peak", v, f"server_peak+client_peak+client_node/rpc/s0x1/c1x1/{i}", ceilings=stages)
        row["per_client"] = v
        rows.append(row)
    r = model.from_run(rows, "rpc")
    assert r.one_measurement and r.measured_once == [stages]
    assert r.client.centre == r.server.centre == 100.0 and r.client.n == r.server.n == 3
    # The node-full stage is the same samples: server-bound by construction.
    assert r.client_node is None and "measured once with the server peak" in r.client_node_rejected
    v = r.verdict()
    assert v["kind"] == "indistinguishable" and v["ratio"] is None
    assert "one measurement (the same placement)" in v["text"]
    ev = model.evaluate(r, [])
    d = {**ev.to_dict(), **answer(r, ev).to_dict()}
    assert d["measured_once"] == [stages] and d["verdict"]["kind"] == "indistinguishable"
    # No span of ratios is claimed for one placement, and no ridge is located.
    assert "within noise" not in v["text"]
    assert d["ridge"] == {
        "located": False,
        "reason": "the client and server ceilings are one measurement (the same placement)",
        "min": None,
        "median": None,
        "max": None,
        "ci95": None,
    }
    assert d["recommended"] is None


def test_a_ceiling_of_one_sample_cannot_tell():
    v = model.from_run(_run([100], [400, 410, 405]), "rpc").verdict()
    assert v["kind"] == "cannot_tell" and "client ceiling(s) have a single sample" in v["text"]


def test_published_ranges_keep_aurora_ratios():
    p = model.load_params(AURORA)
    rpc, bw = p["rpc"].verdict(), p["bw"].without_client_node().verdict()
    assert rpc["kind"] == "ratio" and rpc["ratio"] == [1, 3]
    assert p["bw"].verdict()["ratio"] == [1, 1]  # with the node full (the file's client_node)
    # Ranges do not overlap; the bandwidth ridge 11.2 .. 12.1 spans 11:1 and 12:1,
    # and the best estimate stays 12:1.
    assert bw["kind"] == "range" and bw["ratio"] == [12, 1] and bw["range"] == [[11, 1], [12, 1]]
    assert bw["text"].endswith("is within the ranges given")


def test_overlapping_published_ranges_are_not_distinguishable(tmp_path):
    f = tmp_path / "p.json"
    f.write_text(json.dumps({"metrics": {"rpc": {"unit": "K ops/s", "client": [80, 120], "server": [90, 110]}}}))
    v = model.load_params(f)["rpc"].verdict()
    assert v["kind"] == "indistinguishable" and v["range"] == [[1, 1], [2, 1]]


def _emulated(shared: dict[int, list[int]], cores: dict[int, list[int]]):
    from rooftop.launchers.base import Node

    return [
        Node(
            i,
            f"rooftop-n{i}",
            tuple(cores[i]),
            f"10.231.0.{10 + i}",
            {"netns": f"rooftop-n{i}", "cpu_percent": None, "link_rate_bits": None, "shared_with": shared.get(i, [])},
        )
        for i in sorted(cores)
    ]


def test_placements_whose_nodes_share_cores_yield_no_ceiling():
    # Seed of the bug: 3 emulated nodes on 2 cores, n1 and n2 share core 1.
    nodes = _emulated({1: [2], 2: [1]}, {0: [0], 1: [1], 2: [1]})
    assert (
        model.core_sharing(_row("client_peak", 1, "k", (1,), (2,)), nodes)
        == "nodes n1, n2 share core(s) 1: 2 processes on 1 core(s)"
    )
    assert model.core_sharing(_row("client_peak", 1, "k", (0,), (2,)), nodes) == ""
    # The same Nodes described in a run's config say the same.
    assert model.core_sharing(_row("client_peak", 1, "k", (1,), (2,)), [n.describe() for n in nodes])
    rows = (
        [_row("client_peak", v, f"client_peak/rpc/s0x1/c1x1/{i}") for i, v in enumerate((10e3, 10.2e3))]
        + [_row("client_peak", v, f"client_peak/rpc/s0x1/c2x1/{i}", (0,), (2,)) for i, v in enumerate((9.9e3, 10.1e3))]
        + [_row("client_peak", 125.0, f"client_peak/rpc/s1x1/c2x1/{i}", (1,), (2,)) for i in range(2)]
        + [
            _row("server_peak", v, f"server_peak/rpc/s0x1/c1-2x1/{i}", (0,), (1, 2), 1, 2)
            for i, v in enumerate((40e3, 41e3))
        ]
        + [_row("client_node", 125.0, f"client_node/rpc/s0-1x1/c2x1/{i}", (0, 1), (2,), 2, 1) for i in range(2)]
    )
    r = model.from_run(rows, "rpc", nodes=nodes)
    # The 125 ops/s pair n1-n2 is no client ceiling, and no node-full one.
    assert r.client.lo == 9.9e3 and r.client.n == 4
    assert r.client_node is None and "share core(s) 1" in r.client_node_rejected
    # The server peak placement (clients on n1 and n2, 2 on core 1) shares too:
    # with no other server sample the ceiling is drawn from it, and the verdict cannot tell.
    assert r.core_shared_only == ["server"]
    assert {(st, k) for st, k, _ in r.core_shared} >= {
        ("client_peak", "client_peak/rpc/s1x1/c2x1/0"),
        ("client_node", "client_node/rpc/s0-1x1/c2x1/1"),
    }
    v = r.verdict()
    assert v["kind"] == "cannot_tell" and "server ceiling(s) come only from samples" in v["text"]
    # Without sharing information (a real cluster) every sample counts: the
    # time-sliced pair would be the node-full ceiling, "1 server per 155 clients".
    blind = model.from_run(rows, "rpc")
    assert blind.client.lo == 125.0 and blind.client_node.centre == 125.0 and blind.node_binds


def test_unbound_processes_on_nodes_sharing_enough_cores_are_used():
    # 4 nodes that each may use both cores (binding none): a pair is 2
    # processes on 2 cores, which do not have to time-slice.
    nodes = _emulated({i: [j for j in range(4) if j != i] for i in range(4)}, {i: [0, 1] for i in range(4)})
    assert model.core_sharing(_row("client_peak", 1, "k", (0,), (3,)), nodes) == ""
    assert model.core_sharing(_row("server_peak", 1, "k", (0,), (1, 2, 3), 2, 6), nodes).endswith(
        "8 processes on 2 core(s)"
    )


def test_compare_table_shows_each_verdict(tmp_path):
    alone = json.loads(AURORA.read_text())
    del alone["metrics"]["bw"]["client_node"]  # a single client per node: the range verdict
    (tmp_path / "alone.json").write_text(json.dumps(alone))
    p = cli("compare", str(tmp_path / "alone.json"), "--out-dir", str(tmp_path))
    assert p.returncode == 0, p.stderr
    assert "12:1 (11:1–12:1)" in p.stdout and "│ 1:3 " in p.stdout  # the table is the output


# The platform's drift between the ceilings and validation (rooftop.model.drift).


def _drift_rows(before, after, **kw):
    rows = [_row("client_peak", v, f"client_peak/rpc/s0x1/c1x1/{i}") for i, v in enumerate(before)]
    return rows + [_row("validate", v, f"validate/rpc/s0x1/c1x1/{i}", **kw) for i, v in enumerate(after)]


@pytest.mark.parametrize(
    ("after", "kw", "ratio"),
    [
        ([50.0, 51.0], {}, 0.5),  # the same placement at half the rate: drift
        ([120.0], {}, 120 / 101),  # one validation sample far above the ceiling samples' range
        ([105.0, 125.0, 130.0, 131.0], {}, 127.5 / 101),  # changed during validation, most samples moved
        ([99.0, 103.0], {}, None),  # within the spread: no drift
        ([110.0], {}, None),  # within the range widened by MARGIN
        ([50.0, 51.0], {"client_nodes": (2,)}, None),  # another placement: not comparable
        ([50.0, 51.0], {"sp": 2, "server_nodes": (0,)}, None),  # other process counts
    ],
)
def test_platform_drift_compares_a_placement_measured_in_both(after, kw, ratio):
    from rooftop.model.drift import platform_drift

    found = platform_drift(_drift_rows([100.0, 101.0, 102.0], after, **kw), "rpc")
    if ratio is None:
        assert found == []
    else:
        (d,) = found
        assert d.ratio == pytest.approx(ratio)
        assert d.before == [100.0, 101.0, 102.0] and d.after == after
        assert f"{ratio:.2f}x" in d.line() and "n0" in d.line() and "n1" in d.line()


def test_platform_drift_uses_only_samples_the_exclusion_rule_keeps():
    from rooftop.model.drift import platform_drift

    rows = _drift_rows([100.0, 101.0, 102.0], [50.0, 51.0])
    for r in rows[3:]:
        r["concurrent"] = 1  # measured beside another campaign: no evidence
    assert platform_drift(rows, "rpc") == []
    rows = _drift_rows([100.0, 101.0, 102.0], [50.0, 51.0])
    for r in rows[3:]:
        r["status"] = "invalid"
    assert platform_drift(rows, "rpc") == []


def test_model_and_report_say_the_platform_changed(tmp_path):
    """A synthetic run whose validation measured every placement at half its
    collect rate: `model` (text and --json) and the report say the machine
    changed, naming the placement and the ratio; a run without drift says
    nothing of it."""
    sys.path.insert(0, str(ROOT / "tests"))
    import synthetic

    def rate(stage, metric, snodes, cnodes, ns, nc, i):
        r = min(nc * 50e3, ns * 100e3) * (1 + 0.01 * i)
        return r / 2 if stage == "validate" else r

    st, run = synthetic._store(tmp_path, synthetic.config_for(), rate, lambda *a: [[10, 11, 5]])
    res = str(st.dir)
    doc = json.loads(cli("model", run, "--results", res, "--json").stdout)
    for m in doc["metrics"]:
        assert m["platform_drift"] and all(d["ratio"] == pytest.approx(0.5, rel=0.02) for d in m["platform_drift"])
        assert {"server_nodes": [0], "client_nodes": [1]}.items() <= m["platform_drift"][0].items()
    text = cli("model", run, "--results", res).stdout
    assert "rpc: the platform changed between collect and validate" in text and "0.50x" in text
    p = cli("report", run, "--results", res)
    assert p.returncode == 0, p.stderr
    md = (st.dir / run / "report" / "report.md").read_text()
    assert "the platform changed between collect and validate" in md
    html = (st.dir / run / "report" / "report.html").read_text()
    assert "the platform changed between collect and validate" in html
    st2, run2 = synthetic.uniform_run(tmp_path / "quiet")
    doc = json.loads(cli("model", run2, "--results", str(st2.dir), "--json").stdout)
    assert all(m["platform_drift"] == [] for m in doc["metrics"])


def test_validation_against_each_placements_own_topology_class():
    """Issue 31: on a run that knows its topology, each validation
    placement is also checked against the client ceiling of its own class,
    the farthest its servers and clients are apart (the 17-node suite: the
    lowest class's ceiling reads +200 % inside one switch)."""
    from rooftop.model.classes import ClassCeiling, placement_class
    from rooftop.topology import Topology

    topo = Topology.even(6, 2)  # nodes 0-2 on one switch, 3-5 on another
    assert placement_class([0], [1, 2], topo) == "switch" and placement_class([0, 1], [2, 3], topo) == "global"
    assert placement_class([0], [0], topo) is None
    r = Roofline("rpc", "ops/s", Ceiling(90, 110, 100), Ceiling(380, 420, 400))
    classes = [
        ClassCeiling("switch", "same switch", Ceiling.of([300.0] * 3), 6),
        ClassCeiling("global", "across groups", Ceiling.of([100.0] * 3), 9),
    ]

    def row(s, c, rate):
        return {"stage": "validate", "metric": "rpc", "status": "ok", "x": len(s) / len(c), "per_client": rate,
                "server_nodes": s, "client_nodes": c}  # fmt: skip

    ev = model.evaluate(r, [row([0], [1, 2], 200.0), row([0, 1], [3, 4], 100.0)], topology=topo, classes=classes)
    inside, across = sorted(ev.checks, key=lambda c: c.x)
    # Inside a switch: the class's 300, bound by x * server = 0.5 * 400 = 200; the model's 100 reads +100 %.
    assert (inside.klass, inside.class_predicted, inside.class_error_pct) == ("switch", 200.0, 0.0)
    assert inside.predicted == 100.0 and inside.error_pct == 100.0
    assert (across.klass, across.class_predicted) == ("global", 100.0)
    assert ev.class_errors() == {"switch": (0.0, 1), "global": (0.0, 1), "all": (0.0, 2)}
    doc = ev.to_dict()
    assert doc["median_abs_error_pct_by_own_class"]["all"] == {"median_abs_error_pct": 0.0, "samples": 2}
    assert {v["class"] for v in doc["validation"]} == {"switch", "global"}
    # Without a topology: no class, as before.
    plain = model.evaluate(r, [row([0], [1, 2], 200.0)])
    assert plain.checks[0].klass is None and plain.to_dict()["median_abs_error_pct_by_own_class"] is None
