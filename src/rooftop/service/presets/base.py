"""What a service preset is: the entry each preset file declares (in its
PRESETS) and rooftop.service.presets.TABLE lists."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Preset:
    name: str
    #: One line: what it measures (help, docs).
    help: str
    #: The programs it runs (checked on PATH before anything starts, when
    #: the launcher runs its engines on this machine).
    programs: tuple[str, ...]
    #: How to install them, as the error naming a missing one says it
    #: ("Debian: apt-get install redis-server redis-tools").
    install: str
    #: The spec's table, as a TOML spec file would hold it.
    data: dict
