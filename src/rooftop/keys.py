"""A config key's declaration (Key), the error a config problem raises
(ConfigError), and the index of a key table (by_path). A module of its
own, at the bottom of the layers, beside rooftop.config rather than in it,
so that the tables declaring keys (rooftop.config for the common ones, each
metric, stage, sampler and study file for its own) and the checks that
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
