"""What rooftop hands to other tools: a run's samples as CSV or JSON, its
figures of merit one per line, and the model as JSON -- each JSON document
versioned and described by a JSON Schema shipped in the package
(`rooftop/schemas/`).

Compatibility rule for `schema_version` ("MAJOR.MINOR"): a MINOR release
only adds (fields, values of a free-text field); a consumer that ignores
what it does not know keeps working. Anything else -- a field removed,
renamed or retyped, a unit changed -- raises MAJOR. The schemas allow
additional properties for that reason.

Typed columns: `server_nodes`/`client_nodes` are lists of node indices (in
CSV, JSON text such as "[0, 1]": always a string, whatever the run), next to
`server_node_count`/`client_node_count` (integers). `ceilings` is the list
of collect stages a sample stands for (CSV: JSON text). `emulation` is what
the emulated cluster enforced on the sample's nodes during its window
(rooftop.emulation; null off the emulated cluster; CSV: JSON text or empty). `raw_dir` is the
folder of the sample's engine documents relative to the results folder
("RUN/raw/...", "" when none is left), wherever `collect` ran.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from importlib import resources

from rooftop.interference import report as interference_report
from rooftop.service import points as service_points
from rooftop.service import report as service_report
from rooftop.store.db import Store
from rooftop.store.records import stands_for
from rooftop.store.schema import SAMPLE_COLUMNS

#: The version of every JSON document below (see the compatibility rule).
#: 1.1 added the interference impact factors (export, model) and each
#: metric's ceilings under load (model); 1.2 each sample's emulation (export);
#: 1.3 a run's service points (export) and each service's efficiency (model).
SCHEMA_VERSION = "1.3"
#: Sample columns as exported, in order.
COLUMNS = ["id", *SAMPLE_COLUMNS, "server_node_count", "client_node_count"]
#: Export formats: name -> one line of help.
FORMATS = {
    "csv": "one row per sample, typed columns (below)",
    "json": "the run (config, environment, timing) and its samples; schema rooftop/schemas/export.schema.json",
    "fom": "one figure of merit per line: 'NAME: VALUE UNIT (higher|lower is better)'",
}


def schema(name: str) -> dict:
    """A shipped JSON Schema: 'export' or 'model'."""
    return json.loads(resources.files("rooftop").joinpath("schemas", f"{name}.schema.json").read_text())


def sample_rows(store: Store, run_id: str) -> list[dict]:
    """The run's samples as exported (typed, raw_dir relative to the results folder)."""
    out = []
    for s in store.samples(run_id):
        docs = store.docs_dir(s)
        out.append(
            dict(
                s,
                ceilings=stands_for(s),
                emulation=json.loads(s["emulation"]) if s["emulation"] else None,
                server_node_count=len(s["server_nodes"]),
                client_node_count=len(s["client_nodes"]),
                raw_dir=os.path.relpath(docs, store.dir) if docs else "",
            )
        )
    return out


def json_doc(store: Store, run_id: str) -> dict:
    from rooftop.interference.run import load_summary

    run = store.get_run(run_id)
    return {
        "schema_version": SCHEMA_VERSION,
        "run": run.id,
        "status": run.status,
        "created": run.created,
        "config": run.config,
        "environment": run.environment,
        "wall_s": run.wall_s,
        "measured_s": run.measured_s,
        "overhead": run.overhead,
        "samples": sample_rows(store, run.id),
        "interference": interference_report.interference_json(load_summary(store.run_dir(run.id))),
        "service_points": [service_points.as_dict(p) for p in service_points.load(store, run.id)],
    }


def csv_text(store: Store, run_id: str) -> str:
    run = store.get_run(run_id)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for s in sample_rows(store, run.id):
        w.writerow({k: json.dumps(v) if isinstance(v, (list, dict)) else v for k, v in s.items()})
    return buf.getvalue()


#: `rooftop export RUN --services` CSV columns: read back by `rooftop service --import`.
SERVICE_COLUMNS = [
    "service", "metric", "server_procs", "client_procs", "sample", "per_client", "unit",
    "status", "aggregate", "x", "source", "key", "error",
]  # fmt: skip


def services_text(store: Store, run_id: str, fmt: str) -> str:
    """`rooftop export RUN --services`: the run's service points, one per
    row (CSV, whose ok rows `rooftop service --import` reads back) or a list
    (JSON)."""
    run = store.get_run(run_id)
    pts = [service_points.as_dict(p) for p in service_points.load(store, run.id)]
    if fmt == "json":
        return json.dumps({"schema_version": SCHEMA_VERSION, "run": run.id, "service_points": pts}, indent=1)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=SERVICE_COLUMNS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    w.writerows(dict(p, key=p["key"] or f"s{p['server_procs']}-c{p['client_procs']}-{p['sample']}") for p in pts)
    return buf.getvalue()


SERIES_COLUMNS = ["run_id", "round", "sampler", "t", "quantity", "value", "unit"]


def series_text(store: Store, run_id: str, fmt: str) -> str:
    """`rooftop export RUN --series`: the time series of the run's series
    samplers (`--sample cpu,power`), one point per row (CSV) or a list (JSON)."""
    run = store.get_run(run_id)
    points = store.series(run.id)
    if fmt == "json":
        return json.dumps({"schema_version": SCHEMA_VERSION, "run": run.id, "series": points}, indent=1)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=SERIES_COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(points)
    return buf.getvalue()


def model_doc(run: str | None, params: str | None, evals, samples: list[dict], res) -> dict:
    """`rooftop model --json`: each evaluation, with the run's outlier scores
    (res: the run's results, or None for published parameters)."""
    scores = res.scores if res else {}
    docs = []
    for e in evals:
        d = e.to_dict()
        m = e.roofline.metric
        if m in scores:
            d["nodes"] = [sc.to_dict() for sc in scores[m]]
            w = res.without_flagged.get(m)
            d["without_flagged"] = (
                {
                    "nodes": res.flagged(m),
                    "client": {"min": w.client.lo, "median": w.client.centre, "max": w.client.hi},
                    "ridge": {"min": w.ridge.lo, "median": w.ridge.centre, "max": w.ridge.hi},
                }
                if w
                else None
            )
        pm = res.pairs.get(m) if res else None
        if pm:
            from rooftop.model import outliers

            d["outlier_pairs"] = {
                "used": [list(p) for p in sorted(pm.rates)],
                "left_out": [{"pair": list(p), "median": v, "why": why} for p, (v, why) in sorted(pm.left_out.items())],
                "beside": [
                    {"pair": list(p), "beside": [list(o) for o in others]} for p, others in sorted(pm.beside.items())
                ],
                "cannot_tell": outliers.cannot_tell(pm.rates, pm.nodes) or None,
            }
        if res:
            d["under_load"] = interference_report.under_load_json(res, m)
        docs.append(d)
    invalid = [{"key": x["key"], "error": x["error"]} for x in samples if x["status"] == "invalid"]
    return {
        "schema_version": SCHEMA_VERSION,
        "run": run,
        "params": params,
        "metrics": docs,
        "invalid": invalid,
        "interference": interference_report.interference_json(res.part("interference") if res else None),
    }


def figures_of_merit(store: Store, run_id: str) -> list[tuple[str, float, str, bool]]:
    """(name, value, unit, higher_is_better) of a run: per metric its ceilings,
    ridge and validation error (where the run has them), then the run's own."""
    from rooftop import results

    res = results.load(store, run_id, [interference_report.SECTION, service_report.SECTION])  # their figures of merit
    run = store.get_run(run_id)
    out: list[tuple[str, float, str, bool]] = []
    for metric in sorted(res.rooflines):
        e = res.evaluations[metric]
        d = e.to_dict()
        for side in ("client", "server", "client_node"):
            c = d.get(side)
            for stat in ("min", "median", "max"):
                if c and c.get(stat) is not None:
                    out.append((f"{metric}.{side}.{stat}", c[stat], d["unit"], True))
        out.append((f"{metric}.ridge.median", d["ridge"]["median"], "servers/client", False))
        err = d["median_abs_error_pct"]["all"]
        if err is not None:
            out.append((f"{metric}.validation.median_abs_error", err, "%", False))
    out += interference_report.fom_rows(res.part("interference"))
    out += service_report.fom_rows(res)
    bad = sum(1 for s in res.samples if s["status"] != "ok")
    out.append(("run.samples_not_ok", bad, "samples", False))
    if run.overhead is not None:
        out += [("run.overhead", run.overhead * 100, "%", False), ("run.wall", run.wall_s, "s", False)]
    return [f for f in out if isinstance(f[1], (int, float)) and math.isfinite(f[1])]


def fom_text(store: Store, run_id: str) -> str:
    """One line per figure of merit, for regex-based parsers (Ramble, JUBE):
    NAME: VALUE UNIT (higher is better|lower is better)."""
    return "".join(
        f"{name}: {value:.6g} {unit} ({'higher' if hi else 'lower'} is better)\n"
        for name, value, unit, hi in figures_of_merit(store, run_id)
    )
