"""Parsing 'cluster up' options (no root needed)."""

from __future__ import annotations

import pytest

from rooftop.cluster.spec import ClusterError, build_spec, format_rate, parse_rate


@pytest.mark.parametrize(
    "text,bits",
    [
        ("1gbit", 10**9),
        ("100mbit", 10**8),
        ("500Mbit", 5 * 10**8),
        ("10Gbit", 10**10),
        ("200mbit/s", 2 * 10**8),
        ("1GiB/s", 8 * 2**30),
        ("125MB/s", 10**9),
        ("64kbit", 64000),
        ("1.5gbit", 1_500_000_000),
        ("none", None),
    ],
)
def test_rates(text, bits):
    assert parse_rate(text) == bits


@pytest.mark.parametrize("text", ["fast", "100", "100mbps", "100Mb/s", "1gib/s", "-1gbit", "1 gigabit"])
def test_bad_rates_name_the_value(text):
    with pytest.raises(ClusterError, match=f"--link-rate '{text}' is not a link rate"):
        parse_rate(text, "--link-rate")


def test_format_rate():
    assert format_rate(2 * 10**8) == "200Mbit"
    assert format_rate(10**9) == "1Gbit"
    assert format_rate(None) == "unshaped"


def test_default_split_and_sharing():
    s = build_spec(4, cores=[0, 1])
    assert [n.cores for n in s.nodes] == [[0], [1], [0], [1]]
    assert s.shared_with(0) == [2] and s.shared_with(3) == [1]
    s = build_spec(2, cores=[0, 1, 2, 3])
    assert [n.cores for n in s.nodes] == [[0, 1], [2, 3]] and s.shared_with(0) == []
    assert all(n.link_rate == 10**9 for n in s.nodes)  # default 1gbit


def test_cores_per_node_wraps():
    s = build_spec(3, cores_per_node=2, cores=[0, 1, 2, 3])
    assert [n.cores for n in s.nodes] == [[0, 1], [2, 3], [0, 1]]
    with pytest.raises(ClusterError, match="--cores-per-node 3: this machine has only 2 usable cores"):
        build_spec(2, cores_per_node=3, cores=[0, 1])


def test_node_options():
    s = build_spec(4, link_rate="1gbit", node_opts=["2:rate=100mbit", "3:cpu=50%", "1:rate=none,cpu=25%"], cores=[0, 1])
    assert [n.link_rate for n in s.nodes] == [10**9, None, 10**8, 10**9]
    assert [n.cpu_percent for n in s.nodes] == [None, 25.0, None, 50.0]


@pytest.mark.parametrize(
    "opt,msg",
    [
        ("9:rate=1gbit", r"--node 9:rate=1gbit: node 9 does not exist \(nodes are 0..3\)"),
        ("1:rate=fast", r"--node 1:rate=fast: rate 'fast' is not a link rate"),
        ("1:cpu=150%", r"--node 1:cpu=150%: cpu: 150% must be above 0 and at most 100"),
        ("1:cpu=0.5", r"--node 1:cpu=0.5: cpu: '0.5' is not a percentage"),
        ("1:mem=1GiB", r"--node 1:mem=1GiB: unknown key 'mem'"),
        ("rate=1gbit", r"--node rate=1gbit: expected I:rate=R or I:cpu=P%"),
        ("1:rate", r"--node 1:rate: 'rate' is not KEY=VALUE"),
    ],
)
def test_bad_node_options_name_the_part(opt, msg):
    with pytest.raises(ClusterError, match=msg):
        build_spec(4, node_opts=[opt], cores=[0, 1])


def test_node_key_twice():
    with pytest.raises(ClusterError, match="node 1's rate is given twice"):
        build_spec(2, node_opts=["1:rate=1gbit", "1:rate=2gbit"], cores=[0, 1])


def test_node_count():
    with pytest.raises(ClusterError, match="--nodes 0: must be at least 1"):
        build_spec(0)


def test_nics_per_node():
    assert build_spec(2, cores=[0, 1]).nics_per_node == 1
    s = build_spec(2, cores=[0, 1], nics_per_node=4)
    assert s.nics_per_node == 4 and s.to_dict()["nics_per_node"] == 4
    for bad in (0, 9):
        with pytest.raises(ClusterError, match=f"--nics-per-node {bad}: must be 1 to 8"):
            build_spec(2, cores=[0, 1], nics_per_node=bad)


def test_rail_names_and_addresses():
    from rooftop.cluster import net

    # rail 0 keeps the single-NIC names; NIC k of node I is on 10.231.<k>.0/24
    assert (net.node_veth(3), net.host_veth(3), net.node_address(3)) == ("rooftop-p3", "rooftop-v3", "10.231.0.13")
    assert (net.node_veth(3, 2), net.host_veth(3, 2), net.node_address(3, 2)) == (
        "rooftop-p3r2",
        "rooftop-v3r2",
        "10.231.2.13",
    )
    assert (net.bridge_name(2), net.bridge_address(2)) == ("rooftop-br2", "10.231.2.1")
    assert net.is_bridge("rooftop-br0") and net.is_bridge("rooftop-br7") and not net.is_bridge("rooftop-v1r2")
    assert len(net.host_veth(63, 7)) <= 15  # interface names are at most 15 bytes


def test_groups_split_the_nodes_in_order_and_refuse_what_they_cannot_build():
    s = build_spec(12, 2, "90mbit", [], cores=[0, 1], groups=3, group_link_rate="30mbit")
    assert [n.group for n in s.nodes] == [0] * 4 + [1] * 4 + [2] * 4
    assert (s.groups, s.group_link_rate) == (3, 30_000_000) and s.group_nodes(2) == [8, 9, 10, 11]
    assert [n.group for n in build_spec(5, cores=[0, 1], groups=2).nodes] == [0, 0, 0, 1, 1]
    assert build_spec(5, link_rate="40mbit", cores=[0, 1], groups=2).group_link_rate == 40_000_000  # the link rate
    # Without groups the spec (as a second 'up' compares it) is what it was before groups.
    assert "groups" not in build_spec(3, cores=[0, 1]).to_dict()
    with pytest.raises(ClusterError, match="--group-link-rate: applies to the links between groups"):
        build_spec(4, cores=[0, 1], group_link_rate="10mbit")
    with pytest.raises(ClusterError, match="--groups 2 with --nics-per-node 2"):
        build_spec(4, cores=[0, 1], groups=2, nics_per_node=2)
    with pytest.raises(ClusterError, match="--group-link-rate 'slow' is not a link rate"):
        build_spec(4, cores=[0, 1], groups=2, group_link_rate="slow")
