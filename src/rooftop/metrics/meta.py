"""meta: metadata operations per second, one in flight per client process:
each is an RPC the server performs on its storage (engine operations
`create`, `stat`, `open` (open+close), `unlink`, `readdir`), chosen by
`meta.op`, in one directory per server process (`meta.layout = easy`,
mdtest's easy case) or one shared by the processes of a node (`hard`).

Each server process first creates `meta.files` files (stat, open and
readdir act on them; unlink refills them when none is left). The servers
of a meta measurement open no data file worth the name: `--allocation wrap
--file-size 4KiB` (an empty file per process, nothing preallocated).
"""

from __future__ import annotations

from rooftop.keys import ConfigError, Key
from rooftop.metrics import storage
from rooftop.metrics.base import Metric

OPS = ("create", "stat", "open", "unlink", "readdir")
LAYOUTS = {"easy": "per-process", "hard": "shared"}

KEYS = (
    storage.dir_key("meta"),
    Key(
        "meta.op",
        "choice",
        "create",
        "metadata operation the server performs: create, stat, open (open+close), unlink or readdir",
        OPS,
    ),
    Key(
        "meta.layout",
        "choice",
        "easy",
        "easy: a directory per server process; hard: one directory "
        "shared by the processes of a node (mdtest's easy and hard; the engine's --meta-layout "
        "per-process and shared)",
        tuple(LAYOUTS),
    ),
    Key(
        "meta.files",
        "int",
        1000,
        "files each server process creates before its first operation (--meta-files)",
        maximum=10_000_000,
    ),
    Key("meta.keep_files", "bool", False, "leave the files in place when the servers stop (--keep-files)"),
)


def _options(cfg: dict) -> dict:
    m = cfg["meta"]
    return {
        "storage-dir": m["dir"],
        "meta-layout": LAYOUTS[m["layout"]],
        "meta-files": m["files"],
        "keep-files": m["keep_files"],
        "allocation": "wrap",
        "file-size": "4KiB",
    }


def _check(cfg: dict) -> None:
    if cfg["meta"]["files"] < 1:
        raise ConfigError(f"meta.files: {cfg['meta']['files']} must be at least 1")


def _check_resolved(cfg: dict) -> None:
    storage.preflight(cfg, "meta", ["--op", cfg["meta"]["op"]], _options(cfg))


METRIC = Metric(
    name="meta",
    help="metadata operations (ops/s)",
    unit="ops/s",
    work="ops",
    title=lambda cfg: (
        f"metadata rate ({cfg['meta']['op']}, {cfg['meta']['layout']})" if "meta" in cfg else "metadata rate"
    ),
    op=lambda cfg: cfg["meta"]["op"],
    keys=KEYS,
    client_args=lambda cfg: ["--op", cfg["meta"]["op"]],
    server_args=lambda cfg: storage.argv(_options(cfg)),
    check=_check,
    check_resolved=_check_resolved,
    default=False,
)
