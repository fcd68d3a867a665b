"""What `rooftop tune` measures next: Kumar et al.'s (SC13) predict-the-best (Kumar
et al., PIDX, SC13, Figure 11) with the learn package's models.

Proposer.propose(history) fits a model of the rate on every sample
measured so far (each repeat a row: the model sees the noise), predicts
every configuration of the space, and proposes the unmeasured one with the
highest optimistic prediction (mean + KAPPA standard deviations of
log rate: a configuration the model knows little about is worth measuring).
The model is the zoo's Gaussian process (learn.zoo) on log(rate); where a
roofline applies (the tune names a run with ceilings) it is the
roofline-informed one: the process learns log(rate / r(x)), the efficiency,
and predictions are multiplied back by r(x) (learn.roofline_models).

Before MIN_CONFIGS configurations are measured there is nothing to learn:
the first steps are the default configuration, then the best of a learned
model file (`rooftop learn`'s, checked against the tune's parameters) or a
seeded random draw. Everything is deterministic given the seed.
"""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass, field

import numpy as np

from rooftop.learn import LearnError
from rooftop.learn.dataset import Encoder, encode_value
from rooftop.learn.keys import MIN_CONFIGS
from rooftop.learn.space import MAX_CANDIDATES, Space

#: Optimism of the proposal, in standard deviations of log rate.
KAPPA = 1.0


@dataclass
class Observation:
    """One measured configuration: its knob values and per-client rates."""

    params: dict
    rates: list[float]

    @property
    def rate(self) -> float | None:
        return float(np.median(self.rates)) if self.rates else None


@dataclass
class Proposal:
    params: dict
    #: The model's rate for it (None: proposed without one).
    predicted: float | None
    #: How it was chosen: default, prior, random or model.
    how: str
    #: The best rate the model predicts over the whole space (None: no model yet).
    best_predicted: float | None = None


def feature(key: str, value) -> float | str:
    """A knob value as a feature: sizes log2(1 + bytes), counts log2(1 + n),
    progress modes and policies categories."""
    v = encode_value(key, value) if "." in key else value
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)) and key.endswith(("concurrency", "threads", "per_node")):
        return math.log2(1 + v)
    return float(v) if isinstance(v, (int, float)) else str(v)


def x_of(params: dict, base: dict) -> float:
    """x = server / client processes of a configuration (one node each).
    params: the configuration's knobs (the space may not name the
    placement); base: the base config's placement (validate.servers_per_node
    and clients_per_node, both read from its config)."""
    spn = params.get("servers_per_node", base["servers_per_node"])
    cpn = params.get("clients_per_node", base["clients_per_node"])
    return spn / cpn


@dataclass
class Proposer:
    space: Space
    seed: int = 0
    #: The default configuration (measured first).
    default: dict = field(default_factory=dict)
    #: r(x) where a roofline applies (the tune named a run with ceilings).
    roofline: object | None = None
    #: Scores of a learned model file per configuration (the initial steps' order).
    prior: list[float] | None = None
    #: The base config's processes per node (knobs the space does not name).
    placement: dict = field(default_factory=dict)

    def __post_init__(self):
        grid = self.space.grid()
        if len(grid) > MAX_CANDIDATES:
            rng = np.random.default_rng(self.seed)
            grid = [grid[i] for i in sorted(rng.choice(len(grid), MAX_CANDIDATES, replace=False))]
        self.candidates = grid
        rows = [self._row(c) for c in grid]
        self.encoder = Encoder.fit(list(self.space.knobs), rows)
        self.X = self.encoder.matrix(rows)
        self.roof = np.array([self._roof(c) for c in grid])

    def _row(self, params: dict) -> dict:
        return {k: feature(k, params[k]) for k in self.space.knobs}

    def _roof(self, params: dict) -> float:
        return self.roofline.rate(x_of(params, self.placement)) if self.roofline is not None else 1.0

    def fit(self, history: list[Observation]):
        """The model on every sample of the history (LearnError: too few
        configurations measured)."""
        measured = [o for o in history if o.rates]
        if len(measured) < MIN_CONFIGS:
            raise LearnError(
                f"too few samples to learn: the model needs at least {MIN_CONFIGS} measured "
                f"configurations, {len(measured)} have been measured (--init {MIN_CONFIGS} "
                f"or more)"
            )
        rows = [self._row(o.params) for o in measured for _ in o.rates]
        roof = np.array([self._roof(o.params) for o in measured for _ in o.rates])
        y = np.log([r for o in measured for r in o.rates]) - np.log(roof)
        X = self.encoder.matrix(rows)
        # scikit-learn (the `learn` extra) is imported here, not with the
        # module: the tune config keys and a tune run's report need none.
        from sklearn.exceptions import ConvergenceWarning  # noqa: PLC0415

        from rooftop.learn.zoo import regressor  # noqa: PLC0415

        with warnings.catch_warnings():  # a few noisy rows: bounds reached are expected
            warnings.simplefilter("ignore", ConvergenceWarning)
            return regressor("Gaussian process", self.seed).fit(X, y)

    def predict(self, model) -> tuple[np.ndarray, np.ndarray]:
        """(log rate mean, std) of every candidate."""
        mean, std = model.predict(self.X, return_std=True)
        return mean + np.log(self.roof), std

    def propose(self, history: list[Observation], init: int = MIN_CONFIGS) -> Proposal | None:
        """The next configuration to measure (None: every one is measured):
        the default first, then initial picks until `init` configurations
        are measured, then the model's."""
        if not history:
            return Proposal(dict(self.default), None, "default")
        seen = {_key(o.params) for o in history}
        left = [i for i, c in enumerate(self.candidates) if _key(c) not in seen]
        if not left:
            return None
        if sum(1 for o in history if o.rates) < max(init, MIN_CONFIGS):
            return self._initial(left, len(history))
        mean, std = self.predict(self.fit(history))
        best = max(left, key=lambda i: (mean[i] + KAPPA * std[i], -i))
        return Proposal(dict(self.candidates[best]), float(math.exp(mean[best])), "model", float(math.exp(mean.max())))

    def best_predicted(self, history: list[Observation]) -> float:
        """The best rate over the space, the model retrained on history."""
        mean, _ = self.predict(self.fit(history))
        return float(math.exp(mean.max()))

    def _initial(self, left: list[int], step: int) -> Proposal:
        """Before the model: the prior's best left, else a seeded draw."""
        if self.prior is not None:
            i = max(left, key=lambda j: (self.prior[j], -j))
            return Proposal(dict(self.candidates[i]), float(self.prior[i]), "prior")
        rng = np.random.default_rng([self.seed, step])
        return Proposal(dict(self.candidates[left[int(rng.integers(len(left)))]]), None, "random")


def _key(params: dict) -> str:
    return json.dumps(params, sort_keys=True, default=str)
