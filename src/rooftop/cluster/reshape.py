"""'rooftop cluster reshape': a running emulated cluster's link rates and
CPU caps changed in place, as a platform changes between two scheduled
runs (a slower fabric, a node's CPU capped), without rebuilding it.

What changes: a node's link (each of its NICs, both directions: the tbf
qdiscs of net.shape_node) and its CPU cap (the CFS quota of its cgroup:
cgroups.set_cap). What stays: namespaces, addresses, cores, node names,
and the processes running in the nodes (Slurm's daemons too).

The state file records the new emulation: each node's link_rate_bits,
cpu_percent and cpu_quota_us, and the spec ('cluster status' and
describe() show it), with every reshape appended to "reshaped" ({"at":
time, "changes": ["node 0: link 200Mbit -> 100Mbit", ...]}). So a run
started after it records the emulation it runs under (the launchers read
the state: rooftop.emulation), and a run measured before keeps its own:
'validate RUN' or 'collect --resume' of it on the reshaped cluster is
refused (rooftop.emulation.preflight), as on a rebuilt one. 'cluster up'
with the original options then finds a different cluster up.

Refused while a campaign holds this machine's cores lock (the CLI, as
for 'down'; --force skips it: the windows measured across the change are
then stored invalid, naming it). A step that fails puts back the nodes
already changed, and the state is not written.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from pathlib import Path

from rooftop.cluster import cgroups, lifecycle, net, state
from rooftop.cluster.spec import ClusterError, format_rate, parse_node_options, parse_rate

#: What a node option may change: the state's field of each.
FIELDS = {"rate": "link_rate_bits", "cpu": "cpu_percent"}


def parse(nodes: int, link_rate: str | None, node_opts: list[str]) -> dict[int, dict[str, float | int | None]]:
    """{node: {"rate": bits|None, "cpu": percent|None}} of what is asked:
    --link-rate for every node, then --node I:rate=R,cpu=P% (cpu=none: no
    cap; rate=none: unshaped) for one."""
    out: dict[int, dict[str, float | int | None]] = {}
    if link_rate is not None:
        rate = parse_rate(link_rate, "--link-rate")
        out = {i: {"rate": rate} for i in range(nodes)}
    for i, opts in parse_node_options(nodes, node_opts, cpu_none=True).items():
        out.setdefault(i, {}).update(opts)
    if not out:
        raise ClusterError("nothing to change: give --link-rate RATE and/or --node I:rate=R,cpu=P%")
    return out


def _cap(p) -> str:
    return "none" if p is None else f"{p:g}%"


def _layout(st: dict) -> cgroups.Layout:
    cg = st["cgroup"]
    return cgroups.Layout(int(cg["version"]), Path(cg["cpu"]), Path(cg["cpuset"]))


def _apply(node: dict, layout: cgroups.Layout, key: str, value) -> None:
    i = node["index"]
    if key == "rate":
        for nic in lifecycle.node_nics(node):
            net.shape_node(i, value, nic["rail"])
    else:
        cgroups.set_cap(layout, i, len(node["cores"]), value)


def _record(st: dict, node: dict, key: str, old, new) -> str:
    """One change made, in the cluster's state (the node and its spec), and
    in words."""
    i = node["index"]
    spec_node = st["spec"]["nodes"][i]
    if key == "rate":
        node["link_rate_bits"] = spec_node["link_rate"] = new
        return f"node {i}: link {format_rate(old)} -> {format_rate(new)}"
    node["cpu_percent"] = spec_node["cpu_percent"] = new
    node["cpu_quota_us"] = cgroups.quota_us(len(node["cores"]), new)
    return f"node {i}: CPU cap {_cap(old)} -> {_cap(new)}"


def reshape(link_rate: str | None, node_opts: list[str], log: Callable[[str], None] = lambda m: None) -> list[str]:
    """Changes the cluster that is up; returns the changes made, in words
    (none: it already was so). ClusterError: nothing is up, a bad option,
    a cluster with problems, or a step that failed (undone)."""
    lifecycle.require_root("reshape")
    with lifecycle.cluster_lock():
        st = state.load()
        if st is None:
            raise ClusterError(f"no emulated cluster is up (no state at {state.path()}); 'cluster up' builds one")
        wanted = parse(len(st["nodes"]), link_rate, node_opts)
        layout = _layout(st)
        problems = lifecycle.check(st, layout)
        if problems:
            raise ClusterError(
                f"the cluster is not as built ({problems[0]}): 'rooftop cluster up' with its options rebuilds it"
            )
        todo = []  # (node, key, old, new)
        for i, want in sorted(wanted.items()):
            node = st["nodes"][i]
            for key, new in want.items():
                old = node[FIELDS[key]]
                if old != new:
                    todo.append((node, key, old, new))
        done: list[tuple[dict, str, object]] = []
        try:
            for node, key, old, new in todo:
                _apply(node, layout, key, new)
                done.append((node, key, old))
        except BaseException:
            lifecycle.undoing(lambda: [_apply(n, layout, k, old) for n, k, old in reversed(done)])
            raise
        said = [_record(st, node, key, old, new) for node, key, old, new in todo]
        for line in said:
            log(line)
        if said:
            at = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
            st.setdefault("reshaped", []).append({"at": at, "changes": said})
            state.save(st)
        problems = lifecycle.check(st, layout)
        if problems:
            raise ClusterError(f"reshaped, but the kernel does not show it: {'; '.join(problems[:3])}")
        return said
