"""Pair scheduling: the round-robin tournament and its plan."""

from __future__ import annotations

import itertools

import pytest

from rooftop.campaign import plan_collect
from rooftop.config.files import up_to_date
from rooftop.stages.pairs.rounds import round_robin


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 9, 16])
def test_round_robin_covers_every_pair_once_in_disjoint_rounds(n):
    rounds = round_robin(n)
    assert len(rounds) == (n - 1 if n % 2 == 0 else n)
    seen = [p for r in rounds for p in r]
    assert sorted(seen) == list(itertools.combinations(range(n), 2))
    for r in rounds:
        nodes = [x for p in r for x in p]
        assert len(nodes) == len(set(nodes)) and len(r) == n // 2


def _cfg(n, pairs):
    """Every other key at its default, as a resolved config has it."""
    return up_to_date(
        {
            "nodes": [{"index": i} for i in range(n)],
            "metrics": ["rpc"],
            "collect": {
                "server_peak": False,
                "client_peak": True,
                "client_node": False,
                "sweep_servers": False,
                "pairs": pairs,
                "windows": 2,
                "duration": 1.0,
                "warmup": 0.5,
                "servers_per_node": 1,
                "clients_per_node": 1,
            },
        }
    )


def test_rounds_plan_the_same_rows_as_serial_with_fewer_placements():
    serial = plan_collect(_cfg(6, "serial"))
    rounds = plan_collect(_cfg(6, "rounds"))
    keys = lambda placements: sorted(k for g in placements for k in g.keys())
    # The same stored keys, so a run resumed with either gives one matrix.
    assert keys(serial) == keys(rounds) and len(keys(rounds)) == 15 * 2
    assert len(serial) == 5 and len(rounds) == 5
    # Serial: one client launch per pair and sample window group (15 pairs);
    # rounds: 5 rounds of 3 pairs measured at once.
    assert sum(len(g.measurements) for g in serial) == 15  # a measurement (client round) each
    assert sum(len(g.measurements) for g in rounds) == 5
    g = rounds[0]
    spec = g.measurements[0]
    # Client i sits on pair i's second node and loads server i (rank % nservers).
    assert [a for a, _ in spec.pairs] == g.server_nodes and [b for _, b in spec.pairs] == spec.client_nodes
    assert g.servers_per_node == 1 and spec.clients_per_node == 1


def _netns(n, core_of, launcher="netns"):
    """n nodes on this machine, node i on core core_of(i) (netns: 3 per core on 2)."""
    cfg = _cfg(n, "rounds")
    cfg["launcher"] = {"type": launcher}
    cfg["engine"] = {"settle": 0.1}
    cfg["nodes"] = [{"index": i, "cores": [core_of(i)]} for i in range(n)]
    return up_to_date(cfg)


def test_rounds_never_run_pairs_sharing_cores_at_once_where_cores_are_known():
    """Issue 27: 6 emulated nodes on 2 cores (n0, n2, n4 on core 0): a
    round-robin round of 3 pairs would time-slice every pair. Pairs that
    share a core move to rounds of their own; the same rows are planned."""
    from rooftop.campaign import tracking
    from rooftop.stages.pairs.rounds import pair_rounds

    cfg = _netns(6, lambda i: i % 2)
    rounds = plan_collect(cfg)
    keys = lambda placements: sorted(k for g in placements for k in g.keys())
    assert keys(rounds) == keys(plan_collect(_cfg(6, "serial")))
    core = lambda n: {n % 2}
    for g in rounds:
        pairs = g.measurements[0].pairs
        for (a, b), (c, d) in itertools.combinations(pairs, 2):
            assert not (core(a) | core(b)) & (core(c) | core(d)), pairs
    # 9 cross-core pairs alone, the 6 same-core pairs two by two (one per core).
    assert sorted(len(r) for r in pair_rounds(cfg)) == [1] * 9 + [2] * 3
    # The time estimate counts those rounds (one client round each).
    assert tracking.expect(cfg, rounds).rounds == 12
    blind = up_to_date(dict(_cfg(6, "rounds"), engine={"settle": 0.1}))
    assert tracking.expect(blind, plan_collect(blind)).rounds == 5
    # Disjoint cores (one per node): the round-robin rounds as they were.
    assert pair_rounds(_netns(6, lambda i: i)) == round_robin(6)
    # A launcher that cannot know the cores (mpiexec, srun): round-robin,
    # and the samples record what ran beside them (model.ran_beside).
    assert pair_rounds(_netns(6, lambda i: i % 2, "mpiexec")) == round_robin(6)
