"""A campaign session: what every measuring command does around its runs,
whichever command it is (collect, validate, tune, bursts, interfere).

  overrides      --set KEY=VALUE and the key flags given -> config overrides
  restated       --set KEY=VALUE of a command measuring a stored run again
                 (rooftop.config.trust.check_reuse)
  environment    the run's environment record (host, versions, argv, engine)
  claim          this process runs the run now (refused while another does)
  campaign_locks the results folder's lock and this machine's cores'
  PlannedStore   where a run's files would go, for --dry-run

Not command-line code: rooftop.cli parses the flags and calls these, and so
can a study's own driver.
"""

from __future__ import annotations

import platform
import socket
import subprocess
import sys
from pathlib import Path

from rooftop import __version__
from rooftop.config.files import parse_override
from rooftop.engine.base import engine_path
from rooftop.launchers import on_this_machine
from rooftop.locks import CampaignLocks


def key_values(args) -> dict:
    """{config key: value} of the key flags given on the command line."""
    out = {}
    for dest, path in (getattr(args, "key_flags", None) or {}).items():
        value = getattr(args, dest, None)
        if value is not None and value != "":
            out[path] = value
    return out


def overrides(args) -> dict:
    """--set KEY=VALUE, then the key flags given (which win)."""
    o: dict = {}
    for text in getattr(args, "set", None) or []:
        k, v = parse_override(text)
        o[k] = v
    o.update(key_values(args))
    return o


def restated(args) -> dict:
    """--set KEY=VALUE of a command that measures a stored run again: values
    of the run's config given again (rooftop.config.trust.check_reuse)."""
    return dict(parse_override(text) for text in getattr(args, "set", None) or [])


def environment(cfg: dict) -> dict:
    env = {
        "host": socket.gethostname(),
        "python": platform.python_version(),
        "rooftop": __version__,
        "argv": sys.argv,
        "launcher": cfg["launcher"]["type"],
        "nodes": cfg["nodes"],
    }
    try:
        path = cfg["engine"]["path"] or engine_path()
        env["engine"] = subprocess.run([path, "version"], capture_output=True, text=True, timeout=10).stdout.strip()
        env["engine_path"] = path
    except Exception as e:  # recorded, not fatal: the samples record it too
        env["engine"] = f"unknown ({e})"
    return env


class PlannedStore:
    """Where a run's files would go, for --dry-run (nothing is created)."""

    def __init__(self, results: str):
        self.dir = Path(results)

    def run_dir(self, run_id: str) -> Path:
        return self.dir / run_id


def campaign_locks(args, store, cfg: dict):
    """The results folder's lock, and this machine's cores' for launchers on
    it (rooftop.locks); --allow-concurrent marks every sample stored."""
    if args.allow_concurrent:
        store.marks["concurrent"] = 1
    say = lambda m: print(f"rooftop: {m}", file=sys.stderr, flush=True)
    return CampaignLocks(
        store.dir, on_this_machine(cfg["launcher"]["type"]), args.wait_lock, args.allow_concurrent, say
    )
