"""Issue 45's ground truth for slow links: 3 groups x 4 nodes, node links at
R1, group links at R2 = R1/3, group 0's link shaped to R2/2 (a slow link),
and separately node 11 capped in CPU. 'collect --pairs sample' must name
the slow link as a link (not group 0's nodes), the capped node as a node,
and nothing else; the link is re-measured in a follow-up batch before it
is named (confirmed). One cluster and one campaign (the settings of
tests/cluster/test_topology_sample.py, which explains them)."""

from __future__ import annotations

import json

import pytest
from cluster_util import cluster_up, needs_root, rooftop
from test_topology_sample import CAP, CAPPED, R1, R2, SAMPLE

from rooftop import topology
from rooftop.campaign import sampling, simulate
from rooftop.cluster import net
from rooftop.store.db import Store

pytestmark = needs_root


@pytest.fixture(scope="module")
def slow_group_link(tmp_path_factory):
    res = tmp_path_factory.mktemp("slowlink") / "res"
    up = ["--nodes", "12", "--groups", "3", "--cores-per-node", "2", "--link-rate", "90mbit"]
    with cluster_up(*up, "--group-link-rate", "30mbit", "--node", f"{CAPPED}:cpu={CAP}"):
        for dev in (net.group_uplink(0), net.group_downlink(0)):  # group 0's link both ways at R2/2
            net.shape(dev, R2 // 2)
        # Room for the follow-up batches beside the classes' (the budget bounds them as any batch).
        run = rooftop("collect", *SAMPLE, "--set", "collect.sample_budget=48", "--results", str(res), timeout=1800)
        run_id = run.stdout.strip().splitlines()[-1]
        yield {
            "model": json.loads(rooftop("model", run_id, "--results", str(res), "--json").stdout),
            "res": res,
            "run": run_id,
        }


def test_the_slow_group_link_is_named_as_a_link_and_the_capped_node_as_a_node(slow_group_link):
    m = {d["metric"]: d for d in slow_group_link["model"]["metrics"]}
    bw, rpc = m["bw"], m["rpc"]
    got = {
        k: ([lk["nodes"] for lk in v["links"]], [n["node"] for n in v["nodes"] if n["flag"] == "slow"])
        for k, v in m.items()
    }
    # bw: group 0's link, as a link (its nodes 0-3 are not named); at most the capped node beside it.
    assert [lk["nodes"] for lk in bw["links"]] == [[0, 1, 2, 3]] and bw["links"][0]["kind"] == "group", got
    assert set(got["bw"][1]) <= {CAPPED}, got
    # rpc (not link-bound): no link; the capped node, or nobody when the noise hides it (as in test_topology_sample).
    assert rpc["links"] == [] and got["rpc"][1] in ([CAPPED], []), got
    # The link was re-measured with fresh partners before it was named.
    states = {s["suspect"]: s["state"] for s in bw["suspects"]}
    assert states[bw["links"][0]["label"]] == "confirmed", bw["suspects"]


def test_the_simulator_names_what_the_campaign_named(slow_group_link):
    """The simulator (rooftop.campaign.simulate) on the platform this cluster
    was set up as -- node links R1, group links R2, group 0's at half --
    with the noise fitted to this run's bw pairs and the campaign's own
    usable pairs (nodes sharing cores), names what the campaign named in
    bw: group 0's link, and no node (the CPU cap is not a link-bound
    pair's limit: the campaign may name the capped node beside it)."""
    store = Store(slow_group_link["res"])
    run_id = slow_group_link["run"]
    cfg = store.get_run(run_id).config
    topo = topology.of_config(cfg)
    platform = simulate.Platform(
        topo, node_rate=R1, uplink_rate=R1, group_rate=R2, noise=simulate.fit_noise(store, run_id, "bw")
    )
    got = simulate.run(platform, cfg, {("group", topo.group[0]): 0.5}, seed=0, usable=sampling.usable(cfg))
    bw = next(d for d in slow_group_link["model"]["metrics"] if d["metric"] == "bw")
    real = {(lk["kind"], lk["name"]) for lk in bw["links"]}
    real |= {("node", str(n["node"])) for n in bw["nodes"] if n["flag"] == "slow" and n["node"] != CAPPED}
    assert got.named == real == {("group", topo.group[0])}, (got, real)
