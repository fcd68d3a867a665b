"""Rooflines made: from a run's stored samples (from_run) or from a parameters
file of published ceilings (load_params)."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from pathlib import Path

from rooftop import metrics, stages
from rooftop.model.ceilings import SERVER_BOUND, Ceiling, ModelError
from rooftop.model.exclude import exclusions, row_key, stage_rows
from rooftop.model.roofline import Roofline
from rooftop.store.records import stands_for
from rooftop.units import PARAM_UNITS, fmt_num, fmt_rate


def from_run(
    samples: list[dict], metric: str, source: str = "", exclude_nodes: Sequence[int] = (), nodes=None
) -> Roofline:
    """Ceilings from a run's stored samples: client peak per client process
    (every node pair and sample), server peak per server process; a sample
    measured once for several stages counts for each. exclude_nodes: client
    peak pairs that include these nodes are left out (flagged outlier
    nodes). nodes: the run's nodes (config "nodes"): samples whose nodes
    share cores (core_sharing) are left out of ceilings."""
    out = set(exclude_nodes)
    ok = [s for s in samples if s["metric"] == metric and s["status"] == "ok"]
    why = exclusions([s for s in samples if s["metric"] == metric], nodes)
    shared = {row_key(s): why[row_key(s)] for s in ok}
    usable = [s for s in ok if not shared[row_key(s)]]
    spoilt = [s for s in ok if shared[row_key(s)]]
    keep = lambda rows: [s for s in rows if not (out and out & set(s["server_nodes"] + s["client_nodes"]))]
    cs, ss, ns = (stages.of_role(role).name for role in ("client", "server", "node"))
    client, server = keep(stage_rows(usable, cs)), stage_rows(usable, ss)
    only: list[str] = []
    if not client and keep(stage_rows(spoilt, cs)):
        client, only = keep(stage_rows(spoilt, cs)), only + ["client"]
    if not server and stage_rows(spoilt, ss):
        server, only = stage_rows(spoilt, ss), only + ["server"]
    if not client or not server:
        stage = cs if not client else ss
        missing = stage.replace("_", " ")
        left = [s for s in stage_rows([s for s in samples if s["metric"] == metric], stage) if why[row_key(s)]]
        if left:  # measured, but the rule leaves them out: say why
            raise ModelError(
                f"{metric}: the run has no usable {missing} samples: {len(left)} left out, "
                f"e.g. {row_key(left[0])}: {why[row_key(left[0])]}"
            )
        raise ModelError(
            f"{metric}: the run has no successful {missing} samples (run 'rooftop collect' with both stages)"
        )
    r = Roofline(
        metric,
        metrics.get(metric).unit,
        Ceiling.of([s["per_client"] for s in client], map(row_key, client)),
        Ceiling.of([s["per_server"] for s in server], map(row_key, server)),
        source,
    )
    r.measured_once = [list(t) for t in sorted({tuple(stands_for(s)) for s in ok if len(stands_for(s)) > 1})]
    r.core_shared = [(st, row_key(s), shared[row_key(s)]) for s in spoilt for st in stands_for(s)]
    r.core_shared_only = only
    _set_client_node(r, stage_rows(usable, ns), stage_rows(spoilt, ns), shared)
    return r


def _set_client_node(r: Roofline, rows: list[dict], spoilt: list[dict], shared: dict) -> None:
    """The node-full client ceiling, or why it is not used."""
    if not rows:
        if spoilt:
            r.client_node_rejected = f"no client-node sample may be used ({shared[row_key(spoilt[0])]})"
        return
    # Only a client-bound measurement is a client ceiling: with too few
    # servers (x * server ceiling near what each client got) the servers
    # were the limit, as on a 2-node machine (x = 1).
    x = statistics.median(s["x"] for s in rows)
    cn = Ceiling.of([s["per_client"] for s in rows], map(row_key, rows))
    if cn.keys <= r.server.keys:
        r.client_node_rejected = (
            "the client-node stage was server-bound: it was measured once with "
            "the server peak (the same placement), so its servers, not the "
            "client node, were the limit"
        )
    elif cn.centre >= SERVER_BOUND * x * r.server.centre:
        r.client_node_rejected = (
            f"the client-node stage was server-bound: x = {fmt_num(x)} server processes per client "
            f"give at most {fmt_rate(x * r.server.centre, r.unit)} per client and each got "
            f"{fmt_rate(cn.centre, r.unit)}; more server nodes are needed to saturate a client node"
        )
    else:
        r.client_node = cn


#: Ceilings in a parameters file, in base units (ops/s, bytes/s): beyond
#: these a value is a typo (or 1e400), and ridge ratios would overflow.
PARAM_RANGE = (1e-3, 1e18)


def _ceiling(v, factor: float, unit: str, where: str) -> Ceiling:
    """A positive number or [min, max] in unit, as a Ceiling in base units."""
    vals = v if isinstance(v, list) else [v]
    if not vals or len(vals) > 2 or not all(isinstance(a, (int, float)) and not isinstance(a, bool) for a in vals):
        raise ModelError(f"{where}: expected a positive number or [min, max], got {_short(v)}")
    try:
        base = [float(a) * factor for a in vals]
    except OverflowError:
        base = [math.inf]
    lo_ok, hi_ok = PARAM_RANGE
    if not all(math.isfinite(b) and lo_ok <= b <= hi_ok for b in base):
        raise ModelError(
            f"{where}: {_short(v)} {unit} is not a usable ceiling (finite, between "
            f"{lo_ok:g} and {hi_ok:g} in {PARAM_UNITS[unit][0]})"
        )
    return Ceiling.span(min(base), max(base))


def _short(v) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def load_params(path: str | Path) -> dict[str, Roofline]:
    """A parameters file: published or hand-written ceilings, e.g.

    {"name": "Aurora (Carns et al., CUG 2025, Table 2)",
     "metrics": {"rpc": {"unit": "K ops/s", "client": [148, 173], "server": [524, 530]},
                 "bw":  {"unit": "GiB/s",   "client": [20.2, 20.5], "server": [1.7, 1.8]}}}

    A ceiling is [min, max] or a single number; units: see
    rooftop.units.PARAM_UNITS. An
    optional "client_node" ceiling (per client process with the client node
    full) is used where it is lower than "client".
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except OSError as e:
        raise ModelError(f"cannot read parameters file {path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise ModelError(f"{path}: not valid JSON: line {e.lineno}: {e.msg}") from None
    except UnicodeDecodeError:
        raise ModelError(f"{path}: not a text file (expected JSON)") from None
    if not isinstance(data, dict) or not isinstance(data.get("metrics"), dict) or not data["metrics"]:
        raise ModelError(f'{path}: expected {{"name": ..., "metrics": {{"rpc": {{...}}}}}}')
    name = str(data.get("name") or path.stem)
    out = {}
    for metric, m in data["metrics"].items():
        where = f"{path}: metrics.{metric}"
        if metric not in metrics.METRICS:
            raise ModelError(f"{where}: unknown metric ({' or '.join(metrics.METRICS)})")
        if not isinstance(m, dict):
            raise ModelError(f"{where}: expected an object with unit, client, server")
        unit = m.get("unit")
        if not isinstance(unit, str) or unit not in PARAM_UNITS:
            raise ModelError(f"{where}.unit: {_short(unit)} is not one of {', '.join(PARAM_UNITS)}")
        base, factor = PARAM_UNITS[unit]
        if base != metrics.get(metric).unit:
            raise ModelError(f"{where}.unit: {unit} does not measure {metric}")
        ceilings: dict[str, Ceiling] = {}
        for side in ("client", "server", "client_node"):
            v = m.get(side)
            if side == "client_node" and v is None:
                continue
            ceilings[side] = _ceiling(v, factor, unit, f"{where}.{side}")
        derived = m.get("derived", [])
        known = ("client", "server", "client_node")
        if not isinstance(derived, list) or not set(derived) <= set(known):
            raise ModelError(f"{where}.derived: {_short(derived)} is not a list of ceiling names ({', '.join(known)})")
        out[metric] = Roofline(
            metric,
            base,
            ceilings["client"],
            ceilings["server"],
            name,
            ceilings.get("client_node"),
            origin="published",
            derived=tuple(derived),
        )
    return out
