"""The config keys of `rooftop audit` (section `audit`): which pitfalls,
the repeats, the measured and warm-up seconds and the storage directory; declared once with type, default, limits and help, and
registered in the key table (rooftop.config.catalog.register). `rooftop config
keys` lists them; `--set audit.repeats=5`, a config file's [audit] table
and the command's flags (rooftop.cli.audit: --repeats, --only, ...) set
them; the run's config records them under `audit`. Its --lease and
--fabric are the common keys engine.lease and fabric.provider (the one
fabric of every command: a site config's reaches the audit too)."""

from __future__ import annotations

from rooftop.audit import PITFALLS
from rooftop.config.catalog import register
from rooftop.keys import Key

KEYS = [
    Key("audit.only", "list[choice]", list(PITFALLS), "the pitfalls measured", tuple(PITFALLS)),
    Key("audit.repeats", "int", 3, "runs per setting", minimum=1, maximum=1000),
    Key("audit.duration", "float", 1.0, "measured seconds per run", minimum=0.05, maximum=86400),
    Key("audit.warmup", "float", 0.3, "warm-up seconds per run", minimum=0, maximum=3600),
    Key(
        "audit.storage_dir",
        "str",
        None,
        "directory of the storage pitfalls (default: a temporary directory in the run's folder under the "
        "results folder, removed after; on tmpfs the O_DIRECT settings are reported not measurable)",
        nullable=True,
        executes=True,
    ),
]

register("audit", KEYS)
