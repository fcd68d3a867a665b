"""Pairs sampled by topology (collect.pairs = sample) without a cluster: the
topology sources that read text (Slurm's tree, a file), the probe's
clustering, the first batch and the batches after it, their rounds, the
plan of a recorded sample, and outlier scores that compare a pair with its
class. The emulated cluster's ground truth: tests/cluster/test_topology_sample.py."""

from __future__ import annotations

import itertools
import random
from collections import Counter

import pytest

from rooftop import stages, topology
from rooftop.campaign import plan_collect, sampling
from rooftop.config.files import up_to_date
from rooftop.model import outliers, t975
from rooftop.stages import pairs
from rooftop.stages.pairs import sample
from rooftop.topology import Topology, TopologyError, tree
from rooftop.topology.pings import cluster

SCONTROL = """\
SwitchName=rooftop-gb0 Level=0 LinkSpeed=1 Nodes=rooftop-n[0-1]
SwitchName=rooftop-gb1 Level=0 LinkSpeed=1 Nodes=rooftop-n[2-3]
SwitchName=rooftop-br0 Level=1 LinkSpeed=1 Nodes=rooftop-n[0-3] Switches=rooftop-gb[0-1]
"""


def test_switch_trees_as_scontrol_prints_them_and_three_levels():
    # A parent lists its descendants' nodes too: each node is on its leaf.
    assert tree.parse(SCONTROL, "scontrol") == {
        "rooftop-n0": ("rooftop-gb0", "rooftop-gb0"),
        "rooftop-n1": ("rooftop-gb0", "rooftop-gb0"),
        "rooftop-n2": ("rooftop-gb1", "rooftop-gb1"),
        "rooftop-n3": ("rooftop-gb1", "rooftop-gb1"),
    }
    three = "SwitchName=s0 Nodes=n[0-1]\nSwitchName=s1 Nodes=n[2-3]\nSwitchName=s2 Nodes=n4\n"
    three += "SwitchName=g0 Switches=s[0-1]\nSwitchName=g1 Switches=s2\nSwitchName=top Switches=g[0-1]\n"
    got = tree.parse(three, "t.conf")
    assert got["n1"] == ("s0", "g0") and got["n2"] == ("s1", "g0") and got["n4"] == ("s2", "g1")
    with pytest.raises(TopologyError, match=r"t.conf:2: .*not 'SwitchName"):
        tree.parse("SwitchName=s0 Nodes=n0\nbogus line\n", "t.conf")


def _cfg(hosts, **collect):
    return {
        "launcher": {"type": "mpiexec"},
        "nodes": [{"index": i, "host": h, "cores": [0]} for i, h in enumerate(hosts)],
        "collect": {"topology": "auto", "topology_file": None, **collect},
    }


def test_a_topology_file_in_columns_or_as_topology_conf(tmp_path, monkeypatch):
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    hosts = [f"nid{i:04d}" for i in range(1, 7)]
    f = tmp_path / "topo.txt"
    f.write_text("# host switch group\nnid[0001-0002] sw0 g0\nnid[0003-0004] sw1 g0\nnid0005 sw2 g1\nnid0006 sw2\n")
    t = topology.discover(_cfg(hosts, topology_file=str(f)))
    assert t.source == "file" and t.switch == ["sw0", "sw0", "sw1", "sw1", "sw2", "sw2"]
    assert t.group == ["g0", "g0", "g0", "g0", "g1", "sw2"]
    assert (t.klass(0, 1), t.klass(0, 2), t.klass(0, 4), t.klass(4, 5)) == ("switch", "group", "global", "switch")
    conf = tmp_path / "topology.conf"
    conf.write_text("SwitchName=a Nodes=nid[0001-0003]\nSwitchName=b Nodes=nid[0004-0006]\nSwitchName=t Switches=a,b\n")
    assert topology.discover(_cfg(hosts, topology_file=str(conf))).switch == ["a"] * 3 + ["b"] * 3
    # Errors name the key, the file and the line, or the hosts it misses.
    f.write_text("nid[0001-0006] sw0 g0 extra\n")
    with pytest.raises(TopologyError, match=r"topo.txt:1: .*HOST SWITCH \[GROUP\]"):
        topology.discover(_cfg(hosts, topology_file=str(f)))
    f.write_text("nid[0001-0004] sw0\n")
    with pytest.raises(TopologyError, match=r"collect.topology_file: .* no switch for host\(s\) nid0005, nid0006"):
        topology.discover(_cfg(hosts, topology_file=str(f)))
    with pytest.raises(TopologyError, match="collect.topology_file: cannot read"):
        topology.discover(_cfg(hosts, topology_file=str(tmp_path / "missing")))
    # Nothing known (not under Slurm, no file, no groups; the probe not in a
    # dry run): one class, the note saying why; a source asked for by name
    # that cannot answer is an error.
    t = topology.discover(_cfg(hosts))
    assert t.source == "none" and t.sizes() == {"all": 15} and "not under Slurm" in t.note
    with pytest.raises(TopologyError, match="collect.topology = emulated: the nodes are not on an emulated cluster"):
        topology.discover(_cfg(hosts, topology="emulated"))


def test_the_emulated_clusters_groups_as_the_launcher_recorded_them():
    cfg = _cfg([f"rooftop-n{i}" for i in range(4)])
    for n in cfg["nodes"]:
        n["emulation"] = {"group": n["index"] // 2, "switch": f"rooftop-gb{n['index'] // 2}"}
    t = topology.discover(cfg)
    assert t.source == "emulated" and t.sizes() == {"switch": 2, "global": 4}
    assert Topology.from_dict(t.to_dict()).switch == t.switch


def test_the_probe_clusters_latencies_into_groups():
    rng = random.Random(1)
    for truth in ([i // 4 for i in range(12)], [0, 1, 1, 1, 2, 2, 2, 2], [0] * 5):
        asked: list = []

        def measure(lm, targets, truth=truth, asked=asked):
            asked.extend((lm, t) for t in targets)
            return {t: (18 if truth[t] == truth[lm] else 40) + rng.random() * 3 for t in targets}

        groups, rtt = cluster(len(truth), measure)
        # The same groups as the truth, named by their landmark.
        assert len(set(groups)) == len(set(truth))
        assert all(
            (groups[a] == groups[b]) == (truth[a] == truth[b]) for a, b in itertools.combinations(range(len(truth)), 2)
        )
        assert len(asked) == len(set(asked)) == len(rtt) <= len(set(truth)) * len(truth) + len(truth)


def test_first_batch_puts_every_node_in_k_pairs_and_every_class_in_three():
    for topo in (Topology.even(12, 3), Topology.even(24, 2, 2), Topology.even(17, 1), Topology.flat(9)):
        drawn = sample.first_draw(topo, 3)
        assert drawn == sample.first_draw(topo, 3)  # reproducible
        assert len(set(drawn)) == len(drawn) and all(a < b for a, b in drawn)
        per_node = Counter(x for p in drawn for x in p)
        assert min(per_node[i] for i in range(topo.n)) >= 3, per_node
        per_class = Counter(topo.klass(*p) for p in drawn)
        assert all(per_class[c] >= min(3, k) for c, k in topo.sizes().items()), (per_class, topo.sizes())
        assert len(drawn) < topo.n * (topo.n - 1) // 2
        x = pairs.get("sample").expected(up_to_date({"launcher": {"type": "mpiexec"}, "nodes": []}), topo)
        assert (x.pairs, x.rounds) == (len(drawn), len(sample.schedule(drawn, topo)))
    # rooftop plan's question at scale: 1,000 nodes in 50 groups.
    cfg = up_to_date({"nodes": [{"index": i} for i in range(1000)]})  # every key: sample_min_pairs 3
    x = pairs.get("sample").expected(cfg, Topology.even(1000, 50))
    assert 1500 <= x.pairs < 2000 and x.rounds < 100 and x.interval == 0.05
    per_class = sample.expected_classes(cfg, Topology.even(1000, 50), cv=0.05)
    assert sum(c["pairs"] for c in per_class.values()) == x.pairs and set(per_class) == {"same switch", "across groups"}
    assert all(c["width"] < 0.05 for c in per_class.values())  # pairs spread by 5 %: one batch is enough
    assert x.widths == {k: c["width"] for k, c in per_class.items()}
    e = pairs.get("serial").expected(cfg, Topology.even(1000, 50))
    assert (e.pairs, e.rounds, e.interval) == (499500, 499500, None)
    e = pairs.get("rounds").expected(cfg, None)
    assert (e.pairs, e.rounds, e.by_class) == (499500, 999, {})


def test_the_first_batch_matches_most_nodes_at_once_and_pairs_one_by_one_only_the_rest(monkeypatch):
    """Issue 42: `plan --nodes 100000 --pairs sample` spent two thirds of its
    time giving each pair's node a partner one by one (the neediest of 8
    drawn). Each level of need is now one random matching: the one-by-one
    path gives a partner to under 1 % of the nodes, every node of a flat
    topology ends with exactly k pairs but a handful, and each class of a
    topology still gets its share of every node's pairs."""
    one_by_one = []
    cover = sample.Drawer.cover
    monkeypatch.setattr(sample.Drawer, "cover", lambda self, a, need: one_by_one.append(a) or cover(self, a, need))
    for topo in (Topology.flat(20_000), Topology.even(20_000, 20, switches_per_group=10)):
        one_by_one.clear()
        drawn = sample._first_draw(topo, 3)
        assert len(set(drawn)) == len(drawn)
        per_node = Counter(x for p in drawn for x in p)
        assert min(per_node.values()) == 3 and len(per_node) == topo.n
        assert len(one_by_one) < topo.n // 100, len(one_by_one)
        assert sum(v > 3 for v in per_node.values()) < topo.n // 50
        per_class = Counter(topo.klass(*p) for p in drawn)
        assert set(per_class) == {c for c, k in topo.sizes().items() if k}
        assert min(per_class.values()) > len(drawn) // 4  # each node's pairs spread over the classes it reaches


def test_rounds_share_no_node_no_switch_link_and_no_core():
    topo = Topology.even(24, 2, 2)
    drawn = sample.first_draw(topo, 3)
    cores = {i: {i % 2} for i in range(24)}
    for cores_known in (None, cores):
        rounds = sample.schedule(drawn, topo, cores_known)
        assert sorted(p for r in rounds for p in r) == sorted(drawn)
        for r in rounds:
            nodes = [x for p in r for x in p]
            assert len(nodes) == len(set(nodes))
            up = [topo.switch[x] for a, b in r if topo.klass(a, b) != "switch" for x in (a, b)]
            assert len(up) == len(set(up)), r
            if cores_known:
                used = [c for a, b in r for c in cores[a] | cores[b]]
                assert len(used) == len(set(used)), r


def test_each_pair_goes_to_the_first_round_it_fits_as_a_scan_of_every_round_puts_it():
    """pairs.first_fit (issue 42: the scan of every round for every pair made
    `plan` quadratic) gives the rounds the scan gives, with links and
    cores shared between nodes (a core of one node alone adds nothing)."""
    from rooftop.stages.pairs.base import first_fit

    def scan(pairs_, uses):
        out: list = []
        for a, b in pairs_:
            mine = set(uses(a, b))
            for rnd, taken in out:
                if not mine & taken:
                    rnd.append((a, b))
                    taken |= mine
                    break
            else:
                out.append(([(a, b)], mine))
        return [sorted(r) for r, _ in out]

    rng = random.Random(42)
    topo = Topology("file", [f"s{rng.randrange(5)}" for _ in range(40)], [f"g{rng.randrange(3)}" for _ in range(40)])
    drawn = sample.first_draw(topo, 4)
    cores = {i: {i % 7, 100 + i} for i in range(40)}  # core 100 + i: node i's alone
    links = lambda a, b: (
        [a, b, ("s", topo.switch[a]), ("s", topo.switch[b])] if topo.klass(a, b) != "switch" else [a, b]
    )
    assert first_fit(drawn, links) == scan(drawn, links)
    with_cores = lambda a, b: [*links(a, b), *(("core", c) for c in cores[a] | cores[b])]
    assert sample.schedule(drawn, topo, cores) != sample.schedule(drawn, topo)
    one = scan(
        drawn,
        lambda a, b: [
            *with_cores(a, b),
            *([("g", topo.group[x]) for x in (a, b)] if topo.klass(a, b) == "global" else []),
        ],
    )
    assert sample.schedule(drawn, topo, cores) == one


def _rates(topo, drawn, spread, slow=()):
    rng = random.Random(2)
    base = {"switch": 100.0, "group": 60.0, "global": 33.0, "all": 100.0}
    return {
        p: base[topo.klass(*p)]
        * (1 + spread[topo.klass(*p)] * (rng.random() - 0.5))
        * (0.3 if set(p) & set(slow) else 1)
        for p in drawn
    }


def _collect(**kw):
    return {
        "collect": {"sample_width": 0.05, "sample_confidence": 0.95, "sample_min_pairs": 3, "sample_budget": None, **kw}
    }


def test_more_pairs_where_a_class_is_wide_none_where_narrow_and_the_budget_ends_it():
    topo = Topology.even(12, 3)
    drawn = sample.first_draw(topo, 3)
    count = Counter(x for p in drawn for x in p)
    narrow = _rates(topo, drawn, {"switch": 0.01, "global": 0.01})
    adds, why = sample.more(topo, drawn, {"bw": narrow}, count, _collect())
    assert adds == [] and "interval is within +-5 %" in why
    # Across groups noisy (+-30 %): pairs across groups only, and none drawn before.
    wide = _rates(topo, drawn, {"switch": 0.01, "global": 0.6})
    adds, why = sample.more(topo, drawn, {"bw": narrow, "rpc": wide}, count, _collect())
    assert adds and {topo.klass(*p) for p in adds} == {"global"} and not set(adds) & set(drawn)
    # A budget caps the total; once spent, the reason says so.
    adds, _ = sample.more(topo, drawn, {"rpc": wide}, count, _collect(sample_budget=len(drawn) + 2))
    assert len(adds) == 2
    assert sample.more(topo, drawn, {"rpc": wide}, count, _collect(sample_budget=len(drawn)))[1] == (
        f"the pair budget ({len(drawn)}) is spent"
    )
    # A node whose pairs were all left out gets k more.
    lost = {p: r for p, r in narrow.items() if 5 not in p}
    adds, _ = sample.more(topo, drawn, {"bw": lost}, {**count, 5: 0}, _collect())
    assert sum(5 in p for p in adds) == 3


def test_the_exclusion_rule_keeps_the_draw_off_pairs_sharing_a_core():
    cfg = up_to_date(
        {
            "nodes": [
                {
                    "index": i,
                    "host": f"n{i}",
                    "cores": [i % 2],
                    "emulation": {"shared_with": [j for j in range(8) if j != i and j % 2 == i % 2]},
                }
                for i in range(8)
            ]
        }
    )
    ok = sampling.usable(cfg)
    assert not ok(0, 2) and ok(0, 1)
    drawn = sample.first_draw(Topology.flat(8), 3, ok)
    assert all((a - b) % 2 for a, b in drawn)


def test_the_plan_measures_the_recorded_batches_and_t_quantiles():
    topo = Topology.even(6, 2)
    cfg = up_to_date(
        {
            "nodes": [{"index": i, "host": f"n{i}", "cores": [0, 1]} for i in range(6)],
            "launcher": {"type": "mpiexec"},
            "metrics": ["rpc"],
            "topology": topo.to_dict(),
            "pair_sample": {"pairs": [[0, 1], [3, 4], [0, 3], [1, 5], [2, 4]], "batches": [3, 2], "stop": ""},
            "collect": {
                "server_peak": False,
                "client_peak": True,
                "client_node": False,
                "sweep_servers": False,
                "pairs": "sample",
                "windows": 2,
                "duration": 1.0,
                "warmup": 0.5,
                "sample_min_pairs": 3,
            },
        }
    )
    keys = sorted(k for pl in plan_collect(cfg) for k in pl.keys())
    want = sorted(f"client_peak/rpc/s{a}x1/c{b}x1/{i}" for a, b in cfg["pair_sample"]["pairs"] for i in range(2))
    assert keys == want
    # The first batch's rounds are its own: the second batch never joins them.
    first = [set(map(tuple, m.pairs)) for pl in plan_collect(cfg) for m in pl.measurements[:1]]
    assert all(r <= {(0, 1), (3, 4), (0, 3)} or r <= {(1, 5), (2, 4)} for r in first)
    for df in (1, 2, 5, 10, 29, 40):
        assert sample.t_quantile(0.975, df) == pytest.approx(t975(df), abs=2e-3)


def test_the_client_node_is_saturated_by_servers_of_its_own_switch_under_a_topology():
    """Servers across groups would load the group links: the node-full
    ceiling would be a group link's. Its switch's nodes, else its group's,
    else (a topology the run does not know) every other node."""
    from rooftop.stages.client_node import server_nodes

    def servers(topo, n=12, pairs="sample"):
        cfg = {
            "nodes": [{"index": i, "host": f"n{i}", "cores": [0, 1]} for i in range(n)],
            "launcher": {"type": "mpiexec"},
            "metrics": ["rpc"],
            "collect": {
                "pairs": pairs,
                "servers_per_node": 1,
                "clients_per_node": 4,
                "windows": 1,
                "duration": 1.0,
                "warmup": 0.5,
            },
        }
        if topo is not None:
            cfg["topology"] = topo.to_dict()
        [pl] = stages.get("client_node").plan(cfg)
        assert pl.measurements[0].client_nodes == [n - 1] and pl.server_nodes == server_nodes(cfg)
        return pl.server_nodes

    assert servers(Topology.even(12, 3)) == [8, 9, 10]
    assert servers(Topology.even(12, 2, switches_per_group=2)) == [9, 10]
    lone = Topology("file", [f"s{i // 4}" for i in range(11)] + ["s9"], [f"g{i // 4}" for i in range(11)] + ["g2"])
    assert servers(lone) == [8, 9, 10]  # alone on its switch: its group's
    pair = Topology("file", [f"s{i // 2}" for i in range(12)], [f"g{i // 4}" for i in range(12)])
    assert servers(pair) == [8, 9, 10]  # one switch mate: its group's (two nodes at least)
    assert servers(Topology.even(4, 2), n=4) == [0, 1, 2]  # one group mate: every other node
    assert servers(None) == servers(Topology.flat(12)) == list(range(11))
    assert servers(Topology.even(11, 3), n=12) == list(range(11))  # recorded for other nodes: not this run's
    assert servers(Topology.even(12, 3), pairs="serial") == list(range(11))  # collect reads one for sample only


def test_outlier_scores_compare_each_pair_with_its_class():
    topo = Topology.even(12, 3)
    drawn = sample.first_draw(topo, 3)
    classes = {p: topo.klass(*p) for p in drawn}
    rates = _rates(topo, drawn, {"switch": 0.04, "global": 0.04})
    # Across groups is a third of within a switch; nodes with more pairs
    # across groups are not slow for that.
    assert outliers.flagged(outliers.score_nodes(rates, classes)) == []
    slow = _rates(topo, drawn, {"switch": 0.04, "global": 0.04}, slow=[7])
    assert outliers.flagged(outliers.score_nodes(slow, classes)) == [7]
    assert {x for p, _ in outliers.slow_pairs(slow, [7], classes) for x in p} >= {7}


def test_suspects_are_re_measured_with_fresh_partners_that_separate_the_hypotheses():
    """Issue 45: a suspect node gets fresh partners on its switch (a pair
    crossing no link: slow there too, it is the node) and across groups; a
    suspect group link gets pairs of its nodes inside the group (fine
    there: the link) and through it to two other groups (slow to both: not
    one far end's link). The follow-up is recorded as a batch of its own
    and asked once per suspect."""
    from rooftop.model import suspects

    topo = Topology.even(12, 3)
    drawn = sample.first_draw(topo, 3)
    adds = sample.follow_up(topo, drawn, [6], [], batch=1)
    assert len(adds) == sample.CONFIRM_NODE_PAIRS and all(6 in p for p in adds) and not set(adds) & set(drawn)
    assert {topo.klass(*p) for p in adds} == {"switch", "global"}
    link = next(lk for lk in suspects.links_of(topo) if lk.name == "g0")
    adds = sample.follow_up(topo, drawn, [], [(link.kind, link.nodes)], batch=1)
    inside = [p for p in adds if not link.carries(topo, *p)]
    through = [p for p in adds if link.carries(topo, *p)]
    assert len(inside) == len(through) == 2 and all(set(p) <= {0, 1, 2, 3} for p in inside)
    assert {topo.group[max(p)] for p in through} == {"g1", "g2"} and not set(adds) & set(drawn)
    cfg = up_to_date({"nodes": [{"index": i, "host": f"n{i}", "cores": [i]} for i in range(12)]})
    cfg["pair_sample"] = {"pairs": [list(p) for p in drawn], "batches": [len(drawn)], "stop": ""}
    found = {"n6": 6, link.label: link}
    adds = sampling.confirm(cfg, topo, drawn, found)
    assert len(adds) == sample.CONFIRM_NODE_PAIRS + sample.CONFIRM_LINK_PAIRS
    assert cfg["pair_sample"]["confirm"] == [{"batch": 1, "suspects": sorted(found), "pairs": len(adds)}]
    assert sampling.confirm(cfg, topo, drawn + adds, found) == []  # once per suspect
    # The model then says which suspects the follow-up confirmed.
    named = suspects.Named(nodes=[6], links=[])
    states = suspects.states(named, cfg["pair_sample"]["confirm"])
    assert states == {"n6": ("confirmed", 1), link.label: ("cleared", 1)}
    assert suspects.states(suspects.Named(nodes=[3], links=[]), []) == {"n3": ("suspicion", None)}
    assert "confirmed (re-measured with fresh partners in batch 2" in suspects.state_text("n6", states["n6"])
