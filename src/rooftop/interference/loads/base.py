"""What a background load is (Load; its knobs are config keys, knob()), and the loop every load process
runs (python -m rooftop.interference.loads.worker): fixed units of work repeated until
the campaign stops it, each unit's start, end and work appended to a JSON
lines file as it ends, so the campaign can split the units into those done
alone and those done beside the service (the load's own slowdown).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from rooftop.config.files import merge, parse_override
from rooftop.keys import Key


def knob(load: str, name: str, kind: str, default, help: str, **limits) -> Key:
    """A load's knob: the config key loads.LOAD.NAME (type, default, limits
    and help as every key's). `--load-set LOAD.NAME=VALUE`, `--set
    loads.LOAD.NAME=VALUE` and a config file's [loads.LOAD] table set it."""
    return Key(f"loads.{load}.{name}", kind, default, help, **limits)


def knob_name(key: Key) -> str:
    """loads.cpu.procs -> procs."""
    return key.path.rsplit(".", 1)[1]


@dataclass
class Context:
    """What a load's process line is built from (one node of its placement)."""

    #: The load's own knobs, every one resolved.
    knobs: dict
    #: Index of this node in the load's nodes (0: the hub of a net load).
    position: int
    #: The load's nodes (rooftop Node objects), in order.
    nodes: list
    #: Folder for the load's files (units, documents, its data).
    folder: str
    #: The resolved campaign config (fabric, engine path).
    cfg: dict
    #: Which copy of an ensemble this is (0-based).
    copy: int = 0


@dataclass(frozen=True)
class Load:
    """One kind of background load (an entry of rooftop.interference.loads.LOADS)."""

    name: str
    #: One line: what it does (interfere --help lists it).
    help: str
    #: The resource it stresses, in words the report uses.
    resource: str
    #: Its knobs (config keys loads.NAME.KNOB, made by knob()), in the order help lists them.
    knobs: tuple[Key, ...]
    #: What one unit of work counts in (its rate's unit, e.g. "GB/s").
    rate_unit: str
    #: Processes on a node of its placement (ctx -> count); default one per core.
    procs: Callable[[Context, int], int] = field(default=lambda ctx, cores: cores)
    #: Worker arguments of this node's processes (after `worker KIND`).
    args: Callable[[Context], list[str]] = field(default=lambda ctx: [])
    #: True: the load needs at least two nodes (net).
    multi_node: bool = False
    #: What the service shares when the load runs on its cores, in the
    #: report's words ("CPU and memory bandwidth").
    on_cores: str = "CPU"
    #: True: it loads the links between its nodes, not the cores it runs on
    #: (net): the report names the service's nodes whose links carry it.
    links: bool = False

    def resolve(self, given: dict) -> dict:
        """The knobs (short names) with defaults filled in, each value
        checked as its config key is (type, limits, choices); unknown names
        refused."""
        known = {knob_name(k): k for k in self.knobs}
        overrides = {}
        for name, value in given.items():
            if name not in known:
                raise ValueError(f"load '{self.name}' has no knob '{name}' (knobs: {', '.join(known) or 'none'})")
            key = known[name]
            if isinstance(value, str) and key.kind not in ("str", "size", "choice"):
                value = parse_override(f"{key.path}={value}")[1]
            overrides[key.path] = value
        return merge(None, overrides, ("loads",))["loads"].get(self.name, {})
