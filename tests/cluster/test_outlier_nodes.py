"""Outlier nodes and pair rounds on the emulated cluster: one node's CPU is
capped, and that node -- only that node -- must be flagged, with serial
pairs and with rounds of disjoint pairs."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from cluster_util import cluster_up, needs_root, rooftop

pytestmark = needs_root

# Every node may use both cores (4 nodes on 2 cores), processes unbound and
# servers busy-polling, so that no pair is slowed by two processes sharing
# one core: the only slow node is the capped one.
# The server peak runs 8 busy processes on the 2 cores, with clients on the
# capped node: at 5 % of a core (5 ms per 100 ms cgroup period) those reach
# the start barrier's release up to ~0.2 s late on a loaded CI machine, so
# windows are 1 s and the gate is widened to 60 % (the pairs are what is
# tested; the model needs a server peak).
COMMON = ["--launcher", "netns", "--metrics", "rpc", "--binding", "none", "--set", "engine.min_overlap=0.6",
          "--set", "engine.server_progress=busy", "--set", "collect.client_node=false",
          "--duration", "1.0", "--warmup", "0.2", "--samples", "3"]


@pytest.fixture(scope="module")
def capped4():
    with cluster_up("--nodes", "4", "--cores-per-node", "2", "--node", "3:cpu=5%"):
        yield


def _collect(res: Path, *extra) -> str:
    return rooftop("collect", *COMMON, *extra, "--results", str(res), timeout=600).stdout.strip().splitlines()[-1]


def _model(res: Path, run: str) -> dict:
    return json.loads(rooftop("model", run, "--results", str(res), "--json").stdout)["metrics"][0]


def test_the_cpu_capped_node_and_only_it_is_flagged(capped4, tmp_path):
    res = tmp_path / "res"
    run = _collect(res)
    m = _model(res, run)
    nodes = {n["node"]: n for n in m["nodes"]}
    # The capped node scores lowest, clearly, and no other node is flagged.
    # With 4 nodes the MAD score is structurally bounded (the slow node's own
    # median widens its spread): when the healthy nodes spread (29-46 K ops/s
    # here), n3 scores about -2.8 whatever its cap, under the 3.5 threshold.
    # The flag itself is tested on 6 nodes (tests/test_model.py); here it is
    # checked when the healthy nodes are tight enough to allow it.
    assert min(nodes, key=lambda n: nodes[n]["z"]) == 3 and nodes[3]["z"] < -2.0, nodes
    assert all(not v["flag"] or n == 3 and v["flag"] == "slow" for n, v in nodes.items()), nodes
    # The pairs that implicate it are its own, slowest first.
    assert all(3 in p["pair"] for p in nodes[3]["pairs"])
    if not nodes[3]["flag"]:
        return
    # Ceilings without the flagged node: every remaining pair is faster.
    w = m["without_flagged"]
    assert w["nodes"] == [3] and w["client"]["min"] > m["client"]["min"]
    assert w["client"]["min"] > nodes[3]["median"]
    # The report names it, with the pairs, and gives the ceiling without it.
    p = rooftop("report", run, "--results", str(res))
    assert "node n3 is an outlier" in p.stderr and "without it the client ceiling" in p.stderr
    md = (Path(p.stdout.strip()).parent / "report.md").read_text()
    assert "| rpc | n3 |" in md and "| slow |" in md and "rpc without n3: client ceiling" in md


@pytest.fixture(scope="module")
def slowlink4():
    with cluster_up("--nodes", "4", "--link-rate", "100mbit", "--node", "3:rate=30mbit"):
        yield


def test_pair_rounds_measure_disjoint_pairs_at_once_and_find_the_slow_link(slowlink4, tmp_path):
    """Pairs measured at once share whatever they share: here the 2 cores,
    so the test is link-bound (bulk reads, blocking progress), and node 3's
    link is slower than the others."""
    res = tmp_path / "res"
    run = rooftop("collect", "--launcher", "netns", "--metrics", "bw", "--pairs", "rounds",
                  "--set", "collect.server_peak=false", "--set", "collect.client_node=false",
                  "--set", "engine.server_progress=block", "--set", "engine.client_progress=block",
                  "--set", "bw.size=1MiB", "--set", "bw.buffer=reuse",
                  "--duration", "0.6", "--warmup", "0.3", "--samples", "2", "--results", str(res),
                  timeout=600).stdout.strip().splitlines()[-1]
    db = sqlite3.connect(res / "rooftop.db")
    cfg = json.loads(db.execute("SELECT config FROM runs WHERE id=?", (run,)).fetchone()[0])
    assert cfg["collect"]["pairs"] == "rounds"
    rows = db.execute("SELECT key, server_nodes, client_nodes, raw_dir, status, x FROM samples "
                      "WHERE run_id=? AND stage='client_peak'", (run,)).fetchall()
    # The same rows as serial: 6 pairs x 2 samples, one process each side ...
    pairs = sorted({(json.loads(s)[0], json.loads(c)[0]) for _, s, c, _, _, _ in rows})
    assert pairs == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)] and len(rows) == 12
    assert all(st == "ok" and x == 1.0 for *_, st, x in rows)
    # ... measured in 3 rounds of 2 disjoint pairs: one client launch per round.
    by_round: dict[str, set] = {}
    for _, s, c, raw, _, _ in rows:
        by_round.setdefault(raw, set()).add((json.loads(s)[0], json.loads(c)[0]))
    assert len(by_round) == 3
    for ps in by_round.values():
        nodes = [n for p in ps for n in p]
        assert len(ps) == 2 and len(set(nodes)) == 4
    # The run's measured time counts each round's window once, not per pair.
    wall, measured = db.execute("SELECT wall_s, measured_s FROM runs WHERE id=?", (run,)).fetchone()
    assert measured < wall
    # No server peak, so no roofline; the pair matrix still names node 3,
    # whose pairs run at its link's rate.
    from rooftop import results
    from rooftop.store import Store

    r = results.load(Store(res), run)
    assert r.flagged("bw") == [3], [(sc.node, sc.z) for sc in r.scores["bw"]]
    n3 = next(sc for sc in r.scores["bw"] if sc.node == 3)
    assert n3.median < 30e6 / 8 * 1.02  # never above the link: 30 Mbit/s
    # 4 nodes on 2 cores: the rounds shared them, and the run says so.
    assert any("measured in rounds on one machine whose nodes share cores" in w for w in r.warnings)
    p = rooftop("report", run, "--results", str(res), check=False)
    assert p.returncode == 2 and "no ceiling samples" in p.stderr
