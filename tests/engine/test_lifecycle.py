"""Readiness, signals, shutdown tokens: orderly ends and partial results."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest

from rooftop.engine.base import TOKEN_ENV, EngineError, engine_path, write_token
from rooftop.engine.commands import run_engine
from rooftop.engine.servers import Group


def test_client_sigterm_writes_partial_result(tmp_path, cores, validate):
    server_cpu, client_cpu = cores
    with Group() as g:
        g.start_server(0, cpus=server_cpu)
        out = tmp_path / "client.json"
        args = [
            engine_path(),
            "load",
            "--group-dir",
            str(g.directory),
            "--duration",
            "60",
            "--warmup",
            "0.2",
            "--output",
            str(out),
        ]
        if client_cpu:
            args += ["--cpus", client_cpu]
        p = subprocess.Popen(args, stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=10)
    assert rc == 128 + signal.SIGTERM
    doc = validate(json.loads(out.read_text()))
    assert doc["complete"] is False
    assert doc["result"]["ops"] > 0 and doc["result"]["elapsed_s"] > 0
    assert "SIGTERM" in doc["result"]["end"]


def test_server_sigint_is_orderly(cores, validate):
    with Group() as g:
        s = g.start_server(0, cpus=cores[0])
        addr = g.directory / "0.addr"
        assert addr.exists()
        s.proc.send_signal(signal.SIGINT)
        assert s.proc.wait(timeout=10) == 0
        doc = validate(s.stop())
        assert doc["complete"] and doc["result"]["stop_reason"] == "signal SIGINT"
        assert not addr.exists()  # address withdrawn
        assert not list(g.directory.glob(".*tmp*"))  # no temp files left


def test_address_file_is_complete_when_it_appears(cores):
    with Group() as g:
        s = g.start_server(0, cpus=cores[0], wait=False)
        addr = g.directory / "0.addr"
        deadline = time.monotonic() + 10
        while not addr.exists():
            assert time.monotonic() < deadline
            time.sleep(0.001)
        text = addr.read_text()
        assert "version=1" in text and "addr=" in text and "pid=" in text
        assert f"pid={s.proc.pid}" in text
        # As soon as the file exists, the server answers.
        doc = run_engine(["ping", "--group-dir", str(g.directory), "--count", "2"], timeout=15)
        assert doc["complete"] and doc["result"]["rtt_min_us"] > 0


def test_shutdown_needs_the_token(cores, tmp_path):
    with Group() as g:
        s = g.start_server(0, cpus=cores[0])
        wrong = write_token(tmp_path, "wrong")
        with pytest.raises(EngineError) as e:
            run_engine(["shutdown", "--group-dir", str(g.directory), "--token-file", str(wrong)], timeout=15)
        assert e.value.returncode == 1 and "wrong token" in str(e.value)
        assert s.alive()
        doc = run_engine(["shutdown", "--group-dir", str(g.directory), "--token-file", str(g.token_file)], timeout=15)
        assert doc["result"]["status"] == "ok"
        assert g.token not in json.dumps(doc) and doc["config"]["token"] == "<set>"
        assert s.proc.wait(timeout=10) == 0
        sdoc = s.stop()
        assert sdoc["result"]["stop_reason"] == "shutdown rpc"
        assert sdoc["result"]["requests"]["shutdown_denied"] == 1


def test_server_without_token_refuses_shutdown(tmp_path):
    p = subprocess.Popen([engine_path(), "serve", "--group-dir", str(tmp_path), "--output", str(tmp_path / "s.json")])
    try:
        deadline = time.monotonic() + 10
        while not (tmp_path / "0.addr").exists():
            assert time.monotonic() < deadline
            time.sleep(0.01)
        with pytest.raises(EngineError) as e:
            run_engine(["shutdown", "--group-dir", str(tmp_path)], timeout=15, env={TOKEN_ENV: "a guess"})
        assert e.value.returncode == 1
        assert p.poll() is None
    finally:
        p.terminate()
        p.wait(timeout=10)


def test_rank_from_launcher_environment(tmp_path):
    """Under mpiexec/srun one command line starts many ranks."""
    env = dict(os.environ, PMI_RANK="3")
    for var in ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID"):
        env.pop(var, None)
    p = subprocess.Popen(
        [
            engine_path(),
            "serve",
            "--group-dir",
            str(tmp_path),
            "--rank",
            "10",
            "--rank-from-env",
            "--output",
            str(tmp_path / "s-{rank}.json"),
        ],
        env={**env, TOKEN_ENV: "t"},
    )
    try:
        deadline = time.monotonic() + 10
        while not (tmp_path / "13.addr").exists():
            assert time.monotonic() < deadline and p.poll() is None
            time.sleep(0.01)
        run_engine(["shutdown", "--group-dir", str(tmp_path), "--rank", "13"], timeout=15, env={TOKEN_ENV: "t"})
        assert p.wait(timeout=10) == 0
    finally:
        if p.poll() is None:
            p.kill()
    doc = json.loads((tmp_path / "s-13.json").read_text())
    assert doc["config"]["rank"] == 13 and doc["config"]["rank_from_env"] is True
    # Without a launcher the option is a clear usage error.
    env.pop("PMI_RANK")
    q = subprocess.run(
        [engine_path(), "serve", "--group-dir", str(tmp_path), "--rank-from-env"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert q.returncode == 2 and "PMI_RANK" in q.stderr
