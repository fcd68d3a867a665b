"""What a background load is (Load, Knob), and the loop every load process
runs (python -m rooftop.interference.loads.worker): fixed units of work repeated until
the campaign stops it, each unit's start, end and work appended to a JSON
lines file as it ends, so the campaign can split the units into those done
alone and those done beside the service (the load's own slowdown).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Knob:
    """One setting of a load: `--load-set KIND.NAME=VALUE`."""

    name: str
    kind: type
    default: object
    help: str

    def parse(self, text: str):
        if self.kind is bool:
            if text.lower() not in ("1", "0", "true", "false", "yes", "no"):
                raise ValueError(f"{self.name}: expected true or false, got '{text}'")
            return text.lower() in ("1", "true", "yes")
        return self.kind(text)


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
    #: Its knobs, in the order help lists them.
    knobs: tuple[Knob, ...]
    #: What one unit of work counts in (its rate's unit, e.g. "GB/s").
    rate_unit: str
    #: Processes on a node of its placement (ctx -> count); default one per core.
    procs: Callable[[Context, int], int] = field(default=lambda ctx, cores: cores)
    #: Worker arguments of this node's processes (after `worker KIND`).
    args: Callable[[Context], list[str]] = field(default=lambda ctx: [])
    #: True: the load needs at least two nodes (net).
    multi_node: bool = False

    def resolve(self, given: dict) -> dict:
        """The knobs with defaults filled in; unknown names refused."""
        known = {k.name: k for k in self.knobs}
        out = {k.name: k.default for k in self.knobs}
        for name, value in given.items():
            if name not in known:
                raise ValueError(f"load '{self.name}' has no knob '{name}' (knobs: {', '.join(known) or 'none'})")
            out[name] = known[name].parse(value) if isinstance(value, str) else value
        return out
