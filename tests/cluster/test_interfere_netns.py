"""Ground truth of rooftop interfere on the emulated cluster (3 nodes, every
link shaped to R each way): a net flood through the server node's link
leaves the service the share of the link the flood does not take (service
beside + flood beside = the service alone, within 15 %); ensembles of 1, 2
and 4 flood copies share that link with the service, so its impact grows
with the copies (beyond one copy).

How two equal flows split one link is TCP's doing, not rooftop's: tbf
queues one FIFO, and the nodes inherit the machine's congestion control.
With bbr (this machine's) the equal-flood impact read 1.9-3.4 run to run
(30/70 to 50/50 splits), the sum within 1 %; with cubic it read 2.1-2.6
with rare outliers. So the test checks the share left, not the split,
and that more copies slow the service more than one, not the order of 2
and 4 copies (3 and 5 flows, whose splits overlap).

Not tested here: 'a cpu load on cores the service does not use leaves its
rate within 5 %'. This machine has 2 cores and the emulated cluster's 3
nodes share them (nodes 0 and 2 on one core), so no core is free of the
service; tests/interference/test_interfere_local.py checks the other side
(a load on the server's core lowers RPC, and is named as CPU)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "interference"))

from cluster_util import cluster_up, needs_root, rooftop  # noqa: E402
from test_background_loads import processes_mentioning  # noqa: E402

pytestmark = needs_root

# The service: one server process on n0, one client process on n1 reading
# 1 MiB blocks (the validate stage with one server and one client node):
# about 15 per window even beside the flood, so the rate is not quantized
# by whole operations.
SERVICE = [
    "--launcher",
    "netns",
    "--metrics",
    "bw",
    "--stages",
    "validate",
    "--set",
    "validate.server_nodes=[1]",
    "--set",
    "validate.client_nodes=[1]",
    "--set",
    "validate.servers_per_node=1",
    "--set",
    "validate.clients_per_node=1",
    "--set",
    "engine.server_progress=block",
    "--set",
    "engine.client_progress=block",
    "--set",
    "engine.timeout=60",
    "--set",
    "bw.size=1MiB",
    "--duration",
    "3",
    "--warmup",
    "0.5",
    "--windows",
    "2",
    "--load-warmup",
    "3",
]
# The flood: n2 reads 1 MiB blocks from a server on n0, one at a time: a
# flow equal to the service's, through n0's link in the same direction.
# Its units are windows of 1.5 s: several 1 MiB reads even with 5 flows.
FLOOD = [
    "--loads",
    "net",
    "--load-nodes",
    "0,2",
    "--load-set",
    "net.pattern=broadcast",
    "--load-set",
    "net.size=1MiB",
    "--load-set",
    "net.concurrency=1",
    "--load-set",
    "net.window=1.5",
]


def _interfere(results: Path, *more) -> dict:
    p = rooftop("interfere", "--results", str(results), "--json", *SERVICE, *FLOOD, *more, timeout=600)
    return json.loads(p.stdout)


def _impact(cond: dict) -> dict:
    (i,) = [i for i in cond["impacts"] if i["stage"] == "validate"]
    return i


def _link_left(cond: dict) -> float:
    """(service beside the flood + every flood copy beside it) / service
    alone: 1 when the service gets exactly the share the flood leaves."""
    i = _impact(cond)
    floods = sum(x["rate_beside"] for x in cond["loads"]) * 1e9  # GB/s -> bytes/s
    return (i["rate_loaded"] + floods) / i["rate_isolated"]


def test_an_equal_flood_through_the_servers_link_leaves_the_service_what_it_does_not_take(tmp_path):
    with cluster_up("--nodes", "3", "--link-rate", "80mbit"):
        doc = _interfere(tmp_path)
    (cond,) = doc["conditions"]
    assert cond["shared"].startswith("network: the links of n0"), cond["shared"]
    i = _impact(cond)
    (flood,) = cond["loads"]
    # The impact factor is the share of the link the flood leaves.
    assert _link_left(cond) == pytest.approx(1.0, abs=0.15), (i, flood)
    # Two flows on one link: the service loses a real share (at most its
    # half here: 1.9-3.4 under bbr, see the module's note), and slows the
    # flood in turn.
    assert 1.6 <= i["impact_rate"] <= 4.5 and i["impact_p99"] > 1.3, i
    assert flood["slowdown"] > 1.2, flood
    assert processes_mentioning(str(tmp_path)) == []


def test_flood_ensembles_slow_the_service_down_monotonically(tmp_path):
    with cluster_up("--nodes", "3", "--link-rate", "80mbit"):
        doc = _interfere(tmp_path, "--ensemble", "1,2,4")
    assert all(c["failed"] == 0 for c in doc["conditions"]), [c["failed"] for c in doc["conditions"]]
    impacts = [_impact(c)["impact_rate"] for c in doc["conditions"]]
    for c in doc["conditions"]:  # every copy measured its rate alone and beside the service
        assert all(x["rate_alone"] and x["rate_beside"] for x in c["loads"]), c["loads"]
    assert [c["copies"] for c in doc["conditions"]] == [1, 2, 4]
    # More copies, more impact: 2 and 4 copies each slow the service more
    # than 1. Between 2 and 4 the order is TCP's split (the module's note):
    # CI, 2026-11-27, read 2.3, 7.9 and 5.8 (the 2-copy service kept an
    # eighth of the link, where an equal split leaves a third).
    assert impacts[0] < min(impacts[1], impacts[2]), impacts
    for c in doc["conditions"]:  # and the service keeps what the copies leave
        assert _link_left(c) == pytest.approx(1.0, abs=0.15), (c["copies"], c["impacts"], c["loads"])
    assert impacts[2] > 3.0, impacts  # 5 flows on the link; TCP shares it roughly equally
