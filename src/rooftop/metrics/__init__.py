"""Metrics: what a campaign measures, one file each (rpc.py, bw.py, iops.py,
sbw.py, meta.py; what the storage ones share is in storage.py) and one
table (METRICS, in the order config keys and outputs list them).

Each entry carries its unit, engine operation and arguments, config keys
and checks (Metric, in base); the campaign, config, model and
results look metrics up here and name none. Adding one: docs/extending.md.
"""

from __future__ import annotations

from rooftop.metrics import bw, iops, meta, rpc, sbw
from rooftop.metrics.base import Metric

METRICS: dict[str, Metric] = {m.name: m for m in (rpc.METRIC, bw.METRIC, iops.METRIC, sbw.METRIC, meta.METRIC)}


def get(name: str) -> Metric:
    """The metric of that name; KeyError names the known ones."""
    try:
        return METRICS[name]
    except KeyError:
        raise KeyError(f"unknown metric {name!r} (known: {', '.join(METRICS)})") from None


def defaults() -> list[str]:
    """The metrics measured when the config names none (Metric.default)."""
    return [name for name, m in METRICS.items() if m.default]


def help_text() -> str:
    """'rpc: sequential noop RPCs; bw: sequential bulk transfers'."""
    return "; ".join(f"{m.name}: {m.help}" for m in METRICS.values())
