"""Building, checking and removing the emulated cluster.

up(spec): idempotent. The same spec again finds everything in place and
does nothing; a cluster left incomplete (a namespace deleted by hand, a
reboot that kept nothing but...) is rebuilt; a different spec is refused
("run 'rooftop cluster down' first") rather than silently replacing a
cluster a campaign may be using. Any failure or Ctrl-C while building
removes everything built so far (Ctrl-C is ignored during that cleanup).

Every cluster gets its node names in /etc/hosts (rooftop.cluster.hosts) and
an rsh agent for Open MPI (rooftop.cluster.mpi); up(spec, slurm=True) also
starts Slurm on it (rooftop.cluster.slurm), or adds Slurm to the same
cluster already up, and restarts Slurm when a daemon is gone.

down(): stops Slurm and munge (found by their command lines, which name the
state directory), removes every rooftop-* namespace, link and bridge and
every rooftop cgroup, found by name (the state file is not needed), the
marked /etc/hosts lines, the agent and the Slurm files (its logs stay), then
the state file. Processes still running in the cluster's namespaces or
cgroups are killed.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import os
import signal
from collections.abc import Callable

from rooftop.cluster import cgroups, hosts, mpi, net, slurm, state
from rooftop.cluster.spec import ClusterError, ClusterSpec, format_rate

Log = Callable[[str], None]


def require_root(action: str) -> None:
    if os.geteuid() != 0:
        raise ClusterError(
            f"'cluster {action}' needs root (network namespaces, tc and cgroups): run it with sudo, or as root"
        )


LOCK = "/run/rooftop-cluster.lock"


@contextlib.contextmanager
def cluster_lock():
    """One 'up' or 'down' at a time on this machine."""
    with open(LOCK, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ClusterError(f"another 'rooftop cluster up/down' is running (lock {LOCK})") from None
        yield


def _spec_key(spec: dict) -> dict:
    return json.loads(json.dumps(spec))


def leftovers(layout: cgroups.Layout | None = None) -> list[str]:
    """rooftop objects that exist on this machine (namespaces, links, cgroups)."""
    found = [f"netns {n}" for n in net.list_netns()] + [f"link {n}" for n in net.list_links()]
    if layout is not None:
        found += [f"cgroup {r}" for r in layout.roots() if r.is_dir()]
    found += [f"{hosts.path()} entry {name}" for _, name in hosts.entries()]
    found += [f"process {name} {pid}" for pid, name in sorted(slurm.processes().items())]
    if mpi.agent_path().exists():
        found.append(f"agent {mpi.agent_path()}")
    return found


def nic_records(i: int, rails: int, switch: str | None = None) -> list[dict]:
    """Node i's NICs, NIC k on rail k (NIC 0 is the node's address); switch:
    the bridge of its group (--groups)."""
    return [
        {
            "rail": k,
            "name": net.node_veth(i, k),
            "peer": net.host_veth(i, k),
            "address": net.node_address(i, k),
            "prefixlen": net.rail_subnet(k).prefixlen,
            "bridge": switch or net.bridge_name(k),
        }
        for k in range(rails)
    ]


def switch_of(spec: ClusterSpec, i: int) -> str | None:
    """The bridge node i hangs from when the cluster has groups (None: rooftop-br0)."""
    return net.group_bridge(spec.nodes[i].group) if spec.groups > 1 else None


def group_records(spec: ClusterSpec) -> list[dict]:
    """Each group: its switch, its link to the top switch and its nodes
    (empty without --groups)."""
    if spec.groups == 1:
        return []
    return [
        {
            "group": g,
            "switch": net.group_bridge(g),
            "uplink": net.group_uplink(g),
            "downlink": net.group_downlink(g),
            "link_rate_bits": spec.group_link_rate,
            "nodes": spec.group_nodes(g),
        }
        for g in range(spec.groups)
    ]


def node_record(spec: ClusterSpec, layout: cgroups.Layout, i: int) -> dict:
    n = spec.nodes[i]
    grouped = {"group": n.group, "switch": switch_of(spec, i)} if spec.groups > 1 else {}
    return {
        "index": i,
        "name": f"n{i}",
        "netns": net.netns_name(i),
        "hostname": net.netns_name(i),
        "address": net.node_address(i),
        "nics": nic_records(i, spec.nics_per_node, switch_of(spec, i)),
        **grouped,
        "prefixlen": net.SUBNET.prefixlen,
        "veth_host": net.host_veth(i),
        "veth_node": net.node_veth(i),
        "cores": list(n.cores),
        "shared_with": spec.shared_with(i),
        "cpu_percent": n.cpu_percent,
        "cpu_quota_us": cgroups.quota_us(len(n.cores), n.cpu_percent),
        "cpu_period_us": cgroups.PERIOD_US,
        "link_rate_bits": n.link_rate,
        "cgroups": [str(d) for d in layout.node_dirs(i)],
        "cgroup_procs": cgroups.procs_files(layout, i),
    }


def build(spec: ClusterSpec, layout: cgroups.Layout, log: Log) -> dict:
    """Builds everything (nothing of the cluster exists yet) and records it."""
    rails = spec.nics_per_node
    net.check_subnet_free(rails)
    for k in range(rails):
        net.create_bridge(k, rails)
    for g in range(spec.groups if spec.groups > 1 else 0):
        net.create_group(g, spec.group_link_rate)
    cgroups.create_root(layout)
    nodes = []
    for n in spec.nodes:
        net.create_node(n.index, rails, switch_of(spec, n.index))
        net.shape_node(n.index, n.link_rate)  # NIC 0
        for k in range(1, rails):  # the other rails' NICs
            net.shape_node(n.index, n.link_rate, k)
        cgroups.create_node(layout, n.index, n.cores, n.cpu_percent)
        nodes.append(node_record(spec, layout, n.index))
        log(
            f"node {n.index}: {net.netns_name(n.index)} "
            + ", ".join(net.node_address(n.index, k) for k in range(rails))
        )
    data = {
        "version": state.VERSION,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "spec": _spec_key(spec.to_dict()),
        "bridge": {"name": net.BRIDGE, "address": f"{net.BRIDGE_ADDRESS}/{net.SUBNET.prefixlen}"},
        "rails": [
            {
                "rail": k,
                "bridge": net.bridge_name(k),
                "subnet": str(net.rail_subnet(k)),
                "address": f"{net.bridge_address(k)}/{net.rail_subnet(k).prefixlen}",
            }
            for k in range(rails)
        ],
        "cgroup": layout.describe(),
        "machine_cores": spec.machine_cores,
        "nodes": nodes,
    }
    if spec.groups > 1:
        data["groups"] = group_records(spec)
    hosts.add([(n["address"], n["hostname"]) for n in nodes])
    data["mpi"] = {"rsh_agent": str(mpi.write_agent(nodes)), "subnet": str(net.SUBNET)}
    state.save(data)
    return data


def up(spec: ClusterSpec, log: Log = lambda m: None, with_slurm: bool = False) -> tuple[dict, bool]:
    """Brings the cluster up (with Slurm). Returns (state, built): built is
    False when the same cluster was already up (and Slurm running, if asked)."""
    require_root("up")
    with cluster_lock():
        st, built = _up(spec, log)
        if with_slurm and (built or not st.get("slurm") or slurm.problems(st)):
            st = _start_slurm(st, built, log)
            built = True
        return st, built


def undoing(action: Callable[[], object]) -> None:
    """Runs a cleanup without letting Ctrl-C interrupt it."""
    old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        action()
    finally:
        signal.signal(signal.SIGINT, old_int)


def _start_slurm(st: dict, built: bool, log: Log) -> dict:
    """(Re)starts Slurm on the cluster st; on failure or Ctrl-C stops it, and
    removes the whole cluster if this 'up' built it."""
    if st.get("slurm"):
        log("slurm: restarting it (" + "; ".join(slurm.problems(st)) + ")")
    slurm.stop(_node_pids())
    st = {k: v for k, v in st.items() if k != "slurm"}
    state.save(st)
    try:
        st["slurm"] = slurm.start(st, log)
        state.save(st)
        return st
    except BaseException:
        undoing(lambda: remove_everything(cgroups.detect()) if built else slurm.stop(_node_pids()))
        raise


def _node_pids() -> list[int]:
    return [pid for ns in net.list_netns() for pid in net.netns_pids(ns)]


def _up(spec: ClusterSpec, log: Log) -> tuple[dict, bool]:
    layout = cgroups.detect()
    old = state.load()
    if old is not None:
        if old["spec"] != _spec_key(spec.to_dict()):
            raise ClusterError(
                f"a different emulated cluster is up ({describe(old)}); run 'rooftop cluster down' first"
            )
        problems = check(old, layout)
        if not problems:
            return old, False
        log(f"the cluster is incomplete ({problems[0]}); rebuilding it")
        remove_everything(layout)
    else:
        found = leftovers(layout)
        if found:
            log(
                f"removing leftovers of an earlier cluster: {', '.join(found[:4])}" + (" ..." if len(found) > 4 else "")
            )
            remove_everything(layout)
    try:
        return build(spec, layout, log), True
    except BaseException:
        # Ctrl-C, SIGTERM (the CLI turns it into KeyboardInterrupt) or a
        # failed step: undo everything, without being interrupted again.
        undoing(lambda: remove_everything(layout))
        raise


def remove_everything(layout: cgroups.Layout | None = None) -> list[str]:
    removed = slurm.stop(_node_pids())
    removed += net.remove_all()
    removed += cgroups.remove_all(layout)
    removed += [f"{hosts.path()} entry {name}" for name in hosts.remove()]
    removed += mpi.remove()
    if state.remove():
        removed.append(f"state {state.path()}")
    return removed


def down() -> list[str]:
    require_root("down")
    try:
        layout = cgroups.detect()
    except ClusterError:
        layout = None
    with cluster_lock():
        return remove_everything(layout)


def describe(st: dict) -> str:
    s = st["spec"]
    rates = sorted({n["link_rate"] for n in s["nodes"]}, key=lambda r: (r is None, r or 0))
    caps = [f"n{n['index']}:cpu={n['cpu_percent']:g}%" for n in s["nodes"] if n["cpu_percent"]]
    k = s["nics_per_node"]
    nics = f", {k} NICs each (rails)" if k > 1 else ""
    g = s.get("groups", 1)  # ClusterSpec.to_dict records no group fields for one group
    groups = f", {g} groups joined by links of {format_rate(s['group_link_rate'])}" if g > 1 else ""
    return (
        f"{len(s['nodes'])} nodes, {s['cores_per_node']} core(s) each{nics}, links "
        f"{'/'.join(format_rate(r) for r in rates)}{groups}" + (f", {' '.join(caps)}" if caps else "")
    )


def nic_status(node: dict, nic: dict, netns_exists: bool = True) -> tuple[dict, list[str]]:
    """What the kernel says about one NIC of a node: its addresses and the
    rates of its two shapers, and what differs from the state file."""
    i, ns, k = node["index"], node["netns"], nic["rail"]
    up_q = net.read_rate(nic["name"], ns)  # egress of the node: what it sends
    down_q = net.read_rate(nic["peer"])  # egress towards it: what it receives
    live = {
        "name": nic["name"],
        "rail": k,
        "addresses": net.node_addresses(i, k),
        "send_qdisc": up_q["qdisc"],
        "send_rate_bits": up_q["rate_bits"],
        "receive_qdisc": down_q["qdisc"],
        "receive_rate_bits": down_q["rate_bits"],
    }
    what = f"node {i}" + (f" NIC {nic['name']}" if k else "")
    problems = []
    if netns_exists and nic["address"] not in live["addresses"]:
        problems.append(f"{ns} has no address {nic['address']} on {nic['name']}")
    if not net.link_up(nic["peer"]):
        problems.append(f"link {nic['peer']} is missing or down")
    want = node["link_rate_bits"]
    for side, got in (("send", live["send_rate_bits"]), ("receive", live["receive_rate_bits"])):
        if want is not None and (got is None or abs(got - want) > want * 0.01):
            problems.append(f"{what} {side} rate is {got} bit/s, not {want}")
    return live, problems


def node_nics(node: dict) -> list[dict]:
    """The node's NICs (a state written before NICs were recorded: its one veth)."""
    return node.get("nics") or [
        {
            "rail": 0,
            "name": node["veth_node"],
            "peer": node["veth_host"],
            "address": node["address"],
            "prefixlen": node["prefixlen"],
            "bridge": net.BRIDGE,
        }
    ]


def node_status(node: dict, layout: cgroups.Layout | None) -> dict:
    """What the kernel says about one node, beside what the state file says."""
    i, ns = node["index"], node["netns"]
    nics = node_nics(node)
    live = {"netns": ns in net.list_netns(), "cgroup": cgroups.read_node(layout, i) if layout else None}
    problems = []
    if not live["netns"]:
        problems.append(f"namespace {ns} is missing")
    nic_live = []
    for nic in nics:
        got, why = nic_status(node, nic, live["netns"])
        nic_live.append(got)
        problems += why
    first = nic_live[0]
    live.update(
        {key: first[key] for key in ("addresses", "send_qdisc", "send_rate_bits", "receive_qdisc", "receive_rate_bits")}
    )
    live["nics"] = nic_live
    if len(nics) > 1 and live["netns"]:
        rules = net.node_rules(i)
        for nic in nics:
            if rules.get(nic["address"]) != str(net.TABLE_BASE + nic["rail"]):
                problems.append(f"node {i} has no routing rule for {nic['name']} ({nic['address']})")
    cg = live["cgroup"]
    if cg is None:
        problems.append(f"node {i} has no cgroup")
    else:
        if cg["cpus"] != cgroups.cpulist(node["cores"]) and _expand(cg["cpus"]) != sorted(set(node["cores"])):
            problems.append(f"node {i} cgroup cpus are {cg['cpus']}, not {node['cores']}")
        if cg["quota_us"] != node["cpu_quota_us"]:
            problems.append(f"node {i} CPU quota is {cg['quota_us']}, not {node['cpu_quota_us']}")
    return {**node, "live": live, "problems": problems}


def _expand(cpus: str) -> list[int]:
    out = []
    for part in cpus.split(","):
        if "-" in part:
            a, b = part.split("-")
            out += range(int(a), int(b) + 1)
        elif part:
            out.append(int(part))
    return sorted(set(out))


def bridge_problems(st: dict) -> list[str]:
    """Each rail's bridge (rail 0 only for a single-NIC cluster), and with
    several rails its forwarding between them; each group's switch and its
    link to the top switch, shaped as recorded."""
    rails = st.get("rails") or [{"bridge": net.BRIDGE}]
    out = []
    for r in rails:
        if not net.link_up(r["bridge"]):
            out.append(f"bridge {r['bridge']} is missing or down")
        elif len(rails) > 1 and not net.forwarding(r["bridge"]):
            out.append(f"bridge {r['bridge']} does not forward between the rails")
    for g in st.get("groups") or []:
        if not net.link_up(g["switch"]):
            out.append(f"group {g['group']}: switch {g['switch']} is missing or down")
        want = g["link_rate_bits"]
        for dev, side in ((g["uplink"], "send"), (g["downlink"], "receive")):
            if not net.link_up(dev):
                out.append(f"group {g['group']}: link {dev} is missing or down")
                continue
            got = net.read_rate(dev)["rate_bits"]
            if want is not None and (got is None or abs(got - want) > want * 0.01):
                out.append(f"group {g['group']} {side} rate is {got} bit/s, not {want}")
    return out


def group_status(st: dict) -> list[dict]:
    """Each group as recorded, with the rates read back from tc ("live")."""
    out = []
    for g in st.get("groups") or []:
        up, down = net.read_rate(g["uplink"]), net.read_rate(g["downlink"])
        out.append({**g, "live": {"send_rate_bits": up["rate_bits"], "receive_rate_bits": down["rate_bits"]}})
    return out


def check(st: dict, layout: cgroups.Layout | None) -> list[str]:
    problems = bridge_problems(st)
    for node in st["nodes"]:
        problems += node_status(node, layout)["problems"]
    return problems + names_problems(st)


def names_problems(st: dict) -> list[str]:
    """The node names in /etc/hosts and the rsh agent, as 'up' made them."""
    want = sorted((n["address"], n.get("hostname", n["netns"])) for n in st["nodes"])
    out = [] if sorted(hosts.entries()) == want else [f"{hosts.path()} lacks the nodes' names"]
    if not mpi.agent_path().exists():
        out.append(f"the rsh agent {mpi.agent_path()} is missing")
    return out


def status() -> dict:
    """{"up": bool, "state": path, "nodes": [...with "live"...], "problems": [...],
    "leftovers": [...]} -- works without root, reading less."""
    try:
        layout = cgroups.detect()
    except ClusterError:
        layout = None
    st = state.load()
    if st is None:
        found = leftovers(layout) if os.geteuid() == 0 else []
        return {"up": False, "state": str(state.path()), "nodes": [], "problems": [], "leftovers": found}
    root = os.geteuid() == 0
    if not root:  # namespaces cannot be entered: the state file only
        nodes = [{**n, "live": None, "problems": []} for n in st["nodes"]]
    else:
        nodes = [node_status(n, layout) for n in st["nodes"]]
    problems = bridge_problems(st) if root else []
    for n in nodes:
        problems += n["problems"]
    if root:
        problems += names_problems(st)
    slurm_st = None
    if st.get("slurm"):
        slurm_st = {**st["slurm"], "problems": slurm.problems(st) if root else [], "sinfo": slurm.sinfo_text()}
        problems += slurm_st["problems"]
    return {
        "up": True,
        "state": str(state.path()),
        "created": st["created"],
        "reshaped": st.get("reshaped") or [],
        "bridge": st["bridge"],
        "rails": st.get("rails") or [],
        "nics_per_node": st["spec"]["nics_per_node"],
        "groups": group_status(st) if root else list(st.get("groups") or []),
        "cgroup": st["cgroup"],
        "machine_cores": st["machine_cores"],
        "summary": describe(st),
        "nodes": nodes,
        "problems": problems,
        "leftovers": [],
        "verified": root,
        "mpi": st.get("mpi"),
        "slurm": slurm_st,
        "tcp_congestion_control": net.congestion_control(st["nodes"][0]["netns"]) if root and nodes else None,
    }
