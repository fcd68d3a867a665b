"""rpc: sequential noop RPCs, one in flight per client process (the CUG 2025 roofline paper's
RPC rate). Its keys pad the request and the response, as Quintain's
req_buffer_size / resp_buffer_size do: a service whose RPCs carry small
payloads inline (keys, metadata records) measures its own message sizes."""

from __future__ import annotations

from rooftop.keys import ConfigError, Key
from rooftop.metrics.base import Metric
from rooftop.units import parse_size

#: The servers' default largest message (engine `serve --max-msg`).
DEFAULT_MAX_MSG = 64 << 10
#: The largest padded message rooftop asks for (the engine's limit is 64 MiB;
#: inline payloads beyond this are bulk transfers: use the bw metric).
MAX_PAYLOAD = 16 << 20
#: The server's bulk slots under rpc alone: one page each (no RPC uses them).
RPC_BULK_ARGS = ("--max-size", "4KiB")

KEYS = (
    Key(
        "rpc.request_size",
        "size",
        None,
        "each noop request padded to this many bytes (Quintain "
        "req_buffer_size; default: the minimal message, about 40 bytes)",
        nullable=True,
    ),
    Key(
        "rpc.response_size",
        "size",
        None,
        "each noop response padded to this many bytes (Quintain "
        "resp_buffer_size; default: the minimal message); servers get a --max-msg that holds it",
        nullable=True,
    ),
)


def _sizes(cfg: dict) -> tuple[int, int]:
    rpc = cfg["rpc"]
    return tuple(0 if rpc[k] is None else parse_size(rpc[k], f"rpc.{k}") for k in ("request_size", "response_size"))


def _title(cfg: dict) -> str:
    req, resp = _sizes(cfg) if "rpc" in cfg else (0, 0)
    if not req and not resp:
        return "RPC rate (noop)"
    return f"RPC rate (noop, {cfg['rpc']['request_size']} request, {cfg['rpc']['response_size']} response)"


def _client_args(cfg: dict) -> list[str]:
    req, resp = _sizes(cfg)
    return ["--op", "noop"] + (["--req-size", str(req)] if req else []) + (["--resp-size", str(resp)] if resp else [])


def _server_args(cfg: dict) -> list[str]:
    """RPCs move no bulk data: the server's bulk slots are one page each
    (the engine's default, 4 x 16 MiB, made resident up front, costs every
    rpc-only placement ~15 ms of page faults before it serves). A placement
    that also measures bw or storage gets their larger --max-size (the
    largest is kept: rooftop.campaign.commands.MERGED_BY_MAX)."""
    need = max(_sizes(cfg))
    return [*RPC_BULK_ARGS, *(["--max-msg", str(need)] if need > DEFAULT_MAX_MSG else [])]


def _check(cfg: dict) -> None:
    for key, value in zip(("request_size", "response_size"), _sizes(cfg)):
        if value > MAX_PAYLOAD:
            raise ConfigError(
                f"rpc.{key}: {cfg['rpc'][key]} is larger than {MAX_PAYLOAD >> 20} MiB "
                f"(payloads that large are bulk transfers: use the bw metric)"
            )


METRIC = Metric(
    name="rpc",
    help="sequential noop RPCs",
    unit="ops/s",
    work="ops",
    title=_title,
    op=lambda cfg: "noop",
    keys=KEYS,
    client_args=_client_args,
    server_args=_server_args,
    check=_check,
)
