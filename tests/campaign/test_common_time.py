"""Aggregates over common time and physical limits, on synthetic client
results (the arithmetic the campaign applies to engine documents)."""

from __future__ import annotations

import pytest

from rooftop.campaign import limits, windows
from rooftop.engine import enginedoc
from rooftop.launchers.base import Node


def client(start_s: float, per_slice: list[float], length: float = 1.0, op_bytes: int = 0) -> dict:
    return {
        "measure_start_s": start_s,
        "op_bytes": op_bytes,
        "windows": [{"elapsed_s": length, "work_ops": sum(per_slice), "slice_ops": per_slice}],
    }


def older(result: dict) -> dict:
    """The same result as an engine before the rename wrote it (result.samples)."""
    out = dict(result)
    out["samples"] = out.pop("windows")
    return out


def test_only_the_time_all_clients_measured_counts():
    # Two clients, 10 slices of 0.1 s each; the second starts 0.3 s late.
    # A late client alone would add its whole rate: a sum of rates says 20
    # ops/s; over common time, both did 10 ops/s each.
    a, b = client(100.0, [1.0] * 10), client(100.3, [1.0] * 10)
    res = {0: a, 1: b}
    offs = windows.offsets({r: c["measure_start_s"] for r, c in res.items()}, same_clock=True)
    assert offs == {0: 0.0, 1: pytest.approx(0.3)}
    rate, c = windows.aggregate(res, [0, 1], 0, offs, "rpc")
    assert (c.lo, c.hi) == (pytest.approx(0.3), pytest.approx(1.0))
    assert c.overlap == pytest.approx(0.7) and c.skew_s == pytest.approx(0.3)
    assert rate == pytest.approx(20.0)  # 7 + 7 ops in 0.7 s
    # A client that did its work while alone gets no credit for it.
    burst = client(100.3, [0.0] * 3 + [0.0] * 4 + [10.0] * 3)
    rate, _ = windows.aggregate({0: a, 1: burst}, [0, 1], 0, offs, "rpc")
    assert rate == pytest.approx((7 + 0) / 0.7)


def test_documents_of_older_engines_read_the_same():
    """Engines before the rename wrote result.samples and config.samples
    (--samples): the reader takes them as windows."""
    a, b = client(100.0, [1.0] * 10), client(100.3, [2.0] * 10)
    offs = {0: 0.0, 1: 0.3}
    new = windows.aggregate({0: a, 1: b}, [0, 1], 0, offs, "rpc")
    assert windows.aggregate({0: older(a), 1: older(b)}, [0, 1], 0, offs, "rpc") == new
    assert enginedoc.windows_of(older(a)) == enginedoc.windows_of(a) == a["windows"]
    res = dict(a, ops=30, drained_ops=0, full_windows=0, windows=a["windows"] * 3)
    for doc in ({"config": {"windows": 3}, "result": res}, {"config": {"samples": 3}, "result": older(res)}):
        assert enginedoc.windows_asked(doc) == 3
        cut = enginedoc.full_windows(dict(doc, complete=False))
        assert cut["complete"] and enginedoc.windows_of(cut["result"]) == []
        assert enginedoc.unusable(doc | {"complete": True}, cut=False) == ""
    assert enginedoc.windows_asked({"config": {}}) == 0
    with pytest.raises(KeyError):
        enginedoc.windows_of({"ops": 1})


def test_work_inside_a_slice_is_prorated_and_bulk_counts_bytes():
    w = {"elapsed_s": 1.0, "work_ops": 4.0, "slice_ops": [2.0, 2.0]}
    assert windows.work_between(w, 0.25, 0.75) == pytest.approx(2.0)
    assert windows.work_between(w, -1, 5) == pytest.approx(4.0)
    res = {0: client(5.0, [1.0, 1.0], op_bytes=1 << 20)}
    rate, c = windows.aggregate(res, [0], 0, {0: 0.0}, "bw")
    assert rate == pytest.approx(2 * (1 << 20)) and c.overlap == 1.0


def test_across_hosts_the_barrier_release_is_the_common_start():
    assert windows.offsets({0: 10.0, 1: 12.5}, same_clock=False) == {0: 0.0, 1: 0.0}


def test_windows_that_never_overlap_have_no_common_time():
    res = {0: client(0.0, [1.0] * 4), 1: client(2.0, [1.0] * 4)}
    offs = windows.offsets({0: 0.0, 1: 2.0}, True)
    rate, c = windows.aggregate(res, [0, 1], 0, offs, "rpc")
    assert rate == 0.0 and c.overlap == 0.0


def node(i: int, bits: int | None) -> Node:
    return Node(i, f"n{i}", (0,), None, {"link_rate_bits": bits} if bits is not None else None)


def test_link_limits_of_emulated_nodes():
    nodes = [node(0, 80_000_000), node(1, 80_000_000), node(2, 200_000_000), node(3, None)]
    assert limits.link_limit(nodes, [0], [1, 2]) == 10e6  # the server node's one link
    assert limits.link_limit(nodes, [1, 2], [0]) == 10e6
    assert limits.link_limit(nodes, [0, 2], [1]) == 10e6  # the client side is smaller
    assert limits.link_limit(nodes, [3], [0]) == 10e6  # an unshaped side bounds nothing
    assert limits.link_limit(nodes, [3], [3]) is None
    assert limits.above_limit(10.2e6, 10e6) == ""  # within 3 %
    msg = limits.above_limit(17.7e6, 10e6)
    assert msg.startswith("measurement error: 16.9 MiB/s is 77 % above the 9.54 MiB/s")
