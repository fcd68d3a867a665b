"""A config's values: each checked against its key, the defaults, a config
file (JSON or TOML) read and flattened, command-line overrides, the two
merged; a key read or set by its dotted path (get_key, set_key); a stored
run's config brought up to date (up_to_date)."""

from __future__ import annotations

import copy
import difflib
import json
import math
import sys
from pathlib import Path
from typing import Any

from rooftop.config.catalog import KEY_BY_PATH, KEYS, STUDY_COMMAND, STUDY_KEYS, section_of
from rooftop.keys import RENAMED, ConfigError, Key, rename_old, short
from rooftop.units import parse_size

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib


def _at_most(key: Key, value: float) -> float:
    if key.maximum is not None and value > key.maximum:
        raise ConfigError(f"{key.path}: {short(value)} is beyond any sensible value (at most {key.maximum:g})")
    if key.minimum is not None and value < key.minimum:
        raise ConfigError(f"{key.path}: {short(value)} is too small (at least {key.minimum:g})")
    return value


def _check(key: Key, value: Any) -> Any:
    """Type-checks one value; returns it normalised."""
    p = key.path
    if value is None:
        if key.nullable:
            return None
        raise ConfigError(f"{p}: may not be null")
    k = key.kind
    if k == "str":
        if not isinstance(value, str):
            raise ConfigError(f"{p}: expected a string, got {type(value).__name__} {value!r}")
        return value
    if k == "bool":
        if not isinstance(value, bool):
            raise ConfigError(f"{p}: expected true or false, got {value!r}")
        return value
    if k in ("int", "float"):
        return _number(key, value)
    if k == "size":
        parse_size(value, p)
        return value
    if k == "choice":
        if value not in key.choices:
            raise ConfigError(f"{p}: '{value}' is not one of {', '.join(key.choices)}")
        return value
    if k.startswith("list["):
        return _list(key, value)
    raise AssertionError(k)


def _number(key: Key, value: Any) -> int | float:
    """An int key's value (a bool is not one), or a float key's (an int
    is one; it must be finite), within the key's bounds."""
    p = key.path
    if key.kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{p}: expected an integer, got {type(value).__name__} {short(value)}")
        return _at_most(key, value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{p}: expected a number, got {type(value).__name__} {short(value)}")
    try:
        number = float(value)
    except OverflowError:
        raise ConfigError(f"{p}: {short(value)} is not a usable number (too large)") from None
    if not math.isfinite(number):
        raise ConfigError(f"{p}: expected a finite number, got {value!r}")
    return _at_most(key, number)


def _list(key: Key, value: Any) -> list:
    """A list key's value, each item checked as the key's inner kind."""
    p = key.path
    if not isinstance(value, list):
        raise ConfigError(f"{p}: expected a list, got {type(value).__name__} {value!r}")
    inner = key.kind[5:-1]
    return [
        _check(Key(f"{p}[{i}]", inner, None, "", key.choices, maximum=key.maximum, minimum=key.minimum), v)
        for i, v in enumerate(value)
    ]


def defaults(sections: tuple[str, ...] = ()) -> dict:
    """Every common key's default, and those of the study sections named."""
    cfg: dict = {}
    for k in [*KEYS, *(k for s in sections for k in STUDY_KEYS.get(s, []))]:
        set_key(cfg, k.path, copy.deepcopy(k.default))
    return cfg


def set_key(cfg: dict, path: str, value: Any) -> None:
    """Sets one dotted key of a config (e.g. validate.windows), unchecked:
    resolve or resolve_grid checks it."""
    parts = path.split(".")
    d = cfg
    for part in parts[:-1]:
        d = d.setdefault(part, {})
    d[parts[-1]] = value


def get_key(cfg: dict, path: str) -> Any:
    """The value of one dotted key of a config (KeyError where it has none:
    a config brought up to date, as resolve and up_to_date make it, has
    every key)."""
    d = cfg
    for part in path.split("."):
        d = d[part]
    return d


def _near(path: str) -> str | None:
    """The key an unknown path was probably meant to be: the new name of a
    key renamed before the first release (RENAMED: refused, as any unknown
    key, but named), else the closest spelling."""
    if path in RENAMED:
        return RENAMED[path]
    near = difflib.get_close_matches(path, list(KEY_BY_PATH), n=1, cutoff=0.75)
    return near[0] if near else None


def up_to_date(cfg: dict) -> dict:
    """A stored run's config as the key table has it today, once, where the
    run is loaded (rooftop.store's get_run): renamed keys under their new
    names (rooftop.keys.RENAMED), and every key written since the run was
    stored at its default, the common ones and those of each study section
    the config holds whose table is registered (a study's reader imports its
    keys module). Readers then index it plainly, no default restated. A
    copy; values the config holds are kept as stored."""
    cfg = copy.deepcopy(cfg)
    rename_old(cfg)
    sections = [s for s in STUDY_KEYS if isinstance(cfg.get(s), dict)]
    for k in [*KEYS, *(k for s in sections for k in STUDY_KEYS[s])]:
        *parents, leaf = k.path.split(".")
        d: Any = cfg
        for part in parents:
            d = d.setdefault(part, {}) if isinstance(d, dict) else None
        if isinstance(d, dict) and leaf not in d:
            d[leaf] = copy.deepcopy(k.default)
    return cfg


def _flatten(data: dict, prefix: str = "", where: str = "") -> dict[str, Any]:
    """Nested user config -> {dotted path: value}; unknown keys are errors."""
    flat = {}
    for name, value in data.items():
        path = f"{prefix}{name}"
        if path in KEY_BY_PATH:
            flat[path] = value
        elif isinstance(value, dict) and any(k.startswith(path + ".") for k in KEY_BY_PATH):
            flat.update(_flatten(value, path + ".", where))
        else:
            near = _near(path)
            hint = f" (did you mean {near}?)" if near else ""
            raise ConfigError(f"{path}: unknown key{where}{hint}")
    return flat


def load_file(path: str | Path) -> dict:
    """Reads a JSON or TOML campaign file (by extension; JSON otherwise)."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise ConfigError(f"cannot read config file {path}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a text file (expected JSON or TOML)") from None
    if path.suffix == ".toml":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{path}: not valid TOML: {e}") from None
        except RecursionError:
            raise ConfigError(f"{path}: nested too deeply to be a config (TOML)") from None
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ConfigError(f"{path}: not valid JSON: line {e.lineno} column {e.colno}: {e.msg}") from None
        except RecursionError:
            raise ConfigError(f"{path}: nested too deeply to be a config (JSON)") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be an object of settings")
    return data


def parse_override(text: str) -> tuple[str, Any]:
    """'key=value' from --set: the value is JSON if it parses, else a string."""
    if "=" not in text:
        raise ConfigError(f"--set {text}: expected KEY=VALUE (e.g. collect.windows=3)")
    key, raw = text.split("=", 1)
    key = key.strip()
    if key not in KEY_BY_PATH:
        near = _near(key)
        hint = f"did you mean {near}? " if near else ""
        raise ConfigError(f"{key}: unknown key ({hint}see 'rooftop config keys')")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    except RecursionError:
        raise ConfigError(f"--set {key}: the value is nested too deeply") from None
    if KEY_BY_PATH[key].kind.startswith("list[") and isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
        if KEY_BY_PATH[key].kind == "list[int]":
            try:
                value = [int(v) for v in value]
            except ValueError:
                raise ConfigError(f"{key}: expected comma-separated integers, got '{raw}'") from None
    return key, value


def merge(file_data: dict | None, overrides: dict[str, Any], sections: tuple[str, ...] = ()) -> dict:
    """Defaults <- file <- overrides, type-checked; not yet resolved.
    Keys of a study section not in `sections` are checked and left out if
    the file sets them (one file may serve several commands), refused if
    given as overrides (this command would ignore them)."""
    cfg = defaults(sections)
    where = ""
    file_data = copy.deepcopy(file_data or {})
    flat = _flatten(file_data, "", where)
    for path in overrides:
        other = section_of(path)
        if other and other not in sections:
            raise ConfigError(f"{path}: a key of 'rooftop {STUDY_COMMAND.get(other, other)}', not read by this command")
    flat.update(overrides)
    for path, value in flat.items():
        key = KEY_BY_PATH.get(path)
        if key is None:
            raise ConfigError(f"{path}: unknown key")
        value = _check(key, value)
        if section_of(path) in (None, *sections):
            set_key(cfg, path, value)
    return cfg
