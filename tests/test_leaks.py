"""The fixture that fails a test leaving a process running (tests/leaks.py,
issue 42), on an inner pytest session: the leaking test fails naming the
process, which is killed; processes of a wider-scoped fixture, of a
function fixture that stops them, and one exiting on its own are not
flagged."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from leaks import stat_of

INNER = """
import subprocess

import pytest

SLEEP = ["sleep", "61.5"]


@pytest.fixture(scope="module")
def daemon():
    p = subprocess.Popen(["sleep", "62.5"])
    yield p
    p.kill()
    p.wait()


@pytest.fixture
def server():
    p = subprocess.Popen(["sleep", "63.5"])
    yield p
    p.kill()
    p.wait()


def test_leaks():
    subprocess.Popen(SLEEP, start_new_session=True)


def test_uses_the_module_daemon(daemon):
    assert daemon.poll() is None


def test_uses_a_function_server(server):
    assert server.poll() is None


def test_a_process_that_is_exiting():
    subprocess.Popen(["sleep", "0.2"])
"""


def test_a_leaked_process_fails_its_test_named_and_is_killed(tmp_path):
    (tmp_path / "conftest.py").write_text("from leaks import no_leaked_processes  # noqa: F401\n")
    (tmp_path / "test_inner.py").write_text(INNER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")])}
    p = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", str(tmp_path)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    out = p.stdout
    assert p.returncode == 1 and "4 passed, 1 error" in out and "ERROR test_inner.py::test_leaks - " in out, out
    m = re.search(
        r"ERROR at teardown of test_leaks _+\nthe test left 1 process\(es\) running \(killed now\): pid (\d+): sleep 61\.5\n",
        out,
    )
    assert m, out
    gone = stat_of(int(m[1]))
    assert gone is None or gone[0] in "ZX", gone  # killed (a zombie until its parent is gone)
