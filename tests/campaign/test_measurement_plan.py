"""A measurement is planned as one measurement of K windows (not K specs
regrouped by field equality), a resumed one measures only its windows not
stored, and the campaign's parts get the objects they use, not the Runner
(issue 44, item 8)."""

from __future__ import annotations

import json

from rooftop.campaign import ClientRound, RoundMeasurer, Runner, client_rounds, plan_collect
from rooftop.campaign.estimate import count
from rooftop.config.files import up_to_date
from rooftop.config.resolve import build
from rooftop.launchers import make_launcher
from rooftop.store.db import Store


def _cfg(n=3, **collect):
    c = {"client_peak": False, "client_node": False, "sweep_servers": False, "windows": 3}
    c |= {"duration": 1.0, "warmup": 0.5, "servers_per_node": 1, "clients_per_node": 1}
    c.update(collect)
    return up_to_date({"nodes": [{"index": i} for i in range(n)], "metrics": ["rpc", "bw"], "collect": c})


def test_a_measurement_of_k_windows_is_one_plan_item_and_one_client_round():
    (pl,) = plan_collect(_cfg())
    assert [(m.key, m.windows) for m in pl.measurements] == [
        ("server_peak/rpc/s0x1/c1-2x1", range(3)),
        ("server_peak/bw/s0x1/c1-2x1", range(3)),
    ]
    rounds = client_rounds(pl.measurements)
    assert [(r.measurement, r.windows) for r in rounds] == [(m, [0, 1, 2]) for m in pl.measurements]
    assert rounds[0].row_keys() == [[f"server_peak/rpc/s0x1/c1-2x1/{w}"] for w in range(3)]
    assert rounds[0].folder == "server_peak_rpc_s0x1_c1-2x1"


def test_a_partly_stored_measurement_resumes_with_the_windows_not_stored():
    cfg = _cfg()
    (pl,) = plan_collect(cfg)
    rpc, bw = pl.measurements
    done = {*rpc.row_keys(0), *rpc.row_keys(1)}
    assert [(r.measurement, r.windows) for r in client_rounds(pl.measurements, done)] == [(rpc, [2]), (bw, [0, 1, 2])]
    # What is left is counted as measured: one round of one window, then one of three.
    work = count(cfg, [pl], done)["server_peak"]
    assert (work.rounds, work.windows, work.rows) == (2, 4, 4)
    assert not client_rounds(pl.measurements, set(pl.keys()))


def test_pair_windows_other_than_windows_keep_the_keys_of_the_shared_placement():
    """2 nodes: the pair (client_peak) and the node stage stand for the
    server peak's placement in the windows both measure; the keys are
    those planned window by window before (collect.pair_windows)."""
    both = {"client_peak": True, "client_node": True}
    keys = lambda cfg: sorted(k for pl in plan_collect(cfg) for k in pl.keys())
    name = lambda label, i: [f"{label}/{m}/s0x1/c1x1/{i}" for m in ("rpc", "bw")]
    three = "server_peak+client_peak+client_node"
    assert keys(_cfg(2, pair_windows=2, **both)) == sorted(
        name(three, 0) + name(three, 1) + name("server_peak+client_node", 2)
    )
    assert keys(_cfg(2, pair_windows=5, **both)) == sorted(
        [k for i in range(3) for k in name(three, i)] + name("client_peak", 3) + name("client_peak", 4)
    )
    # Each part measures its own windows, in one client round.
    (pl,) = plan_collect(_cfg(2, pair_windows=2, **both))
    assert [(m.label, m.metric, m.windows) for m in pl.measurements] == [
        (three, "rpc", range(2)),
        ("server_peak+client_node", "rpc", range(2, 3)),
        (three, "bw", range(2)),
        ("server_peak+client_node", "bw", range(2, 3)),
    ]


def test_servers_and_the_round_measurer_hold_what_they_use_not_the_runner(tmp_path):
    cfg = build(overrides={"launcher.type": "local", "metrics": ["rpc"], "collect.windows": 3})
    store = Store(tmp_path, create=True)
    run_id = store.new_run(cfg, {})
    runner = Runner(cfg, store, run_id, make_launcher(cfg["launcher"]))
    try:
        for part in (runner.servers, runner.measurer):
            assert not [k for k, v in vars(part).items() if isinstance(v, Runner)], part
    finally:
        runner.procs.close()
        runner.leases.close()
    # Made without one: a resumed round's folder says which windows it measures.
    measurer = RoundMeasurer(
        cfg=cfg,
        store=store,
        run_id=run_id,
        launcher=runner.launcher,
        nodes=runner.nodes,
        commands=runner.commands,
        procs=runner.procs,
        leases=runner.leases,
        rows=runner.rows,
        on_window=lambda m, w: None,
        log=lambda msg: None,
        said=set(),
    )
    m = plan_collect(cfg)[0].measurements[0]
    sdir = measurer._folder(ClientRound(m, [2]), 1)
    assert json.loads((sdir / "round.json").read_text()) == {"keys": [[f"{m.key}/2"]]}


def test_a_resumed_runner_measures_only_the_windows_not_stored(tmp_path, monkeypatch):
    """Windows 0 and 1 of 3 stored: the Runner asks for one client round of
    window 2 (servers and clients faked: nothing runs)."""
    from rooftop.campaign import machine

    cfg = build(overrides={"launcher.type": "local", "metrics": ["rpc"], "collect.windows": 3})
    cfg["collect"].update(client_peak=False, client_node=False, sweep_servers=False)
    store = Store(tmp_path, create=True)
    run_id = store.new_run(cfg, {})
    runner = Runner(cfg, store, run_id, make_launcher(cfg["launcher"]))
    placements = plan_collect(cfg)
    (m,) = placements[0].measurements

    def rows(m, windows):
        n = len(placements[0].server_nodes) * placements[0].servers_per_node
        ok = dict(x=1.0, status="ok", error="", raw_dir="", aggregate=1.0, per_server=1.0, per_client=1.0)
        return [
            (m, runner.rows.blank(m, w, key, [0], m.client_nodes, n, m.client_procs, measured_s=1.0, **ok))
            for w in windows
            for key in m.row_keys(w)
        ]

    for _, row in rows(m, [0, 1]):
        store.add_sample(**row)
    asked = []

    class Measurer:
        def measure(self, group, rnd, attempt):
            asked.append((rnd.measurement.key, rnd.windows))
            return rows(rnd.measurement, rnd.windows)

    class Servers:
        start = staticmethod(lambda placement: None)
        stop = staticmethod(lambda group: None)

    monkeypatch.setattr(machine, "record", lambda runner: None)
    runner.servers, runner.measurer = Servers(), Measurer()
    assert runner.run_placements(placements) == (1, 0)
    assert asked == [(m.key, [2])]
    assert sorted(s["window"] for s in store.samples(run_id)) == [0, 1, 2]
