"""bw: sequential bulk transfers (RDMA read or write), one in flight per
client process, over a buffer the client walks or reuses (the CUG 2025 roofline paper's
bandwidth)."""

from __future__ import annotations

from rooftop.keys import ConfigError, Key
from rooftop.metrics.base import Metric
from rooftop.units import parse_size

KEYS = (
    Key(
        "bw.op", "choice", "read", "bulk direction: read (server RMA-writes to the client) or write", ("read", "write")
    ),
    Key("bw.size", "size", "4MiB", "bytes per bulk transfer"),
    Key("bw.buffer", "choice", "stream", "client buffer: stream (walk a large buffer) or reuse", ("stream", "reuse")),
    Key("bw.stream_size", "size", "1GiB", "client buffer walked by bw.buffer = stream"),
)


def _title(cfg: dict) -> str:
    bw = cfg["bw"]
    return "bandwidth (bulk " + bw["op"] + ", " + str(bw["size"]) + ")"


def _client_args(cfg: dict) -> list[str]:
    bw = cfg["bw"]
    return [
        "--op",
        bw["op"],
        "--size",
        str(bw["size"]),
        "--buffer",
        bw["buffer"],
        "--stream-size",
        str(bw["stream_size"]),
    ]


def _server_args(cfg: dict) -> list[str]:
    return ["--max-size", str(max(parse_size(cfg["bw"]["size"], "bw.size"), 1 << 20))]


def _check(cfg: dict) -> None:
    size = parse_size(cfg["bw"]["size"], "bw.size")
    stream = parse_size(cfg["bw"]["stream_size"], "bw.stream_size")
    if cfg["bw"]["buffer"] == "stream" and stream < size:
        raise ConfigError(f"bw.stream_size: {cfg['bw']['stream_size']} is smaller than bw.size {cfg['bw']['size']}")


def _client_memory(cfg: dict) -> tuple[int, str]:
    """Each client's buffer: the stream it walks, or one transfer reused."""
    which = "stream_size" if cfg["bw"]["buffer"] == "stream" else "size"
    return parse_size(cfg["bw"][which], f"bw.{which}"), f"bw.{which}"


METRIC = Metric(
    name="bw",
    help="sequential bulk transfers",
    unit="bytes/s",
    work="bytes",
    title=_title,
    op=lambda cfg: cfg["bw"]["op"],
    keys=KEYS,
    client_args=_client_args,
    server_args=_server_args,
    check=_check,
    client_memory=_client_memory,
    link_bound=True,
)
