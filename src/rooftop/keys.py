"""A config key's declaration (Key), the error a config problem raises
(ConfigError), and the index of a key table (by_path). A module of its
own, at the bottom of the layers, beside rooftop.config rather than in it,
so that the tables declaring keys (rooftop.config for the common ones, each
metric, stage, meter and study file for its own) and the checks that
refuse a value (rooftop.units, rooftop.nics.policy, each metric's) need not
import rooftop.config; config.KEYS gathers them all."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


class ConfigError(ValueError):
    """A config problem; the message names the key and says why."""


@dataclass(frozen=True)
class Key:
    path: str
    kind: str  # str, int, float, bool, size, list[str], list[int], choice, list[choice]
    default: Any
    help: str
    choices: tuple = ()
    nullable: bool = False
    #: Largest sensible value (numbers; list[int] items): beyond it, an error.
    maximum: float | None = None
    #: Smallest allowed value (numbers; list[int] items): below it, an error.
    minimum: float | None = None
    #: The value names what a command runs or writes as its user: a program,
    #: hosts, arguments, environment or a folder written to. A stored run's
    #: value of such a key is used again only from a results folder of the
    #: user's own, or when given again (rooftop.config.trust).
    executes: bool = False


def by_path(keys: Iterable[Key]) -> dict[str, Key]:
    """path -> Key. A key declared twice is an error (raised when the table
    is built, at import), never the last declaration silently winning."""
    out: dict[str, Key] = {}
    for k in keys:
        if k.path in out:
            raise ValueError(
                f"config key {k.path} is declared twice (two Key({k.path!r}, ...) in the tables config.KEYS gathers)"
            )
        out[k.path] = k
    return out


def short(value: Any) -> str:
    """repr, cut short (a fuzzed or mistyped value may be huge)."""
    text = (
        repr(value)
        if not isinstance(value, int) or abs(value) < 10**30
        else f"an integer of {len(str(abs(value)))} digits"
    )
    return text if len(text) <= 60 else text[:57] + "..."


#: Keys renamed, old path -> new path: one word per meaning (a "sample" is a
#: stored row; an engine measurement window is a "window"; a time series
#: recorded beside the rounds is a "series"). Renamed before the first
#: release, so a config file or --set refuses the old spelling as any
#: unknown key (the error names the new one); a run stored before the
#: rename has its config rewritten to the new one (store migration 15,
#: and rooftop doctor reading a run's config.json).
RENAMED: dict[str, str] = {
    "collect.samples": "collect.windows",
    "validate.samples": "validate.windows",
    "sample": "series",
    "sample_interval": "series_interval",
}


def rename_old(cfg: dict) -> list[tuple[str, str]]:
    """Moves the old spellings of renamed keys (RENAMED) in a nested config
    to their new paths, in place; returns (old, new) of each moved. Where
    both are set, the new one wins and the old one is dropped."""
    moved = []
    for old, new in RENAMED.items():
        *parents, leaf = old.split(".")
        d: Any = cfg
        for p in parents:
            d = d.get(p) if isinstance(d, dict) else None
        if not isinstance(d, dict) or leaf not in d:
            continue
        value = d.pop(leaf)
        *new_parents, new_leaf = new.split(".")
        target = cfg
        for p in new_parents:
            target = target.setdefault(p, {})
        target.setdefault(new_leaf, value)
        moved.append((old, new))
    return moved
