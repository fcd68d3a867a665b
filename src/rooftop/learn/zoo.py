"""The plain models: scikit-learn regressors as Table 5 of Kumar et al. (SC13) compares
them (Kumar et al., PIDX, SC13), one table entry each.

Every model sees the features (dataset.Encoder's matrix, standardised) and
learns log(rate): rates span orders of magnitude across sizes and
placements, and errors are judged in percent. The design matrix carries
the roofline rate as its last column; plain models never see it
(roofline_models.py's do).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
from sklearn.linear_model import ElasticNet, Lasso, LinearRegression, Ridge
from sklearn.neighbors import KNeighborsRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVR
from sklearn.tree import DecisionTreeRegressor


def _gp(seed: int):
    kernel = ConstantKernel(1.0) * RBF(length_scale=1.0) + WhiteKernel(0.1)
    return GaussianProcessRegressor(kernel, normalize_y=True, random_state=seed)


#: name -> regressor factory(seed). Order: as Table 5 of Kumar et al. (SC13).
REGRESSORS: dict[str, Callable[[int], object]] = {
    "linear": lambda seed: LinearRegression(),
    "ridge": lambda seed: Ridge(alpha=1.0),
    "lasso": lambda seed: Lasso(alpha=0.01, max_iter=20000),
    "elastic net": lambda seed: ElasticNet(alpha=0.01, l1_ratio=0.5, max_iter=20000),
    "SVR (linear)": lambda seed: SVR(kernel="linear", C=1.0, epsilon=0.05),
    "SVR (RBF)": lambda seed: SVR(kernel="rbf", C=10.0, epsilon=0.05),
    "k-nearest neighbours": lambda seed: KNeighborsRegressor(n_neighbors=5, weights="distance"),
    "Gaussian process": _gp,
    "decision tree": lambda seed: DecisionTreeRegressor(min_samples_leaf=2, random_state=seed),
    "random forest": lambda seed: RandomForestRegressor(
        n_estimators=100, min_samples_leaf=2, random_state=seed, n_jobs=1
    ),
    "gradient boosting": lambda seed: GradientBoostingRegressor(random_state=seed),
}


def regressor(name: str, seed: int):
    """A fresh, standardising pipeline around the named regressor."""
    return make_pipeline(StandardScaler(), REGRESSORS[name](seed))


def fit_log(est, Z: np.ndarray, target: np.ndarray):
    """Fits est on Z (k-nearest neighbours: never more neighbours than rows)."""
    last = est.steps[-1][1]
    if isinstance(last, KNeighborsRegressor) and last.n_neighbors > len(Z):
        est.set_params(**{f"{est.steps[-1][0]}__n_neighbors": len(Z)})
    return est.fit(Z, target)


class Plain(RegressorMixin, BaseEstimator):
    """A regressor of log(rate) on the features alone."""

    def __init__(self, name: str = "ridge", seed: int = 0):
        self.name = name
        self.seed = seed

    def fit(self, X, y):
        self.est_ = fit_log(regressor(self.name, self.seed), X[:, :-1], np.log(y))
        return self

    def predict(self, X):
        return np.exp(self.est_.predict(X[:, :-1]))

    def core(self):
        """The fitted regressor (feature importances), on the features."""
        return self.est_, False


def plain_models(seed: int) -> dict[str, Plain]:
    return {name: Plain(name, seed) for name in REGRESSORS}
