"""How the models are compared: cross-validation grouped by configuration
(sklearn GroupKFold: every repeat of one configuration is in the same fold,
so no model is tested on a configuration it was trained on), and
extrapolation (trained on the small footprints, tested on the largest, as
Kumar et al. (SC13) section 5.2 trains on small core counts). Errors are absolute
percentage errors |predicted - measured| / measured; a model's median and
mean over every held-out sample, with their spread over the folds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import GroupKFold

from rooftop.learn import LearnError
from rooftop.learn.roofline_models import roofline_models
from rooftop.learn.zoo import plain_models

DEFAULT_FOLDS = 5
#: The prediction interval: these quantiles of measured / predicted over
#: the best model's cross-validated predictions.
INTERVAL = (0.05, 0.95)


def all_models(seed: int) -> dict:
    """Every model compared, name -> (kind, unfitted estimator)."""
    out = {n: ("plain", m) for n, m in plain_models(seed).items()}
    out.update({n: ("roofline", m) for n, m in roofline_models(seed).items()})
    return out


def ape(pred: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.abs(pred - y) / y * 100.0


@dataclass
class Score:
    """One model's errors over held-out samples (percent)."""

    name: str
    kind: str
    errors: np.ndarray
    #: Per fold: (median, mean) absolute percentage error.
    folds: list[tuple[float, float]] = field(default_factory=list)

    @property
    def median(self) -> float:
        return float(np.median(self.errors))

    @property
    def mean(self) -> float:
        return float(np.mean(self.errors))

    def spread(self, which: int) -> tuple[float, float] | None:
        """(min, max) over folds of the median (0) or mean (1); None: one split."""
        if len(self.folds) < 2:
            return None
        vals = [f[which] for f in self.folds]
        return min(vals), max(vals)

    def to_dict(self) -> dict:
        return {
            "model": self.name,
            "kind": self.kind,
            "median_ape": self.median,
            "mean_ape": self.mean,
            "median_ape_folds": self.spread(0),
            "mean_ape_folds": self.spread(1),
            "samples": len(self.errors),
        }


def check_folds(ds, folds: int) -> None:
    """Enough configurations for `folds` folds, or a message saying how many."""
    if folds < 2:
        raise LearnError(f"--folds must be at least 2, not {folds}")
    if ds.configurations < folds:
        raise LearnError(
            f"{ds.metric}: {ds.configurations} configuration(s) in run(s) {', '.join(ds.runs)}; "
            f"{folds}-fold cross-validation grouped by configuration needs at least {folds} "
            f"(measure more placements or knob settings: rooftop validate --servers-per-node / "
            f"--clients-per-node, or more runs; or lower --folds)"
        )


def splits(ds, folds: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train, test) indices of each fold, grouped by configuration."""
    check_folds(ds, folds)
    return list(GroupKFold(n_splits=folds).split(ds.y, ds.y, ds.groups))


def cross_validate(ds, folds: int, seed: int, only=None) -> tuple[list[Score], dict[str, np.ndarray]]:
    """Every model's (or those named in only) grouped cross-validation
    scores, best first, and out-of-fold predictions."""
    folds_idx = splits(ds, folds)
    X = ds.X()
    scores, oof = [], {}
    for name, (kind, est) in all_models(seed).items():
        if only is not None and name not in only:
            continue
        pred = np.empty(len(ds.y))
        per_fold = []
        for train, test in folds_idx:
            pred[test] = clone(est).fit(X[train], ds.y[train]).predict(X[test])
            e = ape(pred[test], ds.y[test])
            per_fold.append((float(np.median(e)), float(np.mean(e))))
        scores.append(Score(name, kind, ape(pred, ds.y), per_fold))
        oof[name] = pred
    return sorted(scores, key=lambda s: s.median), oof


def extrapolation_split(ds) -> tuple[np.ndarray, np.ndarray, str] | None:
    """(train, test, description): train on footprints up to the median of
    the distinct footprints, test on the largest; None with fewer than 3."""
    sizes = sorted(set(ds.footprint.tolist()))
    if len(sizes) < 3:
        return None
    limit = sizes[(len(sizes) - 1) // 2]
    train = np.flatnonzero(ds.footprint <= limit)
    test = np.flatnonzero(ds.footprint == sizes[-1])
    return (
        train,
        test,
        (
            f"trained on footprints of {sizes[0]:g}–{limit:g} processes (server + client), "
            f"tested on the largest, {sizes[-1]:g}"
        ),
    )


def extrapolate(ds, seed: int) -> tuple[list[Score], str]:
    """Every model trained on the small footprints, tested on the largest."""
    split = extrapolation_split(ds)
    if split is None:
        return [], "no extrapolation: fewer than 3 distinct footprints (server + client processes)"
    train, test, text = split
    X = ds.X()
    scores = []
    for name, (kind, est) in all_models(seed).items():
        pred = clone(est).fit(X[train], ds.y[train]).predict(X[test])
        scores.append(Score(name, kind, ape(pred, ds.y[test])))
    return sorted(scores, key=lambda s: s.median), text


def noise_floor(ds) -> float | None:
    """The median |error| of predicting each sample by the median of the
    other repeats of its configuration: what no model of these features can
    beat (None: no configuration was repeated)."""
    errs = []
    for g in set(ds.groups.tolist()):
        idx = np.flatnonzero(ds.groups == g)
        for i in idx if len(idx) > 1 else []:
            others = ds.y[idx[idx != i]]
            errs.append(abs(np.median(others) - ds.y[i]) / ds.y[i] * 100.0)
    return float(np.median(errs)) if errs else None


def interval(pred: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Factors (low, high) on a prediction: the INTERVAL quantiles of
    measured / predicted over cross-validated predictions."""
    ratio = y / pred
    return float(np.quantile(ratio, INTERVAL[0])), float(np.quantile(ratio, INTERVAL[1]))


def importances(est, ds, seed: int) -> list[tuple[str, float]]:
    """Per feature: how much the fitted model's median error grows (points
    of percent) when that feature's values are shuffled across samples
    (its one-hot columns together), largest first."""
    X = ds.X()
    base = float(np.median(ape(est.predict(X), ds.y)))
    rng = np.random.default_rng(seed)
    cols = ds.encoder.columns()
    out = []
    for f in ds.features:
        idx = [j for j, (g, _) in enumerate(cols) if g == f]
        Xp = X.copy()
        Xp[:, idx] = X[rng.permutation(len(X))][:, idx]
        out.append((f, float(np.median(ape(est.predict(Xp), ds.y))) - base))
    return sorted(out, key=lambda kv: -kv[1])
