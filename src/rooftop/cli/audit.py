"""`rooftop audit`: its parser and driver (rooftop.audit measures the
pitfalls, stores the run and shows it)."""

from __future__ import annotations

import sys
from pathlib import Path

from rooftop.audit import keys as _audit_keys  # noqa: F401  (registers the audit.* config keys)
from rooftop.cli.common import RESULTS_FLAG, KeyFlag, add_key_flags, campaign_flags
from rooftop.numbers import json_text

#: The audit's own flags: keys of rooftop.audit.keys, engine.lease and fabric.provider.
AUDIT_FLAGS = (
    KeyFlag("--only", "audit.only", "NAMES"),
    KeyFlag("--repeats", "audit.repeats", "N"),
    KeyFlag("--duration", "audit.duration", "SECONDS"),
    KeyFlag("--warmup", "audit.warmup", "SECONDS"),
    KeyFlag("--fabric", "fabric.provider"),
    KeyFlag("--storage-dir", "audit.storage_dir", "DIR"),
    KeyFlag("--lease", "engine.lease", "SECONDS"),
)

#: The common keys the audit reads (any other given is refused, not ignored).
READS = ("engine.lease", "fabric.provider", "results")


def options(config_file: str | None, overrides: dict) -> dict:
    """The audit's options from its keys (defaults <- file <- overrides)."""
    from rooftop.config.catalog import section_of
    from rooftop.config.files import load_file, merge
    from rooftop.keys import ConfigError

    other = sorted(k for k in overrides if k not in READS and section_of(k) != "audit")
    if other:
        raise ConfigError(f"{other[0]}: not read by rooftop audit (its keys: audit.*, {', '.join(READS)})")
    cfg = merge(load_file(config_file) if config_file else None, overrides, ("audit",))
    if cfg["engine"]["lease"] <= 0:
        raise ConfigError(f"engine.lease: must be > 0, got {cfg['engine']['lease']}")
    a = cfg["audit"]
    if not a["only"]:
        raise ConfigError("audit.only: name at least one pitfall")
    if a["storage_dir"] and not Path(a["storage_dir"]).is_dir():
        raise ConfigError(f"audit.storage_dir: {a['storage_dir']}: not a directory")
    return {
        "only": a["only"],
        "repeats": a["repeats"],
        "duration": a["duration"],
        "warmup": a["warmup"],
        "fabric": cfg["fabric"]["provider"],
        "storage_dir": str(Path(a["storage_dir"]).resolve()) if a["storage_dir"] else "",
        "results": cfg["results"],
        "lease": cfg["engine"]["lease"],
    }


def _cmd_audit(args) -> int:
    from rooftop import audit, session
    from rooftop.audit import run as audit_run
    from rooftop.audit import show
    from rooftop.files import confined
    from rooftop.locks import CampaignLocks
    from rooftop.store.db import Store

    opts = options(args.config, session.overrides(args))
    pitfalls = audit.select(",".join(opts.pop("only")))
    store = Store(opts["results"])
    opts["results"] = str(store.dir)
    say = (lambda m: None) if args.json else (lambda m: print(m, file=sys.stderr, flush=True))
    with CampaignLocks(
        store.dir, True, args.wait_lock, False, lambda m: print(f"rooftop: {m}", file=sys.stderr, flush=True)
    ) as locks:
        run_id, rows = audit_run.run(store, pitfalls, opts, say)
        locks.name_run(run_id)
    with confined(store.run_dir(run_id)):  # nothing written through a link out of the run's folder
        page, _ = show.write(store.get_run(run_id), rows, store.run_dir(run_id) / "report")
    if args.json:
        print(json_text({"run": run_id, "report": str(page), "rows": rows}, indent=1))
        return 0
    print(show.table_text(rows))
    print(f"run {run_id}; report: {page}")
    return 0


def add_audit(sub) -> None:
    from rooftop.audit import PITFALLS

    au = sub.add_parser(
        "audit",
        help="the Dark Side of Microbenchmarking talk's five benchmark pitfalls and a sixth, measured here as deltas",
        description="Measures each pitfall's settings side by side on this machine "
        "(local launcher, one logical node of its usable cores): "
        + "; ".join(f"{p.name}: {p.title}" for p in PITFALLS.values())
        + ". Settings alternate over the repeats; two settings whose repeats "
        "overlap are 'indistinguishable here'. Stored as a run (rooftop runs, "
        "rooftop report RUN); prints the table and the report's path.",
    )
    au.add_argument("--config", help="config file (JSON, or TOML by extension); see 'rooftop config keys'")
    au.add_argument(
        "--set", action="append", metavar="KEY=VALUE", help="an audit key or engine.lease, e.g. --set audit.repeats=5"
    )
    add_key_flags(au, AUDIT_FLAGS)
    add_key_flags(au, [RESULTS_FLAG])
    campaign_flags(au, verbose=False, allow_concurrent=False)
    au.set_defaults(func=_cmd_audit)
