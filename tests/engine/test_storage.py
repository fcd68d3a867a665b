"""Storage and metadata operations on real files (issue 15, items 1 and 5).

A loop-mounted ext4 image made by the test (O_DIRECT and fallocate are
honoured there), an ext2 one (fallocate is not) and a tmpfs (O_DIRECT is
not: its data is the page cache): put/get verified end to end through a
server, metadata counts checked against the directory afterwards, the local
storage mode, and the knobs each file system refuses, named in the error.
Mounting needs root: as another user these tests are skipped, saying why.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mounts import loop_mount, tmpfs_mount
from rooftop.engine.base import EngineError, engine_path
from rooftop.engine.commands import run_engine
from rooftop.engine.servers import Group


@pytest.fixture(scope="module")
def ext4():
    with loop_mount("ext4") as m:
        yield m


def storage_dir(mnt: Path, name: str) -> Path:
    d = mnt / name
    d.mkdir(mode=0o700)
    return d


@pytest.mark.parametrize("fabric", ["ofi+tcp", "ofi+shm"])
def test_put_get_verified_through_a_server_on_ext4(fabric, ext4, cores, validate):
    mnt, dev = ext4
    server_cpu, client_cpu = cores
    sdir = storage_dir(mnt, "putget-" + fabric.replace("+", "-"))
    with Group(fabric=fabric) as g:
        g.start_server(
            0,
            cpus=server_cpu,
            extra=["--storage-dir", str(sdir), "--io-mode", "direct", "--file-size", "8MiB", "--fsync-every", "4"],
        )
        docs = [
            validate(g.load(op="put", duration=0.4, warmup=0.1, cpus=client_cpu, extra=["--size", "64KiB", "--verify"]))
        ]
        for pattern in ("seq", "rand"):
            docs.append(
                validate(
                    g.load(
                        op="get",
                        duration=0.4,
                        warmup=0.1,
                        cpus=client_cpu,
                        extra=["--size", "64KiB", "--verify", "--pattern", pattern],
                    )
                )
            )
        server = validate(g.close()[0])
    for doc in docs:
        r = doc["result"]
        assert doc["complete"] and doc["errors"] == [], doc["errors"]
        assert r["ops"] > 0 and r["bytes"] == r["ops"] * 65536
        assert r["verify"]["enabled"] and r["verify"]["failures"] == 0
        assert r["verify"]["checked"] >= r["ops"]
    assert docs[2]["config"]["pattern"] == "rand"
    res = server["result"]
    st = res["storage"]
    assert server["errors"] == []
    # The file system, its device and how the knobs were honoured.
    assert st["fs"]["type"] == "ext4" and st["fs"]["device"] == dev
    assert st["fs"]["mount_point"] == str(mnt) and "rw" in st["fs"]["mount_options"].split(",")
    assert 0 < st["fs"]["free_bytes"] <= st["fs"]["total_bytes"]
    assert st["o_direct_honoured"] is True
    assert st["knobs"] == {
        "io_mode": "direct",
        "fsync_every": 4,
        "allocation": "preallocate",
        "file_layout": "per-process",
        "file_size": 8 << 20,
        "fill": False,
        "meta_layout": "shared",
        "meta_files": 1000,
        "keep_files": False,
    }
    # Every operation answered was a storage call that succeeded.
    assert res["requests"]["put"] == st["counts"]["puts"] > 0
    assert res["requests"]["get"] == st["counts"]["gets"] > 0
    assert st["counts"]["fsyncs"] == st["counts"]["puts"] // 4
    assert res["requests"]["storage_failed"] == 0 and res["requests"]["verify_failed"] == 0
    # The device's time: some for every write and read, never more than the server lived.
    assert 0 < st["device_s"]["write"] < res["elapsed_s"] and 0 < st["device_s"]["read"] < res["elapsed_s"]
    # Without --keep-files the server removed what it wrote.
    assert list(sdir.iterdir()) == []


@pytest.mark.parametrize("pattern", ["seq", "rand"])
def test_inline_asynchronous_puts_are_verified_end_to_end(pattern, ext4, cores, validate):
    """--io-threads 0 with O_DIRECT: puts are submitted with Linux AIO
    (several in flight from the client, one at the device); every block a
    get reads back is the block a put wrote, and every put answered was
    written and counted."""
    mnt, _ = ext4
    server_cpu, client_cpu = cores
    sdir = storage_dir(mnt, "async-" + pattern)
    with Group() as g:
        g.start_server(
            0,
            cpus=server_cpu,
            extra=[
                "--storage-dir",
                str(sdir),
                "--io-mode",
                "direct+dsync",
                "--io-threads",
                "0",
                "--io-async",
                "--file-size",
                "4MiB",
            ],
        )
        put = validate(
            g.load(
                op="put",
                duration=0.4,
                warmup=0.1,
                cpus=client_cpu,
                extra=["--size", "128KiB", "--verify", "--concurrency", "4", "--pattern", pattern],
            )
        )
        get = validate(
            g.load(
                op="get",
                duration=0.3,
                warmup=0.05,
                cpus=client_cpu,
                extra=["--size", "128KiB", "--verify", "--concurrency", "2", "--pattern", pattern],
            )
        )
        server = validate(g.close()[0])
    res, st = server["result"], server["result"]["storage"]
    assert server["errors"] == [] and "Linux AIO" in res["io_threads_why"], res["io_threads_why"]
    for doc in (put, get):
        assert doc["complete"] and doc["errors"] == [] and doc["result"]["verify"]["failures"] == 0
    assert get["result"]["verify"]["checked"] >= get["result"]["ops"] > 0
    # Every put answered was written and counted; the client counts only
    # those that completed inside its windows (not between or after them).
    counted = put["result"]["ops"] + put["result"]["warmup"]["ops"]
    assert res["requests"]["put"] == st["counts"]["puts"] >= counted > 0
    assert st["counts"]["bytes_written"] == st["counts"]["puts"] * (128 << 10)
    assert 0 < st["device_s"]["write"] < res["elapsed_s"]


def test_an_asynchronous_write_that_fails_is_answered_and_reported():
    """A full file system under --allocation wrap: the write's error comes
    back from the kernel's completion, is answered as storage_error and
    named once in the server's errors."""
    with loop_mount("ext4", 16) as (mnt, _), Group() as g:
        sdir = storage_dir(mnt, "full")
        g.start_server(
            0,
            extra=[
                "--storage-dir",
                str(sdir),
                "--io-mode",
                "direct",
                "--io-threads",
                "0",
                "--io-async",
                "--allocation",
                "wrap",
                "--file-size",
                "64MiB",
            ],
        )
        doc = g.load(op="put", duration=1.0, warmup=0.1, extra=["--size", "1MiB"], check=False)
        server = g.close()[0]
    res = server["result"]
    assert "Linux AIO" in res["io_threads_why"]
    assert res["requests"]["storage_failed"] > 0 and res["storage"]["counts"]["errors"] > 0
    assert any("put: writing" in e and "No space left on device" in e for e in server["errors"]), server["errors"]
    assert doc["result"]["status_errors"], doc["result"]


@pytest.mark.parametrize(
    "knobs,says",
    [
        (["--io-threads", "1"], "--io-threads 0 or -1"),
        (["--io-threads", "0", "--io-mode", "buffered"], "--io-async needs --io-mode with direct"),
        (["--io-threads", "0", "--io-mode", "direct", "--fsync-every", "8"], "--fsync-every 0"),
        (["--io-threads", "0", "--io-mode", "direct", "--allocation", "append"], "--allocation preallocate or wrap"),
        (["--io-threads", "0", "--no-storage"], "--io-async needs --storage-dir"),
    ],
)
def test_io_async_where_it_cannot_apply_is_refused(knobs, says, ext4, tmp_path):
    """--io-async is what runs, or an error naming why it cannot (exit 2)."""
    mnt, _ = ext4
    storage = (
        []
        if "--no-storage" in knobs
        else ["--storage-dir", str(storage_dir(mnt, f"refuse-{len(list(mnt.iterdir()))}"))]
    )
    knobs = [k for k in knobs if k != "--no-storage"]
    p = subprocess.run(
        [
            engine_path(),
            "serve",
            "--group-dir",
            str(tmp_path),
            "--rank",
            "0",
            "--io-async",
            "--file-size",
            "4MiB",
            *storage,
            *knobs,
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert p.returncode == 2 and says in p.stderr, p.stderr


def test_metadata_counts_match_the_directory(ext4, cores, validate):
    mnt, _ = ext4
    server_cpu, client_cpu = cores
    sdir = storage_dir(mnt, "meta")
    meta = sdir / "rooftop-meta.0"
    with Group() as g:
        g.start_server(
            0,
            cpus=server_cpu,
            extra=[
                "--storage-dir",
                str(sdir),
                "--meta-layout",
                "per-process",
                "--meta-files",
                "20",
                "--keep-files",
                "--file-size",
                "1MiB",
            ],
        )
        created = validate(g.load(op="create", duration=0.3, warmup=0.1, cpus=client_cpu))
        after_create = len(list(meta.iterdir()))
        listed = validate(g.load(op="readdir", duration=0.2, warmup=0.05, cpus=client_cpu))
        for op in ("stat", "open", "unlink"):
            doc = validate(g.load(op=op, duration=0.2, warmup=0.05, cpus=client_cpu))
            assert doc["complete"] and doc["errors"] == [], (op, doc["errors"])
        server = validate(g.close()[0])
    for doc in (created, listed):
        assert doc["complete"] and doc["errors"] == [] and doc["result"]["ops"] > 0
    res = server["result"]
    counts = res["storage"]["counts"]
    assert res["requests"]["meta_create"] == counts["created"] > 0
    # 20 files made before the first operation, then one per create.
    assert after_create == 20 + counts["created"]
    assert res["requests"]["meta_readdir"] == counts["readdirs"] > 0
    assert res["requests"]["meta_stat"] == counts["stats"] > 0
    assert res["requests"]["meta_open"] == counts["opens"] > 0
    assert res["requests"]["meta_unlink"] == counts["unlinked"] > 0
    # What is left is what the counts say is left.
    files = sorted(p.name for p in meta.iterdir())
    assert len(files) == counts["meta_files_now"]
    assert len(files) == 20 * (1 + counts["refills"]) + counts["created"] - counts["unlinked"]
    assert all(name.startswith("r0.") for name in files)
    assert res["storage"]["knobs"]["meta_layout"] == "per-process"


def test_local_storage_mode_on_ext4(ext4, cores, validate):
    mnt, dev = ext4
    sdir = storage_dir(mnt, "local")
    cpu = cores[1]
    common = [
        "storage",
        "--storage-dir",
        str(sdir),
        "--file-size",
        "4MiB",
        "--duration",
        "0.3",
        "--warmup",
        "0.05",
        "--size",
        "16KiB",
        "--io-mode",
        "direct+dsync",
        "--verify",
    ]
    if cpu is not None:
        common += ["--cpus", cpu]
    put = validate(run_engine(common + ["--op", "put", "--pattern", "rand"], timeout=30))
    get = validate(run_engine(common + ["--op", "get", "--fill"], timeout=30))
    for doc in (put, get):
        r = doc["result"]
        assert doc["role"] == "storage" and doc["complete"] and doc["errors"] == []
        assert r["ops"] > 0 and r["bytes"] == r["ops"] * 16384 and r["op_bytes"] == 16384
        assert r["ops_per_sec"] == pytest.approx(r["ops"] / r["elapsed_s"])
        assert r["verify"]["failures"] == 0
        assert r["storage"]["fs"]["device"] == dev and r["storage"]["o_direct_honoured"]
        # Every knob is in the config, defaults included.
        c = doc["config"]
        assert c["io_mode"] == "direct+dsync" and c["allocation"] == "preallocate"
        assert c["file_layout"] == "per-process" and c["fsync_every"] == 0 and c["buffer"] == "reuse"
    assert get["result"]["verify"]["checked"] == get["result"]["ops"] + get["result"]["warmup"]["ops"]
    assert get["result"]["storage"]["fill_s"] > 0
    assert list(sdir.iterdir()) == []
    # Metadata in-process too.
    doc = validate(
        run_engine(
            [
                "storage",
                "--storage-dir",
                str(sdir),
                "--op",
                "stat",
                "--duration",
                "0.2",
                "--warmup",
                "0.05",
                "--meta-files",
                "10",
            ],
            timeout=30,
        )
    )
    assert (
        doc["complete"]
        and doc["result"]["ops"] == doc["result"]["storage"]["counts"]["stats"] - doc["result"]["warmup"]["ops"]
    )


def test_tmpfs_refuses_o_direct_naming_the_knob_and_the_file_system(validate):
    with tmpfs_mount() as tmp, Group() as g:
        # The local mode and the server refuse it before anything runs.
        with pytest.raises(EngineError) as e:
            run_engine(["storage", "--storage-dir", str(tmp), "--op", "put", "--io-mode", "direct"], timeout=30)
        assert e.value.returncode == 2
        assert "--io-mode direct" in str(e.value) and f"tmpfs at {tmp}" in str(e.value)
        validate(e.value.doc)
        with pytest.raises(EngineError) as e:
            g.start_server(0, extra=["--storage-dir", str(tmp), "--io-mode", "direct+sync"])
        assert e.value.returncode == 2
        err = (g.directory / "server-0.stderr").read_text()
        assert "--io-mode direct+sync" in err and "tmpfs" in err and "O_DIRECT" in err
        assert not (g.directory / "0.addr").exists()
        # Buffered is fine there, and the document says O_DIRECT would not be honoured.
        doc = validate(
            run_engine(
                [
                    "storage",
                    "--storage-dir",
                    str(tmp),
                    "--op",
                    "put",
                    "--size",
                    "4KiB",
                    "--file-size",
                    "1MiB",
                    "--duration",
                    "0.1",
                    "--warmup",
                    "0",
                ],
                timeout=30,
            )
        )
        st = doc["result"]["storage"]
        assert st["fs"]["type"] == "tmpfs" and st["o_direct_honoured"] is False
        assert list(tmp.iterdir()) == []


def test_ext2_refuses_preallocation_naming_the_knob_and_the_file_system():
    with loop_mount("ext2", size_mib=16) as (mnt, _):
        with pytest.raises(EngineError) as e:
            run_engine(["storage", "--storage-dir", str(mnt), "--op", "put", "--file-size", "1MiB"], timeout=30)
        assert e.value.returncode == 2
        assert "--allocation preallocate" in str(e.value) and f"ext2 at {mnt}" in str(e.value)
        assert "fallocate" in str(e.value)
        # append and wrap allocate as they write: accepted.
        for alloc in ("append", "wrap"):
            doc = run_engine(
                [
                    "storage",
                    "--storage-dir",
                    str(mnt),
                    "--op",
                    "put",
                    "--size",
                    "4KiB",
                    "--file-size",
                    "1MiB",
                    "--allocation",
                    alloc,
                    "--duration",
                    "0.1",
                    "--warmup",
                    "0",
                ],
                timeout=30,
            )
            assert doc["complete"] and doc["result"]["storage"]["knobs"]["allocation"] == alloc


def test_storage_operations_without_storage_dir_are_refused(cores, validate):
    server_cpu, client_cpu = cores
    with Group() as g:
        g.start_server(0, cpus=server_cpu)
        doc = validate(g.load(op="stat", duration=0.2, warmup=0.05, cpus=client_cpu, check=False))
        server = validate(g.close()[0])
    assert not doc["complete"] and any("storage_error" in e for e in doc["errors"])
    assert server["result"]["storage"] is None
    assert server["result"]["requests"]["storage_failed"] > 0
    assert any("no --storage-dir" in e for e in server["errors"])


def test_engine_lists_the_storage_command():
    out = subprocess.run([engine_path(), "--help"], capture_output=True, text=True).stdout
    assert "  storage " in out
    help_ = subprocess.run([engine_path(), "storage", "--help"], capture_output=True, text=True).stdout
    for opt in (
        "--storage-dir",
        "--io-mode",
        "--fsync-every",
        "--allocation",
        "--file-layout",
        "--file-size",
        "--fill",
        "--meta-layout",
        "--meta-files",
        "--pattern",
        "--size",
        "--verify",
    ):
        assert f"  {opt} " in help_, opt
    assert "  --op put|get|create|stat|open|unlink|readdir" in help_
