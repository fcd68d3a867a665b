"""The config keys of `rooftop tune` (section `tune`): its budget, the
windows per configuration, the seed, the space and model files, the
roofline run; declared once with type, default, limits and help, and
registered in the key table (rooftop.config.catalog.register). `rooftop config
keys` lists them; `--set tune.budget=20`, a config file's [tune] table and
the command's flags (rooftop.cli.learn: --budget, --repeats, ...) set them;
the run's config records them under `tune`."""

from __future__ import annotations

from rooftop import metrics
from rooftop.config.catalog import register
from rooftop.keys import Key

#: Configurations measured before the model is trusted to propose
#: (rooftop.learn.propose). Declared here, with the keys that default to it,
#: so registering the keys does not load numpy.
MIN_CONFIGS = 3

KEYS = [
    Key(
        "tune.metric",
        "choice",
        None,
        "what to tune (default: the space file's, else rpc)",
        tuple(metrics.METRICS),
        nullable=True,
    ),
    Key(
        "tune.space",
        "str",
        None,
        "search space file (JSON, or TOML by extension): knob -> list of values or {min, max, step|factor}; "
        "default: a built-in space per metric",
        nullable=True,
    ),
    Key("tune.budget", "int", 12, "configurations measured at most (at least tune.init)", minimum=1, maximum=10_000),
    Key(
        "tune.init",
        "int",
        MIN_CONFIGS,
        "configurations measured before the model proposes: the default, then a model file's best or seeded "
        f"random ones (the model needs at least {MIN_CONFIGS})",
        minimum=MIN_CONFIGS,
        maximum=10_000,
    ),
    Key("tune.repeat", "int", 3, "windows per configuration; its rate is their median", minimum=1, maximum=1000),
    Key("tune.duration", "float", 1.0, "seconds per window", minimum=0.05, maximum=86400),
    Key("tune.warmup", "float", 0.5, "warmup seconds per configuration", minimum=0, maximum=3600),
    Key(
        "tune.seed",
        "int",
        0,
        "random seed: same seed, same proposals for the same measurements",
        minimum=0,
        maximum=2**63 - 1,
    ),
    Key(
        "tune.run",
        "str",
        None,
        "a run with ceilings on these nodes: the model learns the efficiency against its roofline, and the best "
        "is compared with it (default: none)",
        nullable=True,
    ),
    Key(
        "tune.model",
        "str",
        None,
        "a model file of 'rooftop learn' (RESULTS/RUN/learned/METRIC.model.json) ranking the initial "
        "configurations (refused when it does not match the tune's parameters; default: none)",
        nullable=True,
    ),
]

register("tune", KEYS)
