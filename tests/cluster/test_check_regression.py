"""The regression gate on the emulated cluster (issue 32's ground truth),
on the module's shared 3-node cluster, re-shaped between runs by `rooftop
cluster reshape` (links and CPU caps changed in place, recorded in the
cluster's state and so in the runs started after it):

- two short bw runs with every link at R, then a third after re-shaping
  the links to R/2: `check` on the third exits 1 and names the bandwidth
  ceilings with a fall of about 50 %; between the first two it exits 0
  (noise is not a regression). The third run and its samples record R/2;
  the first run cannot be validated on the re-shaped cluster.
- bw runs on the 3 nodes, the server node's link at 2R and the clients'
  at R, then with the server node's link reshaped to R: the server ceiling
  (node 0 serving clients on nodes 1 and 2) is named with a fall of about
  50 %, the client ceilings (one client against one server, bound by the
  client's own link at R) are not, and the recommended ratio moves from 1:2
  to 1:1. Links shaped by tbf make both sides of the ground truth exact:
  a lone client can never see the server's lost half.
  Issue 32 asked this of a CPU cap on the server node with rpc. On this
  2-core VM that is not reproducible: a lone ping-pong client keeps the
  one-core server about half busy (0.47 of its core measured with block
  progress; three clients 0.73-0.86), so a cap that binds three clients
  leaves the lone client under 1.8x headroom, and rpc rates here drift by
  up to 30 % between runs with nothing changed (the bare engine, rooftop out
  of the way: 7.8k-13.5k ops/s over 25 s). The CPU-cap case failed 1 run in
  8 and then in CI; a cap's place in the cluster state is checked below.
- reshape is refused while a campaign holds this machine's cores lock; with
  none running, a CPU cap goes in and comes out (the kernel's quota shows it).

No outcome here rests on a CPU cap or on the order the tests run in: each
test starts from the cluster as the fixture built it (every link at R, no
cap), whatever the one before left (issue 42: a cap left on a client node
by a test that stopped halfway slows the bw clients of the next by however
much the machine's load makes it).
"""

from __future__ import annotations

import html
import json
import time
from pathlib import Path

import pytest
from campaign_util import samples
from cluster_util import cluster, needs_root, rooftop, status_json

from rooftop.store.db import Store

pytestmark = needs_root

#: bw on all 3 nodes: the server peak is node 0 serving one client on each
#: of nodes 1 and 2; the client peaks are the 3 pairs. Block progress keeps
#: the shared core 0 (nodes 0 and 2) below the core-sharing rule's busy limit.
SERVER_NIC = (
    "--nodes",
    "3",
    "--metrics",
    "bw",
    "--windows",
    "3",
    "--warmup",
    "0.3",
    "--set",
    "collect.client_node=false",
    "--set",
    "engine.server_progress=block",
    "--set",
    "engine.client_progress=block",
)
BW = ("--metrics", "bw", "--warmup", "0.3", "--windows", "2")


@pytest.fixture(autouse=True)
def as_built(cluster3):
    """The module's cluster as cluster3 built it: every link at 200 Mbit/s
    and no CPU cap (a no-op, recording nothing, when nothing changed)."""
    cluster("reshape", "--link-rate", "200mbit", *(f"--node={i}:cpu=none" for i in range(3)))


def _collect(res, *args) -> str:
    p = rooftop("collect", "--launcher", "netns", "--duration", "1", *args, "--results", str(res))
    return p.stdout.strip().splitlines()[-1]


def _check(run, against, res) -> tuple[int, dict]:
    p = rooftop("check", run, "--against", against, "--results", str(res), "--json", check=False)
    assert p.returncode in (0, 1), p.stdout + p.stderr
    return p.returncode, json.loads(p.stdout)


def test_reshape_is_refused_while_a_campaign_holds_the_machine(cluster3):
    from rooftop.locks import Lock, machine_lock_path

    lock = Lock(machine_lock_path(), "this machine's cores")
    reshaped = len(status_json().get("reshaped") or [])
    assert lock.acquire(time.monotonic() + 60)
    try:
        p = cluster("reshape", "--node", "1:cpu=50%", check=False)
    finally:
        lock.release()
    assert p.returncode == 2 and "a campaign holds this machine's cores lock" in p.stderr, p.stderr
    assert "'rooftop cluster reshape --force'" in p.stderr
    p = cluster("reshape", "--node", "3:rate=1gbit", check=False)
    assert p.returncode == 2 and "--node 3:rate=1gbit: node 3 does not exist (nodes are 0..2)" in p.stderr
    st = status_json()
    assert st["nodes"][1]["cpu_percent"] is None and len(st.get("reshaped") or []) == reshaped, st
    assert not st["problems"], st
    # With no campaign running, a CPU cap goes in and comes out: the kernel's quota shows both.
    try:
        cluster("reshape", "--node", "1:cpu=50%")
        st = status_json()
        assert st["nodes"][1]["cpu_percent"] == 50 and st["nodes"][1]["live"]["cgroup"]["quota_us"] == 50_000, st
        assert st["reshaped"][-1]["changes"] == ["node 1: CPU cap none -> 50%"] and not st["problems"], st
    finally:
        cluster("reshape", "--node", "1:cpu=none")
    st = status_json()
    assert st["nodes"][1]["cpu_percent"] is None and st["nodes"][1]["live"]["cgroup"]["quota_us"] is None, st


def test_a_halved_link_fails_the_check_and_noise_does_not(cluster3, tmp_path):
    res = tmp_path / "res"
    first, second = _collect(res, *BW), _collect(res, *BW)
    rc, doc = _check(second, first, res)
    assert rc == 0, doc
    cluster("reshape", "--link-rate", "100mbit")
    st = status_json()
    assert not st["problems"] and all(n["live"]["send_rate_bits"] == 100_000_000 for n in st["nodes"]), st
    assert st["reshaped"][-1]["changes"][0] == "node 0: link 200Mbit -> 100Mbit"
    third = _collect(res, *BW)
    rc, doc = _check(third, first, res)
    assert rc == 1, doc
    fell = {c["ceiling"]: c["change"] for m in doc["metrics"] for c in m["changes"] if c["beyond_noise"]}
    assert "server" in fell and all(-0.6 < v < -0.4 for v in fell.values()), doc
    assert all(c["direction"] == "fell" for m in doc["metrics"] for c in m["changes"] if c["beyond_noise"])
    p = rooftop("check", "latest", "--against", "history", "--results", str(res), check=False)
    assert p.returncode == 1 and "bw server ceiling fell" in p.stdout, p.stdout + p.stderr
    # The third run and each of its samples record the re-shaped links.
    nodes = Store(res, create=False).get_run(third).config["nodes"]
    assert all(n["emulation"]["link_rate_bits"] == 100_000_000 for n in nodes), nodes
    for r in samples(res, third):
        assert all(n["links"][0]["send_bits"] == 100_000_000 for n in json.loads(r["emulation"]).values()), r
    # The first run, measured at 200 Mbit/s, is not validated on the re-shaped cluster.
    p = rooftop("validate", first, "--results", str(res), "--windows", "1", check=False)
    assert p.returncode != 0 and "send rate 100Mbit, the run's: 200Mbit" in p.stderr, p.stderr


def test_the_server_nodes_link_halved_names_the_server_ceiling_not_the_client(cluster3, tmp_path):
    res = tmp_path / "res"
    cluster("reshape", "--link-rate", "100mbit", "--node", "0:rate=200mbit")
    before = _collect(res, *SERVER_NIC)
    _one_answer_everywhere(res, before)
    cluster("reshape", "--node", "0:rate=100mbit")
    after = _collect(res, *SERVER_NIC)
    rc, doc = _check(after, before, res)
    assert rc == 1, doc
    (m,) = doc["metrics"]
    by = {c["ceiling"]: c for c in m["changes"]}
    assert sorted(by) == ["client", "server"], m
    assert by["server"]["beyond_noise"] and by["server"]["direction"] == "fell", m
    assert -0.6 < by["server"]["change"] < -0.4, m
    assert not by["client"]["beyond_noise"] and abs(by["client"]["change"]) < 0.05, m
    assert (m["ratio_before"], m["ratio_after"]) == ([1, 2], [1, 1]), m
    assert m["bound_moved"].startswith("the server ceiling fell") and "the client ceiling held" in m["bound_moved"]
    # Each sample on node 0 records its link as it ran: 200 Mbit/s, then 100.
    rates = {
        run: {e["0"]["links"][0]["send_bits"] for r in samples(res, run) if "0" in (e := json.loads(r["emulation"]))}
        for run in (before, after)
    }
    assert rates == {before: {200_000_000}, after: {100_000_000}}, rates


def _one_answer_everywhere(res, run) -> None:
    """Issue 43: a run whose ridge the verdict locates (servers' link at 2R,
    clients' at R: 1 server per 2 clients) gives one answer in `model
    --json`, `size --json`, `export --format json`, `history --json` and the
    report: the same ridge interval and the same server count for the same
    client count, digit for digit."""
    from rooftop.model.answer import Ridge
    from rooftop.report.parts import ridge_text

    (m,) = json.loads(rooftop("model", run, "--results", str(res), "--json").stdout)["metrics"]
    assert m["verdict"]["kind"] in ("ratio", "range") and m["ridge"]["located"], m["verdict"]
    size = json.loads(rooftop("size", run, "--clients", "16", "--results", str(res), "--json").stdout)
    (exported,) = json.loads(rooftop("export", run, "--format", "json", "--results", str(res)).stdout)["answers"]
    assert exported["ridge"] == m["ridge"] and exported["verdict"] == m["verdict"]
    assert exported["recommended"] == m["recommended"] and exported["accuracy"] == m["accuracy"]
    (sixteen,) = [h for h in exported["how_many_servers"] if h["clients"] == 16]
    assert sixteen == size and size["servers"]["median"] is not None, size
    hist = json.loads(rooftop("history", "--results", str(res), "--json").stdout)
    ratios = [r["ratio"] for g in hist["groups"] for r in g["runs"] if r["run"] == run]
    assert ratios == [m["verdict"]["ratio"]], (ratios, m["verdict"])
    report = Path(rooftop("report", run, "--results", str(res)).stdout.strip().splitlines()[-1]).read_text()
    g = m["ridge"]
    assert ridge_text(Ridge(True, "", g["min"], g["median"], g["max"])) in report
    assert html.escape(size["text"], quote=False) in report, size["text"]
