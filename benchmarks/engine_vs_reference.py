#!/usr/bin/env python3
"""Run rooftop-engine and reference tools side by side and print a table.

Every comparison alternates our engine (A) and a reference tool (B) in
adjacent runs, A B A B ..., with the server pinned to one core and the
client to another.  For each figure it reports the median of ours, the
median of the reference, and the median of the per-pair ratios
(ours/reference), which is the headline number.  See README.md in this
directory for what each row measures.

Python 3.10+, standard library only, and rooftop's own helpers (sizes,
server readiness, process reaping: one implementation, also standard
library only), imported from this checkout's src/ when rooftop is not
installed.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    import rooftop  # noqa: F401  (installed: .venv/bin/python)
except ImportError:  # python3 from a checkout: its src/
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
from rooftop.engine.reaping import reap as rooftop_reap
from rooftop.engine.reaping import terminate
from rooftop.engine.servers import NotReady, wait_published
from rooftop.keys import ConfigError
from rooftop.units import parse_size as rooftop_parse_size

sys.path.insert(0, str(Path(__file__).resolve().parent))  # stream_reference.py, next to this script
import stream_reference  # noqa: E402

MiB = float(1 << 20)
DEFAULT_ENGINE = "/tmp/bench-build/rooftop-engine"


class BenchError(Exception):
    """One run failed; the row records the message and the benchmark goes on."""


# --------------------------------------------------------------------------
# process bookkeeping: everything we start is tracked and killed on the way out
# --------------------------------------------------------------------------

_LIVE: list[subprocess.Popen] = []


def log(msg: str) -> None:
    stamp = time.strftime("%H:%M:%S")
    print(f"[{stamp}] {msg}", file=sys.stderr, flush=True)


def spawn(
    cmd: list[str], *, stdout: Path | None = None, stderr: Path | None = None, env: dict | None = None
) -> subprocess.Popen:
    """Start cmd with stdout/stderr going to files (None: discarded; stderr None with
    stdout set: merged into stdout's file)."""
    out = open(stdout, "w") if stdout is not None else subprocess.DEVNULL
    try:
        if stderr is not None:
            err = open(stderr, "w")
        else:
            err = subprocess.STDOUT if stdout is not None else subprocess.DEVNULL
        try:
            p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env)
        finally:
            if stderr is not None:
                err.close()
    finally:
        if stdout is not None:
            out.close()
    _LIVE.append(p)
    return p


def reap(p: subprocess.Popen, timeout: float) -> int:
    """Wait for p; on timeout kill it and raise."""
    try:
        if rooftop_reap([p], timeout):
            raise BenchError(f"{Path(p.args[0]).name} pid {p.pid} did not finish within {timeout:.0f}s (killed)")
    finally:
        if p.poll() is not None and p in _LIVE:
            _LIVE.remove(p)
    return p.returncode


def kill(p: subprocess.Popen, grace: float = 3.0) -> None:
    """SIGTERM, then SIGKILL after grace seconds."""
    terminate([p], grace)
    if p in _LIVE and p.poll() is not None:
        _LIVE.remove(p)


def kill_all() -> None:
    for p in list(_LIVE):
        kill(p)


def _on_signal(signum, _frame):
    raise SystemExit(128 + signum)


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


def pinned(cmd: list[str], cpu: str) -> list[str]:
    return ["taskset", "-c", cpu] + cmd


def tcp_ports(listening_only: bool = False) -> set[int]:
    """Local TCP ports in use (or only those listening), from /proc/net."""
    ports = set()
    for f in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(f).read_text().splitlines()[1:]
        except OSError:
            continue
        for ln in lines:
            parts = ln.split()
            if len(parts) > 3 and (not listening_only or parts[3] == "0A"):  # 0A: TCP_LISTEN
                ports.add(int(parts[1].rsplit(":", 1)[1], 16))
    return ports


class PortPool:
    """Fresh TCP port per run so consecutive runs never collide (TIME_WAIT etc.)."""

    def __init__(self) -> None:
        self.next = random.randint(30000, 45000)

    def get(self) -> int:
        busy = tcp_ports()
        while self.next in busy:
            self.next += 1
        port = self.next
        self.next += 1
        if self.next > 60000:
            self.next = 30000
        return port


def wait_listen(port: int, proc: subprocess.Popen, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if port in tcp_ports(listening_only=True):
            return
        if proc.poll() is not None:
            raise BenchError(f"{what} server exited (rc {proc.returncode}) before listening on port {port}")
        time.sleep(0.02)
    raise BenchError(f"{what} server not listening on port {port} after {timeout:.0f}s")


def tail(path: Path, n: int = 300) -> str:
    try:
        t = path.read_text(errors="replace").strip()
    except OSError:
        return ""
    t = " | ".join(t.splitlines()[-4:])
    return t[-n:]


def med(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise BenchError(f"cannot read {path.name}: {e}") from None


# --------------------------------------------------------------------------
# runners: each returns a dict of its figures (rates in ops/s or bytes/s) plus details
# --------------------------------------------------------------------------


@dataclass
class Cfg:
    engine: str
    server_cpu: str
    client_cpu: str
    duration: float
    warmup: float
    ref_seconds: float  # target length of reference runs
    idle_seconds: float
    msg_size: int
    bulk_size: int
    stream_size: int = 1 << 30  # the engine's --stream-size default: the region the stream rows walk
    pingpong_min_iters: int = 3_000_000  # fi_pingpong -I over shm at least this (its time has 10 ms steps)
    stream_ref: Path | None = None  # stream_ref.c, built for this run
    stream_ref_error: str = ""  # why it could not be built
    ports: PortPool = field(default_factory=PortPool)


class Engine:
    """One server + N clients of rooftop-engine, in a fresh group dir."""

    def __init__(self, cfg: Cfg) -> None:
        self.cfg = cfg

    def _start_server(self, gdir: Path, fabric: str, progress: str) -> subprocess.Popen:
        cmd = [
            self.cfg.engine,
            "serve",
            "--fabric",
            fabric,
            "--progress",
            progress,
            "--group-dir",
            str(gdir),
            "--rank",
            "0",
            "--cpus",
            self.cfg.server_cpu,
            "--output",
            str(gdir / "server.json"),
        ]
        p = spawn(cmd, stdout=gdir / "server.stdout", stderr=gdir / "server.stderr")
        try:
            wait_published(gdir, [(p, [0], gdir / "server.stderr")], 15, own_pid=True)
        except NotReady as e:
            raise BenchError(f"engine {e}") from None
        return p

    def _stop_server(self, gdir: Path, p: subprocess.Popen) -> dict:
        if p.poll() is not None:
            raise BenchError(f"engine server died early (rc {p.returncode}): {tail(gdir / 'server.stderr')}")
        p.send_signal(signal.SIGTERM)
        rc = reap(p, 15)
        doc = read_json(gdir / "server.json")
        if rc != 0 or not doc.get("complete", False) or doc.get("errors"):
            raise BenchError(f"engine server rc {rc}, complete={doc.get('complete')}, errors={doc.get('errors')}")
        return doc

    def run(
        self,
        fabric: str,
        *,
        server_progress: str = "busy",
        op: str = "noop",
        size: int | None = None,
        buffer: str | None = None,
        nclients: int = 1,
    ) -> dict:
        c = self.cfg
        gdir = Path(tempfile.mkdtemp(prefix="rooftop-bench-"))
        srv = None
        clients: list[subprocess.Popen] = []
        try:
            srv = self._start_server(gdir, fabric, server_progress)
            for i in range(nclients):
                cmd = [
                    c.engine,
                    "load",
                    "--fabric",
                    fabric,
                    "--group-dir",
                    str(gdir),
                    "--rank",
                    str(i),
                    "--server",
                    "0",
                    "--op",
                    op,
                    "--progress",
                    "busy",
                    "--duration",
                    str(c.duration),
                    "--warmup",
                    str(c.warmup),
                    "--cpus",
                    c.client_cpu,
                    "--output",
                    str(gdir / f"client{i}.json"),
                ]
                if size is not None:
                    cmd += ["--size", str(size)]
                if buffer is not None:
                    cmd += ["--buffer", buffer]
                clients.append(spawn(cmd, stdout=gdir / f"client{i}.stdout", stderr=gdir / f"client{i}.stderr"))
            docs = []
            for i, cp in enumerate(clients):
                rc = reap(cp, c.duration + c.warmup + 60)
                if rc != 0:
                    raise BenchError(f"engine client {i} rc {rc}: {tail(gdir / f'client{i}.stderr')}")
                d = read_json(gdir / f"client{i}.json")
                if not d.get("complete", False) or d.get("errors") or d.get("result") is None:
                    raise BenchError(f"engine client {i} incomplete: errors={d.get('errors')}")
                docs.append(d)
            sdoc = self._stop_server(gdir, srv)
            srv = None
            res = [d["result"] for d in docs]
            ops = sum(r["ops_per_sec"] for r in res)
            bps = sum(r["bytes_per_sec"] for r in res)
            r0 = res[0]
            return {
                "ops_per_sec": ops,
                "bytes_per_sec": bps,
                "per_client_ops_per_sec": [r["ops_per_sec"] for r in res],
                "latency_us": r0["latency_us"] if nclients == 1 else [r["latency_us"] for r in res],
                "client_cpu_utilization": [r["cpu"]["utilization"] for r in res],
                "server_cpu_utilization": sdoc["result"]["cpu"]["utilization"],
                "server_progress": sdoc["engine"]["progress"],
                "provider": docs[0]["engine"].get("provider"),
                "cores_used": {
                    "server": sdoc["environment"].get("cores_used"),
                    "clients": [d["environment"].get("cores_used") for d in docs],
                },
            }
        finally:
            for p in clients:
                kill(p)
            if srv is not None:
                kill(srv)
            shutil.rmtree(gdir, ignore_errors=True)

    def idle(self, fabric: str, progress: str) -> dict:
        gdir = Path(tempfile.mkdtemp(prefix="rooftop-bench-"))
        srv = None
        try:
            srv = self._start_server(gdir, fabric, progress)
            time.sleep(self.cfg.idle_seconds)
            sdoc = self._stop_server(gdir, srv)
            srv = None
            r = sdoc["result"]
            return {
                "cpu_utilization": r["cpu"]["utilization"],
                "elapsed_s": r["elapsed_s"],
                "user_s": r["cpu"]["user_s"],
                "sys_s": r["cpu"]["sys_s"],
                "progress": sdoc["engine"]["progress"],
            }
        finally:
            if srv is not None:
                kill(srv)
            shutil.rmtree(gdir, ignore_errors=True)


_FPP_LINE = re.compile(r"^\s*(\d+)\s+(\S+)\s+=?(\S+)\s+(\S+)\s+([\d.]+)s\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$")


class FiPingpong:
    """fi_pingpong -e rdm round trips per second (one iteration = ping + pong)."""

    def __init__(self, cfg: Cfg, provider: str, address: str, first_rate: float, min_iters: int = 2000) -> None:
        self.cfg, self.provider, self.address = cfg, provider, address
        self.rate_estimate = first_rate  # round trips/s, used to size -I for ~ref_seconds
        self.min_iters = min_iters

    def run(self) -> dict:
        c = self.cfg
        iters = int(max(self.min_iters, min(5_000_000, self.rate_estimate * c.ref_seconds)))
        port = c.ports.get()
        base = ["fi_pingpong", "-p", self.provider, "-e", "rdm", "-S", str(c.msg_size), "-I", str(iters)]
        with tempfile.TemporaryDirectory(prefix="rooftop-fpp-") as td:
            srv_out = Path(td) / "server.out"
            srv = spawn(pinned(base + ["-B", str(port)], c.server_cpu), stdout=srv_out)
            try:
                wait_listen(port, srv, 10, "fi_pingpong")
                limit = 20 + 4 * iters / max(self.rate_estimate, 1.0)
                try:
                    cp = subprocess.run(
                        pinned(base + ["-P", str(port), self.address], c.client_cpu),
                        stdin=subprocess.DEVNULL,
                        capture_output=True,
                        text=True,
                        timeout=limit,
                    )
                except subprocess.TimeoutExpired:
                    raise BenchError(f"fi_pingpong client timed out after {limit:.0f}s") from None
                srv_rc = reap(srv, 15) if cp.returncode == 0 else None
            finally:
                kill(srv)
            if cp.returncode != 0 or srv_rc != 0:
                msg = (cp.stderr.strip() or cp.stdout.strip() or tail(srv_out))[-300:]
                raise BenchError(f"fi_pingpong rc client {cp.returncode} server {srv_rc}: {msg}")
        for ln in cp.stdout.splitlines():
            m = _FPP_LINE.match(ln)
            if m:
                t = float(m.group(5))
                usec_per_xfer = float(m.group(7))
                if t <= 0:
                    raise BenchError(f"fi_pingpong reported zero time: {ln.strip()}")
                rate = iters / t
                self.rate_estimate = rate
                return {
                    "round_trips_per_sec": rate,
                    "iterations": iters,
                    "time_s": t,
                    "usec_per_xfer": usec_per_xfer,
                    "round_trips_per_sec_from_usec_per_xfer": 1e6 / (2 * usec_per_xfer) if usec_per_xfer else None,
                    "line": ln.strip(),
                }
        raise BenchError(f"fi_pingpong output not understood: {cp.stdout.strip()[-300:]}")


class Iperf3:
    def __init__(self, cfg: Cfg) -> None:
        self.cfg = cfg

    def run(self) -> dict:
        c = self.cfg
        port = c.ports.get()
        t = max(1, round(c.ref_seconds + 0.5))
        srv = spawn(pinned(["iperf3", "-s", "-1", "-p", str(port)], c.server_cpu))
        try:
            wait_listen(port, srv, 10, "iperf3")
            try:
                cp = subprocess.run(
                    pinned(
                        [
                            "iperf3",
                            "-c",
                            "127.0.0.1",
                            "-p",
                            str(port),
                            "-l",
                            "1M",
                            "-t",
                            str(t),
                            "-A",
                            f"{c.client_cpu},{c.server_cpu}",
                            "-J",
                        ],
                        c.client_cpu,
                    ),
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    text=True,
                    timeout=t + 30,
                )
            except subprocess.TimeoutExpired:
                raise BenchError("iperf3 client timed out") from None
            reap(srv, 15)
        finally:
            kill(srv)
        try:
            doc = json.loads(cp.stdout)
        except ValueError:
            raise BenchError(f"iperf3 rc {cp.returncode}, no JSON: {(cp.stderr or cp.stdout).strip()[-300:]}") from None
        if "error" in doc:
            raise BenchError(f"iperf3: {doc['error']}")
        try:
            bps = doc["end"]["sum_received"]["bits_per_second"] / 8.0
        except (KeyError, TypeError):
            raise BenchError("iperf3 JSON lacks end.sum_received.bits_per_second") from None
        return {
            "bytes_per_sec": bps,
            "seconds": t,
            "cpu_utilization_percent": doc["end"].get("cpu_utilization_percent"),
        }


class StreamRef:
    """stream_ref.c (stream_reference.py): fresh slices of a 1 GiB region, one process pair."""

    def __init__(self, cfg: Cfg, mode: str) -> None:
        self.cfg, self.mode = cfg, mode

    def run(self) -> dict:
        c = self.cfg
        if c.stream_ref is None:
            raise BenchError(f"stream reference not built: {c.stream_ref_error}")
        try:
            return stream_reference.run(
                c.stream_ref,
                self.mode,
                slice_bytes=c.bulk_size,
                region_bytes=c.stream_size,
                seconds=c.ref_seconds,
                warmup=c.warmup,
                copier_cpu=c.server_cpu,
                holder_cpu=c.client_cpu,
            )
        except stream_reference.StreamRefError as e:
            raise BenchError(str(e)) from None


_UCX_LINE = re.compile(r"^\s*(?:\S+:)?\s*(\d+)\s+" + r"\s+".join([r"([\d.]+)"] * 7) + r"\s*$")


class UcxPerftest:
    """ucx_perftest tag_bw over shared memory (UCX_TLS=posix,sysv,cma)."""

    def __init__(self, cfg: Cfg) -> None:
        self.cfg = cfg
        self.rate_estimate = 700.0  # messages/s, sizes -n for ~ref_seconds

    def run(self) -> dict:
        c = self.cfg
        size = c.bulk_size
        iters = int(max(100, min(100_000, self.rate_estimate * c.ref_seconds)))
        warm = max(20, iters // 10)
        port = c.ports.get()
        env = dict(os.environ, UCX_TLS="posix,sysv,cma")
        with tempfile.TemporaryDirectory(prefix="rooftop-ucx-") as td:
            srv_out = Path(td) / "server.out"
            srv = spawn(pinned(["ucx_perftest", "-p", str(port)], c.server_cpu), stdout=srv_out, env=env)
            try:
                wait_listen(port, srv, 10, "ucx_perftest")
                limit = 20 + 4 * (iters + warm) / self.rate_estimate
                try:
                    cp = subprocess.run(
                        pinned(
                            [
                                "ucx_perftest",
                                "127.0.0.1",
                                "-p",
                                str(port),
                                "-t",
                                "tag_bw",
                                "-s",
                                str(size),
                                "-n",
                                str(iters),
                                "-w",
                                str(warm),
                            ],
                            c.client_cpu,
                        ),
                        stdin=subprocess.DEVNULL,
                        capture_output=True,
                        text=True,
                        timeout=limit,
                        env=env,
                    )
                except subprocess.TimeoutExpired:
                    raise BenchError(f"ucx_perftest client timed out after {limit:.0f}s") from None
                srv_rc = reap(srv, 15) if cp.returncode == 0 else None
            finally:
                kill(srv)
            if cp.returncode != 0 or srv_rc != 0:
                msg = (cp.stderr.strip() or cp.stdout.strip() or tail(srv_out))[-300:]
                raise BenchError(f"ucx_perftest rc client {cp.returncode} server {srv_rc}: {msg}")
        final = None
        for ln in cp.stdout.splitlines():
            m = _UCX_LINE.match(ln)
            if m:
                final = m  # the last numeric line is the final one
        if final is None or "bandwidth (MB/s)" not in cp.stdout:
            raise BenchError(f"ucx_perftest output not understood: {cp.stdout.strip()[-300:]}")
        n = int(final.group(1))
        lat_overall_us = float(final.group(4))
        bw_overall = float(final.group(6))
        msg_overall = float(final.group(8))
        # ucx prints "MB/s" but means 2^20 bytes: check against the overall overhead.
        mib = size / lat_overall_us * 1e6 / MiB
        mb = size / lat_overall_us
        if abs(bw_overall - mib) <= 0.02 * mib:
            unit = MiB
        elif abs(bw_overall - mb) <= 0.02 * mb:
            unit = 1e6
        else:
            raise BenchError(
                f"ucx_perftest bandwidth {bw_overall} matches neither MiB/s ({mib:.1f}) "
                f"nor MB/s ({mb:.1f}) from overhead {lat_overall_us} us"
            )
        if msg_overall > 0:
            self.rate_estimate = msg_overall
        return {
            "bytes_per_sec": bw_overall * unit,
            "printed_MBps_overall": bw_overall,
            "printed_unit_bytes": unit,
            "iterations": n,
            "warmup_iterations": warm,
            "overhead_us_overall": lat_overall_us,
            "msg_per_sec_overall": msg_overall,
        }


# --------------------------------------------------------------------------
# rows and the alternating schedule
# --------------------------------------------------------------------------


@dataclass
class Row:
    key: str
    title: str
    unit: str  # display unit for ours/reference
    scale: float  # raw value / scale = displayed value
    ref_name: str
    target: str = "info"
    target_ratio: float | None = None
    kind: str = "ratio"  # "ratio", "value" (single figure, e.g. idle cpu), "agg"
    value_max: float | None = None  # for kind=value targets: value <= value_max
    ours: list[float] = field(default_factory=list)
    ref: list[float] = field(default_factory=list)
    cli_cpu: list[float] = field(default_factory=list)  # our client(s)' CPU use per run (sum)
    srv_cpu: list[float] = field(default_factory=list)  # our server's CPU use per run
    ratios: list[float] = field(default_factory=list)
    pairs: list[dict] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    skipped: str | None = None
    note: str = ""

    def add_pair(
        self, a: dict | None, b: dict | None, a_val: Callable[[dict], float], b_val: Callable[[dict], float]
    ) -> None:
        rec: dict[str, Any] = {"ours": a, "reference": b, "loadavg_after": os.getloadavg()[0]}
        if a is not None:
            self.ours.append(a_val(a))
            if "client_cpu_utilization" in a:
                self.cli_cpu.append(sum(a["client_cpu_utilization"]))
                self.srv_cpu.append(a["server_cpu_utilization"])
        if b is not None:
            self.ref.append(b_val(b))
        if a is not None and b is not None:
            r = a_val(a) / b_val(b) if b_val(b) else float("nan")
            self.ratios.append(r)
            rec["ratio"] = r
        self.pairs.append(rec)

    def verdict(self) -> str:
        if self.skipped:
            return "skipped"
        if self.kind == "value":
            v = med(self.ours)
            if v is None:
                return "error"
            if self.value_max is None:
                return "info"
            return "met" if v <= self.value_max else "MISSED"
        if not self.ratios:
            return "error" if (self.errors or self.kind == "ratio") else "info"
        if self.target_ratio is None:
            return "info"
        return "met" if med(self.ratios) >= self.target_ratio else "MISSED"

    def to_json(self) -> dict:
        return {
            "key": self.key,
            "title": self.title,
            "unit": self.unit,
            "unit_scale": self.scale,
            "reference": self.ref_name,
            "target": self.target,
            "kind": self.kind,
            "ours": self.ours,
            "reference_values": self.ref,
            "ratios": self.ratios,
            "median_ours": med(self.ours),
            "median_reference": med(self.ref),
            "median_ratio": med(self.ratios),
            "verdict": self.verdict(),
            "our_client_cpu": self.cli_cpu,
            "our_server_cpu": self.srv_cpu,
            "errors": self.errors,
            "skipped": self.skipped,
            "note": self.note,
            "runs": self.pairs,
        }


def attempt(row: Row, label: str, fn: Callable[[], dict]) -> dict | None:
    try:
        return fn()
    except BenchError as e:
        msg = f"{label}: {e}"
        row.errors.append(msg)
        log(f"  ERROR {msg}")
        return None
    except OSError as e:
        msg = f"{label}: {type(e).__name__}: {e}"
        row.errors.append(msg)
        log(f"  ERROR {msg}")
        return None


def fmt(v: float | None, scale: float) -> str:
    if v is None:
        return "-"
    x = v / scale
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 100:
        return f"{x:.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.3f}" if abs(x) < 1 else f"{x:.2f}"


def missing_tools(*tools: str) -> str | None:
    miss = [t for t in tools if shutil.which(t) is None]
    if miss:
        return "not installed: " + ", ".join(miss)
    return None


# --------------------------------------------------------------------------
# the comparisons
# --------------------------------------------------------------------------


def cmp_noop_rate(
    cfg: Cfg, pairs: int, fabric: str, provider: str, address: str, first_rate: float, target: float, key: str
) -> list[Row]:
    row = Row(
        key,
        f"noop RPC rate, {fabric} (sequential)",
        "round trips/s",
        1.0,
        f"fi_pingpong -p {provider} -e rdm -S {cfg.msg_size}",
        target=f">= {target:.2f}x",
        target_ratio=target,
    )
    skip = missing_tools("fi_pingpong", "taskset")
    if skip:
        row.skipped = skip
        return [row]
    eng = Engine(cfg)
    # Over shm fi_pingpong runs at least --pingpong-iters iterations: its time
    # is printed in 10 ms steps, which a 1 s run would feel.
    ref = FiPingpong(cfg, provider, address, first_rate, cfg.pingpong_min_iters if provider == "shm" else 2000)
    for i in range(pairs):
        log(f"{key} pair {i + 1}/{pairs}: engine {fabric} noop")
        a = attempt(row, f"pair {i + 1} ours", lambda: eng.run(fabric))
        log(f"{key} pair {i + 1}/{pairs}: fi_pingpong -p {provider}")
        b = attempt(row, f"pair {i + 1} fi_pingpong", ref.run)
        row.add_pair(a, b, lambda d: d["ops_per_sec"], lambda d: d["round_trips_per_sec"])
        if row.ratios and a and b:
            log(f"  ours {a['ops_per_sec']:.0f}/s  ref {b['round_trips_per_sec']:.0f}/s  ratio {row.ratios[-1]:.3f}")
    return [row]


def cmp_bulk(
    cfg: Cfg,
    pairs: int,
    fabric: str,
    key: str,
    tool_name: str,
    tools: tuple[str, ...],
    make_tool: Callable[[], Any],
    stream_mode: str,
) -> list[Row]:
    """Each round: the engine streaming, the streaming reference, the engine
    reusing its buffer, the reuse tool. Rows: stream / streaming reference
    (adjacent), reuse / tool (adjacent), stream / tool (info)."""
    size_txt = f"{cfg.bulk_size / MiB:g} MiB"
    region_txt = (
        f"{cfg.stream_size / MiB / 1024:g} GiB" if cfg.stream_size >= 1 << 30 else f"{cfg.stream_size / MiB:g} MiB"
    )
    stream = Row(
        key,
        f"{size_txt} bulk read, {fabric}, --buffer stream",
        "MiB/s",
        MiB,
        f"stream_ref --mode {stream_mode}: fresh {size_txt} slices of a {region_txt} region, one process pair",
        target=">= 0.90x",
        target_ratio=0.90,
    )
    reuse = Row(
        key + "r",
        f"{size_txt} bulk read, {fabric}, --buffer reuse",
        "MiB/s",
        MiB,
        tool_name,
        target=">= 0.97x",
        target_ratio=0.97,
        note="osu_bw-style buffer reuse against a tool that reuses its buffers",
    )
    vs_tool = Row(
        key + "t",
        f"{size_txt} bulk read, {fabric}, --buffer stream",
        "MiB/s",
        MiB,
        tool_name,
        note="a fresh destination per op against a tool that reuses its buffers; informational",
    )
    if cfg.stream_ref is None:
        stream.skipped = f"stream reference not built: {cfg.stream_ref_error}"
    skip = missing_tools(*tools)
    if skip:
        reuse.skipped = vs_tool.skipped = skip
    if stream.skipped and reuse.skipped:
        return [stream, reuse, vs_tool]
    eng = Engine(cfg)
    sref = StreamRef(cfg, stream_mode)
    tool = make_tool() if not reuse.skipped else None
    bv = lambda d: d["bytes_per_sec"]
    for i in range(pairs):
        log(f"{key} round {i + 1}/{pairs}: engine {fabric} read stream")
        a = attempt(
            stream,
            f"round {i + 1} ours stream",
            lambda: eng.run(fabric, op="read", size=cfg.bulk_size, buffer="stream"),
        )
        s = None
        if not stream.skipped:
            log(f"{key} round {i + 1}/{pairs}: stream_ref --mode {stream_mode}")
            s = attempt(stream, f"round {i + 1} streaming reference", sref.run)
            stream.add_pair(a, s, bv, bv)
        c = b = None
        if tool is not None:
            log(f"{key} round {i + 1}/{pairs}: engine {fabric} read reuse")
            c = attempt(
                reuse,
                f"round {i + 1} ours reuse",
                lambda: eng.run(fabric, op="read", size=cfg.bulk_size, buffer="reuse"),
            )
            log(f"{key} round {i + 1}/{pairs}: {tool_name.split()[0]}")
            b = attempt(reuse, f"round {i + 1} reference", tool.run)
            reuse.add_pair(c, b, bv, bv)
            vs_tool.add_pair(a, b, bv, bv)
        parts = [
            f"{name} {bv(d) / MiB:.0f}"
            for name, d in (("stream", a), ("stream_ref", s), ("reuse", c), ("tool", b))
            if d
        ]
        log("  MiB/s: " + "  ".join(parts))
    return [stream, reuse, vs_tool]


def cmp_progress(cfg: Cfg, pairs: int) -> list[Row]:
    modes = ["spindown", "adaptive", "block"]
    rate_rows = {}
    for m in modes:
        tgt = ">= 0.95x" if m == "spindown" else "info"
        rate_rows[m] = Row(
            f"5-{m}",
            f"noop rate, ofi+tcp, server --progress {m}",
            "ops/s",
            1.0,
            "same, server --progress busy",
            target=tgt,
            target_ratio=0.95 if m == "spindown" else None,
        )
    idle_rows = {}
    for m in ["busy"] + modes:
        idle_rows[m] = Row(
            f"5-idle-{m}",
            f"idle server CPU, --progress {m}",
            "cores",
            1.0,
            f"none: server idle {cfg.idle_seconds:g}s, SIGTERM, result.cpu.utilization",
            kind="value",
            target="~0 (<= 0.05)" if m == "spindown" else "info",
            value_max=0.05 if m == "spindown" else None,
        )
    eng = Engine(cfg)
    for i in range(pairs):
        for m in modes:
            row = rate_rows[m]
            log(f"5 pair {i + 1}/{pairs}: engine noop, server busy")
            a_busy = attempt(row, f"pair {i + 1} busy", lambda: eng.run("ofi+tcp", server_progress="busy"))
            log(f"5 pair {i + 1}/{pairs}: engine noop, server {m}")
            b_mode = attempt(row, f"pair {i + 1} {m}", lambda m=m: eng.run("ofi+tcp", server_progress=m))
            # ours = the mode under test, reference = busy
            row.add_pair(b_mode, a_busy, lambda d: d["ops_per_sec"], lambda d: d["ops_per_sec"])
            if b_mode and a_busy:
                log(
                    f"  busy {a_busy['ops_per_sec']:.0f}/s  {m} {b_mode['ops_per_sec']:.0f}/s  "
                    f"ratio {row.ratios[-1]:.3f}  (server cpu busy {a_busy['server_cpu_utilization']:.2f}, "
                    f"{m} {b_mode['server_cpu_utilization']:.2f})"
                )
        for m in ["busy"] + modes:
            row = idle_rows[m]
            log(f"5 idle {i + 1}/{pairs}: server --progress {m}, {cfg.idle_seconds:g}s idle")
            d = attempt(row, f"idle {i + 1} {m}", lambda m=m: eng.idle("ofi+tcp", m))
            if d is not None:
                row.ours.append(d["cpu_utilization"])
                row.pairs.append({"ours": d})
                log(f"  idle cpu {m}: {d['cpu_utilization']:.3f}")
    return list(rate_rows.values()) + list(idle_rows.values())


def cmp_multiclient(cfg: Cfg, pairs: int, counts=(1, 2, 4)) -> list[Row]:
    rows = {
        n: Row(
            f"6-{n}",
            f"noop aggregate, ofi+tcp, {n} client proc(s) on 1 core",
            "ops/s",
            1.0,
            "1 client (same round)",
            kind="agg",
        )
        for n in counts
    }
    eng = Engine(cfg)
    for i in range(pairs):
        base = None
        for n in counts:
            row = rows[n]
            log(f"6 round {i + 1}/{pairs}: 1 server, {n} client process(es)")
            d = attempt(row, f"round {i + 1} n={n}", lambda n=n: eng.run("ofi+tcp", nclients=n))
            if n == counts[0]:
                base = d
            row.add_pair(d, base, lambda x: x["ops_per_sec"], lambda x: x["ops_per_sec"])
            if d:
                log(
                    f"  aggregate {d['ops_per_sec']:.0f}/s  per client "
                    + ", ".join(f"{x:.0f}" for x in d["per_client_ops_per_sec"])
                )
    return list(rows.values())


# --------------------------------------------------------------------------
# machine facts, table
# --------------------------------------------------------------------------


def machine_facts(engine: str) -> dict:
    facts: dict[str, Any] = {"nproc": os.cpu_count(), "kernel": platform.release(), "host": platform.node()}
    try:
        for ln in Path("/proc/cpuinfo").read_text().splitlines():
            if ln.startswith("model name"):
                facts["cpu_model"] = ln.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    for name, cmd in (
        ("fi_info_version", ["fi_info", "--version"]),
        ("engine_version", [engine, "version"]),
        ("iperf3_version", ["iperf3", "--version"]),
        ("ucx_version", ["ucx_info", "-v"]),
    ):
        if shutil.which(cmd[0]) or os.path.exists(cmd[0]):
            try:
                cp = subprocess.run(cmd, capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)
                facts[name] = " ".join((cp.stdout or cp.stderr).split())[:200]
            except (OSError, subprocess.TimeoutExpired) as e:
                facts[name] = f"error: {e}"
    return facts


def _proc_cpu_ticks() -> dict[int, tuple[str, int]]:
    out = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            st = (d / "stat").read_text()
        except OSError:
            continue
        comm = st[st.find("(") + 1 : st.rfind(")")]
        f = st[st.rfind(")") + 2 :].split()
        out[int(d.name)] = (comm, int(f[11]) + int(f[12]))  # utime + stime
    return out


def busy_processes(interval: float = 1.0, threshold: float = 0.2) -> list[dict]:
    """Processes (not ours) using more than threshold of a core: the noise we share the machine with."""
    hz = os.sysconf("SC_CLK_TCK")
    a = _proc_cpu_ticks()
    time.sleep(interval)
    b = _proc_cpu_ticks()
    me = os.getpid()
    hogs = []
    for pid, (comm, t1) in b.items():
        if pid == me or pid not in a:
            continue
        use = (t1 - a[pid][1]) / hz / interval
        if use >= threshold:
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                cmd = comm
            hogs.append({"pid": pid, "cpu": round(use, 2), "cmd": cmd.strip()[:120]})
    return sorted(hogs, key=lambda h: -h["cpu"])


def render(rows: list[Row]) -> str:
    hdr = [
        "row",
        "comparison",
        "unit",
        "ours med",
        "ref med",
        "ratio med",
        "ratio min..max",
        "n",
        "target",
        "verdict",
        "our cpu cli/srv",
    ]
    out = []
    for r in rows:
        cpu = f"{med(r.cli_cpu):.2f}/{med(r.srv_cpu):.2f}" if r.cli_cpu else "-"
        if r.kind == "value":
            cells = [
                r.key,
                r.title,
                r.unit,
                fmt(med(r.ours), r.scale),
                "-",
                "-",
                (f"{min(r.ours):.3f}..{max(r.ours):.3f}" if r.ours else "-"),
                str(len(r.ours)),
                r.target,
                r.verdict(),
                cpu,
            ]
        else:
            rng = f"{min(r.ratios):.3f}..{max(r.ratios):.3f}" if r.ratios else "-"
            cells = [
                r.key,
                r.title,
                r.unit,
                fmt(med(r.ours), r.scale),
                fmt(med(r.ref), r.scale),
                f"{med(r.ratios):.3f}" if r.ratios else "-",
                rng,
                str(len(r.ratios)),
                r.target,
                r.verdict(),
                cpu,
            ]
        out.append(cells)
    widths = [max(len(h), *(len(c[i]) for c in out)) if out else len(h) for i, h in enumerate(hdr)]
    right = {3, 4, 5, 6, 7}

    def line(cells):
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))
        ).rstrip()

    lines = [line(hdr), "  ".join("-" * w for w in widths)]
    lines += [line(c) for c in out]
    lines.append("")
    lines.append(
        "our cpu cli/srv: median CPU use of our client(s) and server in the runs of that row (cores; "
        "a busy-polling side well below 1.00 was sharing its core with something else)"
    )
    lines.append("reference per row:")
    kw = max((len(r.key) for r in rows), default=4)
    for r in rows:
        extra = f"  [{r.note}]" if r.note else ""
        lines.append(f"  {r.key:{kw}s}  {r.ref_name}{extra}")
    notes = []
    for r in rows:
        if r.skipped:
            notes.append(f"  {r.key}: skipped ({r.skipped})")
        for e in r.errors:
            notes.append(f"  {r.key}: {e}")
    if notes:
        lines.append("")
        lines.append("skipped rows and errors:")
        lines += notes
    return "\n".join(lines)


def parse_size(s: str) -> int:
    """--bulk-size: a size as rooftop and its engine read it (4096, 64KiB, 4MiB, 1GiB)."""
    try:
        return rooftop_parse_size(s, "--bulk-size")
    except ConfigError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


SECTIONS = ("1", "2", "3", "4", "5", "6")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--engine",
        default=os.environ.get("ROOFTOP_ENGINE", DEFAULT_ENGINE),
        help=f"rooftop-engine binary (default: $ROOFTOP_ENGINE or {DEFAULT_ENGINE})",
    )
    ap.add_argument("--pairs", type=int, default=None, help="A/B pairs per comparison (default 5; --quick: 2)")
    ap.add_argument("--quick", action="store_true", help="smoke run: 2 pairs, short durations")
    ap.add_argument(
        "--only", default=",".join(SECTIONS), help="comma list of comparisons to run, from 1..6 (default: all)"
    )
    ap.add_argument("--duration", type=float, default=None, help="engine measured seconds (default 3; quick 1)")
    ap.add_argument("--warmup", type=float, default=None, help="engine warmup seconds (default 0.5; quick 0.3)")
    ap.add_argument("--server-cpu", default="0", help="core for servers (default 0)")
    ap.add_argument("--client-cpu", default="1", help="core for clients (default 1)")
    ap.add_argument("--msg-size", type=int, default=64, help="fi_pingpong -S bytes (default 64)")
    ap.add_argument("--bulk-size", type=parse_size, default=4 << 20, help="bulk transfer size (default 4MiB)")
    ap.add_argument(
        "--stream-size",
        type=parse_size,
        default=1 << 30,
        help="the region --buffer stream and the streaming reference walk (default 1GiB, the engine's default)",
    )
    ap.add_argument(
        "--pingpong-iters",
        type=int,
        default=None,
        help="fi_pingpong -p shm runs at least this many iterations (default 3000000; quick 300000): "
        "its time is printed in 10 ms steps",
    )
    ap.add_argument("--json", metavar="FILE", help="write all raw numbers here")
    args = ap.parse_args(argv)

    quick = args.quick
    pairs = args.pairs if args.pairs is not None else (2 if quick else 5)
    if pairs < 1:
        ap.error("--pairs must be >= 1")
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    bad = [s for s in only if s not in SECTIONS]
    if bad:
        ap.error(f"--only: unknown comparison(s) {bad}; choose from {','.join(SECTIONS)}")
    duration = args.duration if args.duration is not None else (1.0 if quick else 3.0)
    warmup = args.warmup if args.warmup is not None else (0.3 if quick else 0.5)
    cfg = Cfg(
        engine=args.engine,
        server_cpu=args.server_cpu,
        client_cpu=args.client_cpu,
        duration=duration,
        warmup=warmup,
        ref_seconds=1.0 if quick else 2.5,
        idle_seconds=1.0 if quick else 2.0,
        msg_size=args.msg_size,
        bulk_size=args.bulk_size,
        stream_size=args.stream_size,
        pingpong_min_iters=args.pingpong_iters
        if args.pingpong_iters is not None
        else (300_000 if quick else 3_000_000),
    )

    if not (os.path.isfile(cfg.engine) and os.access(cfg.engine, os.X_OK)):
        print(
            f"rooftop-engine not found at {cfg.engine}; build it with\n"
            "  cmake -S engine -B /tmp/bench-build -G Ninja && ninja -C /tmp/bench-build\n"
            "or pass --engine PATH",
            file=sys.stderr,
        )
        return 2
    if shutil.which("taskset") is None:
        log("warning: taskset not found; reference tools cannot be pinned and will fail")

    signal.signal(signal.SIGTERM, _on_signal)
    started = _dt.datetime.now(_dt.timezone.utc)
    facts = machine_facts(cfg.engine)
    load_start = os.getloadavg()
    hogs_start = busy_processes()
    for h in hogs_start:
        log(f"note: other process using {h['cpu']:.2f} cores: pid {h['pid']} {h['cmd']}")
    log(
        f"rooftop engine vs reference: {pairs} pairs, engine {duration:g}s + {warmup:g}s warmup, "
        f"server cpu {cfg.server_cpu}, client cpu {cfg.client_cpu}, load avg {load_start[0]:.2f}"
    )
    t0 = time.monotonic()
    rows: list[Row] = []
    build_dir = Path(tempfile.mkdtemp(prefix="rooftop-stream-ref-"))
    if "3" in only or "4" in only:  # built from its source here, with this machine's compiler
        try:
            cfg.stream_ref = stream_reference.build(build_dir)
            log(f"built the streaming reference from {stream_reference.SOURCE.name}")
        except stream_reference.StreamRefError as e:
            cfg.stream_ref_error = str(e)
            log(f"warning: {e}")
    try:
        if "1" in only:
            rows += cmp_noop_rate(cfg, pairs, "ofi+tcp", "tcp", "127.0.0.1", 25000.0, 1.00, "1")
        if "2" in only:
            rows += cmp_noop_rate(cfg, pairs, "ofi+shm", "shm", "localhost", 150000.0, 0.85, "2")
        if "3" in only:
            rows += cmp_bulk(
                cfg,
                pairs,
                "ofi+tcp",
                "3",
                "iperf3 -l 1M loopback (TCP stream)",
                ("iperf3", "taskset"),
                lambda: Iperf3(cfg),
                "tcp",
            )
        if "4" in only:
            rows += cmp_bulk(
                cfg,
                pairs,
                "ofi+shm",
                "4",
                f"ucx_perftest -t tag_bw -s {cfg.bulk_size} UCX_TLS=posix,sysv,cma",
                ("ucx_perftest", "taskset"),
                lambda: UcxPerftest(cfg),
                "push",
            )
        if "5" in only:
            rows += cmp_progress(cfg, pairs)
        if "6" in only:
            rows += cmp_multiclient(cfg, pairs)
    except (KeyboardInterrupt, SystemExit):
        log("interrupted: stopping everything started and printing what was measured")
        kill_all()
        print(render(rows))
        raise
    finally:
        kill_all()
        shutil.rmtree(build_dir, ignore_errors=True)
    elapsed = time.monotonic() - t0
    load_end = os.getloadavg()
    hogs_end = busy_processes()
    log(f"done in {elapsed:.0f}s, load avg {load_end[0]:.2f}")

    print(
        f"rooftop-engine vs reference tools  {started.strftime('%Y-%m-%d %H:%M UTC')}  "
        f"{facts.get('nproc')} cpus  {facts.get('cpu_model', '?')}  kernel {facts.get('kernel')}"
    )
    print(
        f"pairs {pairs}, engine {duration:g}s measured + {warmup:g}s warmup, server on cpu {cfg.server_cpu}, "
        f"clients on cpu {cfg.client_cpu}; ratio = median of adjacent-pair ratios ours/reference; "
        f"run took {elapsed:.0f}s, load avg {load_start[0]:.2f} -> {load_end[0]:.2f}"
    )
    for when, hogs in (("start", hogs_start), ("end", hogs_end)):
        for h in hogs:
            print(f"other busy process at {when}: {h['cpu']:.2f} cores  pid {h['pid']}  {h['cmd']}")
    print()
    print(render(rows))

    if args.json:
        doc = {
            "started_utc": started.isoformat(),
            "elapsed_s": elapsed,
            "pairs": pairs,
            "quick": quick,
            "config": {k: v for k, v in vars(cfg).items() if k != "ports"},
            "machine": facts,
            "loadavg_start": load_start,
            "loadavg_end": load_end,
            "other_busy_processes_start": hogs_start,
            "other_busy_processes_end": hogs_end,
            "rows": [r.to_json() for r in rows],
        }
        Path(args.json).write_text(json.dumps(doc, indent=2, default=str))
        log(f"raw numbers written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
