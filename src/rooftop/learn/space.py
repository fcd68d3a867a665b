"""The search space of `rooftop tune`: knob -> the values it may take.

A space file (JSON, or TOML by extension) maps each knob to a list of
values or to a range:

    metric = "bw"                                  # optional: rpc or bw
    "bw.size" = ["64KiB", "1MiB", "4MiB"]
    "engine.concurrency" = {min = 1, max = 16, factor = 2}   # 1, 2, 4, 8, 16
    "engine.handler_threads" = {min = 0, max = 2, step = 1}  # 0, 1, 2

Knobs are config keys (`rooftop config keys`) that describe the service
measured, not how the campaign measures it (learn.dataset.NOT_FEATURES),
and the placement: `servers_per_node` and `clients_per_node` (the
processes of the one server node and the one client node a tune measures).
Nested tables (TOML's `bw.size = [...]`) are read as dotted keys.

Without a file, DEFAULT_SPACES gives one per metric, its process counts
limited to the cores of the nodes found.
"""

from __future__ import annotations

import difflib
import itertools
import json
from dataclasses import dataclass
from pathlib import Path

from rooftop import metrics
from rooftop.config.catalog import KEY_BY_PATH, section_of
from rooftop.config.files import load_file
from rooftop.keys import ConfigError
from rooftop.learn import LearnError

#: The placement knobs (not config keys): processes on the server node and
#: on the client node.
PLACEMENT_KNOBS = ("servers_per_node", "clients_per_node")
#: Default spaces (placement knobs are added from the nodes' cores).
DEFAULT_SPACES = {
    "bw": {
        "bw.size": ["64KiB", "256KiB", "1MiB", "4MiB", "16MiB"],
        "engine.concurrency": [1, 2, 4, 8, 16],
        "engine.server_progress": ["busy", "spindown"],
    },
    "rpc": {
        "engine.concurrency": [1, 2, 4, 8, 16, 32],
        "engine.server_progress": ["busy", "spindown", "block"],
        "engine.handler_threads": [0, 1, 2],
    },
}
#: Grids larger than this are proposed from a seeded sample of this many.
MAX_CANDIDATES = 4096


@dataclass
class Space:
    metric: str
    #: knob -> its values, in the order given.
    knobs: dict[str, list]
    source: str

    def grid(self) -> list[dict]:
        """Every configuration, in a fixed order (the last knob fastest)."""
        names = list(self.knobs)
        return [dict(zip(names, combo)) for combo in itertools.product(*self.knobs.values())]

    def size(self) -> int:
        n = 1
        for values in self.knobs.values():
            n *= len(values)
        return n

    def to_dict(self) -> dict:
        return {"metric": self.metric, "knobs": self.knobs, "source": self.source}


def tunable(key: str, metric: str) -> bool:
    """A knob a space may name: a placement knob, or a config key of the
    service (not a campaign control, not another metric's, not a study's
    own: bursts.*, tune.*, ...)."""
    from rooftop.learn.dataset import excluded

    return key in PLACEMENT_KNOBS or (
        key in KEY_BY_PATH
        and section_of(key) is None
        and not excluded(key, metric)
        and not key.startswith(("nodes", "launcher.", "series"))
    )


def _flatten(data: dict, prefix: str = "") -> dict:
    """Nested tables as dotted keys, down to a list or a range table."""
    out = {}
    for k, v in data.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and not ({"min", "max"} & set(v)):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def _range(key: str, spec: dict) -> list:
    """{min, max, step} (arithmetic) or {min, max, factor} (geometric)."""
    extra = set(spec) - {"min", "max", "step", "factor"}
    if extra or not {"min", "max"} <= set(spec) or ("step" in spec) == ("factor" in spec):
        raise LearnError(f"{key}: a range is {{min, max, step}} or {{min, max, factor}}, not {spec}")
    lo, hi = spec["min"], spec["max"]
    if not all(isinstance(v, (int, float)) for v in (lo, hi)) or lo > hi:
        raise LearnError(f"{key}: range min {lo!r} must be a number at most max {hi!r}")
    out, v = [], lo
    step, factor = spec.get("step"), spec.get("factor")
    if (step is not None and step <= 0) or (factor is not None and (factor <= 1 or lo <= 0)):
        raise LearnError(f"{key}: step must be > 0, factor > 1 (with min > 0): {spec}")
    while v <= hi + 1e-9 and len(out) < 1000:
        out.append(v)
        v = v + step if step is not None else v * factor
    return out


def _unknown(key: str, metric: str) -> LearnError:
    known = [k for k in KEY_BY_PATH if tunable(k, metric)] + list(PLACEMENT_KNOBS)
    close = difflib.get_close_matches(key, known, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return LearnError(
        f"unknown knob {key!r}{hint}: a space names config keys of the service measured "
        f"or {', '.join(PLACEMENT_KNOBS)} (tunable: {', '.join(sorted(known))})"
    )


def parse(data: dict, metric: str | None, source: str) -> Space:
    """A space from a file's data (LearnError names a bad key)."""
    data = dict(data)
    metric = data.pop("metric", None) or metric or "rpc"
    if metric not in metrics.METRICS:
        raise LearnError(f"{source}: unknown metric {metric!r} ({', '.join(metrics.METRICS)})")
    knobs = {}
    for key, values in _flatten(data).items():
        if not tunable(key, metric):
            raise LearnError(f"{source}: {_unknown(key, metric)}")
        values = _range(key, values) if isinstance(values, dict) else values
        if not isinstance(values, list) or not values:
            raise LearnError(f"{source}: {key}: give a non-empty list of values or a range table")
        if len({json.dumps(v) for v in values}) != len(values):
            raise LearnError(f"{source}: {key}: a value is listed twice: {values}")
        knobs[key] = values
    if not knobs:
        raise LearnError(f"{source}: the space names no knob")
    return Space(metric, knobs, source)


def load(path: str | None, metric: str | None, cfg: dict) -> Space:
    """The space file's, or the metric's default (with the process counts
    this config's nodes allow)."""
    if path:
        if not Path(path).is_file():
            raise LearnError(f"no search-space file {path}")
        try:
            data = load_file(path)
        except ConfigError as e:
            raise LearnError(f"{path}: {e}") from None
        return parse(data, metric, str(path))
    metric = metric or "rpc"
    if metric not in DEFAULT_SPACES:
        raise LearnError(f"no default space for {metric!r}: give --space FILE")
    data = dict(DEFAULT_SPACES[metric])
    cores = min(len(n.get("cores") or [0]) for n in cfg["nodes"])
    per_node = [n for n in (1, 2, 4, 8, 16, 32) if n <= max(cores, 1)]
    if len(per_node) > 1:
        data["clients_per_node"] = per_node
    return parse(data, metric, f"default {metric} space")
