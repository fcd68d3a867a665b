"""`rooftop tune`: the adaptive loop (issue 17, item 3; Figure 11 of Kumar et al. (SC13)).

Each step takes the configuration the proposer (learn.propose) asks for,
measures it on the real engine through the campaign machinery (one server
node, node 0, against one client node, node 1, of the launcher's nodes:
`--repeats` windows after one warmup, every window a stored sample of stage
"tune"), stores the step (tune_steps: its knob values, why it was chosen,
the rate predicted before and measured after, the best rate the retrained
model predicts), and retrains. It stops when `--budget` configurations are
measured, every configuration of the space is, or the best predicted rate
has not improved by more than TOLERANCE for PATIENCE steps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from rooftop.config.catalog import KEY_BY_PATH
from rooftop.config.files import get_key
from rooftop.keys import ConfigError
from rooftop.learn import LearnError
from rooftop.learn.dataset import encode_value, excluded
from rooftop.learn.keys import MIN_CONFIGS
from rooftop.learn.predict import check_params
from rooftop.learn.propose import Observation, Proposer
from rooftop.learn.space import PLACEMENT_KNOBS, Space
from rooftop.units import fmt_pct

#: The best predicted rate must improve by more than this (relative)...
TOLERANCE = 0.02
#: ...within this many model steps, or the tune stops.
PATIENCE = 4
#: Where placement knobs go in the config (the processes of each node).
PLACEMENT_KEYS = {"servers_per_node": "validate.servers_per_node", "clients_per_node": "validate.clients_per_node"}


@dataclass
class Settings:
    budget: int = 12
    init: int = MIN_CONFIGS
    repeat: int = 3
    duration: float = 1.0
    warmup: float = 0.5
    seed: int = 0

    def check(self) -> None:
        if self.init < MIN_CONFIGS:
            raise LearnError(
                f"tune.init (--init) {self.init}: too few samples to learn from; the model needs at least "
                f"{MIN_CONFIGS} measured configurations"
            )
        if self.budget < self.init:
            raise LearnError(f"tune.budget (--budget) {self.budget} must be at least tune.init (--init, {self.init})")
        if self.repeat < 1 or self.duration <= 0 or self.warmup < 0:
            raise LearnError("tune.repeat must be at least 1, tune.duration > 0 and tune.warmup >= 0")


def overrides_of(params: dict) -> dict:
    """A configuration's knob values as config overrides."""
    return {PLACEMENT_KEYS.get(k, k): v for k, v in params.items()}


def default_params(space: Space, cfg: dict) -> dict:
    """The base config's value of every knob of the space."""
    return {k: get_key(cfg, PLACEMENT_KEYS.get(k, k)) for k in space.knobs}


def check_values(space: Space, build: Callable[[dict], dict]) -> None:
    """Each value of each knob, alone, is a valid config (else the error
    names the knob)."""
    for key, values in space.knobs.items():
        for v in values:
            try:
                build(overrides_of({key: v}))
            except ConfigError as e:
                raise LearnError(f"{space.source}: {key} = {v!r}: {e}") from None


def prior_scores(doc: dict, space: Space, candidates: list[dict], base: dict, run_id: str) -> list[float]:
    """A learned model file's rate for every configuration; refused when it
    does not match the tune's parameters (learn.predict.check_params) or
    never saw a knob of the space vary."""
    if doc["metric"] != space.metric:
        raise LearnError(f"the model file models {doc['metric']}, the tune measures {space.metric}")
    params = {k: encode_value(k, v) for k, v in base.items() if not excluded(k, space.metric)}
    for key in space.knobs:
        if key in PLACEMENT_KNOBS:
            continue
        if key not in doc["features"]:
            raise LearnError(
                f"the model file never saw {key} vary (trained with "
                f"{doc['constants'].get(key, '(unset)')} in every sample): it cannot rank "
                f"the space's values of {key}; learn from runs that vary it"
            )
        params.pop(key, None)
    for key, trained in sorted(doc["constants"].items()):
        if str(params.get(key, "(unset)")) != str(trained):
            raise LearnError(
                f"the model file was trained with {key} = {_raw(key, trained)} in every sample; "
                f"this tune's base configuration has {base.get(key, '(unset)')}: the model cannot "
                f"tell the effect (set {key} as it was, or learn from runs that vary it)"
            )
    roof = doc["rooflines"][doc["runs"][0]]
    out = []
    for c in candidates:
        knobs = {k: encode_value(k, v) for k, v in c.items() if k not in PLACEMENT_KNOBS}
        check_params(doc, {**params, **knobs}, run_id)  # a value of the space it never saw, too
        spn, cpn = (
            c.get("servers_per_node", base[PLACEMENT_KEYS["servers_per_node"]]),
            c.get("clients_per_node", base[PLACEMENT_KEYS["clients_per_node"]]),
        )
        row = {
            **params,
            **knobs,
            "sample.server_procs": float(spn),
            "sample.client_procs": float(cpn),
            "sample.server_nodes": 1.0,
            "sample.client_nodes": 1.0,
            "sample.x": encode_value("sample.x", spn / cpn),
        }
        X = np.hstack([doc["encoder"].matrix([row]), [[roof.rate(spn / cpn)]]])
        out.append(float(doc["estimator"].predict(X)[0]))
    return out


def _raw(key: str, value):
    """An encoded constant as a config value (sizes back to bytes)."""
    k = KEY_BY_PATH.get(key)
    if k is not None and k.kind == "size" and isinstance(value, float):
        return f"{round(2**value - 1)} bytes"
    return value


@dataclass
class Step:
    step: int
    params: dict
    how: str
    predicted: float | None
    measured: float | None
    best_predicted: float | None
    keys: list[str]
    rates: list[float] = field(default_factory=list)
    error: str = ""

    def to_dict(self) -> dict:
        return {
            "step": self.step,
            "params": self.params,
            "how": self.how,
            "predicted": self.predicted,
            "measured": self.measured,
            "best_predicted": self.best_predicted,
            "keys": self.keys,
            "rates": self.rates,
            "error": self.error,
        }


def stalled(best: list[float | None]) -> bool:
    """The best predicted rate has not improved by more than TOLERANCE in
    the last PATIENCE model steps."""
    known = [b for b in best if b is not None]
    if len(known) <= PATIENCE:
        return False
    before, recent = known[-PATIENCE - 1], max(known[-PATIENCE:])
    return recent <= before * (1 + TOLERANCE)


def loop(
    proposer: Proposer,
    settings: Settings,
    measure: Callable[[int, dict], tuple[list[float], list[str], str]],
    on_step: Callable[[Step], None] = lambda s: None,
) -> tuple[list[Step], str]:
    """The adaptive loop over measure(step, params) -> (rates, keys, error);
    returns the steps and why it stopped."""
    history: list[Observation] = []
    steps: list[Step] = []
    while True:
        if len(steps) >= settings.budget:
            return steps, f"budget of {settings.budget} configurations measured"
        p = proposer.propose(history, settings.init)
        if p is None:
            return steps, "every configuration of the space is measured"
        rates, keys, error = measure(len(steps) + 1, p.params)
        history.append(Observation(p.params, rates))
        best = proposer.best_predicted(history) if sum(1 for o in history if o.rates) >= MIN_CONFIGS else None
        s = Step(
            len(steps) + 1,
            p.params,
            p.how,
            p.predicted,
            float(np.median(rates)) if rates else None,
            best,
            keys,
            rates,
            error,
        )
        steps.append(s)
        on_step(s)
        if stalled([t.best_predicted for t in steps if t.how == "model"]):
            return steps, (f"the best predicted rate improved by less than {fmt_pct(TOLERANCE)} in {PATIENCE} steps")


def best_step(steps: list[Step]) -> Step | None:
    measured = [s for s in steps if s.measured is not None]
    return max(measured, key=lambda s: (s.measured, -s.step)) if measured else None
