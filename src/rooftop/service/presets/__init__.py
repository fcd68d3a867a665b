"""Service presets: specs that ship with rooftop, one file per preset, each
declaring PRESETS (name -> Preset); TABLE lists them all, as the launchers'
table does. `rooftop service --preset NAME` measures one; each is the
same table a spec file holds (rooftop.service.spec.parse reads both).

The presets: memcached (Debian's memcached against memcaslap) and redis
(redis-server against redis-benchmark)."""

from __future__ import annotations

from dataclasses import dataclass

from rooftop.keys import ConfigError


@dataclass(frozen=True)
class Preset:
    name: str
    #: One line: what it measures (help, docs).
    help: str
    #: The programs it runs (checked before anything starts).
    programs: tuple[str, ...]
    #: The spec's table, as a TOML spec file would hold it.
    data: dict


def _table() -> dict[str, Preset]:
    from rooftop.service.presets import memcached, redis

    return {p.name: p for mod in (redis, memcached) for p in mod.PRESETS}


def names() -> list[str]:
    return list(_table())


def get(name: str) -> Preset:
    table = _table()
    if name not in table:
        raise ConfigError(f"--preset {name!r}: no such preset (presets: {', '.join(table)})")
    return table[name]


def spec(name: str):
    """The preset's ServiceSpec."""
    from rooftop.service.spec import parse

    return parse(get(name).data, f"preset {name}")
