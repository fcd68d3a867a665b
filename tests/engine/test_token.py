"""The shutdown token is a secret: never on the command line, only from a
private file or the environment, never in a document or a message."""

from __future__ import annotations

import json
import os
import subprocess

from rooftop.engine.base import TOKEN_ENV, engine_path, write_token
from rooftop.engine.commands import run_engine
from rooftop.engine.servers import Group


def engine(*args, env=None):
    return subprocess.run(
        [engine_path(), *args], capture_output=True, text=True, timeout=30, env={**os.environ, **(env or {})}
    )


def test_token_on_the_command_line_is_refused(tmp_path):
    for form in (["--token", "s3cr3t"], ["--token=s3cr3t"]):
        for cmd in ("serve", "shutdown"):
            p = engine(cmd, "--group-dir", str(tmp_path), *form)
            assert p.returncode == 2, (cmd, form, p.stderr)
            assert "--token-file" in p.stderr and TOKEN_ENV in p.stderr, p.stderr
            assert "s3cr3t" not in p.stdout + p.stderr
    assert not list(tmp_path.glob("*.addr"))  # no server started


def test_token_file_readable_by_others_is_refused(tmp_path):
    f = tmp_path / "token"
    f.write_text("s3cr3t\n")
    f.chmod(0o644)
    for cmd in ("serve", "shutdown"):
        p = engine(cmd, "--group-dir", str(tmp_path), "--token-file", str(f))
        assert p.returncode == 2, p.stderr
        assert f"--token-file {f} has mode 0644" in p.stderr and "chmod 600" in p.stderr, p.stderr
        assert "s3cr3t" not in p.stdout + p.stderr
    assert not list(tmp_path.glob("*.addr"))


def test_shutdown_without_any_token_is_a_usage_error(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != TOKEN_ENV}
    p = subprocess.run(
        [engine_path(), "shutdown", "--group-dir", str(tmp_path), "--timeout", "1"],
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
    )
    assert p.returncode == 2 and "no token" in p.stderr and "--token-file" in p.stderr


def test_token_from_environment_stops_the_server_and_is_never_echoed(cores, validate):
    with Group() as g:
        s = g.start_server(0, cpus=cores[0])
        wrong = run_engine(
            ["shutdown", "--group-dir", str(g.directory)], timeout=15, check=False, env={TOKEN_ENV: "not-it"}
        )
        assert wrong["result"]["status"] == "denied" and s.alive()
        doc = run_engine(["shutdown", "--group-dir", str(g.directory)], timeout=15, env={TOKEN_ENV: g.token})
        assert doc["result"]["status"] == "ok" and doc["config"]["token"] == "<set>"
        assert s.proc.wait(timeout=10) == 0
        sdoc = validate(s.stop())
        validate(doc)
        text = json.dumps(sdoc) + json.dumps(doc) + json.dumps(wrong) + s.stderr()
        assert g.token not in text and "not-it" not in text
        assert sdoc["config"]["token"] == "<set>" and sdoc["config"]["token_file"] == str(g.token_file)


def test_engine_files_are_private_whatever_the_umask(tmp_path, cores):
    old = os.umask(0o022)
    try:
        with Group(directory=tmp_path / "g") as g:
            s = g.start_server(0, cpus=cores[0])
            modes = {p.name: p.stat().st_mode & 0o777 for p in g.directory.iterdir()}
            assert modes["0.addr"] == 0o600 and modes["token"] == 0o600, modes
            s.stop()
            assert (g.directory / "server-0.json").stat().st_mode & 0o777 == 0o600
        assert (tmp_path / "g").stat().st_mode & 0o777 == 0o700
    finally:
        os.umask(old)


def test_write_token_fixes_a_loose_existing_file(tmp_path):
    f = tmp_path / "token"
    f.write_text("old\n")
    f.chmod(0o644)
    assert write_token(tmp_path, "new") == f
    assert f.read_text() == "new\n" and f.stat().st_mode & 0o777 == 0o600
