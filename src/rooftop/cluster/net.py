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
downlink. tbf's burst (burst_bytes) is the larger of two full frames and
one kernel tick (1/KERNEL_HZ) at R: a frame must fit the bucket, a second
one and a tick's tokens make up for a dequeue held back by a tick, and no
more, because every byte of bucket can pass on top of R: a window of T
seconds reads at most burst / (R x T) above the link. The 64 KiB bucket
this replaced (a GSO packet, which veth hands tbf whole) let 1 s windows at
4 Mbit/s read 5-8 % above the link (up to 13 %); tbf now cuts GSO packets
into frames below 131 Mbit/s, where it costs little. Measured with iperf3
between two nodes (64 KiB bucket): 95-96 % of R as TCP goodput at 10
Mbit/s, 200 Mbit/s and 1 Gbit/s (the rest is TCP/IP/Ethernet headers,
which tbf counts), 92 % at 10 Gbit/s (CPU-bound on 2 cores). latency 50 ms
bounds the queue (limit = R x 50 ms + burst).

Several NICs per node (--nics-per-node K, rails): NIC k of every node is on
rail k, a bridge and subnet of its own, as multi-rail fabrics are built:

  rail k: bridge rooftop-br<k> (10.231.<k>.1/24)
            |-- rooftop-v<I>r<k> ==veth== rooftop-p<I>r<k> in rooftop-n<I> (10.231.<k>.<10+I>/24)

Rail 0 keeps the single-NIC names (rooftop-br0, rooftop-v<I>, rooftop-p<I>).
Each NIC is shaped to the link rate on its own. As on a fabric where every
NIC reaches every other (Slingshot, Carns et al. (CUG 2025)), a NIC reaches the other
rails too: the root namespace routes between the rail bridges (forwarding is
enabled on the rooftop bridges only, not machine-wide), and each node sends
what comes from a NIC's address out of that NIC (a routing rule per NIC,
'from ADDRESS lookup table 100+k'). So a process bound to NIC k sends
through NIC k's shaper whichever rail its peer is on, and a node's bandwidth
is K x R when its processes spread over its NICs, R when they all use one.

Groups (--groups G): each group of nodes has a switch of its own, the
bridge rooftop-gb<g>, and the groups are joined through a top switch, the
bridge rooftop-br0 (which keeps the root namespace's address 10.231.0.1):

  rooftop-br0 (top) --rooftop-gd<g> ==veth== rooftop-gu<g>-- rooftop-gb<g>
                                                   |-- rooftop-v<I> ==veth== rooftop-p<I> (node I of group g)

The group's link to the top switch is a veth pair shaped like a node's
link, in both directions (tbf on rooftop-gu<g>: what the group sends up;
on rooftop-gd<g>: what it receives), at the group link rate. One subnet
for every node (a tree of bridges, not routed), so addresses, /etc/hosts
and Slurm's NodeAddr are those of a cluster without groups; only the path
between two groups is longer and narrower.
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
#: Every rail's subnet is inside it (rail k: 10.231.<k>.0/24).
FABRIC = ipaddress.ip_network("10.231.0.0/16")
#: Routing table (and rule priority offset) of NIC k in a node: TABLE_BASE + k.
TABLE_BASE = 100
TBF_LATENCY = "50ms"
#: The longest frame tbf counts on a link: a 1500-byte MTU packet (the
#: veths' default, which the cluster keeps) and its 14-byte Ethernet header.
FRAME_BYTES = 1500 + 14
#: The kernel's tick rate (CONFIG_HZ; Debian's is 250): tbf's timer is
#: precise, but a dequeue held back by the tick loses what the bucket
#: cannot hold of that tick's tokens.
KERNEL_HZ = 250


def netns_name(i: int) -> str:
    return f"{PREFIX}n{i}"


def bridge_name(k: int = 0) -> str:
    return f"{PREFIX}br{k}"


def rail_subnet(k: int = 0) -> ipaddress.IPv4Network:
    return ipaddress.ip_network(f"10.231.{k}.0/24")


def group_bridge(g: int) -> str:
    return f"{PREFIX}gb{g}"


def group_uplink(g: int) -> str:
    """The group's end of its link to the top switch (in its bridge)."""
    return f"{PREFIX}gu{g}"


def group_downlink(g: int) -> str:
    """The top switch's end of group g's link (in rooftop-br0)."""
    return f"{PREFIX}gd{g}"


def bridge_address(k: int = 0) -> str:
    return str(rail_subnet(k).network_address + 1)


def host_veth(i: int, k: int = 0) -> str:
    return f"{PREFIX}v{i}" + (f"r{k}" if k else "")


def node_veth(i: int, k: int = 0) -> str:
    return f"{PREFIX}p{i}" + (f"r{k}" if k else "")


def node_address(i: int, k: int = 0) -> str:
    return str(rail_subnet(k).network_address + 10 + i)


def is_bridge(name: str) -> bool:
    return name.startswith((f"{PREFIX}br", f"{PREFIX}gb")) and name[len(PREFIX) + 2 :].isdigit()


def burst_bytes(rate_bits: int) -> int:
    """tbf's bucket at rate_bits/s: two full frames or one kernel tick at
    the rate, whichever is more. A window of T s reads at most this much
    above the link: within 1 % of it for 1 s windows from 2.5 Mbit/s up
    (a tick at R is 0.4 % of a second; two frames 0.6 % at 4 Mbit/s)."""
    return max(2 * FRAME_BYTES, rate_bits // 8 // KERNEL_HZ)


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


def check_subnet_free(rails: int = 1) -> None:
    """Refuses to build when something else than rooftop uses a rail's subnet."""
    subnets = [rail_subnet(k) for k in range(rails)]
    for e in run_json(["ip", "-j", "-4", "addr", "show"]):
        if e.get("ifname", "").startswith(PREFIX):
            continue
        for a in e.get("addr_info", []):
            net = ipaddress.ip_network(f"{a['local']}/{a['prefixlen']}", strict=False)
            for sub in subnets:
                if net.overlaps(sub):
                    raise ClusterError(
                        f"{e['ifname']} has address {a['local']}/{a['prefixlen']}, in "
                        f"the emulated cluster's subnet {sub}; remove it first"
                    )
    for r in run_json(["ip", "-j", "-4", "route", "show"]):
        dev, dst = r.get("dev", ""), r.get("dst", "")
        if dev.startswith(PREFIX) or dst in ("default", ""):
            continue
        try:
            for sub in subnets:
                if ipaddress.ip_network(dst, strict=False).overlaps(sub):
                    raise ClusterError(
                        f"route {dst} dev {dev} overlaps the emulated cluster's subnet {sub}; remove it first"
                    )
        except ValueError:
            continue


# building ----------------------------------------------------------------------
def create_bridge(k: int = 0, rails: int = 1) -> None:
    """Rail k's bridge; with several rails, it forwards between them."""
    br = bridge_name(k)
    run(["ip", "link", "add", br, "type", "bridge"])
    run(["ip", "addr", "add", f"{bridge_address(k)}/{rail_subnet(k).prefixlen}", "dev", br])
    run(["ip", "link", "set", br, "up"])
    if rails > 1:  # this bridge only: the machine's own forwarding setting is left alone
        set_forwarding(br)


def set_forwarding(dev: str) -> None:
    try:
        with open(f"/proc/sys/net/ipv4/conf/{dev}/forwarding", "w") as f:
            f.write("1\n")
    except OSError as e:
        raise ClusterError(
            f"cannot enable forwarding on {dev} (/proc/sys/net/ipv4/conf/{dev}/forwarding): {e.strerror}"
        ) from None


def forwarding(dev: str) -> bool:
    try:
        with open(f"/proc/sys/net/ipv4/conf/{dev}/forwarding") as f:
            return f.read().strip() == "1"
    except OSError:
        return False


def create_group(g: int, rate_bits: int | None) -> None:
    """Group g's switch (a bridge) and its link to the top switch
    (rooftop-br0, made first), shaped both ways to rate_bits."""
    br, up, down = group_bridge(g), group_uplink(g), group_downlink(g)
    run(["ip", "link", "add", br, "type", "bridge"])
    run(["ip", "link", "set", br, "up"])
    run(["ip", "link", "add", up, "type", "veth", "peer", "name", down])
    run(["ip", "link", "set", up, "master", br, "up"])
    run(["ip", "link", "set", down, "master", BRIDGE, "up"])
    shape(up, rate_bits)  # what the group sends to the other groups
    shape(down, rate_bits)  # what it receives from them


def create_node(i: int, rails: int = 1, switch: str | None = None) -> None:
    """Namespace, one veth pair to each rail's bridge (switch: the bridge of
    its group instead), addresses, loopback; with several rails, one routing
    rule per NIC; no shaping."""
    ns = netns_name(i)
    run(["ip", "netns", "add", ns])
    for k in range(rails):
        hv, nv = host_veth(i, k), node_veth(i, k)
        run(["ip", "link", "add", hv, "type", "veth", "peer", "name", nv])
        run(["ip", "link", "set", nv, "netns", ns])
        run(["ip", "link", "set", hv, "master", switch or bridge_name(k), "up"])
        run(["ip", "-n", ns, "addr", "add", f"{node_address(i, k)}/{rail_subnet(k).prefixlen}", "dev", nv])
        run(["ip", "-n", ns, "link", "set", nv, "up"])
        if rails > 1:
            route_nic(i, k)
    run(["ip", "-n", ns, "link", "set", "lo", "up"])


def route_nic(i: int, k: int) -> None:
    """What node i sends from NIC k's address leaves through NIC k: to its
    rail directly, to the other rails through the root namespace."""
    ns, nv, table = netns_name(i), node_veth(i, k), str(TABLE_BASE + k)
    run(["ip", "-n", ns, "route", "add", str(rail_subnet(k)), "dev", nv, "src", node_address(i, k), "table", table])
    run(["ip", "-n", ns, "route", "add", str(FABRIC), "via", bridge_address(k), "dev", nv, "table", table])
    run(["ip", "-n", ns, "rule", "add", "from", node_address(i, k), "lookup", table, "priority", str(TABLE_BASE + k)])


def node_rules(i: int) -> dict[str, str]:
    """{source address: table} of node i's routing rules (empty if none)."""
    try:
        rules = run_json(["ip", "-j", "-n", netns_name(i), "rule", "show"])
    except ClusterError:
        return {}
    return {r["src"]: str(r["table"]) for r in rules if r.get("src") and r.get("table")}


def shape(dev: str, rate_bits: int | None, netns: str | None = None) -> None:
    """tbf at rate_bits on dev's egress (None: no shaping)."""
    pre = ["tc"] + (["-n", netns] if netns else [])
    if rate_bits is None:
        run(pre + ["qdisc", "del", "dev", dev, "root"], check=False)
        return
    run(
        pre
        + [
            "qdisc",
            "replace",
            "dev",
            dev,
            "root",
            "tbf",
            "rate",
            f"{rate_bits}bit",
            "burst",
            str(burst_bytes(rate_bits)),
            "latency",
            TBF_LATENCY,
        ]
    )


def shape_node(i: int, rate_bits: int | None, k: int = 0) -> None:
    """Node i's NIC k, on its own."""
    shape(node_veth(i, k), rate_bits, netns_name(i))  # what node i sends through it
    shape(host_veth(i, k), rate_bits)  # what node i receives through it


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


def node_addresses(i: int, k: int = 0) -> list[str]:
    """The addresses of node i's NIC k."""
    try:
        info = run_json(["ip", "-j", "-n", netns_name(i), "-4", "addr", "show", "dev", node_veth(i, k)])
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
def congestion_control(netns: str) -> str:
    """The namespace's default TCP congestion control ("" if unreadable):
    how TCP flows through one shaped link share it. tbf queues one FIFO, so
    the split between flows is TCP's: with bbr two equal flows were seen
    splitting anywhere from 30/70 to 50/50 run to run, with cubic closer to
    even. The machine's setting is inherited, not changed."""
    p = run(["ip", "netns", "exec", netns, "cat", "/proc/sys/net/ipv4/tcp_congestion_control"], check=False)
    return p.stdout.strip() if p.returncode == 0 else ""


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
        if not is_bridge(link) and run(["ip", "link", "del", link], check=False).returncode == 0:
            removed.append(f"link {link}")  # (its peer, gone with it, is not listed again)
    for ns in list_netns():
        run(["ip", "netns", "del", ns], check=False)
        if os.path.exists(f"/run/netns/{ns}"):  # an empty file left by a failed 'netns add'
            try:
                os.unlink(f"/run/netns/{ns}")
            except OSError:
                pass
        removed.append(f"netns {ns}")
    for br in [link for link in list_links() if is_bridge(link)]:
        run(["ip", "link", "del", br])
        removed.append(f"bridge {br}")
    left = list_netns() + list_links()
    if left:
        raise ClusterError(f"could not remove {', '.join(left)}")
    return removed
