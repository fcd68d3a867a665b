"""The roofline-informed models (issue 17, item 1).

(a) RooflineAlone: the run's roofline r(x) = min(client, x * server), its
    ceilings' medians (rooftop.model), as the prediction; nothing learned.
(b) Efficiency: a regressor of log(measured / r(x)), the efficiency, on the
    features plus log r(x), multiplied back by r(x).
    The roofline carries what scales with the footprint (x, the ceilings
    measured for those knobs); the regressor learns only how far below it
    a placement runs, which varies far less than the rate itself, so it
    extrapolates better than a regressor of the rate.

Both take the design matrix of dataset.Dataset.X: the features, then the
roofline rate as the last column.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin

from rooftop.learn.zoo import fit_log, regressor

#: Base regressors of the efficiency model compared in `rooftop learn`.
EFFICIENCY_BASES = ("ridge", "random forest", "gradient boosting")


class RooflineAlone(RegressorMixin, BaseEstimator):
    """r(x) as the prediction."""

    def fit(self, X, y):
        self.fitted_ = True
        return self

    def predict(self, X):
        return X[:, -1].copy()

    def core(self):
        return None, False


def _with_roof(X) -> np.ndarray:
    """The features and log r(x) (with log2 x among the features, it tells
    the regressor which ceiling binds)."""
    return np.hstack([X[:, :-1], np.log(X[:, -1:])])


class Efficiency(RegressorMixin, BaseEstimator):
    """r(x) * exp(regressor of log(measured / r(x)))."""

    def __init__(self, base: str = "random forest", seed: int = 0):
        self.base = base
        self.seed = seed

    def fit(self, X, y):
        self.est_ = fit_log(regressor(self.base, self.seed), _with_roof(X), np.log(y / X[:, -1]))
        return self

    def predict(self, X):
        return X[:, -1] * np.exp(self.est_.predict(_with_roof(X)))

    def core(self):
        """The fitted regressor, on the features plus log r(x) (True)."""
        return self.est_, True


def roofline_models(seed: int) -> dict:
    out = {"roofline alone": RooflineAlone()}
    for base in EFFICIENCY_BASES:
        out[f"roofline x efficiency ({base})"] = Efficiency(base, seed)
    return out
