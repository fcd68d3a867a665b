"""The start barrier: clients of a sample open their first window on one
release from the barrier server, however late one of them is ready."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from rooftop.engine.base import engine_path
from rooftop.engine.servers import Group


def _load(g: Group, rank: int, cpus, out, *extra: str) -> subprocess.Popen:
    args = [
        engine_path(),
        "load",
        "--fabric",
        g.fabric,
        "--group-dir",
        str(g.directory),
        "--op",
        "noop",
        "--duration",
        "0.4",
        "--windows",
        "2",
        "--warmup",
        "0.2",
        "--rank",
        str(rank),
        "--output",
        str(out),
        *extra,
    ]
    if cpus is not None:
        args += ["--cpus", cpus]
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def test_a_late_client_is_waited_for(cores, tmp_path, validate):
    server_cpu, client_cpu = cores
    with Group() as g:
        g.start_server(0, cpus=server_cpu)
        barrier = ["--barrier", "3", "--barrier-id", "77"]
        procs = [
            _load(g, r, client_cpu, tmp_path / f"c{r}.json", *barrier, *(["--delay-ready", "1.0"] if r == 2 else []))
            for r in range(3)
        ]
        for p in procs:
            assert p.wait(timeout=60) == 0, p.stderr.read()
        docs = [validate(json.loads((tmp_path / f"c{r}.json").read_text())) for r in range(3)]
        server = validate(g.close()[0])
    bars = [d["result"]["barrier"] for d in docs]
    assert all(b["clients"] == 3 and b["id"] == 77 and b["server_rank"] == 0 for b in bars)
    # The early clients waited for the late one, then all started together.
    assert bars[0]["wait_s"] > 0.7 and bars[1]["wait_s"] > 0.7 and bars[2]["wait_s"] < 0.5
    starts = [d["result"]["measure_start_s"] for d in docs]
    assert max(starts) - min(starts) < 0.2, starts
    assert all(abs(b["released_s"] - d["result"]["measure_start_s"]) < 0.01 for b, d in zip(bars, docs))
    # Every client warmed up, then drained before reporting ready.
    assert all(d["result"]["warmup"]["ops"] > 0 for d in docs)
    assert all(any(i["phase"] == "ready" for i in d["result"]["intervals"]) for d in docs[:2])
    # Slices add up to each window's work.
    for d in docs:
        for w in d["result"]["windows"]:
            assert len(w["slice_ops"]) == 20
            assert sum(w["slice_ops"]) == pytest.approx(w["work_ops"], rel=1e-9)
    (rel,) = server["result"]["barriers"]
    assert rel["id"] == 77 and rel["clients"] == 3 and rel["gather_s"] > 0.7
    assert server["result"]["requests"]["barrier"] == 3 and server["result"]["barriers_pending"] == 0


def test_a_client_that_never_arrives_fails_the_others_in_time(cores, tmp_path, validate):
    server_cpu, client_cpu = cores
    with Group() as g:
        g.start_server(0, cpus=server_cpu)
        t0 = time.monotonic()
        p = _load(g, 0, client_cpu, tmp_path / "c0.json", "--barrier", "2", "--barrier-timeout", "1.5")
        assert p.wait(timeout=60) == 3
        took = time.monotonic() - t0
        doc = validate(json.loads((tmp_path / "c0.json").read_text()))
    assert took < 15
    assert not doc["complete"] and doc["result"]["end"] == "barrier timeout"
    assert "did not release the 2 clients" in " ".join(doc["errors"])
    assert doc["result"]["barrier"]["ready_s"] > 0 and doc["result"]["barrier"]["released_s"] == 0


def test_clients_of_another_sample_are_refused(cores, tmp_path):
    server_cpu, client_cpu = cores
    with Group() as g:
        g.start_server(0, cpus=server_cpu)
        a = _load(
            g, 0, client_cpu, tmp_path / "a.json", "--barrier", "2", "--barrier-id", "5", "--barrier-timeout", "5"
        )
        time.sleep(0.5)
        b = _load(g, 1, client_cpu, tmp_path / "b.json", "--barrier", "3", "--barrier-id", "5")
        assert b.wait(timeout=60) == 1
        a.wait(timeout=60)
    doc = json.loads((tmp_path / "b.json").read_text())
    assert "refused this client (bad_request: it waits for 2 clients in barrier 5" in " ".join(doc["errors"])


def test_barrier_options_are_checked(tmp_path):
    for args, msg in (
        (["--barrier", "-1"], "--barrier must be"),
        (["--barrier", "2", "--measure-at", "1900000000"], "exclude each other"),
        (["--barrier-id", "x"], "--barrier-id 'x'"),
        (["--slices", "0"], "--slices must be"),
    ):
        p = subprocess.run(
            [engine_path(), "load", "--group-dir", str(tmp_path), *args], capture_output=True, text=True, timeout=30
        )
        assert p.returncode == 2 and msg in p.stderr, (args, p.stderr)


def test_settle_delays_every_first_window_alike(cores, tmp_path, validate):
    server_cpu, client_cpu = cores
    with Group() as g:
        g.start_server(0, cpus=server_cpu)
        procs = [
            _load(g, r, client_cpu, tmp_path / f"c{r}.json", "--barrier", "2", "--settle", "0.3") for r in range(2)
        ]
        for p in procs:
            assert p.wait(timeout=60) == 0, p.stderr.read()
        docs = [validate(json.loads((tmp_path / f"c{r}.json").read_text())) for r in range(2)]
    for d in docs:
        r = d["result"]
        assert r["measure_start_s"] - r["barrier"]["released_s"] == pytest.approx(0.3, abs=0.02)
    starts = [d["result"]["measure_start_s"] for d in docs]
    assert max(starts) - min(starts) < 0.2
