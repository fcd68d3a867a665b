"""benchmarks/storage_vs_fio.py: its parsing and its command lines (not its
timing): fio's JSON, the engine's document, strace -c summaries, adjacent
pair ratios and the identical flags on both sides."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "storage_vs_fio.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("storage_vs_fio", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def case(bench, name):
    return next(c for c in bench.CASES if c.name == name)


def fio_json(side: str, iops: float, bw_bytes: int, ios: int, error: int = 0) -> str:
    empty = {"iops": 0.0, "bw_bytes": 0, "total_ios": 0}
    job = {"jobname": "ref", "error": error, "read": dict(empty), "write": dict(empty)}
    job[side] = {"iops": iops, "bw_bytes": bw_bytes, "total_ios": ios}
    # fio may print notes before its JSON
    return "note: both iodepth >= 1 and synchronous I/O engine are selected\n" + json.dumps(
        {"fio version": "fio-3.33", "jobs": [job]}
    )


def test_fio_write_read_and_metadata_sides(bench):
    got = bench.parse_fio(fio_json("write", 15000.5, 61442048, 30001), case(bench, "iops-randwrite"))
    assert got == {"iops": 15000.5, "bw": 61442048.0}
    got = bench.parse_fio(fio_json("read", 900.0, 943718400, 1800), case(bench, "bw-seqread"))
    assert got["bw"] == 943718400.0
    # filecreate and filestat report their files under 'read'
    got = bench.parse_fio(fio_json("read", 5305.0, 8192000, 2000), case(bench, "meta-create"))
    assert got["iops"] == 5305.0


def test_fio_failures_are_bench_errors(bench):
    c = case(bench, "iops-randwrite")
    with pytest.raises(bench.BenchError, match="job error 5"):
        bench.parse_fio(fio_json("write", 1.0, 1, 1, error=5), c)
    with pytest.raises(bench.BenchError, match="no write operations"):
        bench.parse_fio(fio_json("read", 10.0, 4096, 10), c)
    with pytest.raises(bench.BenchError, match="unparsable"):
        bench.parse_fio("fio: time_based requires a runtime/timeout setting", c)


def test_engine_document(bench):
    doc = {
        "role": "storage",
        "complete": True,
        "errors": [],
        "result": {
            "ops": 200,
            "warmup": {"ops": 50},
            "ops_per_sec": 100.0,
            "bytes_per_sec": 409600.0,
            "storage": {"o_direct_honoured": True},
        },
    }
    assert bench.parse_ours(json.dumps(doc)) == {
        "iops": 100.0,
        "bw": 409600.0,
        "direct": True,
        "all_ops": 250,
        "page_bytes": None,
    }
    doc.update(complete=False, errors=["--io-mode direct: tmpfs at /t does not honour O_DIRECT"])
    with pytest.raises(bench.BenchError, match="does not honour O_DIRECT"):
        bench.parse_ours(json.dumps(doc))


def test_strace_summary(bench):
    text = """% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 34.50    0.000217           6        34        13 openat
 19.24    0.000121           4        30           mmap
 10.97    0.000069           3      5022           pwrite64
------ ----------- ----------- --------- --------- ----------------
100.00    0.000629           4      5086        13 total
"""
    assert bench.parse_strace(text) == {"openat": 34, "mmap": 30, "pwrite64": 5022}


def test_pair_ratios_skip_failed_runs_and_verdicts(bench):
    assert bench.pair_ratios([10.0, None, 9.0, 8.0], [10.0, 5.0, None, 0.0]) == [1.0]
    assert bench.verdict(0.96, 0.95) == "met" and bench.verdict(0.9, 0.95) == "MISSED"
    assert bench.verdict(None, 0.95) == "no pairs" and bench.verdict(3.0, None) == "info"


def test_both_sides_get_identical_settings(bench):
    a = bench.parse_args(
        [
            "--duration",
            "1.5",
            "--warmup",
            "0.5",
            "--io-mode",
            "direct+sync",
            "--file-size",
            "64MiB",
            "--engine",
            "/bin/true",
        ]
    )
    c = case(bench, "iops-randwrite")
    ours = bench.our_argv("/e", c, Path("/d"), a)
    fio = bench.fio_argv(c, Path("/d"), a)
    assert ours[ours.index("--io-mode") + 1] == "direct+sync" and "--direct=1" in fio and "--sync=sync" in fio
    assert ours[ours.index("--allocation") + 1] == "preallocate" and "--fallocate=native" in fio
    assert ours[ours.index("--pattern") + 1] == "rand" and "--rw=randwrite" in fio
    assert ours[ours.index("--size") + 1] == "4096" and "--bs=4096" in fio
    assert "--ioengine=psync" in fio and "--iodepth=1" in fio and f"--size={64 << 20}" in fio
    # fio reads '1.5' as 1 s: durations go in milliseconds
    assert "--runtime=1500ms" in fio and "--ramp_time=500ms" in fio
    assert "--fill" in bench.our_argv("/e", case(bench, "bw-seqread"), Path("/d"), a)
    # Buffers: huge pages on both sides by default, base pages on both with --buffer-pages base.
    assert ours[ours.index("--buffer-pages") + 1] == "huge" and "--iomem=mmaphuge" in fio
    b = bench.parse_args(["--buffer-pages", "base", "--engine", "/bin/true"])
    ours_b, fio_b = bench.our_argv("/e", c, Path("/d"), b), bench.fio_argv(c, Path("/d"), b)
    assert ours_b[ours_b.index("--buffer-pages") + 1] == "base" and "--iomem=mmap" in fio_b


def test_a_run_whose_buffer_got_other_pages_is_an_error(bench):
    huge = bench.huge_page_bytes()
    assert bench.check_pages({"page_bytes": huge}, "huge")["page_bytes"] == huge
    with pytest.raises(bench.BenchError, match="--buffer-pages huge asked, the buffer got 4096-byte pages"):
        bench.check_pages({"page_bytes": 4096}, "huge")
    with pytest.raises(bench.BenchError, match="--buffer-pages base asked"):
        bench.check_pages({"page_bytes": huge}, "base")


def test_summary_block_is_pasteable(bench):
    row = {
        "row": "bw-seqwrite",
        "where": "ext4 on /dev/loop1",
        "what": "1 MiB sequential write",
        "metric": "bw",
        "ours_med": 700 * 2**20,
        "fio_med": 720 * 2**20,
        "ratio_med": 0.972,
        "ratio_min": 0.9,
        "ratio_max": 1.1,
        "pairs": 3,
        "target": 0.95,
        "verdict": "met",
        "errors": ["pair 2 fio: fio: job error 5"],
    }
    facts = {
        "when": "2026-11-23 05:00 UTC",
        "cpus": 2,
        "kernel": "6.18",
        "fio": "fio-3.33",
        "io_mode": "direct",
        "pairs": 3,
        "duration": 2.0,
        "warmup": 0.5,
        "file_size": 256 << 20,
        "cpu": "1",
        "load_before": "1.00",
        "load_after": "2.00",
        "took_s": 100.0,
        "filesystems": {"ext4 on /dev/loop1": "ext4 /dev/loop1 rw"},
    }
    text = bench.summary_block([row], facts)
    assert "700.0 MiB/s" in text and "0.972" in text and "0.900..1.100" in text and " met" in text
    assert "error: ext4 on /dev/loop1 bw-seqwrite: pair 2 fio" in text and "load avg 1.00 -> 2.00" in text
