"""The machine a run was measured on (issue 43, item 5): each node's record,
from the document `rooftop-engine machine` writes on the node (CPU model,
packages, cores, threads per core, memory, NUMA nodes, kernel, libfabric
and the provider's version, hwloc's summary, the NICs the provider can
use there: driver, model, firmware, link speed, NUMA node); the fields
that make two machines the same (IDENTITY: not the host names, nor the
kernel); a run's summary of them over its nodes and its identity, a stable
hash of that summary; what differs between two runs' machines; and the
rows the report shows.

What a run stores, as its environment's "machine" (rooftop.campaign.machine
gathers it once per node and command):

    {"identity": "3f9a0c1b2d4e",          # IDENTITY's summary, hashed
     "summary": {"cpu": ["AMD EPYC"], "cores": [64], ...},
     "nodes": [{"node": 0, "host": "n01", "cpu": {...}, "nics": [...], ...},
               {"node": 1, "host": "n02", "error": "why it was not read"}],
     "gathered_utc": "2026-11-28T14:47:04Z",
     "earlier": [{"identity": ..., "summary": ..., "gathered_utc": ...}]}

`earlier` is there only when a command resumed the run on a machine other
than the one an earlier command of the run measured on. Imports nothing of
rooftop: the campaign, the store's readers, history, report and export use it.
"""

from __future__ import annotations

import copy
import hashlib
import json

#: The run environment's key holding the machine.
KEY = "machine"

#: The fields that make two machines the same, with the label messages and
#: the report use: what bounds a ceiling (the CPU, its cores and threads,
#: memory rounded to two significant digits of GiB, NUMA nodes, the NICs'
#: drivers and link speeds) and the software between the engine and the
#: wire (libfabric, the provider and its version). Host names are not: a
#: Slurm allocation lands on other nodes of the same machine. Nor is the
#: kernel (shown, not compared): a weekly security update would otherwise
#: make every run a new machine.
IDENTITY: dict[str, str] = {
    "cpu": "CPU",
    "sockets": "sockets",
    "cores": "cores",
    "threads_per_core": "threads per core",
    "memory_gib": "memory (GiB)",
    "numa_nodes": "NUMA nodes",
    "nics": "NICs (driver, link speed)",
    "libfabric": "libfabric",
    "provider": "provider",
}


def node_record(node: int, host: str, doc: dict | None, error: str = "") -> dict:
    """A node's record: its `machine` document's result, with the node's
    index (host: the campaign's name for it, when the document has none);
    without a document, the error that says why."""
    result = (doc or {}).get("result")
    if not isinstance(result, dict):
        return {"node": node, "host": host, "error": error or "no machine document"}
    return {"node": node, **copy.deepcopy(result), "host": result.get("host") or host}


def memory_gib(nbytes) -> float | None:
    """Memory in GiB to two significant digits (251.3 -> 250.0, 3.82 ->
    3.8): the same machine under another kernel, which reserves a little
    more or less, keeps its value."""
    if not isinstance(nbytes, int | float) or nbytes <= 0:
        return None
    return float(f"{nbytes / 2**30:.2g}")


def speed_text(mbps) -> str:
    """A link speed as rooftop writes it (100000 -> "100 Gb/s"); "speed unknown" without one."""
    if not isinstance(mbps, int | float) or mbps <= 0:
        return "speed unknown"
    return f"{mbps / 1000:g} Gb/s" if mbps >= 1000 else f"{mbps:g} Mb/s"


def nic_identity(nic: dict) -> str:
    """A NIC as the identity has it: driver and link speed ("mlx5_core, 200 Gb/s")."""
    return f"{nic.get('driver') or 'no driver'}, {speed_text(nic.get('speed_mbps'))}"


def identity_fields(rec: dict) -> dict:
    """A node record's IDENTITY fields."""
    cpu = rec.get("cpu") or {}
    lf = rec.get("libfabric") or {}
    provider = lf.get("provider")
    return {
        "cpu": cpu.get("model"),
        "sockets": cpu.get("sockets"),
        "cores": cpu.get("cores"),
        "threads_per_core": cpu.get("threads_per_core"),
        "memory_gib": memory_gib(rec.get("memory_bytes")),
        "numa_nodes": rec.get("numa_nodes"),
        "nics": sorted(nic_identity(n) for n in rec.get("nics") or []),
        "libfabric": lf.get("version"),
        "provider": f"{provider} {lf.get('provider_version') or '?'}" if provider else None,
    }


def _canon(v) -> str:
    return json.dumps(v, sort_keys=True)


def summary(nodes: list[dict]) -> dict:
    """Per IDENTITY field, the distinct values over the nodes read (those
    with an error left out), in a stable order: a run on 2 or on 200 nodes
    of one kind of machine has the same summary."""
    read = [identity_fields(r) for r in nodes if "error" not in r]
    out = {}
    for field in IDENTITY:
        seen = {_canon(f[field]): f[field] for f in read}
        out[field] = [seen[k] for k in sorted(seen)]
    return out


def identity(summ: dict) -> str:
    """A stable hash of a summary: 12 hex digits."""
    return hashlib.sha256(_canon(summ).encode()).hexdigest()[:12]


def machine(nodes: list[dict], gathered_utc: str) -> dict:
    """The run environment's "machine" from its node records (identity
    None when no node could be read)."""
    summ = summary(nodes)
    known = any("error" not in r for r in nodes)
    return {
        "identity": identity(summ) if known else None,
        "summary": summ if known else None,
        "nodes": nodes,
        "gathered_utc": gathered_utc,
    }


def of_environment(env: dict | None) -> dict | None:
    """A run environment's machine when its identity is known, else None
    (runs before machines were recorded, or none of its nodes read)."""
    m = (env or {}).get(KEY)
    if not isinstance(m, dict) or not m.get("identity") or not isinstance(m.get("summary"), dict):
        return None
    return m


def _values(v: list) -> str:
    shown = [", ".join(map(str, x)) if isinstance(x, list) else str(x) for x in v]
    return " / ".join(shown) if shown else "none"


def differences(a: dict, b: dict) -> list[str]:
    """What differs between two machine summaries, a field each:
    "libfabric: 1.17 vs 1.18"."""
    out = []
    for field, label in IDENTITY.items():
        va, vb = a.get(field, []), b.get(field, [])
        if _canon(va) != _canon(vb):
            out.append(f"{label}: {_values(va)} vs {_values(vb)}")
    return out


def one_line(m: dict) -> str:
    """A machine in a line: "AMD EPYC, 1 x 2 cores x 1 thread, 24 GiB,
    tcp;ofi_rxm 117.0 (libfabric 1.17) [3f9a0c1b2d4e]"."""
    s = m["summary"]
    cores = "/".join(map(str, s["cores"])) or "?"
    threads = "/".join(map(str, s["threads_per_core"])) or "?"
    sockets = "/".join(map(str, s["sockets"])) or "?"
    mem = "/".join(f"{g:g}" for g in s["memory_gib"]) or "?"
    return (
        f"{_values(s['cpu'])}, {sockets} socket(s), {cores} cores x {threads} thread(s), {mem} GiB, "
        f"{_values(s['provider'])} (libfabric {_values(s['libfabric'])}) [{m['identity']}]"
    )


def _node_cells(rec: dict) -> list[str]:
    """A node record's report row, without its node column."""
    if "error" in rec:
        return [f"not read: {rec['error']}", "", "", "", "", "", ""]
    cpu = rec.get("cpu") or {}
    lf = rec.get("libfabric") or {}
    gib = memory_gib(rec.get("memory_bytes"))
    nics = "; ".join(
        f"{n.get('name')}: {n.get('driver') or 'no driver'}"
        + (f" {n['model']}" if n.get("model") else "")
        + f", {speed_text(n.get('speed_mbps'))}"
        + (f", firmware {n['firmware']}" if n.get("firmware") else "")
        + (f", NUMA {n['numa_node']}" if n.get("numa_node") is not None else "")
        for n in rec.get("nics") or []
    )
    provider = f"{lf.get('provider')} {lf.get('provider_version') or ''}".strip() if lf.get("provider") else "none"
    return [
        f"{cpu.get('model') or '?'} ({cpu.get('sockets') or '?'} socket(s))",
        f"{cpu.get('cores') or '?'} x {cpu.get('threads_per_core') or '?'}",
        f"{gib:g} GiB" if gib is not None else "?",
        str(rec.get("numa_nodes") or "?"),
        nics or "none",
        str(rec.get("kernel") or "?"),
        f"{lf.get('version') or '?'} / {provider}",
    ]


#: The report's machine table: a row per group of nodes alike.
HEAD = ["nodes", "CPU", "cores x SMT", "memory", "NUMA", "NICs", "kernel", "libfabric / provider"]


def rows(m: dict) -> list[list[str]]:
    """The report's machine table: nodes whose cells are alike share a row
    ("n0-n3 (node01 .. node04)"), in node order."""
    groups: dict[str, tuple[list[dict], list[str]]] = {}
    for rec in m.get("nodes") or []:
        cells = _node_cells(rec)
        groups.setdefault(_canon(cells), ([], cells))[0].append(rec)
    out = []
    for recs, cells in groups.values():
        idx = [r.get("node") for r in recs]
        hosts = sorted({str(r.get("host")) for r in recs})
        where = _nodes_text(idx) + f" ({', '.join(hosts[:3])}{', ...' if len(hosts) > 3 else ''})"
        out.append([where, *cells])
    return out


def _nodes_text(idx: list) -> str:
    if len(idx) > 2 and idx == list(range(idx[0], idx[0] + len(idx))):
        return f"n{idx[0]}-n{idx[-1]}"
    return ", ".join(f"n{i}" for i in idx)
