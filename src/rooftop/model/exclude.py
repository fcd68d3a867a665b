"""The one rule for samples the ceilings may not use (exclusion): nodes sharing
cores beyond what they hold, concurrent campaigns, invalid (foreign CPU above
engine.foreign_cpu_gate among the reasons) or failed samples;
and which samples ran beside which (issue 27, item 1)."""

from __future__ import annotations

from pathlib import Path

from rooftop.engine import enginedoc
from rooftop.store.records import stands_for
from rooftop.units import fmt_pct


def _node_info(nodes) -> dict[int, dict]:
    """Node index -> its description (config dicts or launcher Nodes)."""
    out = {}
    for n in nodes or []:
        d = n.describe() if hasattr(n, "describe") else n
        out[d["index"]] = d
    return out


#: A placement putting more processes on shared cores than they hold still
#: counts when those cores were busy at most this share of the round
#: (samples.cores_busy: anyone's work, interrupts and the processes' own
#: start included): processes that block between messages then seldom find
#: their core taken (benchmarks/RESULTS.md, the 17-node suite: pairs
#: measured at once against alone).
SHARED_BUSY_MAX = 0.5


def core_sharing(sample: dict, nodes, beside=()) -> str:
    """Why a sample's placement shares cores ('' if it does not): nodes it
    uses share a core (Node.emulation["shared_with"]) and put more processes
    on those shared cores than there are, and those cores were busy (its
    round's cores_busy above SHARED_BUSY_MAX, or not measured), so
    processes time-sliced them. beside: the samples that ran at the same
    time (the other pairs of its pair round, ran_beside): their processes
    count too."""
    info = _node_info(nodes)
    if not any((d.get("emulation") or {}).get("shared_with") for d in info.values()):
        return ""
    busy = sample.get("cores_busy")
    if busy is not None and busy <= SHARED_BUSY_MAX:
        return ""
    procs: dict[int, float] = {}
    for s in (sample, *beside):
        for where, total in (
            (s.get("server_nodes") or [], s.get("server_procs") or 0),
            (s.get("client_nodes") or [], s.get("client_procs") or 0),
        ):
            for i in where:
                procs[i] = procs.get(i, 0) + total / len(where)
    mine = set(sample.get("server_nodes") or []) | set(sample.get("client_nodes") or [])
    for comp in _sharing_components(sorted(procs), info):
        if not mine & set(comp):
            continue
        cores = sorted(set().union(*(info[i].get("cores") or () for i in comp if i in info)))
        n = sum(procs[i] for i in comp)
        if len(comp) > 1 and n > len(cores):
            others = [
                s for s in beside if set(comp) & (set(s.get("server_nodes") or []) | set(s.get("client_nodes") or []))
            ]
            at_once = " with pair(s) " + ", ".join(_pair_name(s) for s in others) + " running at once" if others else ""
            was = f", busy {fmt_pct(busy)} of the time (above {fmt_pct(SHARED_BUSY_MAX)})" if busy is not None else ""
            return (
                f"nodes {', '.join(f'n{i}' for i in comp)} share core(s) "
                f"{','.join(map(str, cores))}: {n:g} processes on {len(cores)} core(s){at_once}{was}"
            )
    return ""


def _pair_name(s: dict) -> str:
    return "-".join(f"n{i}" for i in (*(s.get("server_nodes") or []), *(s.get("client_nodes") or [])))


def ran_beside(samples: list[dict]) -> dict[str, list[dict]]:
    """A sample's row_key -> the samples measured at the same time as it:
    the other pairs of its window in a pair round. The round's record is its
    folder's round.json (window by window, the keys measured at once); rows
    of one folder, metric, window index and attempt are those of one window."""
    groups: dict[tuple, list[dict]] = {}
    for s in samples:
        if s.get("raw_dir") and s.get("status") != "failed":
            groups.setdefault((s["raw_dir"], s.get("metric"), s.get("window"), s.get("attempt", 1)), []).append(s)
    out: dict[str, list[dict]] = {}
    for (raw, *_), rows in groups.items():
        if len(rows) < 2:
            continue
        together = _round_windows(raw)
        for s in rows:
            keys = next((w for w in together if s["key"] in w), ())
            others = [o for o in rows if o is not s and o["key"] in keys]
            if others:
                out[row_key(s)] = others
    return out


def _round_windows(raw_dir: str) -> list[set]:
    """The key sets of a round's windows (round.json), [] when unrecorded."""
    return [set(keys) for keys in enginedoc.round_keys(Path(raw_dir)) or []]


def exclusion(sample: dict, nodes=None, beside=()) -> str:
    """THE rule: why a sample may feed no ceiling, outlier score, learned
    dataset row, validation error or figure's fitted line ('' when it may).
    Not measured or unusable (status failed or invalid: among the reasons,
    other processes using more than engine.foreign_cpu_gate of its cores,
    rooftop.foreign, decided as it is measured), measured with
    --allow-concurrent, or nodes sharing cores (core_sharing; beside: the
    samples that ran at the same time, ran_beside). Figures may still show
    such a sample, marked."""
    status = sample.get("status")
    if status != "ok":
        return f"{status}: {(sample.get('error') or '')[:120]}"
    if sample.get("concurrent"):
        return "measured with --allow-concurrent: another campaign may have shared its cores"
    return core_sharing(sample, nodes, beside)


def exclusions(samples: list[dict], nodes=None) -> dict[str, str]:
    """exclusion() of every sample, by row_key: '' when usable."""
    beside = ran_beside(samples)
    return {row_key(s): exclusion(s, nodes, beside.get(row_key(s), ())) for s in samples}


def usable(samples: list[dict], nodes=None) -> list[dict]:
    """The samples exclusion() lets through."""
    why = exclusions(samples, nodes)
    return [s for s in samples if not why[row_key(s)]]


def _sharing_components(used: list[int], info: dict[int, dict]) -> list[list[int]]:
    """The used nodes grouped by shared cores (connected components)."""

    def shares(a, b):
        return b in ((info.get(a, {}).get("emulation") or {}).get("shared_with") or ())

    comps: list[list[int]] = []
    for i in used:
        linked = [c for c in comps if any(shares(i, j) or shares(j, i) for j in c)]
        merged = sorted({i, *(j for c in linked for j in c)})
        comps = [c for c in comps if c not in linked] + [merged]
    return comps


def row_key(s: dict) -> str:
    """A sample's identity: its store key (synthetic rows: the object)."""
    return s.get("key") or f"#{id(s)}"


def stage_rows(samples: list[dict], stage: str) -> list[dict]:
    return [s for s in samples if stage in stands_for(s)]
