"""The rooftop command line."""

from __future__ import annotations

import json
import subprocess
import sys

import rooftop


def rooftop_cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "rooftop", *args], capture_output=True,
                          text=True, timeout=timeout)


def test_version():
    p = rooftop_cli("--version")
    assert p.returncode == 0 and p.stdout.strip() == f"rooftop {rooftop.__version__}"


def test_engine_passthrough():
    p = rooftop_cli("engine", "version")
    assert p.returncode == 0 and p.stdout.startswith("rooftop-engine ")
    p = rooftop_cli("engine", "load", "--help")
    assert p.returncode == 0 and "--concurrency" in p.stdout


def test_help_teaches():
    p = rooftop_cli("--help")
    assert p.returncode == 0 and "probe" in p.stdout and "examples" in p.stdout
    # Every sub-command is listed in the epilog, and has its own --help.
    import re

    listed = set(re.findall(r"^  (\w+)\s{2,}", p.stdout.split("commands:")[1].split("examples:")[0], re.M))
    from rooftop.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert listed == set(sub.choices), set(sub.choices) ^ listed
    for cmd in sorted(set(sub.choices) - {"engine"}):
        h = rooftop_cli(cmd, "--help")
        assert h.returncode == 0 and len(h.stdout) > 200, cmd


def test_probe_end_to_end(tmp_path):
    p = rooftop_cli("probe", "--fabric", "ofi+tcp", "--duration", "0.5", "--results",
                    str(tmp_path))
    assert p.returncode == 0, p.stderr
    assert "ops/s" in p.stdout and "GiB/s" in p.stdout
    (folder,) = list(tmp_path.glob("probe-*"))
    summary = json.loads((folder / "summary.json").read_text())
    rows = {r["test"]: r for r in summary["rows"]}
    assert rows["noop RPC"]["ops_per_sec"] > 0
    assert rows["4 MiB read"]["bytes_per_sec"] > 0
    assert (folder / "ofi_tcp-noop-client.json").exists()
    assert (folder / "ofi_tcp-read-server.json").exists()


def test_probe_bad_fabric_fails_clearly(tmp_path):
    p = rooftop_cli("probe", "--fabric", "ofi+bogus", "--duration", "0.2", "--results",
                    str(tmp_path))
    assert p.returncode == 1
    assert "unknown or unavailable provider" in p.stdout
