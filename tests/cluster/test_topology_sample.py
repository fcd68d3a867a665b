"""Ground truth for pairs sampled by topology (issues 31 and 45): an
emulated cluster of 3 groups x 4 nodes, node links at R1 and each group's
link to the top switch at R2 = R1/3, group 0's link shaped to R2/2 (a slow
link) and one node capped in CPU. 'collect --pairs sample' must report the
client ceiling within a switch within 10 % of R1 and across groups within
10 % of R2 (bw: the pairs through the named slow link are not the class's
ceiling), name the slow link as a link (not group 0's nodes) and
re-measure it before naming it (confirmed), name the capped node as a node
(rpc) and nothing else, and measure fewer pairs than all-pairs; the
simulator names what the campaign named; Slurm on the same cluster reads
the same tree ('scontrol show topology'), and the latency probe pings its
way round it.

One cluster and one campaign for the module (CI's time). 12 nodes on 2
cores: every node may use both cores (--cores-per-node 2), so a lone pair
is 2 processes on 2 cores and the exclusion rule keeps it; the links are
shaped low (90 and 30 Mbit/s) and progress blocks, so no bw pair is
CPU-bound. RPCs are, but through group 0's half-rate link (15 Mbit/s), which
holds them at about 10.0k ops/s (CI, 2026-11-29: every rpc pair through it
at 9.6k-10.0k, the others across groups 11k-17k): rpc may name that link
too, as it is slow for rpc by as much as the day's CPU makes the others
faster; nothing else but the capped node (2 % of its cores)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from campaign_util import samples
from cluster_util import cluster, cluster_up, needs_root, rooftop, status_json
from slurm_util import _why_no_slurm, slurm_env

from rooftop import topology
from rooftop.campaign import sampling, simulate
from rooftop.cluster import net
from rooftop.config.resolve import build
from rooftop.launchers import make_launcher
from rooftop.store.db import Store

pytestmark = needs_root

R1, R2 = 90_000_000, 30_000_000  # bit/s
CAPPED = 11
# 2 % of its 2 cores: at 10 % (and 4 %) a noop RPC pair of the capped node kept
# pace with the others on a day this VM ran at half speed (scores -1.4, -2.3:
# not named): the cap must bind whatever the machine's speed.
CAP = "2%"
ALL_PAIRS = 12 * 11 // 2
# Every node in 5 pairs (3 by default): a node's score is the median of its
# pairs, and one of them is with the capped node when they were drawn
# together; with 3 that one drags the median to the lower of the other two,
# and on a day this VM's RPC rates drifted by +-30 % the capped node's own
# score (-2.0) was lost in the spread its partners made.
MIN_PAIRS = 5
# Room for the slow link's follow-up batch beside the classes' (the budget bounds it as any batch).
BUDGET = 48
SLURM = _why_no_slurm() is None
ROOFTOP = str(Path(sys.executable).with_name("rooftop"))

SAMPLE = [
    "--launcher",
    "netns",
    "--metrics",
    "bw,rpc",
    "--pairs",
    "sample",
    "--binding",
    "none",
    "--set",
    "engine.server_progress=block",
    "--set",
    "engine.client_progress=block",
    "--set",
    "bw.size=1MiB",
    "--set",
    "bw.buffer=reuse",
    "--set",
    "collect.client_node=false",
    "--set",
    "collect.servers_per_node=1",
    "--set",
    "collect.clients_per_node=1",
    "--set",
    f"collect.sample_budget={BUDGET}",
    "--set",
    f"collect.sample_min_pairs={MIN_PAIRS}",
    # The capped node's clients reach the start barrier late (as in test_outlier_nodes).
    "--set",
    "engine.min_overlap=0.6",
    "--duration",
    "1",
    "--warmup",
    "0.3",
    "--windows",
    "2",
]


@pytest.fixture(scope="module")
def grouped(tmp_path_factory):
    res = tmp_path_factory.mktemp("topology") / "res"
    up = ["--nodes", "12", "--groups", "3", "--cores-per-node", "2", "--link-rate", "90mbit"]
    up += ["--group-link-rate", "30mbit", "--node", f"{CAPPED}:cpu={CAP}"] + (["--slurm"] if SLURM else [])
    with cluster_up(*up):
        st = status_json()  # (before the slow link: every group's link as set up)
        said = cluster("status").stdout
        for dev in (net.group_uplink(0), net.group_downlink(0)):  # group 0's link both ways at R2/2
            net.shape(dev, R2 // 2)
        p = rooftop("collect", *SAMPLE, "--results", str(res), timeout=1800)
        run = p.stdout.strip().splitlines()[-1]
        model = json.loads(rooftop("model", run, "--results", str(res), "--json").stdout)
        yield {"res": res, "run": run, "status": st, "said": said, "collect": p, "model": model}


def _metric(g, name):
    return next(m for m in g["model"]["metrics"] if m["metric"] == name)


def _mad(v: list[float]) -> float:
    v = sorted(v)
    return 1.4826 * sorted(abs(x - v[len(v) // 2]) for x in v)[len(v) // 2]


def assert_capped_node_alone(rpc: dict) -> None:
    """The model's rpc metric: the capped node scores lowest, clear of every
    other node (by 2), no other node is named, and the capped node itself
    is named unless the noise hides even it (test_the_capped_node_alone_is_named
    says why that can be)."""
    named = [n["node"] for n in rpc["nodes"] if n["flag"]]
    z = {n["node"]: n["z"] for n in rpc["nodes"]}
    print("rpc scores:", {k: round(v, 1) for k, v in z.items()})
    assert named in ([CAPPED], []), rpc["nodes"]
    assert z[CAPPED] < min(v for k, v in z.items() if k != CAPPED) - 2.0, rpc["nodes"]
    others = [math.log(n["median"]) for n in rpc["nodes"] if n["node"] != CAPPED]
    # The typical spread of a node's own log pair rates (the capped node's pairs left out).
    own = [
        [math.log(p["rate"]) for p in n["pairs"] if CAPPED not in p["pair"]]
        for n in rpc["nodes"]
        if n["node"] != CAPPED
    ]
    sigma = sorted(_mad(v) for v in own)[len(own) // 2]
    if _mad(others) < 0.4 and sigma < 0.5:  # node medians within +-50 %: a node at a seventh of the others is named
        assert named == [CAPPED], (rpc["nodes"], _mad(others), sigma)


def test_the_cluster_has_three_groups_on_their_own_switches(grouped):
    st = grouped["status"]
    assert not st["problems"], st["problems"]
    assert [g["nodes"] for g in st["groups"]] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    for g in st["groups"]:
        assert g["switch"] == f"rooftop-gb{g['group']}"
        assert g["live"] == {"send_rate_bits": R2, "receive_rate_bits": R2}
    assert all(n["switch"] == f"rooftop-gb{n['index'] // 4}" and n["link_rate_bits"] == R1 for n in st["nodes"])
    assert "3 groups joined by links of 30Mbit" in grouped["said"]


def test_fewer_pairs_than_all_pairs_every_node_in_min_pairs(grouped):
    res, run = grouped["res"], grouped["run"]
    cfg = json.loads((res / run / "config.json").read_text())
    assert cfg["topology"]["source"] == "emulated"
    assert [n["switch"] for n in cfg["topology"]["nodes"]] == [f"rooftop-gb{i // 4}" for i in range(12)]
    drawn = [tuple(p) for p in cfg["pair_sample"]["pairs"]]
    assert len(drawn) == sum(cfg["pair_sample"]["batches"]) <= BUDGET < ALL_PAIRS
    per_node = Counter(x for p in drawn for x in p)
    assert all(per_node[i] >= MIN_PAIRS for i in range(12)), per_node
    classes = Counter("switch" if a // 4 == b // 4 else "global" for a, b in drawn)
    assert classes["switch"] >= 3 and classes["global"] >= 3
    # What was measured is what was drawn, and nothing else.
    measured = {
        (json.loads(s["server_nodes"])[0], json.loads(s["client_nodes"])[0])
        for s in samples(res, run)
        if s["stage"] == "client_peak"
    }
    assert measured == set(drawn)
    assert grouped["model"]["topology"]["sampled_pairs"] == len(drawn)
    assert "pair sample:" in grouped["collect"].stderr


def test_class_ceilings_are_the_link_rates(grouped):
    bw = {c["class"]: c for c in _metric(grouped, "bw")["client_classes"]}
    assert set(bw) == {"switch", "global"}
    within, across = bw["switch"]["median"], bw["global"]["median"]
    report = f"same switch {within * 8 / 1e6:.1f} Mbit/s (R1 90), across groups {across * 8 / 1e6:.1f} Mbit/s (R2 30)"
    print(report)
    assert abs(within - R1 / 8) <= 0.10 * R1 / 8, report
    assert abs(across - R2 / 8) <= 0.10 * R2 / 8, report
    assert bw["switch"]["of"] == 18 and bw["global"]["of"] == 48
    text = rooftop("model", grouped["run"], "--results", str(grouped["res"])).stdout
    assert "client ceiling, same switch" in text and "client ceiling, across groups" in text
    assert "deployment" in text and "pairs sampled" in text


def test_the_capped_node_alone_is_named(grouped):
    """The capped node scores lowest, clear of every other node, and no
    other node is named. Named itself unless the noise hides even it: a
    score is the log of median / typical median over a spread, the spread
    at least the node medians' (1.4826 MAD of their logs) and what a median
    of k pairs wanders by (1.2533 sigma / sqrt(k), sigma a node's own log
    pairs' spread). A healthy node with two unlucky pairs of four was named
    beside the capped one (CI, 2026-11-27) before the second term; on a
    linear scale the capped node at a seventh of the others' rate scored
    -2 to -3.4 on drifting days, and was not named."""
    assert_capped_node_alone(_metric(grouped, "rpc"))
    p = rooftop("report", grouped["run"], "--results", str(grouped["res"]))
    md = (Path(p.stdout.strip()).parent / "report.md").read_text()
    line = next(x for x in md.splitlines() if x.startswith("- client ceiling (per process)") and "same switch" in x)
    assert "per topology class" in line and "across groups" in line
    # How likely the search was to miss one, as the run recorded it.
    assert "rpc: search power (this search, simulated at this run's noise): finds a node at 0.7 x" in md


@pytest.mark.skipif(not SLURM, reason=str(_why_no_slurm()))
def test_slurm_reads_the_same_tree(grouped):
    out = subprocess.run(
        ["scontrol", "show", "topology"], capture_output=True, text=True, timeout=30, env=slurm_env()
    ).stdout
    assert all(f"SwitchName=rooftop-gb{g} " in out for g in range(3)) and "SwitchName=rooftop-br0 " in out
    p = subprocess.run(
        ["salloc", "-N", "12", ROOFTOP, "collect", "--launcher", "srun", "--pairs", "sample", "--metrics", "rpc"]
        + ["--dry-run", "--results", str(grouped["res"].parent / "dry")],
        capture_output=True,
        text=True,
        timeout=120,
        env=slurm_env(),
        stdin=subprocess.DEVNULL,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    assert "# topology: 3 group(s), 3 switch(es) from slurm (scontrol show topology)" in p.stdout


def test_the_latency_probe_pings_round_the_cluster(grouped, tmp_path):
    """The fallback where no tree is known. On this machine the groups
    differ by two bridge hops (~5 of ~20 us), too close to tell apart
    reliably (no netem here to lengthen the links): what is checked is the
    probe itself, through the netns launcher."""

    os.environ.pop("SLURM_JOB_ID", None)
    cfg = build(
        None, {"launcher.type": "netns", "metrics": ["rpc"], "collect.topology": "probe", "results": str(tmp_path)}
    )
    t = topology.discover(cfg, make_launcher(cfg["launcher"]))
    assert t.source == "probe" and t.n == 12 and t.switch[0] == "near-n0"
    first = {b: us for a, b, us in t.rtt if a == 0}
    assert sorted(first) == list(range(1, 12)) and all(5 < us < 5000 for us in first.values())
    assert not list(tmp_path.glob(".topology-probe-*"))  # its folder is gone


def test_the_slow_group_link_is_named_as_a_link_and_the_capped_node_as_a_node(grouped):
    m = {d["metric"]: d for d in grouped["model"]["metrics"]}
    bw, rpc = m["bw"], m["rpc"]
    got = {
        k: ([lk["nodes"] for lk in v["links"]], [n["node"] for n in v["nodes"] if n["flag"] == "slow"])
        for k, v in m.items()
    }
    # bw: group 0's link, as a link (its nodes 0-3 are not named); at most the capped node beside it.
    assert [lk["nodes"] for lk in bw["links"]] == [[0, 1, 2, 3]] and bw["links"][0]["kind"] == "group", got
    assert set(got["bw"][1]) <= {CAPPED}, got
    # rpc: at most group 0's link (the module's docstring), and the capped node as in the first campaign.
    assert [lk["nodes"] for lk in rpc["links"]] in ([], [[0, 1, 2, 3]]), got
    assert_capped_node_alone(rpc)
    # The link was re-measured with fresh partners before it was named.
    states = {s["suspect"]: s["state"] for s in bw["suspects"]}
    assert states[bw["links"][0]["label"]] == "confirmed", bw["suspects"]
    # How likely this search was to miss one, at this run's noise, recorded when it ended.
    for v in (bw, rpc):
        assert v["search_power"]["found"]["node"]["factor"] == 0.7, v["search_power"]
        assert v["search_power"]["line"].startswith("finds a node at 0.7 x with")


def test_the_simulator_names_what_the_campaign_named(grouped):
    """The simulator (rooftop.campaign.simulate) on the platform this cluster
    was set up as -- node links R1, group links R2, group 0's at half --
    with the noise fitted to this run's bw pairs and the campaign's own
    usable pairs (nodes sharing cores), names what the campaign named in
    bw: group 0's link, and no node (the CPU cap is not a link-bound
    pair's limit: the campaign may name the capped node beside it)."""
    store = Store(grouped["res"])
    run_id = grouped["run"]
    cfg = store.get_run(run_id).config
    topo = topology.of_config(cfg)
    platform = simulate.Platform(
        topo, node_rate=R1, uplink_rate=R1, group_rate=R2, noise=simulate.fit_noise(store, run_id, "bw")
    )
    got = simulate.run(platform, cfg, {("group", topo.group[0]): 0.5}, seed=0, usable=sampling.usable(cfg))
    bw = next(d for d in grouped["model"]["metrics"] if d["metric"] == "bw")
    real = {(lk["kind"], lk["name"]) for lk in bw["links"]}
    real |= {("node", str(n["node"])) for n in bw["nodes"] if n["flag"] == "slow" and n["node"] != CAPPED}
    assert got.named == real == {("group", topo.group[0])}, (got, real)
