"""Bad input: a clear error, the right exit code, and no hang."""

from __future__ import annotations

import signal
import subprocess
import time

import pytest

from rooftop.engine.base import EngineError, engine_path
from rooftop.engine.commands import run_engine
from rooftop.engine.servers import Group


def engine(*args, timeout=30):
    t = time.monotonic()
    p = subprocess.run([engine_path(), *args], capture_output=True, text=True, timeout=timeout)
    return p, time.monotonic() - t


def test_unknown_provider_lists_the_available_ones(tmp_path):
    p, _ = engine("serve", "--fabric", "ofi+bogus", "--group-dir", str(tmp_path))
    assert p.returncode == 2
    assert "unknown or unavailable provider 'ofi+bogus'" in p.stderr
    assert "tcp" in p.stderr and "shm" in p.stderr
    assert not (tmp_path / "0.addr").exists()


def test_unknown_option_names_it(tmp_path):
    p, _ = engine("load", "--group-dir", str(tmp_path), "--concurency", "2")
    assert p.returncode == 2 and "--concurency" in p.stderr
    p, _ = engine("load", "--group-dir", str(tmp_path), "--size", "4XB")
    assert p.returncode == 2 and "--size" in p.stderr and "unit" in p.stderr
    p, _ = engine("load", "--group-dir", str(tmp_path), "--op", "erase")
    assert p.returncode == 2 and "noop|read|write" in p.stderr


def test_samples_the_old_name_of_windows_is_an_unknown_option(tmp_path):
    """load --samples K, the name of --windows before the first release, is
    refused like any option the engine does not have."""
    p, _ = engine("load", "--group-dir", str(tmp_path), "--samples", "2")
    assert p.returncode == 2 and "unknown option --samples" in p.stderr, p.stderr
    assert "deprecated" not in p.stderr


def test_missing_address_file_times_out(tmp_path):
    p, took = engine("load", "--group-dir", str(tmp_path), "--timeout", "1")
    assert p.returncode == 3
    assert "0.addr" in p.stderr and "within 1 s" in p.stderr
    assert took < 8


def test_dead_server_is_reported_not_waited_for(tmp_path, cores):
    with Group(directory=tmp_path) as g:
        s = g.start_server(0, cpus=cores[0])
        s.proc.send_signal(signal.SIGKILL)  # its address file stays behind
        s.proc.wait(timeout=10)
        assert (tmp_path / "0.addr").exists()
        p, took = engine("load", "--group-dir", str(tmp_path), "--timeout", "2", "--duration", "1")
    assert p.returncode == 3, p.stderr
    assert "rank 0" in p.stderr
    assert took < 15


def test_malformed_address_file_is_named(tmp_path):
    bad = tmp_path / "0.addr"
    bad.write_text("version=1\nrank=zero\n")
    p, _ = engine("ping", "--group-dir", str(tmp_path), "--timeout", "2")
    assert p.returncode == 1
    assert str(bad) in p.stderr and "line 2" in p.stderr
    bad.write_text("this is not an address file\n")
    p, _ = engine("ping", "--group-dir", str(tmp_path), "--timeout", "2")
    assert p.returncode == 1 and str(bad) in p.stderr


def test_size_beyond_registration_fails_before_measuring(cores):
    with Group() as g:
        g.start_server(0, cpus=cores[0], extra=["--max-size", "1MiB"])
        with pytest.raises(EngineError) as e:
            g.load(op="read", duration=1, extra=["--size", "2MiB"])
        assert e.value.returncode == 2
        assert "registered" in str(e.value) and "--max-size" in str(e.value)
        assert e.value.doc["result"] is None


def test_size_beyond_memory_fails_before_starting(tmp_path):
    p, _ = engine(
        "load",
        "--group-dir",
        str(tmp_path),
        "--op",
        "read",
        "--size",
        "1MiB",
        "--stream-size",
        "64TiB",
        "--timeout",
        "1",
    )
    assert p.returncode == 2 and "memory" in p.stderr


def test_server_memory_check(tmp_path):
    p, _ = engine("serve", "--group-dir", str(tmp_path), "--max-size", "1TiB", "--bulk-slots", "64")
    assert p.returncode == 2 and "available" in p.stderr
    assert not (tmp_path / "0.addr").exists()


def test_provider_mismatch(cores):
    with Group() as g:
        g.start_server(0, cpus=cores[0])
        p, _ = engine("load", "--fabric", "ofi+shm", "--group-dir", str(g.directory))
        assert p.returncode == 2 and "serves provider" in p.stderr


@pytest.mark.parametrize("fabric", ["ofi+tcp", "ofi+shm"])
def test_malformed_messages_are_counted_and_dropped(fabric, cores, validate):
    with Group(fabric=fabric) as g:
        s = g.start_server(0, cpus=cores[0])
        doc = run_engine(
            ["ping", "--fabric", fabric, "--group-dir", str(g.directory), "--send-malformed", "30", "--count", "2"],
            timeout=30,
        )
        assert doc["complete"] and doc["result"]["malformed_sent"] == 30
        stat = run_engine(["stat", "--fabric", fabric, "--group-dir", str(g.directory)], timeout=15)
        assert stat["result"]["dropped"] == 30
        assert s.alive()
        sdoc = validate(s.stop())
    dropped = sdoc["result"]["dropped"]
    assert dropped["total"] == 30
    for reason in ("truncated", "bad_magic", "bad_version", "bad_type", "bad_length", "unknown_connection"):
        assert dropped[reason] == 5, dropped
