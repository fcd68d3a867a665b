#!/usr/bin/env python3
"""rooftop's local storage mode against fio, side by side.

For the same file system, block size, pattern, queue depth 1 and flags,
`rooftop-engine storage ...` (one operation at a time, in-process) and
`fio --ioengine=psync --iodepth=1` with the same direct/sync/fallocate run
in adjacent pairs (ours then fio, fio then ours, ...), pinned to the same core. Each
of our runs is divided by the fio run next to it; the median of those pair
ratios is the headline (goal: >= 0.95 x fio for IOPS at 4 KiB random and
bandwidth at 1 MiB sequential). Metadata: our create/stat against fio's
filecreate/filestat engines (info rows: fio's per-file bookkeeping is part
of its rate).

The file system: a fresh ext4 image on a loop device, made and removed by
this script (root; O_DIRECT and fallocate are honoured there), and with
--dir a directory you name as well. The image is written with zeros first
and the loop device writes it with O_DIRECT (--sparse-image and
--host-cache not to): otherwise the "device" is the host's page cache,
whose writeback throttles whichever side runs after a fast one, and
whichever side first writes a region of a sparse image pays for its
allocation. The data buffers of both sides are in huge pages by default
(ours --buffer-pages huge, fio --iomem=mmaphuge; this script reserves them
in /proc/sys/vm/nr_hugepages and gives them back): from base pages, a 1 MiB
O_DIRECT write reaches the host disk as one request or as two, depending on
whether the pages the process happened to get are contiguous (the loop
device takes 128 segments per request), so each run drew one of two
speeds; --buffer-pages base for that. --strace runs each row once more under
`strace -f -c` on both sides and prints the syscalls per operation, to see
why one side is slower.

Python 3.10+, standard library only (rooftop is not imported). Progress goes
to stderr; the table and a summary block to paste into RESULTS.md to stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

GOAL = 0.95
KiB, MiB = 1 << 10, 1 << 20


@dataclass(frozen=True)
class Case:
    """One comparison: our storage op and fio's job, with identical settings."""

    name: str
    label: str
    op: str  # our --op
    fio_rw: str  # fio --rw, or the engine for metadata (filecreate/filestat)
    bs: int
    pattern: str  # seq | rand
    metric: str  # iops | bw
    target: float | None = GOAL


CASES = [
    Case("iops-randwrite", "4 KiB random write", "put", "randwrite", 4 * KiB, "rand", "iops"),
    Case("iops-randread", "4 KiB random read", "get", "randread", 4 * KiB, "rand", "iops"),
    Case("bw-seqwrite", "1 MiB sequential write", "put", "write", MiB, "seq", "bw"),
    Case("bw-seqread", "1 MiB sequential read", "get", "read", MiB, "seq", "bw"),
    Case("meta-create", "create (fio filecreate)", "create", "filecreate", 0, "", "iops", None),
    Case("meta-stat", "stat (fio filestat)", "stat", "filestat", 0, "", "iops", None),
]

#: Our --buffer-pages -> fio's --iomem (both anonymous mmap; huge: MAP_HUGETLB).
FIO_MEM = {"base": "mmap", "huge": "mmaphuge"}

#: Our --io-mode -> fio's direct and sync options (identical open flags).
FIO_FLAGS = {
    "buffered": {"direct": "0", "sync": "0"},
    "direct": {"direct": "1", "sync": "0"},
    "sync": {"direct": "0", "sync": "sync"},
    "dsync": {"direct": "0", "sync": "dsync"},
    "direct+sync": {"direct": "1", "sync": "sync"},
    "direct+dsync": {"direct": "1", "sync": "dsync"},
}


class BenchError(Exception):
    """One run failed: the pair is left out and the message listed."""


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --- command lines ---------------------------------------------------------
def our_argv(engine: str, case: Case, d: Path, a) -> list[str]:
    argv = [
        engine,
        "storage",
        "--op",
        case.op,
        "--storage-dir",
        str(d),
        "--duration",
        str(a.duration),
        "--warmup",
        str(a.warmup),
    ]
    if case.bs:
        argv += [
            "--size",
            str(case.bs),
            "--pattern",
            case.pattern,
            "--io-mode",
            a.io_mode,
            "--allocation",
            "preallocate",
            "--file-size",
            str(a.file_size),
            "--buffer-pages",
            a.buffer_pages,
        ]
        if case.op == "get":
            argv += ["--fill"]
    else:
        argv += ["--meta-files", str(a.files)]
    return argv


def fio_argv(case: Case, d: Path, a) -> list[str]:
    common = ["fio", "--name=ref", f"--directory={d}", "--output-format=json", "--thread", "--numjobs=1"]
    if not case.bs:  # metadata engines: files of 4 KiB, one open at a time
        # filecreate is not time-based: it stops after --create-files files (its rate falls as
        # its file list grows); filestat stats --files files laid out before it starts
        n = a.create_files if case.fio_rw == "filecreate" else a.files
        meta = [f"--ioengine={case.fio_rw}", f"--nrfiles={n}", "--filesize=4k", "--openfiles=1", "--fallocate=none"]
        if case.fio_rw == "filestat":  # the files exist before (laid out), stat them for --duration
            meta += ["--time_based", f"--runtime={ms(a.duration)}", f"--ramp_time={ms(a.warmup)}"]
        return common + meta
    flags = FIO_FLAGS[a.io_mode]
    return common + [
        "--ioengine=psync",
        "--iodepth=1",
        f"--rw={case.fio_rw}",
        f"--bs={case.bs}",
        f"--size={a.file_size}",
        "--filename=fio-data",
        f"--direct={flags['direct']}",
        f"--sync={flags['sync']}",
        "--fallocate=native",
        "--time_based",
        f"--runtime={ms(a.duration)}",
        f"--ramp_time={ms(a.warmup)}",
        "--norandommap",
        "--randrepeat=0",
        "--invalidate=1",
        f"--iomem={FIO_MEM[a.buffer_pages]}",
    ]


def ms(seconds: float) -> str:
    """fio's time options in milliseconds: it reads '1.5' as 1 s and '0.5' as 0."""
    return f"{round(seconds * 1000)}ms"


# --- parsing (unit-tested: tests/test_storage_vs_fio.py) -------------------
def parse_fio(text: str, case: Case) -> dict:
    """fio's JSON output -> {'iops', 'bw'} of the job (bytes/s). The
    metadata engines report their files under 'read'."""
    try:
        job = json.loads(text[text.index("{") :])["jobs"][0]
    except (ValueError, KeyError, IndexError) as e:
        raise BenchError(f"fio: unparsable output ({e}): {text[:200]!r}") from None
    if job.get("error"):
        raise BenchError(f"fio: job error {job['error']}")
    side = "write" if case.fio_rw in ("write", "randwrite") else "read"
    r = job[side]
    if not r.get("total_ios") and not r.get("iops"):
        raise BenchError(f"fio: no {side} operations completed")
    return {"iops": float(r["iops"]), "bw": float(r.get("bw_bytes", r.get("bw", 0) * 1024))}


def parse_ours(text: str) -> dict:
    """rooftop-engine storage's JSON document -> {'iops', 'bw', 'direct'}."""
    try:
        doc = json.loads(text)
    except ValueError:
        raise BenchError(f"rooftop-engine: unparsable output: {text[:200]!r}") from None
    if not doc.get("complete", True) or doc.get("errors"):
        raise BenchError("rooftop-engine: " + "; ".join(doc.get("errors") or ["incomplete run"]))
    r = doc["result"]
    return {
        "iops": float(r["ops_per_sec"]),
        "bw": float(r["bytes_per_sec"]),
        "direct": r.get("storage", {}).get("o_direct_honoured"),
        "all_ops": int(r["ops"]) + int(r.get("warmup", {}).get("ops", 0)),
        "page_bytes": r.get("buffer_page_bytes"),
    }


def check_pages(got: dict, pages: str) -> dict:
    """Our run's buffer was in the pages asked for (the engine refuses huge
    pages it cannot have; this catches an engine that would not)."""
    want = huge_page_bytes() if pages == "huge" else os.sysconf("SC_PAGE_SIZE")
    if got.get("page_bytes") not in (None, want):
        raise BenchError(f"rooftop-engine: --buffer-pages {pages} asked, the buffer got {got['page_bytes']}-byte pages")
    return got


def pair_ratios(ours: list[float | None], ref: list[float | None]) -> list[float]:
    """ours[i] / ref[i] for every pair where both ran (and ref > 0)."""
    return [o / r for o, r in zip(ours, ref) if o is not None and r]


def parse_strace(text: str) -> dict[str, int]:
    """`strace -c` summary -> {syscall: calls} (the 'total' line left out)."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$", line)
        if m and m.group(2) != "total":
            out[m.group(2)] = out.get(m.group(2), 0) + int(m.group(1))
    return out


def verdict(ratio: float | None, target: float | None) -> str:
    if ratio is None:
        return "no pairs"
    if target is None:
        return "info"
    return "met" if ratio >= target else "MISSED"


# --- running ---------------------------------------------------------------
def run(argv: list[str], cwd: Path, cpu: str | None, timeout: float, prefix: list[str] = ()) -> str:
    cmd = [*prefix, *(["taskset", "-c", cpu] if cpu else []), *argv]
    try:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise BenchError(f"{argv[0]}: no answer within {timeout:g} s") from None
    if p.returncode != 0 and not p.stdout.strip().startswith("{"):
        raise BenchError(f"{Path(argv[0]).name} exit {p.returncode}: {(p.stderr or p.stdout).strip()[-300:]}")
    return p.stdout


def fresh(d: Path) -> Path:
    """An empty work directory under d for one run (removed after)."""
    return Path(tempfile.mkdtemp(prefix="run-", dir=d))


def one(side: str, case: Case, d: Path, a) -> dict:
    w = fresh(d)
    try:
        if side == "ours":
            got = parse_ours(run(our_argv(a.engine, case, w, a), w, a.cpu, a.duration + a.warmup + 120))
            return check_pages(got, a.buffer_pages) if case.bs else got
        return parse_fio(run(fio_argv(case, w, a), w, a.cpu, a.duration + a.warmup + 120), case)
    finally:
        shutil.rmtree(w, ignore_errors=True)


@dataclass
class Row:
    case: Case
    where: str
    ours: list = field(default_factory=list)
    ref: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    direct: bool | None = None

    def values(self, side: list) -> list[float | None]:
        return [None if x is None else x[self.case.metric] for x in side]

    def summary(self) -> dict:
        ours, ref = self.values(self.ours), self.values(self.ref)
        ratios = pair_ratios(ours, ref)
        med = statistics.median(ratios) if ratios else None
        pick = lambda xs: (
            statistics.median([x for x in xs if x is not None]) if any(x is not None for x in xs) else None
        )
        return {
            "row": self.case.name,
            "where": self.where,
            "what": self.case.label,
            "metric": self.case.metric,
            "ours_med": pick(ours),
            "fio_med": pick(ref),
            "ratio_med": med,
            "ratio_min": min(ratios) if ratios else None,
            "ratio_max": max(ratios) if ratios else None,
            "pairs": len(ratios),
            "target": self.case.target,
            "verdict": verdict(med, self.case.target),
            "o_direct_honoured": self.direct,
            "ours": ours,
            "fio": ref,
            "errors": self.errors,
        }


def measure(case: Case, where: str, d: Path, a) -> Row:
    row = Row(case, where)
    for i in range(a.pairs):
        sides = (("ours", row.ours), ("fio", row.ref))
        # ours first, then fio first, ...: whatever the run before leaves
        # behind (writeback, freed blocks) falls on both sides alike
        for side, into in sides if i % 2 == 0 else sides[::-1]:
            try:
                got = one(side, case, d, a)
                if side == "ours" and got.get("direct") is not None:
                    row.direct = got["direct"]
            except BenchError as e:
                got = None
                row.errors.append(f"pair {i + 1} {side}: {e}")
            into.append(got)
        log(
            f"  {where} {case.name} pair {i + 1}/{a.pairs}: ours {fmt(row.values(row.ours)[-1], case.metric)}, "
            f"fio {fmt(row.values(row.ref)[-1], case.metric)}"
        )
    return row


def strace_counts(case: Case, d: Path, a) -> dict:
    """Syscalls per operation of each side, from one run under strace -f -c."""
    out = {}
    for side in ("ours", "fio"):
        w = fresh(d)
        try:
            trace = w.parent / f"strace-{side}-{os.getpid()}.txt"
            argv = our_argv(a.engine, case, w, a) if side == "ours" else fio_argv(case, w, a)
            text = run(argv, w, a.cpu, a.duration + a.warmup + 120, ["strace", "-f", "-c", "-o", str(trace)])
            got = parse_ours(text) if side == "ours" else parse_fio(text, case)
            # ours: every operation counted (warmup too); fio does not count its ramp: estimated
            ops = got.get("all_ops") or got["iops"] * (a.duration + a.warmup)
            calls = parse_strace(trace.read_text())
            trace.unlink()
            out[side] = {k: round(v / ops, 3) for k, v in sorted(calls.items(), key=lambda kv: -kv[1])[:8] if ops > 0}
        except BenchError as e:
            out[side] = {"error": str(e)}
        finally:
            shutil.rmtree(w, ignore_errors=True)
    return out


# --- the file systems ------------------------------------------------------
@contextlib.contextmanager
def loop_ext4(size: int, parent: str | None, written: bool = False, direct_io: bool = False):
    """A fresh ext4 image on a loop device, mounted; removed whatever happens.
    written: the image is written with zeros first, so the file system under
    it allocates no block during the runs (a sparse image makes the first
    write to each region allocate one, with a journal commit under O_DSYNC:
    whichever run comes first over a region pays it). direct_io: the loop
    device reads and writes its image with O_DIRECT (losetup --direct-io),
    so a write reaches the host's disk, not the host's page cache, whose
    dirty-page writeback would throttle whichever run came after a fast one;
    an error if the kernel declines it."""
    if os.geteuid() != 0:
        raise BenchError("the loop-mounted ext4 image needs root (or use --no-loop --dir DIR)")
    with tempfile.TemporaryDirectory(prefix="rooftop-fio-", dir=parent) as tmp:
        image, mnt = Path(tmp) / "ext4.img", Path(tmp) / "mnt"
        mnt.mkdir()
        with open(image, "wb") as f:
            f.truncate(size)
        if written:
            subprocess.run(
                [
                    "dd",
                    "if=/dev/zero",
                    f"of={image}",
                    "bs=4M",
                    f"count={-(-size // (4 << 20))}",
                    "conv=fsync,notrunc",
                    "status=none",
                ],
                check=True,
            )
        # -i 2048: an inode per 2 KiB (default 16 KiB gave 49 152 inodes, which a
        # time-based create run on a quiet machine used up: ENOSPC)
        subprocess.run(["mkfs.ext4", "-q", "-F", "-i", "2048", str(image)], check=True)
        dev = subprocess.run(
            ["losetup", "--find", "--show", *(["--direct-io=on"] if direct_io else []), str(image)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        try:
            dio = Path(f"/sys/block/{Path(dev).name}/loop/dio")
            if direct_io and (not dio.exists() or dio.read_text().strip() != "1"):
                raise BenchError(f"{dev}: the kernel declined direct I/O on {image} ({dio} is not 1)")
            subprocess.run(["mount", "-t", "ext4", dev, str(mnt)], check=True)
            try:
                yield mnt, dev
            finally:
                subprocess.run(["umount", str(mnt)], check=False)
        finally:
            subprocess.run(["losetup", "-d", dev], check=False)


def huge_page_bytes() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("Hugepagesize:"):
            return int(line.split()[1]) * 1024
    return 2 * MiB


@contextlib.contextmanager
def reserved_huge_pages(n: int):
    """n more huge pages reserved for the runs (/proc/sys/vm/nr_hugepages),
    given back whatever happens (n off the count then, not the count before:
    another run may have reserved its own meanwhile); an error if the kernel
    reserves fewer."""
    if os.geteuid() != 0:
        raise BenchError("reserving huge pages needs root (or use --buffer-pages base)")
    nr = Path("/proc/sys/vm/nr_hugepages")
    before = int(nr.read_text())
    nr.write_text(str(before + n))
    try:
        got = int(nr.read_text()) - before
        if got < n:
            raise BenchError(
                f"the kernel reserved {got} of {n} huge pages asked for (memory too fragmented?); "
                f"--buffer-pages base measures without them"
            )
        yield
    finally:
        nr.write_text(str(max(0, int(nr.read_text()) - n)))


def fs_of(d: Path) -> str:
    p = subprocess.run(["findmnt", "-n", "-o", "FSTYPE,SOURCE,OPTIONS", "-T", str(d)], capture_output=True, text=True)
    return " ".join(p.stdout.split()) or "?"


# --- output ----------------------------------------------------------------
def fmt(v: float | None, metric: str) -> str:
    if v is None:
        return "-"
    return f"{v:,.0f} ops/s" if metric == "iops" else f"{v / MiB:,.1f} MiB/s"


def render(rows: list[dict]) -> str:
    head = ["row", "where", "what", "ours med", "fio med", "ratio med", "min..max", "n", "target", "verdict"]
    lines = [head]
    for r in rows:
        rng = f"{r['ratio_min']:.3f}..{r['ratio_max']:.3f}" if r["pairs"] else "-"
        lines.append(
            [
                r["row"],
                r["where"],
                r["what"],
                fmt(r["ours_med"], r["metric"]),
                fmt(r["fio_med"], r["metric"]),
                f"{r['ratio_med']:.3f}" if r["ratio_med"] is not None else "-",
                rng,
                str(r["pairs"]),
                f">= {r['target']:.2f}x" if r["target"] else "info",
                r["verdict"],
            ]
        )
    widths = [max(len(l[i]) for l in lines) for i in range(len(head))]
    out = ["  ".join(c.ljust(w) for c, w in zip(l, widths)).rstrip() for l in lines]
    out.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(out)


def summary_block(rows: list[dict], facts: dict) -> str:
    """The block to paste into benchmarks/RESULTS.md."""
    lines = [
        f"storage_vs_fio {facts['when']}  {facts['cpus']} cpus  kernel {facts['kernel']}  {facts['fio']}",
        f"io-mode {facts['io_mode']}, pairs {facts['pairs']}, {facts['duration']} s measured + "
        f"{facts['warmup']} s warmup per run, file {facts['file_size'] // MiB} MiB, cpu {facts['cpu'] or 'any'}, "
        f"buffers in {facts.get('buffer_pages', 'base')} pages (fio --iomem={facts.get('fio_iomem', 'malloc')}), "
        f"load avg {facts['load_before']} -> {facts['load_after']}, took {facts['took_s']:.0f} s, "
        f"{facts.get('image', '')}",
    ]
    for where, fs in facts["filesystems"].items():
        lines.append(f"{where}: {fs}")
    lines += ["", render(rows)]
    for r in rows:
        for e in r["errors"]:
            lines.append(f"error: {r['where']} {r['row']}: {e}")
    return "\n".join(lines)


def parse_size(text: str) -> int:
    m = re.fullmatch(r"(\d+)\s*([KMG]i?B?)?", text.strip(), re.I)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text}")
    unit = (m.group(2) or "").upper()[:1]
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[unit]


def parse_args(argv: list[str] | None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--engine",
        default=os.environ.get("ROOFTOP_ENGINE")
        or shutil.which("rooftop-engine")
        or str(Path(__file__).resolve().parent.parent / ".venv/bin/rooftop-engine"),
        help="rooftop-engine binary (default: $ROOFTOP_ENGINE, PATH, then ./.venv/bin)",
    )
    p.add_argument("--pairs", type=int, default=3, help="adjacent pairs per row (default 3)")
    p.add_argument("--duration", type=float, default=2.0, help="measured seconds per run (default 2)")
    p.add_argument("--warmup", type=float, default=0.5, help="warm-up seconds per run (default 0.5)")
    p.add_argument(
        "--io-mode",
        default="direct",
        choices=sorted(FIO_FLAGS),
        help="open flags of both sides for the data rows (default direct: O_DIRECT)",
    )
    p.add_argument("--file-size", type=parse_size, default=256 * MiB, help="data file size (default 256MiB)")
    p.add_argument(
        "--files",
        type=int,
        default=500,
        help="files of the metadata rows (default 500: fio lays out and fsyncs each before filestat)",
    )
    p.add_argument(
        "--create-files",
        type=int,
        default=2000,
        help="files fio's filecreate makes (it stops after them; default 2000: its rate "
        "falls as its file list grows, ~1000/s at 10000 here)",
    )
    p.add_argument(
        "--only", default="", help="comma-separated row names (default: all): " + ",".join(c.name for c in CASES)
    )
    p.add_argument("--dir", help="also measure in this directory (a file system you name)")
    p.add_argument("--no-loop", action="store_true", help="skip the loop-mounted ext4 image (then --dir is needed)")
    p.add_argument("--image-dir", help="where the ext4 image file goes (default: the system temporary dir)")
    p.add_argument(
        "--sparse-image", action="store_true", help="leave the image sparse (default: written with zeros first)"
    )
    p.add_argument(
        "--host-cache",
        action="store_true",
        help="let the loop device write its image through the host's page cache (default: O_DIRECT)",
    )
    p.add_argument(
        "--buffer-pages",
        default="huge",
        choices=sorted(FIO_MEM),
        help="data buffers of both sides: huge (default; ours --buffer-pages huge, fio --iomem=mmaphuge, "
        "reserved here) or base (the kernel's base pages: see the module's help)",
    )
    p.add_argument("--cpu", default=None, help="core both sides run on (taskset; default: the last usable core)")
    p.add_argument("--strace", action="store_true", help="also count each side's syscalls per operation")
    p.add_argument("--json", help="save every run and the summary to this file")
    a = p.parse_args(argv)
    if a.cpu is None:
        a.cpu = str(sorted(os.sched_getaffinity(0))[-1])
    a.engine = os.path.abspath(a.engine)  # the runs start in their own directories
    return a


def measure_all(cases: list[Case], dirs: dict[str, Path], a) -> tuple[list[dict], dict]:
    rows, traces = [], {}
    for where, d in dirs.items():
        for case in cases:
            log(f"{where}: {case.label} ({case.name})")
            rows.append(measure(case, where, d, a).summary())
            if a.strace:
                traces[f"{where}/{case.name}"] = strace_counts(case, d, a)
    return rows, traces


def exit_on_sigterm() -> None:
    """SIGTERM and SIGHUP unwind like Ctrl-C: the image is unmounted, its loop
    device detached and the reserved huge pages given back."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: sys.exit(128 + signum))


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    exit_on_sigterm()
    for tool in ("fio", "taskset", *(["strace"] if a.strace else [])):
        if not shutil.which(tool):
            print(f"storage_vs_fio: {tool} is not installed (bash scripts/setup.sh --bench)", file=sys.stderr)
            return 2
    if not os.access(a.engine, os.X_OK):
        print(f"storage_vs_fio: no rooftop-engine at {a.engine} (--engine)", file=sys.stderr)
        return 2
    names = [n for n in a.only.split(",") if n]
    cases = [c for c in CASES if not names or c.name in names]
    t0, load0 = time.time(), os.getloadavg()[0]
    with contextlib.ExitStack() as stack:
        if a.buffer_pages == "huge" and any(c.bs for c in cases):
            try:  # a buffer of the largest block per side, rounded up, and one spare
                stack.enter_context(reserved_huge_pages(2 * -(-max(c.bs for c in cases) // huge_page_bytes()) + 2))
            except BenchError as e:
                print(f"storage_vs_fio: {e}", file=sys.stderr)
                return 2
        dirs = {}
        if not a.no_loop:
            mnt, dev = stack.enter_context(
                loop_ext4(
                    2 * a.file_size + 256 * MiB, a.image_dir, written=not a.sparse_image, direct_io=not a.host_cache
                )
            )
            dirs[f"ext4 on {dev}"] = mnt
        if a.dir:
            dirs[a.dir] = Path(a.dir)
        if not dirs:
            print("storage_vs_fio: nothing to measure (--no-loop without --dir)", file=sys.stderr)
            return 2
        fss = {w: fs_of(d) for w, d in dirs.items()}
        rows, traces = measure_all(cases, dirs, a)
    fio_v = subprocess.run(["fio", "--version"], capture_output=True, text=True).stdout.strip()
    facts = {
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(t0)),
        "cpus": os.cpu_count(),
        "kernel": platform.release(),
        "fio": fio_v,
        "io_mode": a.io_mode,
        "pairs": a.pairs,
        "duration": a.duration,
        "warmup": a.warmup,
        "file_size": a.file_size,
        "cpu": a.cpu,
        "buffer_pages": a.buffer_pages,
        "fio_iomem": FIO_MEM[a.buffer_pages],
        "load_before": f"{load0:.2f}",
        "load_after": f"{os.getloadavg()[0]:.2f}",
        "took_s": time.time() - t0,
        "filesystems": fss,
        "image": ""
        if a.no_loop
        else ("sparse" if a.sparse_image else "written")
        + " image, loop device "
        + ("through the host's page cache" if a.host_cache else "with O_DIRECT"),
    }
    print(summary_block(rows, facts))
    for name, t in traces.items():
        print(f"\nsyscalls per operation, {name}:")
        for side, calls in t.items():
            print(f"  {side:5s} " + ", ".join(f"{k} {v}" for k, v in calls.items()))
    if a.json:
        Path(a.json).write_text(json.dumps({"facts": facts, "rows": rows, "strace": traces}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
