"""The learning commands: learn (models of the rate compared, the best
saved), predict (a learned model's rate, capped by the roofline) and tune
(the adaptive loop over engine and deployment knobs, measured)."""

from __future__ import annotations

import sys
from pathlib import Path

from rooftop import session
from rooftop.cli.common import (
    CONFIG_FLAGS,
    RESULTS_FLAG,
    KeyFlag,
    add_key_flags,
    campaign_flags,
    json_flag,
    key_help,
    resolve_run,
    results_arg,
    run_arg,
    str_list,
    takes_runs,
)
from rooftop.learn import keys as _tune_keys  # noqa: F401  (registers the tune.* config keys)
from rooftop.learn import require_sklearn
from rooftop.numbers import json_text

#: The tune's own flags, each setting a key of rooftop.learn.keys.
TUNE_FLAGS = (
    KeyFlag("--metrics", "tune.metric", "METRIC"),
    KeyFlag("--space", "tune.space", "FILE"),
    KeyFlag("--budget", "tune.budget", "N"),
    KeyFlag("--init", "tune.init", "N"),
    KeyFlag("--repeats", "tune.repeat", "K"),
    KeyFlag("--duration", "tune.duration", "S"),
    KeyFlag("--warmup", "tune.warmup", "S"),
    KeyFlag("--seed", "tune.seed", "N"),
    KeyFlag("--model", "tune.model", "FILE"),
)


def _cmd_learn(args) -> int:
    require_sklearn()
    from rooftop.learn.run import learn, metrics_to_learn
    from rooftop.learn.show import print_learned
    from rooftop.store.db import Store

    store = Store(args.results, create=False)
    runs = [store.get_run(r).id for r in args.runs]
    metrics = [m for t in args.metrics or [None] for m in metrics_to_learn(store, runs, t)]
    outcomes = [learn(store, runs, m, args.folds, args.seed) for m in metrics]
    if args.json:
        print(json_text([o.to_dict() for o in outcomes], indent=1))
    for o in [] if args.json else outcomes:
        print_learned(o, args.folds)
    return 0


def _cmd_predict(args) -> int:
    require_sklearn()
    from rooftop.config.files import parse_override
    from rooftop.learn.predict import predict
    from rooftop.learn.show import print_prediction
    from rooftop.store.db import Store

    sets = dict(parse_override(t) for t in args.set or [])
    p = predict(
        Store(args.results, create=False),
        args.run,
        args.servers,
        args.clients,
        sets,
        args.metrics,
        args.model,
        args.server_nodes,
        args.client_nodes,
    )
    if args.json:
        print(json_text(p, indent=1))
    else:
        print_prediction(p)
    return 0


def _cmd_tune(args) -> int:
    require_sklearn()
    from rooftop import metrics
    from rooftop.config.files import load_file, merge
    from rooftop.config.resolve import build as build_config
    from rooftop.learn import space as spaces
    from rooftop.learn.predict import load_model
    from rooftop.learn.tune import Settings
    from rooftop.learn.tune_run import prepare
    from rooftop.nics import check as nic_check
    from rooftop.store.db import Store

    overrides = session.overrides(args)
    merged = merge(load_file(args.config) if args.config else None, overrides, ("tune",))
    t = merged["tune"]
    if t["run"]:  # 'latest': the newest run of the results folder the tune writes to
        t["run"] = overrides["tune.run"] = resolve_run(merged["results"], t["run"])
    settings = Settings(t["budget"], t["init"], t["repeat"], t["duration"], t["warmup"], t["seed"])
    settings.check()  # before anything is created
    space = spaces.load(t["space"], t["metric"], build_config(args.config, overrides, ("tune",)))
    if t["metric"] and space.metric != t["metric"]:
        print(f"rooftop tune: {t['space']} tunes {space.metric}, not tune.metric {t['metric']}", file=sys.stderr)
        return 2
    overrides["metrics"] = [space.metric]
    build = lambda knobs: build_config(args.config, {**overrides, **knobs}, ("tune",))  # noqa: E731
    base = dict(build({}), stages=["tune"])
    nic_check.preflight(base)
    store = Store(base["results"])
    doc = load_model(Path(t["model"])) if t["model"] else None
    proposer = prepare(store, base, build, space, settings, t["run"], doc)
    with session.campaign_locks(args, store, base) as locks:  # a refused tune creates no run
        run_id = store.new_run(
            base,
            dict(
                session.environment(base),
                tune={
                    "space": space.to_dict(),
                    "settings": vars(settings),
                    "roofline_run": t["run"],
                    "model": t["model"],
                },
            ),
        )
        locks.name_run(run_id)
        return _tune_run(args, store, run_id, proposer, build, settings, metrics.get(space.metric).unit, t["run"])


def _tune_run(args, store, run_id: str, proposer, build, settings, unit: str, roofline_run: str | None) -> int:
    from rooftop.campaign.lifecycle import Hold
    from rooftop.learn.tune_report import outcome_lines, step_line
    from rooftop.learn.tune_run import tune

    say = (lambda m: None) if args.json else (lambda m: print(m, file=sys.stderr, flush=True))
    log = say if args.verbose else (lambda m: None)
    say(
        f"rooftop tune: run {run_id}, {proposer.space.metric} over {proposer.space.size()} configurations "
        f"({', '.join(proposer.space.knobs)}), budget {settings.budget}"
    )
    with Hold(store, run_id, "tune") as hold:  # Ctrl-C: interrupted, its steps so far stored (campaign.lifecycle)
        out = tune(store, run_id, proposer, build, settings, roofline_run, log, lambda s: say(step_line(s, unit)))
        best = out["best"]
        hold.finish(
            "complete" if best else "failed",
            f"tune {out['metric']}: {len(out['steps'])} steps; "
            + (f"best at step {best['step']}" if best else "nothing measured"),
        )
    if args.json:
        print(json_text(dict(out, run=run_id), indent=1, default=str))
    else:
        for line in outcome_lines(out, unit):
            say(line)
        print(run_id)
    return 0 if best else 1


def add_learn(sub) -> None:
    le = sub.add_parser(
        "learn",
        help="learned models of the rate, compared; the best saved with the run",
        description="Builds a dataset from the runs' validation samples (features: every "
        "resolved parameter that varies, and the placement; target: the per-client rate) "
        "and compares, by cross-validation grouped by configuration and by extrapolation "
        "(trained on small footprints, tested on the largest), scikit-learn's linear, "
        "ridge, lasso, elastic net, SVR, k-nearest neighbours, Gaussian process, tree, "
        "forest and boosting models with the run's roofline alone and roofline x a learned "
        "efficiency. Prints the tables and feature importances; saves the best model to "
        "RESULTS/RUN/learned/METRIC.model.json (RUN: the first run named; JSON: "
        "the model's name, seed and training data, refitted and checked when loaded; "
        "an older rooftop's METRIC.joblib pickle is never loaded: learn again).",
    )
    le.add_argument("runs", nargs="+", metavar="RUN", help="run ids (see 'rooftop runs'), or 'latest'")
    takes_runs(le, "runs")
    le.add_argument(
        "--metrics",
        type=str_list,
        metavar="LIST",
        help="the metrics to learn, comma-separated (default: every metric the runs validated)",
    )
    le.add_argument("--folds", type=int, default=5, metavar="K", help="cross-validation folds (default: %(default)s)")
    le.add_argument("--seed", type=int, default=0, metavar="N", help="random seed of the models (default: %(default)s)")
    results_arg(le)
    json_flag(le, "the models' scores")
    le.set_defaults(func=_cmd_learn)


def add_predict(sub) -> None:
    pr = sub.add_parser(
        "predict",
        help="a learned model's rate for a footprint, capped by the roofline",
        description="The per-client and aggregate rate the run's learned model (rooftop "
        "learn) predicts for S server processes and C client processes, with a "
        "90 % interval (from its cross-validated errors), capped by the roofline measured "
        "with those knobs, and which ceiling binds. --set KEY=VALUE changes a knob the "
        "model learned; a model trained on other parameters than the run's is refused.",
    )
    run_arg(pr, "the run whose learned model predicts (see 'rooftop runs')")
    pr.add_argument("--servers", type=int, required=True, metavar="S", help="server processes")
    pr.add_argument("--clients", type=int, required=True, metavar="C", help="client processes")
    pr.add_argument("--server-nodes", type=int, metavar="N", help="server nodes (default: packed as the training was)")
    pr.add_argument("--client-nodes", type=int, metavar="N", help="client nodes (default: packed as the training was)")
    pr.add_argument("--set", action="append", metavar="KEY=VALUE", help="a knob's value (repeatable)")
    pr.add_argument("--metrics", metavar="METRIC", help="which learned model, one metric, when the run has several")
    pr.add_argument("--model", metavar="FILE", help="a model file (METRIC.model.json) instead of the run's")
    results_arg(pr)
    json_flag(pr, "the prediction")
    pr.set_defaults(func=_cmd_predict)


def add_tune(sub) -> None:
    tu = sub.add_parser(
        "tune",
        help="the adaptive loop: propose settings from a learned model, measure, retrain; prints the run id",
        description="Measures configurations of a search space on the engine, each "
        "proposed by a model of the rates measured so far (Kumar et al.'s (SC13) predict-the-best; "
        "roofline-informed with RUN), until --budget configurations are measured or the "
        "best predicted rate stops improving. Every step is stored; 'rooftop report' on the run "
        "it prints shows the trajectory. See docs/learning.md.",
    )
    from rooftop.config.catalog import KEY_BY_PATH

    run_arg(tu, key_help(KEY_BY_PATH["tune.run"]), optional=True, resolve=False)
    tu.set_defaults(key_flags={"run": "tune.run"})
    _tune_config_args(tu)
    add_key_flags(tu, TUNE_FLAGS)
    campaign_flags(tu)
    tu.set_defaults(func=_cmd_tune)


def _tune_config_args(p) -> None:
    """The base config of a tune: a file, key flags (not --metrics: the
    space's metric is measured), --set."""
    p.add_argument("--config", help="campaign file (JSON, or TOML by extension): the base configuration")
    add_key_flags(p, [f for f in CONFIG_FLAGS if f.flag != "--metrics"] + [RESULTS_FLAG])
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="any config key of the base configuration or the tune, e.g. --set bw.stream_size=256MiB, "
        "--set tune.budget=20",
    )
