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


def _commands():
    from rooftop.cli import build_parser

    return next(a for a in build_parser()._actions if a.dest == "command").choices


def test_campaign_commands_keep_their_flags():
    # Flags that set config keys come from the key table; the names stay
    # what README, docs and scripts use.
    expected = {
        "collect": {"--allow-concurrent", "--binding", "--config", "--dry-run", "--duration", "--fabric",
                    "--fail-fast", "--help", "--json", "--launcher", "--metrics", "--nodes", "--pairs",
                    "--results", "--resume", "--samples", "--set", "--sweep-servers", "--verbose",
                    "--wait-lock", "--warmup", "-h", "-v"},
        "validate": {"--allow-concurrent", "--client-nodes", "--clients-per-node", "--dry-run", "--duration",
                     "--fail-fast", "--help", "--json", "--results", "--run", "--samples", "--server-nodes",
                     "--servers-per-node", "--verbose", "--wait-lock", "--warmup", "-h", "-v"},
        "config": {"--binding", "--config", "--fabric", "--help", "--launcher", "--metrics", "--nodes",
                   "--results", "--set", "-h"},
    }
    commands = _commands()
    for name, flags in expected.items():
        assert {o for a in commands[name]._actions for o in a.option_strings} == flags, name


def test_key_flags_become_config_overrides():
    from rooftop.cli import _overrides, build_parser, key_values

    p = build_parser()
    args = p.parse_args(["collect", "--set", "launcher.type=mpiexec", "--set", "collect.samples=9",
                         "--launcher", "srun", "--nodes", "3", "--metrics", "rpc", "--fabric", "ofi+shm",
                         "--binding", "none", "--results", "R", "--duration", "2", "--warmup", "0.5",
                         "--samples", "4", "--fail-fast", "--pairs", "rounds", "--sweep-servers"])
    assert _overrides(args) == {
        "launcher.type": "srun", "launcher.nodes": 3, "metrics": ["rpc"], "fabric.provider": "ofi+shm",
        "binding": "none", "results": "R", "collect.duration": 2.0, "collect.warmup": 0.5,
        "collect.samples": 4, "fail_fast": True, "collect.pairs": "rounds", "collect.sweep_servers": True}
    assert _overrides(p.parse_args(["collect"])) == {}
    # Abbreviations argparse accepts keep working (README and scripts may use them).
    args = p.parse_args(["validate", "--run", "r", "--server-n", "1,2", "--client-nodes", "1",
                         "--servers-per-node", "2", "--clients-per", "3", "--dur", "1", "--sam", "2"])
    assert key_values(args) == {"validate.server_nodes": [1, 2], "validate.client_nodes": [1],
                                "validate.servers_per_node": 2, "validate.clients_per_node": 3,
                                "validate.duration": 1.0, "validate.samples": 2}
    assert args.results is None  # validate's --results is where the run is, not a config key


def test_key_flag_errors_are_usage_errors():
    p = rooftop_cli("validate", "--run", "r", "--server-nodes", "1,x")
    assert p.returncode == 2 and "--server-nodes: comma-separated integers, not '1,x'" in p.stderr
    p = rooftop_cli("collect", "--launcher", "pbs")
    assert p.returncode == 2 and "invalid choice: 'pbs'" in p.stderr
