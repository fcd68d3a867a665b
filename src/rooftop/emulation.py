"""The emulation a sample actually ran under, read from the live emulated
cluster (rooftop.cluster), and checked against the run's.

A run on the emulated cluster records, per node, the emulation the cluster
was built with (config "nodes"[i]["emulation"]: cpu_percent, link_rate_bits,
and the node's cores). What the kernel enforces can change under a run: a
node's CPU quota written by hand, or the cluster rebuilt with other rates
and caps before 'validate RUN' or 'collect --resume'. So a campaign reads
the live emulation of the nodes a round uses before the round, after each
of its windows and at its end (read(), one record per node):

  {"netns": "rooftop-n2", "cores": [0], "cpu_quota_us": 10000,
   "cpu_period_us": 100000, "cpu_cores": 0.1,
   "links": [{"nic": "rooftop-p2", "send_bits": 90000000, "receive_bits": 90000000}]}

cpu_cores: cores' worth of CPU time the node may use per period (None: no
quota); a rate None: that side is not shaped; "unknown" fields could not be
read (not root: tc cannot enter the namespace) and are not compared.

Each sample stores the record of its nodes as read after its window
(samples.emulation, JSON keyed by the run's node index). A window whose
nodes' emulation differs before and after it, or from the run's, is stored
invalid with the difference as its error; a campaign (collect --resume,
validate RUN) whose cluster differs from the run's is refused before it
starts (preflight). Launchers that are not on the emulated cluster record
nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

from rooftop.cluster import cgroups, lifecycle, net
from rooftop.cluster import state as cluster_state
from rooftop.cluster.spec import ClusterError, format_rate
from rooftop.launchers import on_this_machine
from rooftop.launchers.base import LauncherError

#: How the error of a sample measured under another emulation than its run's begins.
OTHER = "measured under another emulation than the run's"
#: Link rates within this share of each other are the same (tc rounds rates).
RATE_TOLERANCE = 0.01
#: How the error of a sample that failed because the emulated cluster was
#: taken down under its campaign begins.
REMOVED = "the emulated cluster was removed (rooftop cluster down --force?)"


class EmulationChanged(LauncherError):
    """The emulated cluster is not what the run was measured on."""


def _state():
    try:
        return cluster_state.load()
    except ClusterError:
        return None


def _layout(st: dict):
    cg = st.get("cgroup") or {}
    try:
        return cgroups.Layout(int(cg["version"]), Path(cg["cpu"]), Path(cg["cpuset"]))
    except (KeyError, TypeError, ValueError):
        return None


def _expand(cpus: str) -> list[int]:
    out: list[int] = []
    for part in cpus.split(","):
        part = part.strip()
        if "-" in part:
            a, b = part.split("-")
            out += range(int(a), int(b) + 1)
        elif part:
            out.append(int(part))
    return sorted(set(out))


def _netns(node) -> str | None:
    """The emulated node's namespace (None: not a node of the emulated cluster)."""
    em = node.get("emulation") if isinstance(node, dict) else node.emulation
    return (em or {}).get("netns")


def read_node(netns: str, st: dict | None, layout=None) -> dict:
    """The live emulation of one node of the emulated cluster (its namespace)."""
    rec: dict = {"netns": netns}
    node = next((n for n in (st or {}).get("nodes", []) if n.get("netns") == netns), None)
    if node is None:
        rec["missing"] = True  # the cluster is down, or rebuilt without this node
        return rec
    layout = layout or _layout(st)
    cg = cgroups.read_node(layout, node["index"]) if layout is not None else None
    if cg is None:
        rec.update(cores="unknown", cpu_quota_us="unknown", cpu_period_us="unknown", cpu_cores="unknown")
    else:
        q, period = cg["quota_us"], cg["period_us"]
        rec.update(
            cores=_expand(cg["cpus"]),
            cpu_quota_us=q,
            cpu_period_us=period,
            cpu_cores=None if q is None else round(q / period, 6),
        )
    links = []
    root = os.geteuid() == 0
    for nic in lifecycle.node_nics(node):
        if not root:
            links.append({"nic": nic["name"], "send_bits": "unknown", "receive_bits": "unknown"})
            continue
        up = net.read_rate(nic["name"], netns)
        down = net.read_rate(nic["peer"])
        links.append(
            {
                "nic": nic["name"],
                "send_bits": "unknown" if up["qdisc"] is None else up["rate_bits"],
                "receive_bits": "unknown" if down["qdisc"] is None else down["rate_bits"],
            }
        )
    rec["links"] = links
    return rec


def removed(nodes: list) -> str:
    """REMOVED, naming the namespaces gone, when a node of the emulated
    cluster among nodes (launchers.base.Node or config dicts) has lost its
    namespace ('rooftop cluster down' deletes them); '' otherwise."""
    gone = [ns for ns in map(_netns, nodes) if ns and not os.path.exists(f"/run/netns/{ns}")]
    return f"{REMOVED}: its namespace(s) {', '.join(gone)} are gone" if gone else ""


def name_removal(nodes: list, errors: dict) -> None:
    """The failed samples' errors (values of errors) say first that the
    emulated cluster was removed, when it was: what the processes saw
    (an agent gone, no address file, a timeout) is only its symptom."""
    why = removed(nodes) if errors else ""
    for k, e in errors.items():
        if why and not e.startswith(REMOVED):
            errors[k] = f"{why}; {e}"


def read(nodes: list) -> dict[str, dict]:
    """{str(node index): live record} of the nodes (launchers.base.Node or
    their config dicts) that are on the emulated cluster; {} when none is."""
    named = [(n["index"] if isinstance(n, dict) else n.index, _netns(n)) for n in nodes]
    named = [(i, ns) for i, ns in named if ns]
    if not named:
        return {}
    st = _state()
    layout = _layout(st) if st else None
    return {str(i): read_node(ns, st, layout) for i, ns in named}


def expected(node, ncores: int | None = None) -> dict:
    """What the run recorded for a node (config "nodes"[i] or a Node), as a
    record comparable to a live one. ncores: the node's cores as read live,
    for launchers whose nodes' cores are logical (srun, mpiexec: only the
    netns launcher records the machine's cores, which are then compared)."""
    if isinstance(node, dict):
        em, cores = node.get("emulation") or {}, list(node.get("cores") or [])
    else:
        em, cores = node.emulation or {}, list(node.cores)
    q = cgroups.quota_us(ncores or len(cores), em.get("cpu_percent"))
    rate = em.get("link_rate_bits")
    nics = [x["name"] for x in em.get("nics") or []] or [None]
    return {
        "netns": em.get("netns"),
        "cores": "unknown" if ncores else sorted(set(cores)),
        "cpu_quota_us": q,
        "cpu_period_us": cgroups.PERIOD_US,
        "cpu_cores": None if q is None else round(q / cgroups.PERIOD_US, 6),
        "links": [{"nic": n, "send_bits": rate, "receive_bits": rate} for n in nics],
    }


def _cpu(v) -> str:
    return "no CPU cap" if v is None else f"a CPU cap of {v:g} cores' worth per period"


def _rate(v) -> str:
    return format_rate(v)


def _same_rate(a, b) -> bool:
    if a == "unknown" or b == "unknown":
        return True
    if a is None or b is None:
        return a is b
    return abs(a - b) <= RATE_TOLERANCE * max(a, b)


def differences(have: dict, want: dict, label: str, than: str) -> list[str]:
    """What differs between two records of one node, in words: 'node 2
    (rooftop-n2): a CPU cap of 0.1 cores' worth per period, <than> no CPU cap'."""
    who = f"node {label}" + (f" ({have.get('netns')})" if have.get("netns") else "")
    if have.get("missing") or want.get("missing"):
        return (
            []
            if have.get("missing") and want.get("missing")
            else [
                f"{who}: {'is not' if have.get('missing') else 'is'} in the emulated cluster, {than} "
                f"{'it was' if have.get('missing') else 'not'}"
            ]
        )
    out = []
    hc, wc = have.get("cores"), want.get("cores")
    if "unknown" not in (hc, wc) and hc != wc:
        out.append(f"{who}: cores {hc}, {than} {wc}")
    hq, wq = have.get("cpu_cores"), want.get("cpu_cores")
    if (
        "unknown" not in (hq, wq)
        and (hq is None) != (wq is None)
        or (isinstance(hq, (int, float)) and isinstance(wq, (int, float)) and abs(hq - wq) > 1e-6)
    ):
        out.append(f"{who}: {_cpu(hq)}, {than} {_cpu(wq)}")
    hl, wl = have.get("links") or [], want.get("links") or []
    for k, h in enumerate(hl):
        w = wl[k] if k < len(wl) else (wl[0] if wl else None)
        if w is None:
            continue
        for side in ("send", "receive"):
            a, b = h.get(f"{side}_bits"), w.get(f"{side}_bits")
            if not _same_rate(a, b):
                out.append(f"{who}: {h.get('nic') or 'link'} {side} rate {_rate(a)}, {than} {_rate(b)}")
    return out


def against_run(live: dict[str, dict], cfg_nodes: list[dict], physical_cores: bool = True) -> list[str]:
    """What differs between live records and what the run recorded
    (physical_cores: the run's nodes name the machine's cores: netns)."""
    by_index = {str(n["index"]): n for n in cfg_nodes}
    out = []
    for i, rec in live.items():
        if i in by_index:
            cores = rec.get("cores")
            n = None if physical_cores or not isinstance(cores, list) else len(cores)
            out += differences(rec, expected(by_index[i], n), i, "the run's:")
    return out


def between(before: dict[str, dict], after: dict[str, dict], nodes) -> list[str]:
    """What changed on the given nodes (indices) from one read to the next."""
    out = []
    for i in map(str, nodes):
        if i in before and i in after:
            out += differences(after[i], before[i], i, "before the window:")
    return out


def physical_cores(cfg: dict) -> bool:
    """Whether the run's nodes name this machine's cpus (its launcher runs
    its engines on this machine: netns), not positions on a host (srun,
    mpiexec on the emulated cluster's hosts)."""
    return on_this_machine((cfg.get("launcher") or {}).get("type", ""))


def preflight(cfg: dict) -> None:
    """Refuses a campaign for a run whose emulated cluster is not the one
    its samples were measured on (collect --resume, validate RUN on a
    rebuilt cluster, or a node's CPU quota or link changed by hand)."""
    nodes = cfg.get("nodes") or []
    live = read(nodes)
    if not live:
        return
    diff = against_run(live, nodes, physical_cores(cfg))
    if diff:
        more = f" (and {len(diff) - 4} more)" if len(diff) > 4 else ""
        raise EmulationChanged(
            "the emulated cluster is not the one this run was measured on: "
            + "; ".join(diff[:4])
            + more
            + ". Samples measured now would not compare with the run's: rebuild the cluster as the run "
            "recorded it ('rooftop cluster down', then 'cluster up' with the run's rates and caps; "
            "'rooftop cluster status' shows what the kernel has), or start a new run with 'rooftop collect'"
        )
