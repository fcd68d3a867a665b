"""What a metric is (Metric): one entry of the table in rooftop.metrics."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rooftop.engine import enginedoc
from rooftop.keys import Key
from rooftop.units import parse_size


def _nothing(cfg: dict) -> list[str]:
    return []


def _no_check(cfg: dict) -> None:
    return None


def _no_buffer(cfg: dict) -> tuple[int, str]:
    return 0, ""


@dataclass(frozen=True)
class Metric:
    #: As stored (samples.metric) and named by --metrics.
    name: str
    #: One line for 'rooftop config keys' (the metrics key's help).
    help: str
    #: Base unit of its rates: a key of rooftop.units.UNITS.
    unit: str
    #: What one operation's work counts: "ops" (1 per operation) or "bytes"
    #: (the engine result's op_bytes); the engine result's rate field is
    #: f"{work}_per_sec".
    work: str
    #: The figure titles' description of it under a config: "RPC rate (noop)".
    title: Callable[[dict], str]
    #: Its engine operation (rooftop-engine load --op) under a config.
    op: Callable[[dict], str]
    #: Its own config keys (declared in its file; config.KEYS lists them
    #: after the "metrics" key, in table order).
    keys: tuple[Key, ...] = ()
    #: Engine arguments of its client processes, after --op.
    client_args: Callable[[dict], list[str]] = _nothing
    #: Engine arguments the servers need for it. Servers start once per
    #: placement and serve the metrics measured against them: only those
    #: metrics' arguments are passed (a campaign of rpc and bw never touches
    #: a storage directory), and metrics whose arguments disagree (an option
    #: given two values, except --max-size and --max-msg, merged by their
    #: maximum) get server groups of their own (campaign.split_by_servers).
    server_args: Callable[[dict], list[str]] = _nothing
    #: Checks its keys' values against each other (rooftop.config.resolve,
    #: whether or not it is measured): raises ConfigError naming the key.
    check: Callable[[dict], None] = _no_check
    #: Checks what measuring it needs on the resolved nodes (cfg["nodes"],
    #: processes per node), only when it is measured.
    check_resolved: Callable[[dict], None] = _no_check
    #: Bytes of data buffer each of its client processes allocates under a
    #: config, besides the engine's own, and the key that sets them
    #: (rooftop.config.resources checks every process's share against the
    #: machine before any starts).
    client_memory: Callable[[dict], tuple[int, str]] = _no_buffer
    #: Its aggregate cannot exceed a known link rate: above it (plus the
    #: tolerance of rooftop.campaign.limits) a window is invalid.
    link_bound: bool = False
    #: Measured when the config names no metrics (the metrics key's
    #: default); the storage metrics need a directory, so they are not.
    default: bool = True

    @property
    def result_field(self) -> str:
        """The engine result's rate field: ops_per_sec or bytes_per_sec."""
        return enginedoc.rate_field(self.work)

    def work_per_op(self, result: dict) -> float:
        """Work one operation of an engine result counts."""
        return float(result.get("op_bytes", 0)) if self.work == "bytes" else 1.0

    def op_bytes(self, cfg: dict) -> int:
        """The op_bytes an engine result of its clients reports under a
        config: their --size (0 for a metric without one), for a result
        rebuilt from a window log (rooftop.engine.enginedoc.log_result)."""
        if self.work != "bytes":
            return 0
        args = self.client_args(cfg)
        if "--size" not in args[:-1]:
            return 0
        return parse_size(args[args.index("--size") + 1], "--size")
