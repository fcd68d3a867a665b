"""The state file of the emulated cluster: what 'cluster up' built, read by
'cluster status', 'cluster down' and the netns launcher.

Path: /run/rooftop-cluster/state.json (a tmpfs: gone after a reboot, as the
namespaces are), or $ROOFTOP_CLUSTER_STATE. Written atomically (temporary
file + rename). Format (version 1):

  {"version": 1, "created": "2025-01-01T12:00:00+00:00",
   "spec": {...the validated options, compared by a second 'up'...},
   "bridge": {"name": "rooftop-br0", "address": "10.231.0.1/24"},
   "cgroup": {"version": 1, "cpu": "/sys/fs/cgroup/cpu", "cpuset": "/sys/fs/cgroup/cpuset"},
   "machine_cores": [0, 1],
   "nodes": [{"index": 0, "name": "n0", "netns": "rooftop-n0",
              "address": "10.231.0.10", "prefixlen": 24,
              "nics": [{"rail": 0, "name": "rooftop-p0", "peer": "rooftop-v0",
                        "address": "10.231.0.10", "prefixlen": 24, "bridge": "rooftop-br0"}, ...],
              "veth_host": "rooftop-v0", "veth_node": "rooftop-p0",
              "cores": [0], "shared_with": [2],
              "cpu_percent": null, "cpu_quota_us": null, "cpu_period_us": 100000,
              "link_rate_bits": 200000000,
              "cgroups": ["/sys/fs/cgroup/cpu/rooftop/n0", "/sys/fs/cgroup/cpuset/rooftop/n0"],
              "cgroup_procs": [".../cpu/rooftop/n0/cgroup.procs", ".../cpuset/rooftop/n0/cgroup.procs"]},
             ...]}

With --nics-per-node K, "rails" lists each rail's bridge, subnet and
address ({"rail": k, "bridge": "rooftop-br<k>", "subnet": "10.231.<k>.0/24",
"address": "10.231.<k>.1/24"}) and each node's "nics" its K NICs, NIC k on
rail k ("address" and "veth_*" stay NIC 0's). link_rate_bits is each NIC's.

With --groups G, "groups" lists each group ({"group": g, "switch":
"rooftop-gb<g>", "uplink": "rooftop-gu<g>", "downlink": "rooftop-gd<g>",
"link_rate_bits": R2, "nodes": [...]}) and each node its "group" and
"switch" (its group's bridge); the spec records groups and group_link_rate.

'cluster reshape' changes nodes' link_rate_bits, cpu_percent and
cpu_quota_us (and the spec) in place, and appends {"at": time, "changes":
[text, ...]} to "reshaped".

cpu_percent null: no CPU cap (the node has its cores); link_rate_bits null:
the link is not shaped. shared_with: the other nodes using one of its cores.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from rooftop import files
from rooftop.cluster.spec import ClusterError

DEFAULT_PATH = "/run/rooftop-cluster/state.json"
VERSION = 1


def path() -> Path:
    return Path(os.environ.get("ROOFTOP_CLUSTER_STATE") or DEFAULT_PATH)


def load(p: Path | None = None) -> dict | None:
    """The state, or None when no cluster is recorded."""
    p = p or path()
    try:
        text = p.read_text()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ClusterError(f"cannot read the cluster state {p}: {e.strerror}") from None
    try:
        data = json.loads(text)
    except ValueError:
        raise ClusterError(f"the cluster state {p} is not JSON; run 'rooftop cluster down'") from None
    if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(data.get("nodes"), list):
        raise ClusterError(f"the cluster state {p} is not a version {VERSION} state; run 'rooftop cluster down'")
    return data


def save(data: dict, p: Path | None = None) -> Path:
    p = p or path()
    return files.write(p, json.dumps(data, indent=1) + "\n", mode=0o644)


def remove(p: Path | None = None) -> bool:
    p = p or path()
    try:
        p.unlink()
    except FileNotFoundError:
        return False
    try:
        p.parent.rmdir()
    except OSError:
        pass
    return True


def emulated_nodes(hosts: list[str], p: Path | None = None) -> dict[str, dict] | None:
    """For launchers given host names (srun, mpiexec): when every host is a
    node of the emulated cluster that is up, {host: its node record, with
    "emulation" as the netns launcher records it, shared_with renumbered to
    positions in hosts}; None when none is (a real cluster). A mix, or a
    node listed twice, raises ClusterError."""
    try:
        st = load(p)
    except ClusterError:
        return None
    by_name = {n.get("hostname", n["netns"]): n for n in (st or {}).get("nodes", [])}
    known = [h for h in hosts if h in by_name]
    if not known:
        return None
    if len(known) != len(hosts):
        other = next(h for h in hosts if h not in by_name)
        raise ClusterError(f"hosts mix nodes of the emulated cluster ({known[0]}) with {other}")
    if len(set(hosts)) != len(hosts):
        raise ClusterError("a node of the emulated cluster is listed twice (one host, one node)")
    position = {by_name[h]["index"]: i for i, h in enumerate(hosts)}
    out = {}
    for h in hosts:
        n = by_name[h]
        out[h] = {
            **n,
            "state": st,
            "emulation": {
                "netns": n["netns"],
                "cpu_percent": n["cpu_percent"],
                "link_rate_bits": n["link_rate_bits"],
                "shared_with": [position[j] for j in n["shared_with"] if j in position],
                **group_of(n, st),
            },
        }
    return out


def group_of(node: dict, st: dict | None) -> dict:
    """What a launcher records of a node's group on a cluster with groups
    ({"group", "switch", "group_link_rate_bits"}; {} without groups)."""
    if "group" not in node:
        return {}
    g = next((x for x in (st or {}).get("groups") or [] if x["group"] == node["group"]), {})
    return {"group": node["group"], "switch": node["switch"], "group_link_rate_bits": g.get("link_rate_bits")}
