"""A campaign session: what every measuring command does around its runs,
whichever command it is (collect, validate, tune, bursts, interfere).

  overrides      --set KEY=VALUE and the key flags given -> config overrides
  restated       --set KEY=VALUE of a command measuring a stored run again
                 (rooftop.config.trust.check_reuse)
  versions       rooftop's, the engine's and libfabric's versions, the git revision
  environment    the run's environment record (host, versions, argv, engine)
  claim          this process runs the run now (refused while another does)
  campaign_locks the results folder's lock and this machine's cores'
  PlannedStore   where a run's files would go, for --dry-run

Not command-line code: rooftop.cli parses the flags and calls these, and so
can a study's own driver.
"""

from __future__ import annotations

import json
import platform
import re
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


def git_revision() -> str | None:
    """The git revision rooftop runs from: its checkout's (`git describe
    --always --dirty`) when run from one, else the one the installed package
    was built from (build_info.json, written by the engine's CMake at
    install), None when neither is known (built from an sdist)."""
    here = Path(__file__).resolve().parent
    top = here.parent.parent  # src/rooftop -> the checkout
    if (top / ".git").exists() and (top / "pyproject.toml").is_file():
        try:
            p = subprocess.run(
                ["git", "-C", str(top), "describe", "--always", "--dirty"], capture_output=True, text=True, timeout=10
            )
        except OSError:  # no git
            p = None
        if p is not None and p.returncode == 0 and p.stdout.strip():
            return p.stdout.strip()
    try:
        return json.loads((here / "build_info.json").read_text())["git"] or None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def versions(path: str | None = None) -> dict:
    """{rooftop, engine, libfabric, git, engine_text, engine_path} of this
    installation (path: the engine to ask; default the one rooftop runs,
    rooftop.engine.base.engine_path). An engine that cannot be asked is
    recorded as "unknown (why)", not an error: the samples record it too."""

    out: dict = {"rooftop": __version__, "engine": None, "libfabric": None, "git": git_revision()}
    try:
        path = path or engine_path()
        text = subprocess.run([path, "version"], capture_output=True, text=True, timeout=10).stdout.strip()
    except Exception as e:  # noqa: BLE001 (any failure is recorded as text)
        out["engine_text"] = f"unknown ({e})"
        return out
    out["engine_text"], out["engine_path"] = text, path
    m = re.match(r"rooftop-engine (\S+) \(libfabric ([^)]+)\)", text)
    if m:
        out["engine"], out["libfabric"] = m.group(1), m.group(2)
    return out


def version_text(v: dict) -> str:
    """`rooftop --version`: one line, e.g. "rooftop 0.1.0 (engine 0.1.0,
    libfabric 1.17, git 230c66b)"; what is not known is left out."""
    parts = [f"engine {v['engine']}" if v["engine"] else f"engine {v.get('engine_text')}"]
    parts += [f"{k} {v[k]}" for k in ("libfabric", "git") if v[k]]
    return f"rooftop {v['rooftop']} ({', '.join(parts)})"


def environment(cfg: dict) -> dict:
    """A run's environment record: where and with what it ran (host, Python,
    versions of rooftop, the engine, libfabric, the git revision), how it
    was started (argv), its launcher and nodes."""

    env = {
        "host": socket.gethostname(),
        "python": platform.python_version(),
        "rooftop": __version__,
        "argv": sys.argv,
        "launcher": cfg["launcher"]["type"],
        "nodes": cfg["nodes"],
    }
    v = versions(cfg["engine"]["path"] or None)
    # "engine": the engine's own line, as runs have always recorded it.
    env["engine"] = v["engine_text"]
    if "engine_path" in v:
        env["engine_path"] = v["engine_path"]
    return dict(env, **recorded(v))


def recorded(v: dict) -> dict:
    """What a run's environment records of versions(): rooftop's, the
    engine's and libfabric's versions and the git revision (every run, of
    every kind, records these)."""
    return {"rooftop": v["rooftop"], "engine_version": v["engine"], "libfabric": v["libfabric"], "git": v["git"]}


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
