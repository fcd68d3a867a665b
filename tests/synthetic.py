"""Synthetic runs: a results store holding every planned sample of every
stage and metric, without measuring, for tests of what reads a run
(results, ui, figures, report) at any node count.

uniform_run: the contract run (every rate exact: server ceiling 100, client
ceiling 50, in each metric's base unit x 1000).
scaled_run: the contract run with its ceilings scaled and a creation
time of choice (a history of runs over weeks).
one_measurement_run: the README main job's kind (2 logical nodes, the
client and server ceilings one measurement).
realistic_run: rates with noise, a node-full client ceiling for bandwidth,
an optional slow node and slow pair, and latency histograms with a far
tail, as a campaign on N nodes would store them.
sampled_run: a --pairs sample run on nodes in groups whose pairs' rates
spread log-normally by a given sigma per topology class.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

from rooftop.campaign import Rows, plan_collect, plan_validate
from rooftop.config.files import defaults
from rooftop.config.resolve import resolve_grid
from rooftop.launchers.base import Node
from rooftop.store.db import Store
from rooftop.topology import Topology

#: Per metric: (a lone server process's rate, a lone client process's rate,
#: a node's link shared by the processes on it or None) in base units, and
#: one operation's size in bytes (0: an RPC), for latencies.
REALISTIC = {"rpc": (110e3, 42e3, None, 0), "bw": (2.5 * 2**30, 2.5 * 2**30, 3.2 * 2**30, 4 * 2**20)}


def sample_row(run_id: str, key: str = "server_peak/rpc/s0x1/c1x1/0", **fields) -> dict:
    """One sample row as Store.add_sample takes it: ok, server_peak rpc,
    node 0's one server process and node 1's one client, 5 ops/s, measured
    1 s, no documents; fields: other values (status, aggregate, raw_dir...)."""
    return {
        "run_id": run_id,
        "key": key,
        "stage": "server_peak",
        "metric": "rpc",
        "unit": "ops/s",
        "server_nodes": [0],
        "client_nodes": [1],
        "server_procs": 1,
        "client_procs": 1,
        "x": 1.0,
        "window": 0,
        "status": "ok",
        "aggregate": 5.0,
        "per_server": 5.0,
        "per_client": 5.0,
        "measured_s": 1.0,
        "error": "",
        "raw_dir": "",
        **fields,
    }


def config_for(nodes: int = 4, cores: int = 1) -> dict:
    """A resolved config of `nodes` nodes of `cores` cores each, with the
    sweep on, 3 collect and 2 validation samples per measurement."""
    cfg = defaults()
    cfg["nodes"] = [{"index": i, "host": "h", "cores": list(range(i * cores, (i + 1) * cores))} for i in range(nodes)]
    cfg["collect"].update(servers_per_node=max(2, cores), clients_per_node=cores, windows=3, sweep_servers=True)
    cfg["validate"].update(servers_per_node=cores, clients_per_node=cores, windows=2)
    return resolve_grid(cfg)


def _store(tmp_path: Path, cfg: dict, rate, latency) -> tuple[Store, str]:
    """Every planned row ok, rate(stage, metric, snodes, cnodes, ns, nc,
    index) -> aggregate; latency(stage, metric, per_client) -> bins of one
    client document per (stage, metric)."""
    st = Store(tmp_path / "res")
    run_id = st.new_run(cfg, {"host": "h"})
    rows = Rows(run_id, cfg, [Node(n["index"], n["host"], tuple(n["cores"])) for n in cfg["nodes"]])
    for pl in plan_collect(cfg) + plan_validate(cfg):
        for sp, w in ((m, w) for m in pl.measurements for w in m.windows):
            raw = tmp_path / "raw" / f"{sp.stage}-{sp.metric}"
            parts = Rows.parts(
                pl, sp, w, len(pl.server_nodes) * pl.servers_per_node, len(sp.client_nodes) * sp.clients_per_node
            )
            for key, snodes, cnodes, ns, ranks in parts:
                nc = len(ranks)
                agg = rate(sp.stage, sp.metric, snodes, cnodes, ns, nc, w)
                if not raw.is_dir():
                    raw.mkdir(parents=True)
                    (raw / "client-0.json").write_text(
                        json.dumps({"result": {"latency_us": {"bins": latency(sp.stage, sp.metric, agg / nc)}}})
                    )
                st.add_sample(
                    **rows.blank(
                        sp,
                        w,
                        key,
                        snodes,
                        cnodes,
                        ns,
                        nc,
                        x=ns / nc,
                        status="ok",
                        error="",
                        raw_dir=str(raw),
                        aggregate=agg,
                        per_server=agg / ns,
                        per_client=agg / nc,
                        measured_s=1.0,
                    )
                )
    st.set_status(run_id, "complete")
    return st, run_id


def uniform_run(tmp_path: Path, cfg: dict | None = None) -> tuple[Store, str]:
    """Server ceiling 100 and client ceiling 50 per process (x 1000 base
    units), 1 % apart between samples; one latency histogram for all."""

    def rate(stage, metric, snodes, cnodes, ns, nc, i):
        return min(nc * 50e3, ns * 100e3) * (1 + 0.01 * i)

    return _store(
        tmp_path, cfg or config_for(), rate, lambda stage, metric, per_client: [[10, 11, 5], [11, 12, 3], [40, 42, 1]]
    )


def scaled_run(
    tmp_path: Path, server: float = 1.0, client: float = 1.0, created: str = "", cfg: dict | None = None
) -> tuple[Store, str]:
    """uniform_run with the server ceiling x `server` and the client
    ceiling x `client` (samples 1 % apart), created at `created` (ISO
    time; "": now): runs of one results folder made in the same second
    still get their order."""

    def rate(stage, metric, snodes, cnodes, ns, nc, i):
        return min(nc * 50e3 * client, ns * 100e3 * server) * (1 + 0.01 * i)

    st, run_id = _store(
        tmp_path, cfg or config_for(), rate, lambda stage, metric, per_client: [[10, 11, 5], [11, 12, 3], [40, 42, 1]]
    )
    if created:
        st.db.execute("UPDATE runs SET created = ? WHERE id = ?", (created, run_id))
        st.db.commit()
    return st, run_id


def one_measurement_run(tmp_path: Path) -> tuple[Store, str]:
    """The README main job's kind of run: rpc and bw on 2 logical nodes of
    1 core, collect and validate at 1:1 on nodes 0/1, so the client and
    server ceilings are one measurement (rpc about 60 K ops/s, bw about 2
    GB/s per process, rates 5 % apart)."""
    cfg = config_for(2, 1)
    cfg["collect"].update(servers_per_node=1, clients_per_node=1, windows=6, sweep_servers=False)
    cfg["validate"].update(servers_per_node=1, clients_per_node=1, windows=6)
    rnd = random.Random(2)

    def rate(stage, metric, snodes, cnodes, ns, nc, i):
        return min(ns, nc) * (60e3 if metric == "rpc" else 2e9) * (1 + rnd.uniform(-0.05, 0.05))

    return _store(tmp_path, resolve_grid(cfg), rate, lambda *a: [[10, 11, 5]])


def realistic_run(
    tmp_path: Path,
    nodes: int = 4,
    cores: int = 1,
    slow_node: int | None = None,
    slow_pair: tuple[int, int] | None = None,
    noise: float = 0.03,
    seed: int = 1,
    groups: int = 1,
    slow_group: int | None = None,
) -> tuple[Store, str]:
    """A run on `nodes` nodes whose rates follow REALISTIC with `noise`
    (relative, uniform): bandwidth shares each node's link among its
    processes; clients or servers on slow_node run at 55 %, and the client
    peak of slow_pair at 60 %. groups: the run records that many even
    groups of one switch (rooftop.topology); the client peak of a pair
    with one node in group slow_group (its link to the others) at 50 %."""
    rnd = random.Random(seed)
    cfg = config_for(nodes, cores)
    topo = Topology.even(nodes, groups)
    if groups > 1:
        cfg["topology"] = topo.to_dict()

    def rate(stage, metric, snodes, cnodes, ns, nc, i):
        server, client, link, _ = REALISTIC[metric]
        if link is not None:  # a node's link saturates first
            client = min(client, link * len(cnodes) / nc)
            server = min(server, link * len(snodes) / ns)
        agg = min(nc * client, ns * server)
        if slow_node is not None and slow_node in (*snodes, *cnodes):
            agg *= 0.55
        if slow_pair is not None and len(snodes) == len(cnodes) == nc == 1 and {snodes[0], cnodes[0]} == set(slow_pair):
            agg *= 0.6
        if slow_group is not None and len(snodes) == len(cnodes) == nc == 1:
            if (topo.group[snodes[0]] == f"g{slow_group}") != (topo.group[cnodes[0]] == f"g{slow_group}"):
                agg *= 0.5
        return agg * (1 + rnd.uniform(-noise, noise))

    def latency(stage, metric, per_client):
        mean_us = 1e6 / (per_client / REALISTIC[metric][3] if REALISTIC[metric][3] else per_client)
        return _lognormal_bins(mean_us, 0.08, 200_000, rnd)

    return _store(tmp_path, cfg, rate, latency)


def _lognormal_bins(centre_us: float, sigma: float, count: int, rnd) -> list[list]:
    """The engine's ~4 % latency bins of `count` operations around
    centre_us, plus a far tail: 0.01 % of operations 1000 times slower (a
    descheduled process, a page fault storm)."""
    counts: dict[int, int] = {}
    step = math.log(1.04)
    for _ in range(2000):
        k = round((math.log(centre_us) + rnd.gauss(0, sigma)) / step)
        counts[k] = counts.get(k, 0) + count // 2000
    tail = max(1, count // 10_000)
    for j in range(4):
        k = round(math.log(centre_us * 1000 * (1 + j)) / step)
        counts[k] = counts.get(k, 0) + max(1, tail // 4)
    return [[math.exp(k * step), math.exp((k + 1) * step), n] for k, n in sorted(counts.items())]


def sampled_run(
    tmp_path: Path, nodes: int = 24, groups: int = 2, sigma: dict | None = None, seed: int = 1
) -> tuple[Store, str]:
    """A collect --pairs sample run (rpc, the client ceiling and one
    validation point) on `nodes` nodes in `groups` even groups whose
    recorded sample is every pair, one window each: each pair's client rate is
    its class's (same switch 40k, across groups 20k ops/s) times
    exp(sigma[class] * a standard normal drawn for the pair); sigma per
    class (default 0.1 for each)."""
    topo = Topology.even(nodes, groups)
    cfg = config_for(nodes, 1)
    cfg["metrics"] = ["rpc"]
    cfg["collect"].update(pairs="sample", sweep_servers=False, server_peak=False, client_node=False, windows=1)
    cfg["validate"].update(server_nodes=[1], client_nodes=[1], windows=1)
    cfg["topology"] = topo.to_dict()
    every = [[a, b] for a in range(nodes) for b in range(a + 1, nodes)]
    cfg["pair_sample"] = {"pairs": every, "batches": [len(every)], "stop": ""}
    sigma = sigma or {}
    rnd = random.Random(seed)
    noise: dict[tuple[int, int], float] = {}
    base = {"switch": 40e3, "group": 30e3, "global": 20e3}

    def rate(stage, metric, snodes, cnodes, ns, nc, i):
        if stage != "client_peak" or len(snodes) != 1 or len(cnodes) != 1:
            return min(nc * 50e3, ns * 100e3)
        pair = (min(snodes[0], cnodes[0]), max(snodes[0], cnodes[0]))
        klass = topo.klass(*pair)
        if pair not in noise:
            noise[pair] = math.exp(sigma.get(klass, 0.1) * rnd.gauss(0.0, 1.0))
        return base[klass] * noise[pair] * nc

    return _store(tmp_path, resolve_grid(cfg), rate, lambda *a: [[10, 11, 5]])
