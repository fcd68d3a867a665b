"""The NIC policy comparison of the report (seed 000, Figure 2): bars by
binding and policy, mean and standard deviation over samples, the best
policy named only when it stands out of the noise."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest

from rooftop import units
from rooftop.nics import compare as nic_compare
from rooftop.nics import figure as nic_policies


def run(run_id, binding, policy, values, status="ok"):
    cfg = {"binding": binding, "nic": {"policy": policy}, "metrics": ["bw"]}
    rows = [
        {"stage": "server_peak", "metric": "bw", "status": status, "aggregate": v, "unit": "bytes/s"} for v in values
    ]
    rows.append({"stage": "client_peak", "metric": "bw", "status": "ok", "aggregate": 1.0, "unit": "bytes/s"})
    return run_id, cfg, rows


FIGURE2 = [
    run("a", "core", "all:byset", [10.0, 10.2, 9.8]),
    run("b", "core", "all:roundrobin", [20, 20.4, 19.6]),
    run("c", "none", "all:byset", [5.0, 5.1, 4.9]),
    run("d", "none", "all:roundrobin", [20, 20.2, 19.8]),
]


def test_roundrobin_is_named_best_when_it_wins_beyond_the_noise():
    c = nic_compare.compare(FIGURE2, "bw")
    assert [(b.binding, b.policy) for b in c.bars] == [
        ("core", "all:byset"),
        ("core", "all:roundrobin"),
        ("none", "all:byset"),
        ("none", "all:roundrobin"),
    ]
    assert c.bars[1].mean == pytest.approx(20.0) and c.bars[1].std == pytest.approx(0.4)
    assert c.best == {"core": "all:roundrobin", "none": "all:roundrobin"}
    assert c.overall == "all:roundrobin"
    assert c.verdict[0].startswith("best NIC policy: all:roundrobin")
    assert "binding none: all:roundrobin is best (4.00x all:byset" in c.verdict[2]


def test_overlapping_policies_are_indistinguishable_and_none_is_recommended():
    c = nic_compare.compare(
        [run("a", "none", "all:byset", [10, 12, 8]), run("b", "none", "all:roundrobin", [11, 13, 9])], "bw"
    )
    assert c.best == {"none": None} and c.overall is None
    assert "indistinguishable" in c.verdict[0] and "none is recommended" in c.verdict[0]
    # tied under one binding, better under another: still the best overall
    c = nic_compare.compare(
        [
            run("a", "core", "all:byset", [10, 12, 8]),
            run("b", "core", "all:rank", [11, 13, 9]),
            run("c", "none", "all:byset", [5, 5]),
            run("d", "none", "all:rank", [20, 20]),
        ],
        "bw",
    )
    assert c.best == {"core": None, "none": "all:rank"} and c.overall == "all:rank"


def test_a_policy_best_under_one_binding_and_worse_under_another_is_not_recommended():
    c = nic_compare.compare(
        [
            run("a", "core", "p:byset", [30, 30]),
            run("b", "core", "p:rank", [20, 20]),
            run("c", "none", "p:byset", [5, 5]),
            run("d", "none", "p:rank", [20, 20]),
        ],
        "bw",
    )
    assert c.overall is None and "choose by the binding" in c.verdict[0]


def test_one_policy_is_refused_and_invalid_samples_are_left_out():
    with pytest.raises(ValueError, match="under 1 NIC policy"):
        nic_compare.compare([run("a", "none", "all:byset", [1.0]), run("b", "core", "all:byset", [2.0])], "bw")
    c = nic_compare.compare(FIGURE2 + [run("e", "none", "all:byset", [99.0], status="invalid")], "bw")
    assert c.bars[2].values == [5.0, 5.1, 4.9]


def test_bar_chart_has_a_bar_and_an_error_bar_per_binding_and_policy():
    c = nic_compare.compare(FIGURE2, "bw")
    fig = nic_policies.figure(c, "t")
    ax = fig.axes[0]
    bars = list(ax.patches)
    assert len(bars) == 4
    assert [t.get_text() for t in ax.get_xticklabels()] == ["binding core", "binding none"]
    scale, label = units.rate_scale("bytes/s", max(b.mean + b.std for b in c.bars))
    heights = sorted(round(b.get_height() * scale, 6) for b in bars)
    assert heights == pytest.approx(sorted(b.mean for b in c.bars))
    assert ax.get_ylabel() == f"server node aggregate ({label})"
    from matplotlib.container import BarContainer

    bar_containers = [x for x in ax.containers if isinstance(x, BarContainer)]
    assert len(bar_containers) == 2 and all(x.errorbar is not None for x in bar_containers)
    assert [x.get_label() for x in bar_containers] == ["all:byset", "all:roundrobin"]
