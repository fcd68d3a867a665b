"""Issue 42: `rooftop cluster down --force` mid-campaign failed the samples
with their symptoms only (an agent gone, no address file); a failed
sample now says first that the emulated cluster was removed, when its
nodes' namespaces are gone. Unit level: no emulated cluster is built (the
nodes name namespaces that do not exist)."""

from __future__ import annotations

from types import SimpleNamespace

from rooftop import emulation
from rooftop.campaign.processes import SampleFailed
from rooftop.campaign.runner import Runner
from rooftop.launchers.base import Node

GONE = Node(1, "rooftop-h6-gone", (0,), "10.99.0.2", {"netns": "rooftop-h6-gone"})
LOCAL = Node(0, "localhost", (1,))


def test_a_removed_clusters_namespaces_are_named_first_in_the_errors():
    errors = {0: "the agent of node 1 (rooftop-h6-gone) exited (code 1): no output", 1: "timed out"}
    emulation.name_removal([LOCAL, GONE], errors)
    for e in errors.values():
        assert e.startswith(f"{emulation.REMOVED}: its namespace(s) rooftop-h6-gone are gone; "), e
    assert errors[1].endswith("; timed out")
    emulation.name_removal([LOCAL, GONE], errors)  # said once
    assert errors[1].count(emulation.REMOVED) == 1
    off = {0: "timed out"}  # nodes off the emulated cluster: nothing to say
    emulation.name_removal([LOCAL], off)
    assert off == {0: "timed out"}


def test_a_placement_whose_servers_fail_on_a_removed_cluster_says_so():
    stored = []
    fake = SimpleNamespace(
        nodes=[LOCAL, GONE],
        servers=SimpleNamespace(start=lambda pl: (_ for _ in ()).throw(SampleFailed("server rank 0 exited (code 1)"))),
        rows=SimpleNamespace(failed=lambda pl, m, window, error: [{"key": f"{m}/{window}", "error": error}]),
        store=SimpleNamespace(add_sample=lambda **row: stored.append(row)),
        on_sample=lambda m, row: None,
        procs=SimpleNamespace(stop_all=lambda: None),
    )
    placement = SimpleNamespace(server_nodes=[1])
    rounds = [SimpleNamespace(measurement="a", windows=[0, 1])]  # (a ClientRound's)
    assert Runner._run_placement(fake, placement, rounds, False) == (0, 2)
    assert [r["error"] for r in stored] == [
        f"{emulation.REMOVED}: its namespace(s) rooftop-h6-gone are gone; server rank 0 exited (code 1)"
    ] * 2
