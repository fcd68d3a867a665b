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
COMMON = [
    "--launcher",
    "netns",
    "--metrics",
    "rpc",
    "--binding",
    "none",
    "--set",
    "engine.min_overlap=0.6",
    "--set",
    "engine.server_progress=busy",
    "--set",
    "collect.client_node=false",
    "--duration",
    "1.0",
    "--warmup",
    "0.2",
    "--windows",
    "3",
]


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
    with cluster_up("--nodes", "4", "--cores-per-node", "2", "--link-rate", "100mbit", "--node", "3:rate=30mbit"):
        yield


def test_pair_rounds_on_shared_cores_run_one_pair_at_a_time_and_find_the_slow_link(slowlink4, tmp_path):
    """Every node may use both cores, so any two pairs would share them: the
    rounds run one pair each (issue 27: a round never runs pairs sharing
    cores at once). Link-bound (bulk reads, blocking progress): node 3's
    link is slower than the others."""
    res = tmp_path / "res"
    run = (
        rooftop(
            "collect",
            "--launcher",
            "netns",
            "--metrics",
            "bw",
            "--pairs",
            "rounds",
            "--binding",
            "none",
            "--set",
            "collect.server_peak=false",
            "--set",
            "collect.client_node=false",
            "--set",
            "engine.server_progress=block",
            "--set",
            "engine.client_progress=block",
            "--set",
            "bw.size=1MiB",
            "--set",
            "bw.buffer=reuse",
            "--duration",
            "0.6",
            "--warmup",
            "0.3",
            "--windows",
            "2",
            "--results",
            str(res),
            timeout=600,
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    db = sqlite3.connect(res / "rooftop.db")
    cfg = json.loads(db.execute("SELECT config FROM runs WHERE id=?", (run,)).fetchone()[0])
    assert cfg["collect"]["pairs"] == "rounds"
    rows = db.execute(
        "SELECT key, server_nodes, client_nodes, raw_dir, status, x FROM samples "
        "WHERE run_id=? AND stage='client_peak'",
        (run,),
    ).fetchall()
    # The same rows as serial: 6 pairs x 2 samples, one process each side ...
    pairs = sorted({(json.loads(s)[0], json.loads(c)[0]) for _, s, c, _, _, _ in rows})
    assert pairs == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)] and len(rows) == 12
    assert all(st == "ok" and x == 1.0 for *_, st, x in rows)
    # ... measured in 6 rounds of one pair: no two pairs shared the cores at once.
    by_round: dict[str, set] = {}
    for _, s, c, raw, _, _ in rows:
        by_round.setdefault(raw, set()).add((json.loads(s)[0], json.loads(c)[0]))
    assert len(by_round) == 6 and all(len(ps) == 1 for ps in by_round.values())
    # The run's measured time counts each round's window once, not per pair.
    wall, measured = db.execute("SELECT wall_s, measured_s FROM runs WHERE id=?", (run,)).fetchone()
    assert measured < wall
    # No server peak, so no roofline; the pair matrix still names node 3,
    # whose pairs run at its link's rate.
    from rooftop import results
    from rooftop.store.db import Store

    r = results.load(Store(res), run)
    assert r.flagged("bw") == [3], [(sc.node, sc.z) for sc in r.scores["bw"]]
    n3 = next(sc for sc in r.scores["bw"] if sc.node == 3)
    assert n3.median < 30e6 / 8 * 1.02  # never above the link: 30 Mbit/s
    # No pair ran beside another, so nothing to warn about or mark.
    assert not r.pairs["bw"].beside and not r.pairs["bw"].left_out
    assert not any("measured in rounds on one machine" in w for w in r.warnings)
    p = rooftop("report", run, "--results", str(res), check=False)
    assert p.returncode == 2 and "no ceiling samples" in p.stderr


def test_pairs_sharing_cores_at_once_count_when_their_cores_stayed_idle(slowlink4, tmp_path):
    """collect.pairs_share_cores (issue 31, how the 17-node suite fits 2
    cores): the same link-bound pairs, blocking, now two at a time on the
    shared cores; each round records how busy it kept them (cores_busy),
    well under the rule's limit, so none is left out, the rates are the
    links', and node 3 is still the one named."""
    from rooftop import results
    from rooftop.model.exclude import SHARED_BUSY_MAX
    from rooftop.store.db import Store

    res = tmp_path / "res"
    args = ["--launcher", "netns", "--metrics", "bw", "--pairs", "rounds", "--binding", "none"]
    for kv in (
        "collect.server_peak=false",
        "collect.client_node=false",
        "engine.server_progress=block",
        "engine.client_progress=block",
        "collect.pairs_share_cores=true",
        "bw.size=1MiB",
        "bw.buffer=reuse",
    ):
        args += ["--set", kv]
    args += ["--duration", "0.6", "--warmup", "0.3", "--windows", "2", "--results", str(res)]
    run = rooftop("collect", *args, timeout=600).stdout.strip().splitlines()[-1]
    db = sqlite3.connect(res / "rooftop.db")
    rows = db.execute(
        "SELECT server_nodes, client_nodes, raw_dir, status, cores_busy FROM samples WHERE run_id=?", (run,)
    ).fetchall()
    assert len(rows) == 12 and all(st == "ok" for *_, st, _ in rows)
    by_round: dict[str, set] = {}
    for s, c, raw, _, _ in rows:
        by_round.setdefault(raw, set()).add((json.loads(s)[0], json.loads(c)[0]))
    assert len(by_round) == 3 and all(len(ps) == 2 for ps in by_round.values()), by_round
    assert all(b is not None and 0 < b <= SHARED_BUSY_MAX for *_, b in rows), [b for *_, b in rows]
    r = results.load(Store(res), run)
    assert not r.pairs["bw"].left_out and r.pairs["bw"].beside
    assert r.flagged("bw") == [3], [(sc.node, sc.z) for sc in r.scores["bw"]]
    rates = r.pairs["bw"].rates
    assert all(rate < 30e6 / 8 * 1.02 for p, rate in rates.items() if 3 in p), rates
    assert all(0.85 * 100e6 / 8 < rate < 1.02 * 100e6 / 8 for p, rate in rates.items() if 3 not in p), rates


# The finding of issue 27: 6 nodes on 2 cores (n0, n2, n4 on core 0; n1, n3,
# n5 on core 1), n2 capped to 10 % of a core. Same-core pairs time-slice and
# once named healthy n0 and n4 while the capped n2 went unnamed; pair rounds
# ran three pairs at once on the 2 cores. One collect (pair rounds), several
# checks. Windows of 1 s with the start gate at 60 %: the capped node's
# clients reach the barrier late (as in capped4).
SIX = [
    "--launcher",
    "netns",
    "--metrics",
    "rpc",
    "--pairs",
    "rounds",
    "--set",
    "engine.min_overlap=0.6",
    "--set",
    "collect.client_node=false",
    "--duration",
    "1.0",
    "--warmup",
    "0.2",
    "--windows",
    "2",
]


@pytest.fixture(scope="module")
def capped6(tmp_path_factory):
    res = tmp_path_factory.mktemp("six") / "res"
    with cluster_up("--nodes", "6", "--link-rate", "90mbit", "--node", "2:cpu=10%"):
        dry = rooftop("collect", *SIX, "--dry-run", "--results", str(res)).stdout
        run = rooftop("collect", *SIX, "--results", str(res), timeout=900).stdout.strip().splitlines()[-1]
        yield res, run, dry


def test_six_nodes_rounds_never_run_pairs_sharing_cores_at_once(capped6):
    res, run, dry = capped6
    db = sqlite3.connect(res / "rooftop.db")
    cfg = json.loads(db.execute("SELECT config FROM runs WHERE id=?", (run,)).fetchone()[0])
    cores = {n["index"]: set(n["cores"]) for n in cfg["nodes"]}
    assert cores[0] == cores[2] == cores[4] != cores[1] == cores[3] == cores[5]
    rows = db.execute(
        "SELECT key, server_nodes, client_nodes, raw_dir, window, status FROM samples "
        "WHERE run_id=? AND stage LIKE '%client_peak%'",
        (run,),
    ).fetchall()
    assert len({k for k, *_ in rows}) == 15 * 2
    at_once: dict[tuple, list] = {}
    for _, s, c, raw, i, _ in rows:
        at_once.setdefault((raw, i), []).append((json.loads(s)[0], json.loads(c)[0]))
    for pairs in at_once.values():
        used = [cores[a] | cores[b] for a, b in pairs]
        for x in range(len(used)):
            for y in range(x):
                assert not used[x] & used[y], pairs
    # 12 rounds: the 9 cross-core pairs alone, same-core pairs two by two;
    # the dry run shows that schedule.
    assert len({raw for raw, _ in at_once}) == 12
    assert "# pair rounds: 12 round(s)" in dry and "never run at once" in dry
    assert "expected run time" in dry


def test_six_nodes_outliers_name_the_capped_node_alone_or_cannot_tell(capped6):
    res, run, _ = capped6
    m = json.loads(rooftop("model", run, "--results", str(res), "--json").stdout)["metrics"][0]
    op = m["outlier_pairs"]
    # Same-core pairs are left out of the scores (2 processes on 1 core), said so.
    left = {tuple(p["pair"]) for p in op["left_out"]}
    assert left >= {(0, 2), (0, 4), (2, 4), (1, 3), (1, 5), (3, 5)}
    assert all("share core" in p["why"] for p in op["left_out"] if (p["pair"][0] - p["pair"][1]) % 2 == 0)
    named = [n["node"] for n in m.get("nodes", []) if n["flag"]]
    # Never a node named from core-sharing pairs: the capped n2 alone, or cannot tell.
    assert named in ([2], []), m.get("nodes")
    if not named:
        assert op["cannot_tell"], op
    else:
        assert next(n for n in m["nodes"] if n["node"] == 2)["flag"] == "slow"
    text = rooftop("model", run, "--results", str(res)).stdout
    assert "outlier scores from" in text and "left out" in text


# Issue 45's regression: 4 nodes, two per core (n0, n2 on core 0; n1, n3 on
# core 1), node 3 capped to 20 % of a core; its pairs ran at a fifth of the
# others' in rpc and bw, yet nobody was named (each healthy node's median
# took one of its 2-3 pairs from node 3). One collect, both metrics.
@pytest.fixture(scope="module")
def capped4_twenty(tmp_path_factory):
    res = tmp_path_factory.mktemp("four") / "res"
    with cluster_up("--nodes", "4", "--link-rate", "300mbit", "--node", "3:cpu=20%"):
        args = ["--launcher", "netns", "--metrics", "rpc,bw", "--set", "engine.min_overlap=0.6"]
        args += ["--set", "collect.client_node=false", "--duration", "2", "--warmup", "0.3", "--windows", "2"]
        run = rooftop("collect", *args, "--results", str(res), timeout=900).stdout.strip().splitlines()[-1]
        yield res, run


def test_four_nodes_two_per_core_name_the_capped_node_alone_in_rpc_and_bw(capped4_twenty):
    from rooftop import results
    from rooftop.store.db import Store

    res, run = capped4_twenty
    r = results.load(Store(res), run)
    for metric in ("rpc", "bw"):
        got = (metric, r.pairs[metric].rates, [(s.node, s.z) for s in r.scores[metric]])
        assert r.flagged(metric) == [3], got
