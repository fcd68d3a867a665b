"""Service presets: specs that ship with rooftop, one file per service,
each declaring PRESETS (a tuple of Preset: rooftop.service.presets.base);
TABLE lists them all, as the launchers' table does. `rooftop service
--preset NAME` measures one (its choices come from TABLE); each is the
same table a spec file holds (rooftop.service.spec.parse reads both).
Adding one: docs/extending.md.

The presets: memcached (Debian's memcached against memcaslap) and redis
(redis-server against redis-benchmark); base says what a preset is
(Preset)."""

from __future__ import annotations

from rooftop.keys import ConfigError
from rooftop.service.presets import memcached, redis
from rooftop.service.presets.base import Preset
from rooftop.service.spec import parse

__all__ = ["TABLE", "Preset", "get", "names", "spec"]

#: Every preset, by name, in the order `--preset` lists them.
TABLE: dict[str, Preset] = {p.name: p for mod in (redis, memcached) for p in mod.PRESETS}


def names() -> list[str]:
    return list(TABLE)


def get(name: str) -> Preset:
    if name not in TABLE:
        raise ConfigError(f"--preset {name!r}: no such preset (presets: {', '.join(TABLE)})")
    return TABLE[name]


def spec(name: str):
    """The preset's ServiceSpec."""
    return parse(get(name).data, f"preset {name}")
