"""What the storage metrics (iops.py, sbw.py, meta.py) share: their keys,
mapped onto the engine's storage options (engine/src/storage.cpp: `serve
--storage-dir ...`, `storage ...`), the server arguments those keys make,
and the preflight that checks a storage directory before a campaign uses it.

Each metric has its own copy of the keys (`iops.dir`, `sbw.dir`, ...): the
campaign starts its servers with the arguments of the metrics it measures,
and metrics whose servers need different arguments (two directories, two
I/O modes) get server groups of their own (campaign.split_by_servers).

The preflight runs the engine's local storage mode (`rooftop-engine
storage`) for a moment in the directory with the metric's knobs, when the
launcher's engines run on this machine: a directory that is missing or not
writable, or a knob the file system refuses (O_DIRECT on tmpfs, fallocate
on ext2, a file that does not fit), is then a ConfigError naming the key
and the file system before anything starts; its document's file system
facts are stored with the run (resolved config `storage_fs.<metric>`, so
run_params `storage_fs.<metric>.fs_type`, ...). On other hosts the servers
refuse the same knobs at start (the samples fail with that message) and
each server document records the same facts (`result.storage`).
"""

from __future__ import annotations

import os
import re

from rooftop.engine.base import EngineError
from rooftop.engine.commands import run_engine
from rooftop.keys import ConfigError, Key
from rooftop.launchers import on_this_machine
from rooftop.metrics.base import Metric
from rooftop.units import parse_size

IO_MODES = ("buffered", "direct", "sync", "dsync", "direct+sync", "direct+dsync")

#: Key suffix -> the engine option it sets (serve and storage take both).
SERVER_OPTIONS = {
    "dir": "storage-dir",
    "io_mode": "io-mode",
    "fsync_every": "fsync-every",
    "allocation": "allocation",
    "file_layout": "file-layout",
    "file_size": "file-size",
    "fill": "fill",
    "keep_files": "keep-files",
    "meta_layout": "meta-layout",
    "meta_files": "meta-files",
    "io_async": "io-async",
    "buffer_pages": "buffer-pages",
}
#: Options of `serve` only (the local storage mode has no progress loop to overlap).
SERVE_ONLY = ("io-async",)


def dir_key(metric: str) -> Key:
    return Key(
        f"{metric}.dir",
        "str",
        None,
        f"directory on each server node's storage that {metric} "
        f"measures (the engine's --storage-dir); must exist and be writable; no default: required "
        f"to measure {metric}",
        nullable=True,
        executes=True,
    )


def data_keys(metric: str, io_mode: str, why: str) -> tuple[Key, ...]:
    """The knobs of a data file (put/get): io mode, fsync, allocation, layout, size."""
    return (
        dir_key(metric),
        Key(
            f"{metric}.io_mode",
            "choice",
            io_mode,
            f"cache and durability of the data file (--io-mode): "
            f"buffered (page cache), direct (O_DIRECT), sync (O_SYNC), dsync (O_DSYNC), or direct with "
            f"either; {why}",
            IO_MODES,
        ),
        Key(
            f"{metric}.fsync_every",
            "int",
            0,
            "fsync the data file after every N puts (0: never; --fsync-every)",
            maximum=1 << 30,
        ),
        Key(
            f"{metric}.allocation",
            "choice",
            "preallocate",
            "data file allocation (--allocation): "
            "preallocate (fallocate up front), append (grows; sequential only) or wrap (overwrite after "
            "the file size)",
            ("preallocate", "append", "wrap"),
        ),
        Key(
            f"{metric}.file_layout",
            "choice",
            "per-process",
            "one data file per server process or one shared by the processes of a node (--file-layout)",
            ("per-process", "shared"),
        ),
        Key(
            f"{metric}.file_size",
            "size",
            "1GiB",
            "data file size per file (--file-size): offsets stay below it; preallocated per file",
        ),
        Key(
            f"{metric}.fill",
            "bool",
            False,
            "write the whole data file before the servers are ready, so a get reads real blocks anywhere (--fill)",
        ),
        Key(f"{metric}.keep_files", "bool", False, "leave the data file in place when the servers stop (--keep-files)"),
        Key(
            f"{metric}.io_async",
            "bool",
            False,
            "servers submit their O_DIRECT puts with Linux AIO and "
            "serve on while the device writes (serve --io-async; needs a direct io_mode, no fsync_every, no "
            "append). The kernel finishes such a write on the core taking the device's interrupts: a "
            "polling process there slows it, so off by default (benchmarks/RESULTS.md)",
        ),
        Key(
            f"{metric}.buffer_pages",
            "choice",
            "base",
            "what the servers' bulk slots, which their writes come "
            "from, are made of (serve --buffer-pages): base pages, or huge pages reserved beforehand on every "
            "server node (/proc/sys/vm/nr_hugepages; too few is an error). An O_DIRECT write from base pages "
            "may reach the device split or whole, by chance: `rooftop audit --only pages` measures it",
            ("base", "huge"),
        ),
    )


def options_of(cfg: dict, metric: str) -> dict[str, str]:
    """The engine's storage options of a metric's keys: {option: value}."""
    sec = cfg[metric]
    return {opt: sec[k] for k, opt in SERVER_OPTIONS.items() if k in sec}


def argv(opts: dict) -> list[str]:
    """Engine arguments of {option: value} (booleans as --opt=true|false,
    so two metrics asking for different ones get servers of their own;
    None: unset)."""
    out: list[str] = []
    for opt, value in opts.items():
        if value is None:
            continue
        if isinstance(value, bool):
            out += [f"--{opt}={'true' if value else 'false'}"]
        else:
            out += [f"--{opt}", str(value)]
    return out


def key_of(metric: str, section: dict, message: str) -> str:
    """The key of section an engine message is about: the first engine
    option it names (meta's keys drop the "meta_" of meta-layout, meta-files)."""
    by_option = {opt: k for k, opt in SERVER_OPTIONS.items()}
    for opt in re.findall(r"--([a-z][a-z-]*)", message):
        key = by_option.get(opt, opt)
        for k in (key, key.removeprefix("meta_")):
            if k in section:
                return f"{metric}.{k}"
    return f"{metric}.dir"


def check_dir(cfg: dict, metric: str) -> str:
    """The metric's directory, set; on this machine also existing and writable."""
    d = cfg[metric]["dir"]
    if not d:
        raise ConfigError(
            f"{metric}.dir: set the directory {metric} measures (a directory on each server "
            f"node's storage), e.g. --set {metric}.dir=/mnt/nvme/rooftop"
        )
    if on_this_machine(cfg["launcher"]["type"]):
        if not os.path.isdir(d):
            raise ConfigError(f"{metric}.dir: {d} is not a directory")
        if not os.access(d, os.W_OK | os.X_OK):
            raise ConfigError(f"{metric}.dir: {d} is not writable by this user")
    return d


def preflight(cfg: dict, metric: str, op_args: list[str], opts: dict | None = None) -> None:
    """On a launcher whose engines run here: runs the local storage mode
    for a moment with the metric's knobs (op_args: --op and its options)
    and records its file system facts in cfg["storage_fs"][metric]; a
    refusal is a ConfigError naming the key and the file system. opts: the
    engine's storage options (default: options_of the metric's keys)."""
    check_dir(cfg, metric)
    if not on_this_machine(cfg["launcher"]["type"]):
        return
    opts = dict(options_of(cfg, metric) if opts is None else opts)
    # The probe checks the knobs and leaves nothing behind: filling is the servers' work.
    opts.update({"fill": False, "keep-files": False})
    for opt in SERVE_ONLY:
        opts.pop(opt, None)
    try:
        doc = run_engine(["storage", *argv(opts), *op_args, "--duration", "0.05", "--warmup", "0"], timeout=120)
    except EngineError as e:
        msg = "; ".join((e.doc or {}).get("errors") or [str(e)])
        raise ConfigError(f"{key_of(metric, cfg[metric], msg)}: {msg}") from None
    cfg.setdefault("storage_fs", {})[metric] = facts(doc)


def facts(doc: dict) -> dict:
    """The file system facts of an engine document's result.storage."""
    st = (doc.get("result") or {}).get("storage") or {}
    fs = st.get("fs") or {}
    return {
        "fs_type": fs.get("type", ""),
        "device": fs.get("device", ""),
        "mount_point": fs.get("mount_point", ""),
        "mount_options": fs.get("mount_options", ""),
        "super_options": fs.get("super_options", ""),
        "free_bytes": fs.get("free_bytes"),
        "total_bytes": fs.get("total_bytes"),
        "o_direct_honoured": st.get("o_direct_honoured"),
    }


# The data metrics (iops, sbw): one put/get per operation ------------------


def _size(cfg: dict, metric: str, key: str) -> int:
    return parse_size(cfg[metric][key], f"{metric}.{key}")


def data_metric(name: str, help: str, unit: str, work: str, keys: tuple[Key, ...], title, link_bound: bool = False):
    """The Metric of a put/get metric: its keys map onto `load` (op, size,
    pattern) and `serve` (the data file's knobs, SERVER_OPTIONS)."""

    def client_args(cfg: dict) -> list[str]:
        sec = cfg[name]
        return ["--op", sec["op"], "--size", str(sec["size"]), "--pattern", sec["pattern"]]

    def server_args(cfg: dict) -> list[str]:
        # --max-size: every slot holds a block (campaigns merge it by maximum).
        return argv(options_of(cfg, name)) + ["--max-size", str(max(_size(cfg, name, "size"), 1 << 20))]

    def check(cfg: dict) -> None:
        sec, size, fsize = cfg[name], _size(cfg, name, "size"), _size(cfg, name, "file_size")
        for key, v in (("size", size), ("file_size", fsize)):
            if v < 4096 or v % 4096:
                raise ConfigError(f"{name}.{key}: {cfg[name][key]} is not a whole number of 4 KiB blocks")
        if size > fsize:
            raise ConfigError(f"{name}.size: {sec['size']} is larger than {name}.file_size {sec['file_size']}")
        if sec["allocation"] == "append" and (sec["pattern"] == "rand" or sec["fill"]):
            what = "a random pattern" if sec["pattern"] == "rand" else f"{name}.fill"
            raise ConfigError(f"{name}.allocation: append only writes at the end of the file, which excludes {what}")
        if sec.get("io_async"):
            why = [
                w
                for bad, w in (
                    ("direct" not in sec["io_mode"], f"a direct io_mode, not {sec['io_mode']}"),
                    (sec["allocation"] == "append", "allocation preallocate or wrap, not append"),
                    (sec["fsync_every"] != 0, f"fsync_every 0, not {sec['fsync_every']}"),
                )
                if bad
            ]
            if why:
                raise ConfigError(f"{name}.io_async: asynchronous writes need {' and '.join(why)}")

    def check_resolved(cfg: dict) -> None:
        preflight(cfg, name, ["--op", "put", "--size", "4KiB", "--pattern", "seq"])

    return Metric(
        name=name,
        help=help,
        unit=unit,
        work=work,
        keys=keys,
        title=lambda cfg: title(cfg[name]) if name in cfg else name,
        op=lambda cfg: cfg[name]["op"],
        client_args=client_args,
        server_args=server_args,
        check=check,
        check_resolved=check_resolved,
        link_bound=link_bound,
        default=False,
    )
