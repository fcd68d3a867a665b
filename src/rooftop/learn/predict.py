"""`rooftop predict`: a learned model's answer for a footprint never measured.

The model file (written by `rooftop learn`, JSON: modelfile.py) holds the
model's name, seed and training data (the model is refitted on load) with
what it was trained on: the features, the parameters
that did not vary (a run whose parameters differ there is refused: the
model never saw their effect), each training run's knobs and roofline, and
the spread of its cross-validated errors (the interval). The answer is the
model's per-client rate for the query's placement and knobs, with that
interval, capped by the roofline of the training run measured with the
query's knobs (its ceilings' highest samples: no sample exceeded them),
naming the ceiling that binds there.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from rooftop.config.catalog import KEY_BY_PATH
from rooftop.learn import LearnError
from rooftop.learn.dataset import encode_value, excluded
from rooftop.learn.modelfile import OLD_SUFFIXES, SUFFIX, load_model, metric_of, relearn_hint


def find_model(store, run_id: str, metric: str | None) -> Path:
    """The run's model file for metric (the only one, when metric is None).
    A model file of an older rooftop (METRIC.joblib, a pickle) is refused,
    never opened, with the command that re-learns it."""
    folder = store.run_dir(run_id) / "learned"
    files = sorted(folder.glob("*" + SUFFIX)) if folder.is_dir() else []
    old = sorted(p for s in OLD_SUFFIXES for p in folder.glob("*" + s)) if folder.is_dir() else []
    if metric:
        files = [f for f in files if metric_of(f) == metric]
        old = [f for f in old if f.stem == metric]
    if not files and old:
        raise LearnError(
            f"run {run_id}: {', '.join(p.name for p in old)} is a model file of an older rooftop "
            f"(a pickle); rooftop no longer loads pickles, which can run code; "
            f"{relearn_hint(run_id)}"
        )
    if not files:
        raise LearnError(
            f"run {run_id} has no learned model{' for ' + metric if metric else ''} "
            f"(rooftop learn {run_id}; a model learned over several runs is saved with "
            f"the first, or give --model FILE)"
        )
    if len(files) > 1:
        raise LearnError(
            f"run {run_id} has models for {', '.join(metric_of(f) for f in files)}: choose one with --metrics"
        )
    return files[0]


def query_params(store, run_id: str, metric: str, sets: dict) -> tuple[dict, dict]:
    """The run's resolved parameters (run_params), --set overrides applied:
    as stored, and encoded as features are (dataset.encode_value)."""
    params = dict(store.db.execute("SELECT key, value FROM run_params WHERE run_id = ?", (run_id,)))
    for key, value in sets.items():
        if key not in KEY_BY_PATH:
            raise LearnError(f"--set {key}: not a config key (rooftop config keys)")
        params[key] = value
    return params, {k: encode_value(k, v) for k, v in params.items() if not excluded(k, metric)}


def check_params(doc: dict, params: dict, run_id: str) -> None:
    """Refuses parameters the model never saw: a constant of its training
    that differs, or a category it was not trained on."""
    for key, trained in sorted(doc["constants"].items()):
        have = params.get(key, "(unset)")
        if str(have) != str(trained):
            raise LearnError(
                f"the model was trained with {key} = {_shown(trained)} in every sample; "
                f"run {run_id} (with --set) has {_shown(have)}: it cannot tell the effect "
                f"(learn from runs that vary {key})"
            )
    for key, cats in doc["encoder"].categories.items():
        if not key.startswith("sample.") and str(params.get(key, "(unset)")) not in cats:
            raise LearnError(f"{key} = {_shown(params.get(key))}: the model saw only {', '.join(cats)}")


def _shown(v) -> str:
    return "(unset)" if v is None else str(v)


def _roofline(doc: dict, knobs: dict, run_id: str) -> tuple[str, object, str]:
    """(run, roofline, note): the training run measured with these knobs
    (run_id itself first), else run_id's (or the first run's), with a note."""
    same = [r for r in doc["runs"] if all(str(doc["knobs"][r].get(k)) == str(v) for k, v in knobs.items())]
    if same:
        r = run_id if run_id in same else same[0]
        return r, doc["rooflines"][r], ""
    r = run_id if run_id in doc["runs"] else doc["runs"][0]
    return (
        r,
        doc["rooflines"][r],
        (f"no training run was measured with these knobs: the roofline is run {r}'s, measured with other knobs"),
    )


def placement(doc: dict, servers: int, clients: int, server_nodes: int | None, client_nodes: int | None) -> dict:
    """The query's placement features; nodes default to the processes packed
    as densely as the training measured (its most processes per node)."""
    if servers < 1 or clients < 1:
        raise LearnError("--servers and --clients must be at least 1")
    spn, cpn = doc["per_node"]
    sn = server_nodes or math.ceil(servers / spn)
    cn = client_nodes or math.ceil(clients / cpn)
    return {
        "sample.server_procs": float(servers),
        "sample.client_procs": float(clients),
        "sample.server_nodes": float(sn),
        "sample.client_nodes": float(cn),
        "sample.x": encode_value("sample.x", servers / clients),
    }


def outside(doc: dict, row: dict) -> list[str]:
    """Numeric features of the query beyond the measured range."""
    out = []
    for f, (lo, hi) in sorted(doc["ranges"].items()):
        v = row[f]
        if isinstance(v, float) and not lo - 1e-9 <= v <= hi + 1e-9:
            shown = (lambda a: f"{2**a:.3g}") if f == "sample.x" else (lambda a: f"{a:g}")
            out.append(f"{f} = {shown(v)} is outside the measured {shown(lo)}–{shown(hi)}")
    return out


def predict(
    store,
    run_id: str,
    servers: int,
    clients: int,
    sets: dict | None = None,
    metric: str | None = None,
    model_file: str | None = None,
    server_nodes: int | None = None,
    client_nodes: int | None = None,
) -> dict:
    """The predicted per-client rate for a placement, capped by the roofline."""
    run = store.get_run(run_id)
    path = Path(model_file) if model_file else find_model(store, run.id, metric)
    doc = load_model(path, run.id)
    if metric and doc["metric"] != metric:
        raise LearnError(f"{path} models {doc['metric']}, not {metric}")
    raw, params = query_params(store, run.id, doc["metric"], sets or {})
    check_params(doc, params, run.id)
    row = {**params, **placement(doc, servers, clients, server_nodes, client_nodes)}
    knobs = {f: row.get(f, "(unset)") for f in doc["features"] if not f.startswith("sample.")}
    row.update(knobs)
    roof_run, roof, note = _roofline(doc, knobs, run.id)
    x = servers / clients
    X = np.hstack([doc["encoder"].matrix([row]), [[roof.rate(x)]]])
    rate = float(doc["estimator"].predict(X)[0])
    lo_f, hi_f = doc["interval"]
    cap = roof.rate(x, "hi")
    capped = rate > cap
    point = min(rate, cap)
    binds = roof.binding(x)
    return {
        "run": run.id,
        "metric": doc["metric"],
        "unit": doc["unit"],
        "model": doc["model"],
        "model_file": str(path),
        "servers": servers,
        "clients": clients,
        "x": x,
        "server_nodes": row["sample.server_nodes"],
        "client_nodes": row["sample.client_nodes"],
        "per_client": point,
        "interval": [min(rate * lo_f, cap), min(rate * hi_f, cap)],
        "aggregate": point * clients,
        "model_rate": rate,
        "capped": capped,
        "roofline": {
            "run": roof_run,
            "rate": roof.rate(x),
            "cap": cap,
            "binds": binds,
            "ceiling": (roof.client_bound.centre if binds == "client" else x * roof.server.centre),
            "note": note,
        },
        "cv_median_ape": doc["cv_median_ape"],
        "extrapolating": outside(doc, row),
        "knobs": {k: raw.get(k) for k in knobs},
    }
