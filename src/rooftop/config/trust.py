"""What a command takes from a stored run's config: the trust model
(docs/locks-and-secrets.md, "What rooftop takes from a results folder").

A results folder is data. Its numbers, engine documents and the runs'
configs are read, reported and compared whoever wrote them. Some keys of a
config name what a command would run or write as its user: a program
(engine.path, launcher.command), hosts (launcher.hosts, launcher.hostfile),
arguments (launcher.extra_args), a command line or a folder written to;
their Key says executes=True, in the key tables, once. A command that
measures a stored run again (validate, collect --resume, service,
interfere --bursts-run) calls check_reuse() on the config it is about to
use, before it starts or asks anything: a value of such a key that is not
the key's default is used only

  - when the user gives it again on the command line (--set KEY=VALUE,
    the value the run recorded), or
  - when the results folder, the run's folder, rooftop.db and the run's
    config.json are all owned by the user running the command (its
    effective uid) and none of them is writable by group or others, so
    that nobody else could have put it there.

Otherwise the command refuses (Untrusted, exit 2), naming each key, its
value, the owner or mode that made the folder untrusted, and how to go on.
The store is taken as it is given (rooftop.store's Store: dir, path,
run_dir()): config and store are layers apart.
"""

from __future__ import annotations

import json
import os
import pwd
import shlex
import stat
from pathlib import Path
from typing import Any, Protocol

from rooftop.config.catalog import KEY_BY_PATH
from rooftop.config.files import _check
from rooftop.keys import ConfigError, Key


class RunFiles(Protocol):
    """Where a run's files are (rooftop.store's Store has these)."""

    dir: Path
    path: Path

    def run_dir(self, run_id: str) -> Path: ...


class Untrusted(ConfigError):
    """A stored value that names what would run, from a folder not the user's alone."""


def executing_keys() -> list[Key]:
    """Every key whose value names what a command runs or writes."""
    return [k for k in KEY_BY_PATH.values() if k.executes]


_MISSING = object()


def _value(cfg: dict, path: str) -> Any:
    d: Any = cfg
    for part in path.split("."):
        if not isinstance(d, dict) or part not in d:
            return _MISSING
        d = d[part]
    return d


def acting(cfg: dict) -> dict[str, Any]:
    """{path: value} of the executing keys a config sets to something other
    than the key's default (None, "" and [] say nothing either)."""
    out = {}
    for key in executing_keys():
        value = _value(cfg, key.path)
        if value is _MISSING or value in (None, "", []) or value == key.default:
            continue
        out[key.path] = value
    return out


def _name(uid: int) -> str:
    """The user's name, else the number."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _who(uid: int) -> str:
    name = _name(uid)
    return f"{name} (uid {uid})" if name != str(uid) else f"uid {uid}"


def doubts(store: RunFiles, run_id: str) -> list[str]:
    """Why the run's files may hold what another user put there: each of the
    results folder, the run's folder, rooftop.db and config.json (those
    present) owned by someone else or writable by group or others."""
    me = os.geteuid()
    out = []
    run_dir = Path(store.run_dir(run_id))
    for path in (Path(store.dir), run_dir, Path(store.path), run_dir / "config.json"):
        try:
            st = os.stat(path)
        except FileNotFoundError:
            continue
        except OSError as e:
            out.append(f"{path} cannot be examined ({e.strerror})")
            continue
        if st.st_uid != me:
            out.append(f"{path} is owned by {_who(st.st_uid)}, not by you ({_name(me)}, uid {me})")
        elif st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            who = " and ".join(w for w, bit in (("group", stat.S_IWGRP), ("others", stat.S_IWOTH)) if st.st_mode & bit)
            out.append(f"{path} is writable by {who} (mode {stat.S_IMODE(st.st_mode):o})")
    return out


def _shown(value: Any) -> str:
    """The value in full, for the user to check (cut only when absurdly long)."""
    text = repr(value)
    return text if len(text) <= 300 else text[:297] + "..."


def _as_set(path: str, value: Any) -> str:
    """The --set argument that gives value again, quoted for a shell (--set
    reads JSON when it parses: a string that would parse goes quoted)."""
    text = value if isinstance(value, str) and not _parses(value) else json.dumps(value)
    return "--set " + shlex.quote(f"{path}={text}")


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def _restated(cfg: dict, restated: dict[str, Any], run_id: str, command: str) -> None:
    """Each key given again must be an executing key, given the value the run recorded."""
    for path, given in restated.items():
        key = KEY_BY_PATH.get(path)
        if key is None or not key.executes:
            names = ", ".join(k.path for k in executing_keys())
            raise ConfigError(
                f"--set {path}: {command} measures run {run_id} under its own config; --set here only "
                f"gives again a value of the run that names what would run ({names})"
            )
        recorded = _value(cfg, path)
        recorded = key.default if recorded is _MISSING else recorded
        if _check(key, given) != recorded:
            was = "no value (the key's default)" if recorded in (None, key.default) else _shown(recorded)
            raise ConfigError(
                f"--set {path}={_shown(given)}: run {run_id} recorded {was}; {command} measures a "
                f"run under its own config: give the recorded value to use it, or start a new run to change it"
            )


def check_reuse(
    store: RunFiles, run_id: str, cfg: dict, restated: dict[str, Any] | None = None, command: str = ""
) -> None:
    """Refuses (Untrusted) a config of a stored run whose executing keys are
    set, unless each is given again (restated: {path: value} from --set) or
    the run's folder and database are the user's alone (doubts: none).
    cfg: the config the command will use (the run's, with what the command
    itself sets and clears)."""
    command = command or "this command"
    restated = restated or {}
    _restated(cfg, restated, run_id, command)
    stored = {p: v for p, v in acting(cfg).items() if p not in restated}
    if not stored:
        return
    why = doubts(store, run_id)
    if not why:
        return
    keys = "; ".join(f"{p} = {_shown(v)}" for p, v in stored.items())
    again = " ".join(_as_set(p, v) for p, v in stored.items())
    where = shlex.quote(str(store.dir))
    raise Untrusted(
        f"run {run_id}: its stored config names what {command} would run or write ({keys}), and rooftop "
        f"takes that only from a results folder that is yours alone: {'; '.join(why)}. "
        f"Check the value(s) and give them again to use them ({again}), or, if the folder is yours, "
        f"make it private (chown -R {_name(os.geteuid())} {where}; chmod -R go-w {where})"
    )
