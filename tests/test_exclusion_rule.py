"""One rule, everywhere (issue 27, item 1): a sample rooftop.model.exclusion
keeps out of the ceilings (nodes sharing cores, --allow-concurrent, not
ok) feeds no outlier score, no learned dataset row,
no validation error and no figure's fitted line either."""

from __future__ import annotations

import json

from rooftop import model, results
from rooftop.model import outliers
from synthetic import realistic_run


def _emulate(st, run_id, core_of):
    """The run's nodes as emulated nodes on this machine: node i on core core_of(i)."""
    run = st.get_run(run_id)
    cfg = run.config
    n = len(cfg["nodes"])
    cfg["nodes"] = [
        {
            "index": i,
            "host": f"rooftop-n{i}",
            "cores": [core_of(i)],
            "emulation": {"shared_with": [j for j in range(n) if j != i and core_of(j) == core_of(i)]},
        }
        for i in range(n)
    ]
    st.db.execute("UPDATE runs SET config = ? WHERE id = ?", (json.dumps(cfg), run_id))
    st.db.commit()


def _set(st, run_id, where: str, **cols):
    st.db.execute(
        f"UPDATE samples SET {', '.join(f'{c} = ?' for c in cols)} WHERE run_id = ? AND {where}",
        (*cols.values(), run_id),
    )
    st.db.commit()


def test_outliers_use_only_pairs_the_ceilings_may_use(tmp_path):
    """The 6-node finding: n0, n2, n4 on core 0, n1, n3, n5 on core 1, n2
    slow. Same-core pairs time-slice (26 ops/s) and once named n0 and n4;
    now they are left out, said so, and n2 alone is named."""
    st, run_id = realistic_run(tmp_path, nodes=6, slow_node=2)
    _emulate(st, run_id, lambda i: i % 2)
    same = " OR ".join(
        f"(server_nodes = '[{a}]' AND client_nodes = '[{b}]')"
        for a, b in ((0, 2), (0, 4), (2, 4), (1, 3), (1, 5), (3, 5))
    )
    _set(st, run_id, f"stage = 'client_peak' AND ({same})", per_client=26.0, aggregate=26.0)
    res = results.load(st, run_id)
    pm = res.pairs["rpc"]
    assert len(pm.rates) == 9 and len(pm.left_out) == 6
    assert all(a % 2 != b % 2 for a, b in pm.rates)
    assert res.flagged("rpc") == [2], [(s.node, s.z) for s in res.scores["rpc"]]
    text = " ".join(pm.outlier_lines())
    assert "from 9 of 15 node pair(s)" in text and "left out 6" in text and "share core(s)" in text
    # The pair matrix figure still shows the left-out pairs, hatched, and boxes none of them.
    from rooftop.plots import pairs

    fig = pairs.figure(pm, "t", flagged=res.flagged("rpc"))
    gids = [p.get_gid() for p in fig.axes[0].patches]
    assert gids.count("left-out-pair") == 12
    # model --json says which pairs it used and left out.
    from rooftop import export

    doc = (
        export.model_doc(
            run_id, None, [res.evaluations.get("rpc") or model.evaluate(res.rooflines["rpc"], [])], res.samples, res
        )
        if "rpc" in res.rooflines
        else None
    )
    if doc:
        op = doc["metrics"][0]["outlier_pairs"]
        assert len(op["used"]) == 9 and len(op["left_out"]) == 6


def test_too_few_usable_pairs_per_node_cannot_tell(tmp_path):
    """3 nodes, n0 and n1 on one core: their pair is left out, each keeps one
    usable pair, and the matrix names nobody, saying it cannot tell."""
    st, run_id = realistic_run(tmp_path, nodes=3, slow_node=0)
    _emulate(st, run_id, lambda i: 0 if i < 2 else 1)
    res = results.load(st, run_id)
    pm = res.pairs["rpc"]
    assert set(pm.left_out) == {(0, 1)} and res.scores["rpc"] == [] and not res.flagged("rpc")
    assert any(line.startswith("cannot tell an outlier node") for line in pm.outlier_lines())
    assert outliers.score_nodes({(0, 2): 1.0, (1, 2): 2.0}) == []


def test_validation_error_leaves_out_excluded_samples_and_shows_them(tmp_path):
    st, run_id = realistic_run(tmp_path, nodes=4)
    before = results.load(st, run_id).evaluations["rpc"]
    # Two validation samples measured beside another campaign, one far off.
    keys = [s["key"] for s in st.samples(run_id, "validate", "rpc")][:2]
    _set(st, run_id, f"key IN ('{keys[0]}', '{keys[1]}')", concurrent=1, per_client=1.0)
    ev = results.load(st, run_id).evaluations["rpc"]
    assert len(ev.checks) == len(before.checks) - 2 and len(ev.excluded) == 2
    assert "--allow-concurrent" in ev.excluded[0][1]
    assert abs(ev.median_abs_error() - before.median_abs_error()) < 5  # not the 1.0 ops/s ones
    assert all(c.measured > 1.0 for c in ev.checks)
    # Back in once the mark is gone.
    _set(st, run_id, f"key = '{keys[0]}'", concurrent=0)
    ev = results.load(st, run_id).evaluations["rpc"]
    assert len(ev.excluded) == 1 and "--allow-concurrent" in ev.excluded[0][1]
    # The roofline figure shows the excluded one, marked.
    from rooftop.plots import roofline

    fig = roofline.figure(ev, "t")
    assert any(c.get_gid() == "validation-excluded" for c in fig.axes[0].collections)


def test_learned_dataset_has_no_excluded_rows(tmp_path):
    from rooftop.learn import dataset

    st, run_id = realistic_run(tmp_path, nodes=4)
    n = len(dataset.load(st, [run_id], "rpc").rows)
    keys = [s["key"] for s in st.samples(run_id, "validate", "rpc")][:3]
    _set(st, run_id, f"key IN ({', '.join(repr(k) for k in keys)})", concurrent=1)
    assert len(dataset.load(st, [run_id], "rpc").rows) == n - 3


def test_pairs_of_a_round_sharing_cores_are_excluded_by_what_ran_beside(tmp_path):
    """A pair round recorded in round.json: two pairs whose nodes share core
    0 ran at once (2 on core 0 + ...): both are left out; a pair alone is not."""
    nodes = [
        {"index": i, "cores": [i % 2], "emulation": {"shared_with": [j for j in range(4) if j != i and j % 2 == i % 2]}}
        for i in range(4)
    ]
    raw = tmp_path / "round"
    raw.mkdir()
    k1, k2 = "client_peak/rpc/s0x1/c1x1/0", "client_peak/rpc/s2x1/c3x1/0"
    (raw / "round.json").write_text(json.dumps({"keys": [[k1, k2]]}))
    row = lambda k, a, b: {
        "key": k,
        "stage": "client_peak",
        "metric": "rpc",
        "status": "ok",
        "server_nodes": [a],
        "client_nodes": [b],
        "server_procs": 1,
        "client_procs": 1,
        "raw_dir": str(raw),
        "window": 0,
        "attempt": 1,
    }
    rows = [row(k1, 0, 1), row(k2, 2, 3)]
    why = model.exclusions(rows, nodes)
    assert all("running at once" in w for w in why.values()), why
    assert model.exclusions([row(k1, 0, 1)], nodes) == {k1: ""}


def test_shared_cores_count_when_their_round_kept_them_mostly_idle(tmp_path):
    """Issue 31: processes that block between messages (the 17-node suite
    on 2 cores) time-slice shared cores only when those cores were busy: a
    same-core pair whose round kept its cores busy at most SHARED_BUSY_MAX
    feeds the ceilings and the outlier scores; above it, or unmeasured
    (NULL: a sample stored before, or another host), it is left out with
    the busy share in the reason."""
    from rooftop.model.exclude import SHARED_BUSY_MAX

    st, run_id = realistic_run(tmp_path, nodes=6, slow_node=2)
    _emulate(st, run_id, lambda i: i % 2)
    idle = " OR ".join(f"(server_nodes = '[{a}]' AND client_nodes = '[{b}]')" for a, b in ((0, 2), (1, 3)))
    busy = " OR ".join(f"(server_nodes = '[{a}]' AND client_nodes = '[{b}]')" for a, b in ((0, 4), (1, 5)))
    _set(st, run_id, f"stage = 'client_peak' AND ({idle})", cores_busy=SHARED_BUSY_MAX)
    _set(st, run_id, f"stage = 'client_peak' AND ({busy})", cores_busy=0.9)
    res = results.load(st, run_id)
    pm = res.pairs["rpc"]
    assert {(0, 2), (1, 3)} <= set(pm.rates) and len(pm.rates) == 11
    why = {p: w for p, (_, w) in pm.left_out.items()}
    assert set(why) == {(0, 4), (1, 5), (2, 4), (3, 5)}, why
    assert all("busy 90 % of the time (above 50 %)" in why[p] for p in ((0, 4), (1, 5))), why
    assert all("share core" in why[p] and "busy" not in why[p] for p in ((2, 4), (3, 5))), why
