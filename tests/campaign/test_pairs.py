"""Pair scheduling: the round-robin tournament and its plan."""

from __future__ import annotations

import itertools

import pytest

from rooftop.campaign import plan_collect
from rooftop.stages.client_peak import round_robin


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
    return {"nodes": [{"index": i} for i in range(n)], "metrics": ["rpc"],
            "collect": {"server_peak": False, "client_peak": True, "client_node": False,
                        "sweep_servers": False, "pairs": pairs, "samples": 2, "duration": 1.0,
                        "warmup": 0.5, "servers_per_node": 1, "clients_per_node": 1}}


def test_rounds_plan_the_same_rows_as_serial_with_fewer_placements():
    serial = plan_collect(_cfg(6, "serial"))
    rounds = plan_collect(_cfg(6, "rounds"))
    keys = lambda placements: sorted(k for g in placements for s in g.samples for k in s.row_keys())
    # The same stored keys, so a run resumed with either gives one matrix.
    assert keys(serial) == keys(rounds) and len(keys(rounds)) == 15 * 2
    assert len(serial) == 5 and len(rounds) == 5
    # Serial: one client launch per pair and sample window group (15 pairs);
    # rounds: 5 rounds of 3 pairs measured at once.
    assert sum(1 for g in serial for s in g.samples if s.index == 0) == 15
    assert sum(1 for g in rounds for s in g.samples if s.index == 0) == 5
    g = rounds[0]
    spec = g.samples[0]
    # Client i sits on pair i's second node and loads server i (rank % nservers).
    assert [a for a, _ in spec.pairs] == g.server_nodes and [b for _, b in spec.pairs] == spec.client_nodes
    assert g.servers_per_node == 1 and spec.clients_per_node == 1
