"""`rooftop tune` on the engine: a stored run, each step measured through
the campaign machinery (rooftop.campaign.Runner, the config's launcher),
every step stored (store.tune_steps) and written to RESULTS/RUN/tune.json.

A step's configuration is the base config (--config, --set) with its knob
values set, resolved as any campaign's (a value the config refuses fails
that step, named); it runs one server node (node 0, servers_per_node
processes) against one client node (node 1, clients_per_node processes),
`repeat` windows of `duration` after one warmup, each window a sample of
stage "tune" keyed tune/METRIC/stepNNN/...; its rate is the median of the
windows' per-client rates.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from rooftop import files, model
from rooftop.campaign import Runner
from rooftop.keys import ConfigError
from rooftop.launchers import make_launcher
from rooftop.learn import LearnError
from rooftop.learn.propose import Proposer, x_of
from rooftop.learn.space import Space
from rooftop.learn.tune import (
    PLACEMENT_KEYS,
    Settings,
    Step,
    best_step,
    check_values,
    default_params,
    loop,
    overrides_of,
    prior_scores,
)
from rooftop.numbers import json_text
from rooftop.stages import Measurement, Placement
from rooftop.store.records import flatten

STAGE = "tune"
TUNE_FILE = "tune.json"


def step_placement(metric: str, step: int, spn: int, cpn: int, settings: Settings):
    """The placement of one step: one measurement of `repeat` windows."""
    key = f"{STAGE}/{metric}/step{step:03d}/s0x{spn}/c1x{cpn}"
    m = Measurement(key, STAGE, metric, [1], cpn, range(settings.repeat), settings.duration, settings.warmup)
    return Placement([0], spn, [m])


def measurer(
    store, run_id: str, build: Callable[[dict], dict], metric: str, settings: Settings, log: Callable[[str], None]
):
    """measure(step, params) -> (per-client rates, sample keys, error):
    the rates of the samples rooftop.model.exclusion lets through."""

    def measure(step: int, params: dict):
        try:
            cfg = build(overrides_of(params))
        except ConfigError as e:
            return [], [], f"not a valid configuration: {e}"
        if len(cfg["nodes"]) < 2:
            raise LearnError("a tune needs 2 nodes (a server node and a client node); the launcher has 1")
        pl = step_placement(
            metric, step, cfg["validate"]["servers_per_node"], cfg["validate"]["clients_per_node"], settings
        )
        keys = pl.keys()
        Runner(cfg, store, run_id, make_launcher(cfg["launcher"]), log=log).run_placements([pl])
        rows = [s for s in store.samples(run_id, stage=STAGE, metric=metric) if s["key"] in keys]
        why = model.exclusions(rows, cfg["nodes"])  # the model's one rule: no step from a sample it leaves out
        errors = sorted({why[s["key"]] for s in rows if why[s["key"]]})
        return [s["per_client"] for s in rows if not why[s["key"]]], keys, "; ".join(errors)[:500]

    return measure


def roofline_of(store, run_id: str | None, metric: str):
    """The roofline of the run tune.run names (RUN; None: no ceilings to compare)."""
    if not run_id:
        return None

    run = store.get_run(run_id)
    try:
        return model.from_run(store.samples(run.id), metric, run.id, nodes=run.config.get("nodes"))
    except model.ModelError as e:
        raise LearnError(f"tune.run (RUN) {run_id}: no roofline of {metric} to tune against ({e})") from None


def summary(steps: list[Step], reason: str, space: Space, roof, roof_run: str | None, placement: dict) -> dict:
    """The tune's outcome: its steps, the best configuration, against the roofline."""
    best = best_step(steps)
    out = {
        "metric": space.metric,
        "space": space.to_dict(),
        "stopped": reason,
        "steps": [s.to_dict() for s in steps],
        "best": best.to_dict() if best else None,
        "default": steps[0].measured if steps else None,
        "roofline": None,
    }
    if best and roof is not None:
        x = x_of(best.params, placement)
        out["roofline"] = {
            "run": roof_run,
            "x": x,
            "rate": roof.rate(x),
            "binds": roof.binding(x),
            "share": best.measured / roof.rate(x),
        }
    elif best:
        out["roofline_note"] = (
            "no ceilings to compare against: give RUN, a collect run on these nodes (rooftop collect)"
        )
    return out


def prepare(
    store,
    base: dict,
    build: Callable[[dict], dict],
    space: Space,
    settings: Settings,
    roof_run: str | None = None,
    model_doc: dict | None = None,
) -> Proposer:
    """Everything checked before a run exists: the space's values, the
    roofline run, the model file against the base config's parameters."""
    settings.check()
    check_values(space, build)
    placement = {k: base["validate"][k] for k in PLACEMENT_KEYS}
    roof = roofline_of(store, roof_run, space.metric)
    proposer = Proposer(space, settings.seed, default_params(space, base), roof, placement=placement)
    if model_doc is not None:
        proposer.prior = prior_scores(model_doc, space, proposer.candidates, dict(flatten(base)), "this tune")
    return proposer


def tune(
    store,
    run_id: str,
    proposer: Proposer,
    build: Callable[[dict], dict],
    settings: Settings,
    roof_run: str | None = None,
    log=lambda m: None,
    on_step=lambda s: None,
) -> dict:
    """The loop, measured on the engine, every step stored."""
    space = proposer.space
    measure = measurer(store, run_id, build, space.metric, settings, log)

    def stored(s: Step) -> None:
        store.add_tune_step(run_id, s.to_dict())
        on_step(s)

    steps, reason = loop(proposer, settings, measure, stored)
    out = summary(steps, reason, space, proposer.roofline, roof_run, proposer.placement)
    out["settings"] = vars(settings)
    files.write(store.run_dir(run_id) / TUNE_FILE, json_text(out, indent=1, default=str))
    return out


def load(store, run_id: str) -> dict | None:
    """A tune run's outcome (its tune.json; None: not a tune run)."""
    path = Path(store.run_dir(run_id)) / TUNE_FILE
    if not path.is_file():
        return None
    return json.loads(path.read_text())


def outcome_of(store, run) -> dict:
    """The outcome of an interrupted tune, from its stored steps (no
    roofline comparison: the run ended before it was made)."""
    tune = run.environment.get("tune", {})
    space = Space(
        tune.get("space", {}).get("metric", run.config["metrics"][0]),
        tune.get("space", {}).get("knobs", {}),
        tune.get("space", {}).get("source", ""),
    )
    steps = [
        Step(s["step"], s["params"], s["how"], s["predicted"], s["measured"], s["best_predicted"], s["keys"])
        for s in store.tune_steps(run.id)
    ]
    out = summary(steps, f"interrupted ({run.status}: {run.note})", space, None, None, {})
    out["roofline_note"] = "the tune was interrupted before its comparison with the roofline"
    return out
