"""rpc: sequential noop RPCs, one in flight per client process (seed 000's
RPC rate). No keys of its own."""

from rooftop.metrics.base import Metric

METRIC = Metric(
    name="rpc",
    help="sequential noop RPCs",
    unit="ops/s",
    work="ops",
    title=lambda cfg: "RPC rate (noop)",
    op=lambda cfg: "noop",
    client_args=lambda cfg: ["--op", "noop"],
)
