"""Network of the emulated cluster: one namespace per node, a veth pair from
each namespace to a bridge in the root namespace, and tc shaping on both ends.

  root namespace: bridge rooftop-br0 (10.231.0.1/24)
                    |-- rooftop-v<I> ==veth== rooftop-p<I>  in namespace rooftop-n<I> (10.231.0.<10+I>/24)

Every object is named rooftop-*, so 'cluster down' finds them without the
state file. The root namespace (where a campaign runs ping/stat/shutdown)
reaches every node through the bridge's address.

Shaping: a tbf qdisc on the egress of both veth ends. The namespace end
(rooftop-p<I>) shapes what the node sends, the host end (rooftop-v<I>) what
it receives, so a node's link is R in each direction, as a NIC is. Traffic
between two nodes crosses both: the sender's uplink and the receiver's
downlink. tbf's burst is max(64 KiB, 1 ms at R): at least one GSO packet
(veth sends up to 64 KiB at once; a smaller bucket makes tbf segment every
packet and fall short at high rates) and small enough that a TCP stream gets
R, not more. Measured with iperf3 between two nodes: 95-96 % of R as TCP
goodput at 10 Mbit/s, 200 Mbit/s and 1 Gbit/s (the rest is TCP/IP/Ethernet
headers, which tbf counts), 92 % at 10 Gbit/s (CPU-bound on 2 cores).
latency 50 ms bounds the queue (limit = R x 50 ms + burst).
"""

from __future__ import annotations

import ipaddress
import os
import signal

from rooftop.cluster.commands import run, run_json
from rooftop.cluster.spec import ClusterError

PREFIX = "rooftop-"
BRIDGE = "rooftop-br0"
SUBNET = ipaddress.ip_network("10.231.0.0/24")
BRIDGE_ADDRESS = "10.231.0.1"
TBF_LATENCY = "50ms"
MIN_BURST = 64 * 1024


def netns_name(i: int) -> str:
    return f"{PREFIX}n{i}"


def host_veth(i: int) -> str:
    return f"{PREFIX}v{i}"


def node_veth(i: int) -> str:
    return f"{PREFIX}p{i}"


def node_address(i: int) -> str:
    return str(SUBNET.network_address + 10 + i)


def burst_bytes(rate_bits: int) -> int:
    return max(MIN_BURST, rate_bits // 8 // 1000)


# discovery -------------------------------------------------------------------
def list_netns() -> list[str]:
    """rooftop-* network namespaces."""
    names = [e["name"] for e in run_json(["ip", "-j", "netns", "list"])]
    # 'ip netns list' reads /run/netns; a half-made namespace may be a bare file
    try:
        names += [n for n in os.listdir("/run/netns") if n not in names]
    except OSError:
        pass
    return sorted(n for n in names if n.startswith(PREFIX))


def list_links(netns: str | None = None) -> list[str]:
    """rooftop-* links of the root namespace (or of netns)."""
    argv = ["ip", "-j"] + (["-n", netns] if netns else []) + ["link", "show"]
    return sorted(e["ifname"] for e in run_json(argv) if e.get("ifname", "").startswith(PREFIX))


def check_subnet_free() -> None:
    """Refuses to build when something else than rooftop uses the subnet."""
    for e in run_json(["ip", "-j", "-4", "addr", "show"]):
        if e.get("ifname", "").startswith(PREFIX):
            continue
        for a in e.get("addr_info", []):
            net = ipaddress.ip_network(f"{a['local']}/{a['prefixlen']}", strict=False)
            if net.overlaps(SUBNET):
                raise ClusterError(f"{e['ifname']} has address {a['local']}/{a['prefixlen']}, in the "
                                   f"emulated cluster's subnet {SUBNET}; remove it first")
    for r in run_json(["ip", "-j", "-4", "route", "show"]):
        dev, dst = r.get("dev", ""), r.get("dst", "")
        if dev.startswith(PREFIX) or dst in ("default", ""):
            continue
        try:
            if ipaddress.ip_network(dst, strict=False).overlaps(SUBNET):
                raise ClusterError(f"route {dst} dev {dev} overlaps the emulated cluster's subnet "
                                   f"{SUBNET}; remove it first")
        except ValueError:
            continue


# building ----------------------------------------------------------------------
def create_bridge() -> None:
    run(["ip", "link", "add", BRIDGE, "type", "bridge"])
    run(["ip", "addr", "add", f"{BRIDGE_ADDRESS}/{SUBNET.prefixlen}", "dev", BRIDGE])
    run(["ip", "link", "set", BRIDGE, "up"])


def create_node(i: int) -> None:
    """Namespace, veth pair to the bridge, address, loopback; no shaping."""
    ns, hv, nv = netns_name(i), host_veth(i), node_veth(i)
    run(["ip", "netns", "add", ns])
    run(["ip", "link", "add", hv, "type", "veth", "peer", "name", nv])
    run(["ip", "link", "set", nv, "netns", ns])
    run(["ip", "link", "set", hv, "master", BRIDGE, "up"])
    run(["ip", "-n", ns, "addr", "add", f"{node_address(i)}/{SUBNET.prefixlen}", "dev", nv])
    run(["ip", "-n", ns, "link", "set", nv, "up"])
    run(["ip", "-n", ns, "link", "set", "lo", "up"])


def shape(dev: str, rate_bits: int | None, netns: str | None = None) -> None:
    """tbf at rate_bits on dev's egress (None: no shaping)."""
    pre = ["tc"] + (["-n", netns] if netns else [])
    if rate_bits is None:
        run(pre + ["qdisc", "del", "dev", dev, "root"], check=False)
        return
    run(pre + ["qdisc", "replace", "dev", dev, "root", "tbf", "rate", f"{rate_bits}bit",
               "burst", str(burst_bytes(rate_bits)), "latency", TBF_LATENCY])


def shape_node(i: int, rate_bits: int | None) -> None:
    shape(node_veth(i), rate_bits, netns_name(i))   # what node i sends
    shape(host_veth(i), rate_bits)                   # what node i receives


# reading back ----------------------------------------------------------------------
def read_rate(dev: str, netns: str | None = None) -> dict:
    """The root qdisc of dev: {"qdisc": kind, "rate_bits": int|None} (kind None:
    the device or namespace is missing)."""
    pre = ["tc", "-j"] + (["-n", netns] if netns else [])
    try:
        qd = run_json(pre + ["qdisc", "show", "dev", dev])
    except ClusterError:
        return {"qdisc": None, "rate_bits": None}
    for q in qd:
        if q.get("root"):
            opts = q.get("options", {})
            rate = opts.get("rate")
            return {"qdisc": q.get("kind"), "rate_bits": int(rate) * 8 if rate is not None else None}
    return {"qdisc": "none", "rate_bits": None}


def node_addresses(i: int) -> list[str]:
    try:
        info = run_json(["ip", "-j", "-n", netns_name(i), "-4", "addr", "show", "dev", node_veth(i)])
    except ClusterError:
        return []
    return [a["local"] for e in info for a in e.get("addr_info", [])]


def link_up(name: str, netns: str | None = None) -> bool:
    argv = ["ip", "-j"] + (["-n", netns] if netns else []) + ["link", "show", "dev", name]
    try:
        info = run_json(argv)
    except ClusterError:
        return False
    return bool(info) and "UP" in info[0].get("flags", [])


# tearing down ----------------------------------------------------------------------
def netns_pids(ns: str) -> list[int]:
    p = run(["ip", "netns", "pids", ns], check=False)
    return [int(x) for x in p.stdout.split() if x.isdigit()]


def remove_all() -> list[str]:
    """Removes every rooftop-* namespace (killing what still runs in it) and
    link. Returns what it removed. Idempotent."""
    removed = []
    for ns in list_netns():
        for pid in netns_pids(ns):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    # Deleting one veth end deletes its peer: do it before the namespaces go,
    # as a namespace's devices are destroyed asynchronously.
    for link in list_links():
        if link != BRIDGE:
            run(["ip", "link", "del", link], check=False)
            removed.append(f"link {link}")
    for ns in list_netns():
        run(["ip", "netns", "del", ns], check=False)
        if os.path.exists(f"/run/netns/{ns}"):      # an empty file left by a failed 'netns add'
            try:
                os.unlink(f"/run/netns/{ns}")
            except OSError:
                pass
        removed.append(f"netns {ns}")
    if BRIDGE in list_links():
        run(["ip", "link", "del", BRIDGE])
        removed.append(f"bridge {BRIDGE}")
    left = list_netns() + list_links()
    if left:
        raise ClusterError(f"could not remove {', '.join(left)}")
    return removed
