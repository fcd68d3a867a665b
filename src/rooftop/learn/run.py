"""`rooftop learn`: the dataset, the comparisons, the best model refitted on
every sample and saved with the run (RESULTS/RUN/learned/METRIC.model.json,
RUN the first run named; JSON that loading cannot execute: modelfile.py),
and the comparison beside it (METRIC.json, for the report)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sklearn.base import clone

from rooftop import files
from rooftop import metrics as metric_table
from rooftop.learn import LearnError, dataset, evaluate
from rooftop.learn.modelfile import OLD_SUFFIXES, SUFFIX, load_model, save_model
from rooftop.numbers import json_text


@dataclass
class Outcome:
    ds: dataset.Dataset
    cv: list[evaluate.Score]
    extrapolation: list[evaluate.Score]
    extrapolation_text: str
    best: str
    importances: list[tuple[str, float]]
    path: Path
    #: Median |error| of a configuration's repeats against each other.
    noise: float | None = None

    def best_of(self, scores: list[evaluate.Score], kind: str) -> evaluate.Score | None:
        return next((s for s in scores if s.kind == kind), None)

    def to_dict(self) -> dict:
        ds = self.ds
        return {
            "metric": ds.metric,
            "unit": ds.unit,
            "runs": ds.runs,
            "samples": len(ds.y),
            "configurations": ds.configurations,
            "left_out": [{"run": r, "key": k, "why": w} for r, k, w in ds.left_out],
            "features": ds.features,
            "cross_validation": [s.to_dict() for s in self.cv],
            "extrapolation": {"split": self.extrapolation_text, "models": [s.to_dict() for s in self.extrapolation]},
            "repeat_noise_median_ape": self.noise,
            "best": self.best,
            "importances": [{"feature": f, "median_ape_increase": v} for f, v in self.importances],
            "model_file": str(self.path),
        }


def learn(store, run_ids: list[str], metric: str, folds: int = evaluate.DEFAULT_FOLDS, seed: int = 0) -> Outcome:
    """Compares every model on the runs' samples of one metric and saves the
    best (lowest cross-validated median error) with the first run."""
    ds = dataset.load(store, run_ids, metric)
    cv, oof = evaluate.cross_validate(ds, folds, seed)
    extra, text = evaluate.extrapolate(ds, seed)
    best = cv[0]
    kind, est = evaluate.all_models(seed)[best.name]
    fitted = clone(est).fit(ds.X(), ds.y)
    imp = [] if best.name == "roofline alone" else evaluate.importances(fitted, ds, seed)
    path = store.run_dir(ds.runs[0]) / "learned" / f"{metric}{SUFFIX}"
    save_model(
        path,
        {
            "metric": metric,
            "unit": ds.unit,
            "model": best.name,
            "kind": kind,
            "features": ds.features,
            "encoder": ds.encoder,
            "constants": ds.constants,
            "runs": ds.runs,
            "knobs": {r: ds.knobs(r) for r in ds.runs},
            "rooflines": ds.rooflines,
            "interval": evaluate.interval(oof[best.name], ds.y),
            "cv_median_ape": best.median,
            "seed": seed,
            "folds": folds,
            "ranges": _ranges(ds),
            "per_node": _per_node(ds),
        },
        ds.X(),
        ds.y,
        fitted.predict(ds.X()),
    )
    load_model(path, ds.runs[0])  # the file refits to this model, or say so now rather than at predict
    for suffix in OLD_SUFFIXES:  # an older rooftop's pickle of this metric: replaced
        (path.parent / f"{metric}{suffix}").unlink(missing_ok=True)
    out = Outcome(ds, cv, extra, text, best.name, imp, path, evaluate.noise_floor(ds))
    _save_comparison(out, oof)
    return out


def metrics_to_learn(store, run_ids: list[str], target: str | None) -> list[str]:
    """The metrics `rooftop learn` learns: target (refused, naming what the
    runs measured, when no run measured it), else every metric the runs'
    validation measured (else every metric they measured at all, which
    dataset.load then explains has no validation samples)."""
    measured = sorted(
        {
            m
            for (m,) in store.db.execute(
                f"SELECT DISTINCT metric FROM samples WHERE run_id IN ({','.join('?' * len(run_ids))})", run_ids
            )
        }
    )
    validated = sorted({m for r in run_ids for m in (s["metric"] for s in store.samples(r, stage=dataset.STAGE))})
    runs = ", ".join(run_ids)
    if target:
        if target not in metric_table.METRICS:
            raise LearnError(f"unknown metric {target!r} ({', '.join(metric_table.METRICS)})")
        if target not in measured:
            raise LearnError(
                f"run(s) {runs} measured no {target}: "
                + (
                    f"they measured {', '.join(measured)} (--metrics {measured[0]})"
                    if measured
                    else "they have no samples"
                )
            )
        return [target]
    if validated:
        return validated
    if measured:
        return measured
    raise LearnError(f"run(s) {runs} have no samples to learn from (rooftop collect, then rooftop validate RUN)")


def _save_comparison(o: Outcome, oof: dict) -> None:
    """METRIC.json beside the model: the tables and the cross-validated
    predictions of the best plain and roofline-informed models (the
    report's "learned model" section)."""

    shown = [s.name for s in (o.best_of(o.cv, "plain"), o.best_of(o.cv, "roofline")) if s]
    doc = dict(o.to_dict(), predictions={"measured": o.ds.y.tolist(), "models": {n: oof[n].tolist() for n in shown}})
    files.write(o.path.parent / f"{o.ds.metric}.json", json_text(doc, indent=1))


def _ranges(ds) -> dict[str, tuple[float, float]]:
    """Numeric features' measured ranges (a query beyond them extrapolates)."""
    out = {}
    for f in ds.features:
        vals = [r[f] for r in ds.rows]
        if all(isinstance(v, float) for v in vals):
            out[f] = (min(vals), max(vals))
    return out


def _per_node(ds) -> tuple[float, float]:
    """The most server and client processes per node measured."""
    rows = ds.rows
    return (
        max(r["sample.server_procs"] / max(r["sample.server_nodes"], 1) for r in rows),
        max(r["sample.client_procs"] / max(r["sample.client_nodes"], 1) for r in rows),
    )
