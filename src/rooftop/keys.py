"""A config key's declaration (Key). In a module of its own so that the
tables declaring keys (rooftop.config for the common ones, each metric file
for its own) need not import each other; config.KEYS gathers them all."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Key:
    path: str
    kind: str          # str, int, float, bool, size, list[str], list[int], choice, list[choice]
    default: Any
    help: str
    choices: tuple = ()
    nullable: bool = False
    #: Largest sensible value (numbers; list[int] items): beyond it, an error.
    maximum: float | None = None
