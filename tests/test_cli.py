"""The rooftop command line."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

import rooftop


def rooftop_cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "rooftop", *args], capture_output=True, text=True, timeout=timeout)


def test_version():
    """rooftop's, the engine's and libfabric's versions, and the git revision
    of the checkout the tests run from (what every run records too)."""
    from rooftop import session

    p = rooftop_cli("--version")
    v = session.versions()
    assert p.returncode == 0 and v["engine"] and v["libfabric"], p.stderr
    assert p.stdout.strip() == f"rooftop {rooftop.__version__} (engine {v['engine']}, libfabric {v['libfabric']}" + (
        f", git {v['git']})" if v["git"] else ")"
    )
    assert v["engine"] == rooftop.__version__  # one version: the engine's CMake reads __version__


def test_a_run_records_the_versions():
    from rooftop import session
    from rooftop.config.files import defaults

    env = session.environment(dict(defaults(), nodes=[]))
    v = session.versions()
    assert (env["rooftop"], env["engine_version"], env["libfabric"], env["git"]) == (
        v["rooftop"],
        v["engine"],
        v["libfabric"],
        v["git"],
    )
    assert env["engine"].startswith("rooftop-engine ")  # the engine's own line, as runs always recorded it


def test_quiet_leaves_only_the_result(tmp_path):
    """--quiet, before or after the command: stdout as without it, nothing on
    stderr; an error is still shown, and so is what a failing command said."""
    plan = ("collect", "--dry-run", "--results", str(tmp_path))
    loud = rooftop_cli(*plan)
    assert loud.returncode == 0 and loud.stderr.strip()  # a note on how it splits this machine
    for args in ((*plan, "--quiet"), ("-q", *plan)):
        p = rooftop_cli(*args)
        assert (p.returncode, p.stdout, p.stderr) == (0, loud.stdout, ""), args
    p = rooftop_cli("config", "show", "--quiet", "--set", "collect.samples=3")  # an error (exception)
    assert p.returncode == 2 and "collect.samples: unknown key" in p.stderr
    p = rooftop_cli("export", "x", "--json", "--format", "csv", "-q", "--results", str(tmp_path))  # said, then rc 2
    assert p.returncode == 2 and "--json is --format json" in p.stderr


def test_engine_passthrough():
    p = rooftop_cli("engine", "version")
    assert p.returncode == 0 and p.stdout.startswith("rooftop-engine ")
    p = rooftop_cli("engine", "load", "--help")
    assert p.returncode == 0 and "--concurrency" in p.stdout
    # Options straight after 'engine' are the engine's too (issue 13: rc 2 before).
    p = rooftop_cli("engine", "--help")
    assert p.returncode == 0 and p.stdout.startswith("usage: rooftop-engine COMMAND"), p.stderr


#: Libraries a command loads only when it draws, renders or learns: every
#: `rooftop` invocation (a campaign's too) would otherwise wait for them
#: (matplotlib and numpy were ~0.5 s of each command's start).
HEAVY = ("matplotlib", "numpy", "jinja2", "sklearn", "scipy")


def test_the_front_door_loads_no_plotting_or_learning_library():
    code = (
        "import sys; from rooftop.cli import build_parser; build_parser(); "
        "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    loaded = set(p.stdout.split())
    assert "rooftop" in loaded and not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_help_lists_each_command_once_by_group():
    p = rooftop_cli("--help")
    assert p.returncode == 0 and "examples:" in p.stdout and "exit status:" in p.stdout
    import re

    from rooftop.cli import build_parser
    from rooftop.cli.main import COMMANDS

    head = p.stdout.split("options:")[0]
    listed = re.findall(r"^  ([a-z]+)  ", head, re.M)
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert sorted(listed) == sorted(sub.choices), listed  # each command once, none missing
    groups = re.findall(r"^([a-z ]+):$", head, re.M)
    assert groups == list(dict.fromkeys(g for g, _ in COMMANDS)) == ["measure", "read results", "studies", "tools"]
    for cmd in sorted(set(sub.choices) - {"engine"}):
        h = rooftop_cli(cmd, "--help")
        assert h.returncode == 0 and len(h.stdout) > 200 and h.stdout.startswith(f"usage: rooftop {cmd} "), cmd


def test_probe_end_to_end(tmp_path):
    p = rooftop_cli("probe", "--fabric", "ofi+tcp", "--compare", "", "--duration", "0.5", "--results", str(tmp_path))
    assert p.returncode == 0, p.stderr
    # (the scale follows the value: a loaded machine reads MiB/s where a quiet one reads GiB/s)
    assert "ops/s" in p.stdout and re.search(r"\d [KMGT]iB/s", p.stdout), p.stdout
    (folder,) = list(tmp_path.glob("probe-*"))
    summary = json.loads((folder / "summary.json").read_text())
    rows = {r["test"]: r for r in summary["rows"]}
    assert rows["noop RPC"]["ops_per_sec"] > 0
    assert rows["4 MiB read"]["bytes_per_sec"] > 0
    assert (folder / "ofi_tcp-noop-client.json").exists()
    assert (folder / "ofi_tcp-read-server.json").exists()


def test_probe_repeats_and_reports_median_and_spread(tmp_path):
    p = rooftop_cli(
        "probe",
        "--fabric",
        "ofi+tcp",
        "--compare",
        "",
        "--duration",
        "0.3",
        "--repeats",
        "2",
        "--results",
        str(tmp_path),
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("median of 2 (") == 2 and "spread" in p.stdout
    (folder,) = list(tmp_path.glob("probe-*"))
    rows = {r["test"]: r for r in json.loads((folder / "summary.json").read_text())["rows"]}
    rpc = rows["noop RPC"]
    assert len(rpc["runs"]) == 2 and min(rpc["runs"]) <= rpc["ops_per_sec"] <= max(rpc["runs"])
    assert rpc["spread"] == pytest.approx((max(rpc["runs"]) - min(rpc["runs"])) / rpc["ops_per_sec"])
    assert (folder / "ofi_tcp-noop-client.json").exists() and (folder / "ofi_tcp-noop-client-2.json").exists()


def test_probe_warns_when_runs_disagree(tmp_path, monkeypatch):
    """19 K then 54 K ops/s in consecutive runs (issue 13) must not pass silently."""
    from rooftop import probe

    rates = iter([19e3, 54e3, 50e3, 1e9, 1.01e9, 0.99e9])

    def once(fabric, op, extra, duration, cpus, out_dir, lease):
        v = next(rates)
        return (
            {
                "engine": {"provider": "tcp"},
                "result": {
                    "ops_per_sec": v,
                    "bytes_per_sec": v,
                    "cpu": {"utilization": 1.0},
                    "latency_us": {"p50": 1e6 / v, "p99": 2e6 / v},
                },
            },
            None,
        )

    monkeypatch.setattr(probe, "_once", once)
    said = []
    summary = probe.run(["ofi+tcp"], 0.1, tmp_path, say=lambda *a, **k: said.append(" ".join(a)))
    rpc, bw = summary["rows"]
    assert rpc["ops_per_sec"] == 50e3 and rpc["disagree"] and rpc["spread"] == pytest.approx(0.7)
    assert not bw["disagree"]
    warnings = [s for s in said if "warning" in s]
    assert len(warnings) == 1 and "noop RPC" in warnings[0] and "disagree by 70 %" in warnings[0]
    assert any("median of 3 (19.0–54.0 K ops/s, spread 70 %)" in s for s in said)


def test_probe_bad_fabric_fails_clearly(tmp_path):
    p = rooftop_cli("probe", "--fabric", "ofi+bogus", "--compare", "", "--duration", "0.2", "--results", str(tmp_path))
    assert p.returncode == 1
    assert "unknown or unavailable provider" in p.stdout


def _commands():
    from rooftop.cli import build_parser

    return next(a for a in build_parser()._actions if a.dest == "command").choices


def test_campaign_commands_keep_their_flags():
    # Flags that set config keys come from the key table; the names stay
    # what README, docs and scripts use.
    expected = {
        "collect": {
            "--allow-concurrent",
            "--binding",
            "--config",
            "--dry-run",
            "--duration",
            "--fabric",
            "--fail-fast",
            "--help",
            "--json",
            "--launcher",
            "--metrics",
            "--nic-policy",
            "--nodes",
            "--pairs",
            "--results",
            "--resume",
            "--series",
            "--windows",
            "--set",
            "--sweep-servers",
            "--verbose",
            "--wait-lock",
            "--warmup",
            "-h",
            "-v",
        },
        "validate": {
            "--allow-concurrent",
            "--client-nodes",
            "--clients-per-node",
            "--dry-run",
            "--duration",
            "--fail-fast",
            "--help",
            "--json",
            "--nic-policy",
            "--results",
            "--windows",
            "--series",
            "--server-nodes",
            "--servers-per-node",
            "--set",
            "--verbose",
            "--wait-lock",
            "--warmup",
            "-h",
            "-v",
        },
        "tune": {
            "--allow-concurrent",
            "--binding",
            "--budget",
            "--config",
            "--duration",
            "--fabric",
            "--help",
            "--init",
            "--json",
            "--launcher",
            "--metrics",
            "--model",
            "--nic-policy",
            "--nodes",
            "--repeats",
            "--results",
            "--seed",
            "--set",
            "--space",
            "--verbose",
            "--wait-lock",
            "--warmup",
            "-h",
            "-v",
        },
        "config": {
            "--binding",
            "--config",
            "--fabric",
            "--help",
            "--json",
            "--launcher",
            "--metrics",
            "--nic-policy",
            "--nodes",
            "--results",
            "--set",
            "-h",
        },
        "audit": {
            "--config",
            "--set",
            "--duration",
            "--fabric",
            "--help",
            "--json",
            "--lease",
            "--only",
            "--repeats",
            "--results",
            "--storage-dir",
            "--wait-lock",
            "--warmup",
            "-h",
        },
        "bursts": {
            "--allow-concurrent",
            "--binding",
            "--bursts",
            "--clients",
            "--config",
            "--fabric",
            "--full-rate",
            "--help",
            "--interval",
            "--json",
            "--launcher",
            "--metrics",
            "--neighbour",
            "--neighbour-timeout",
            "--nic-policy",
            "--nodes",
            "--off",
            "--on",
            "--progress",
            "--results",
            "--set",
            "--stencil-iterations",
            "--stencil-size",
            "--verbose",
            "--wait-lock",
            "-h",
            "-v",
        },
        "interfere": {
            "--allow-concurrent",
            "--binding",
            "--bursts-run",
            "--config",
            "--dry-run",
            "--duration",
            "--ensemble",
            "--fabric",
            "--fail-fast",
            "--grace",
            "--help",
            "--json",
            "--launcher",
            "--load-node-count",
            "--load-nodes",
            "--load-set",
            "--load-warmup",
            "--loads",
            "--metrics",
            "--nic-policy",
            "--nodes",
            "--placement",
            "--results",
            "--windows",
            "--seed",
            "--series",
            "--set",
            "--stages",
            "--verbose",
            "--wait-lock",
            "--warmup",
            "-h",
            "-v",
        },
        "model": {"--help", "--json", "--mix", "--params", "--results", "-h"},
        "report": {
            "--config",
            "--help",
            "--json",
            "--k",
            "--last",
            "--mix",
            "--nic-runs",
            "--out-dir",
            "--results",
            "--set",
            "--threshold",
            "-h",
        },
    }
    commands = _commands()
    for name, flags in expected.items():
        shown = {o for a in commands[name]._actions for o in a.option_strings}
        assert shown == flags | {"-q", "--quiet"}, name  # --quiet: every command's (cli.common.CommandParser)


def test_key_flags_become_config_overrides():
    from rooftop.cli import build_parser
    from rooftop.cli.common import key_values
    from rooftop.session import overrides

    p = build_parser()
    args = p.parse_args(
        [
            "collect",
            "--set",
            "launcher.type=mpiexec",
            "--set",
            "collect.windows=9",
            "--launcher",
            "srun",
            "--nodes",
            "3",
            "--metrics",
            "rpc",
            "--fabric",
            "ofi+shm",
            "--binding",
            "none",
            "--results",
            "R",
            "--duration",
            "2",
            "--warmup",
            "0.5",
            "--windows",
            "4",
            "--fail-fast",
            "--pairs",
            "rounds",
            "--sweep-servers",
        ]
    )
    assert overrides(args) == {
        "launcher.type": "srun",
        "launcher.nodes": 3,
        "metrics": ["rpc"],
        "fabric.provider": "ofi+shm",
        "binding": "none",
        "results": "R",
        "collect.duration": 2.0,
        "collect.warmup": 0.5,
        "collect.windows": 4,
        "fail_fast": True,
        "collect.pairs": "rounds",
        "collect.sweep_servers": True,
    }
    assert overrides(p.parse_args(["collect"])) == {}
    args = p.parse_args(
        [
            "validate",
            "r",
            "--server-nodes",
            "1,2",
            "--client-nodes",
            "1",
            "--servers-per-node",
            "2",
            "--clients-per-node",
            "3",
            "--duration",
            "1",
            "--windows",
            "2",
        ]
    )
    assert key_values(args) == {
        "validate.server_nodes": [1, 2],
        "validate.client_nodes": [1],
        "validate.servers_per_node": 2,
        "validate.clients_per_node": 3,
        "validate.duration": 1.0,
        "validate.windows": 2,
    }
    assert args.results is None  # validate's --results is where the run is, not a config key
    # One spelling per flag: an abbreviation is refused, not taken for the flag it begins.
    for abbreviated in (["validate", "r", "--dur", "1"], ["--vers"]):
        with pytest.raises(SystemExit) as e:
            p.parse_args(abbreviated)
        assert e.value.code == 2, abbreviated


def test_key_flag_errors_are_usage_errors():
    p = rooftop_cli("validate", "r", "--server-nodes", "1,x")
    assert p.returncode == 2 and "--server-nodes: comma-separated integers, not '1,x'" in p.stderr
    p = rooftop_cli("collect", "--launcher", "pbs")
    assert p.returncode == 2 and "invalid choice: 'pbs'" in p.stderr


def test_tables_to_a_pipe_or_a_narrow_terminal_cut_no_number(tmp_path):
    """Issue 13: '58.2 K ops…' in a log. To a pipe the table widens until
    its unwrappable columns fit; in a narrow terminal cells wrap instead."""
    import io
    from pathlib import Path

    from rich.console import Console
    from rich.table import Table

    from rooftop import model, ui

    cells = [
        "client node (per client process, node full) *",
        "rpc",
        "3",
        "108.8 K ops/s",
        "117.2 K ops/s",
        "126.8 K ops/s",
    ]
    for terminal, width in ((False, 110), (True, 70)):
        t = Table()
        for i, c in enumerate(("stage", "metric", "samples", "min", "median", "max")):
            t.add_column(c, no_wrap=True, justify="right" if i > 1 else "left")
        for _ in range(3):
            t.add_row(*cells)
        out = Console(file=io.StringIO(), width=width, force_terminal=terminal, color_system=None)
        ui.print_table(out, t)
        text = out.file.getvalue()
        assert "…" not in text, text
        flat = " ".join(text.replace("│", " ").split())
        for number in ("108.8", "117.2", "126.8"):
            assert flat.count(number) == 3, (terminal, text)
        if not terminal:
            assert all(c in text for c in cells), text  # whole, on one line
    # End to end, stdout and stderr pipes: every ceiling of every system whole.
    examples = sorted(str(p) for p in (Path(__file__).parent.parent / "examples").glob("*-table2.json"))
    p = rooftop_cli("compare", *examples, "--out-dir", str(tmp_path))
    assert p.returncode == 0 and "…" not in p.stdout
    for f in examples:  # the table is the output: on stdout
        for r in model.load_params(f).values():
            assert ui.fmt_range(r.server.lo, r.server.hi, r.unit) in p.stdout
    p = rooftop_cli("model", "--params", examples[0])
    assert p.returncode == 0 and "…" not in p.stdout and "20.2–20.5 GiB/s" in p.stdout


def test_runs_lists_on_stdout_and_a_missing_folder_is_an_error(tmp_path):
    import shutil
    from pathlib import Path

    res = tmp_path / "r"
    shutil.copytree(Path(__file__).parent / "data" / "learn-cluster", res)
    p = rooftop_cli("runs", "--results", str(res))
    assert p.returncode == 0 and p.stdout.count("complete") >= 1, p.stderr  # 'rooftop runs > f' keeps the table
    missing = tmp_path / "nowhere"
    p = rooftop_cli("runs", "--results", str(missing))
    assert p.returncode == 2 and f"no results folder {missing}" in p.stderr and not missing.exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    p = rooftop_cli("runs", "--results", str(empty))
    assert p.returncode == 0 and "no runs" in p.stdout and not (empty / "rooftop.db").exists()


#: (an old spelling, the same in the new one): each renamed before the first release (0.1.0), so
#: the old one is refused as any flag the command does not have (not taken for a flag it begins).
RENAMED = [
    (["validate", "--run", "R"], ["validate", "R"]),
    (["service", "s.toml", "--run", "R"], ["service", "R", "s.toml"]),
    (["service", "--import", "p.csv", "--run=R"], ["service", "R", "--import", "p.csv"]),
    (["tune", "--run", "R"], ["tune", "R"]),
    (["collect", "--sample", "cpu"], ["collect", "--series", "cpu"]),
    (["validate", "R", "--sample", "cpu"], ["validate", "R", "--series", "cpu"]),
    (["interfere", "--sample", "cpu"], ["interfere", "--series", "cpu"]),
    (["collect", "--samples", "3"], ["collect", "--windows", "3"]),
    (["validate", "R", "--samples", "3"], ["validate", "R", "--windows", "3"]),
    (["interfere", "--samples", "3"], ["interfere", "--windows", "3"]),
    (["probe", "--repeat", "2"], ["probe", "--repeats", "2"]),
    (["tune", "--repeat", "2"], ["tune", "--repeats", "2"]),
    (["tune", "--metric", "bw"], ["tune", "--metrics", "bw"]),
    (["bursts", "--metric", "bw"], ["bursts", "--metrics", "bw"]),
    (["learn", "R", "--target", "bw"], ["learn", "R", "--metrics", "bw"]),
    (
        ["predict", "R", "--servers", "1", "--clients", "2", "--metric", "bw"],
        ["predict", "R", "--servers", "1", "--clients", "2", "--metrics", "bw"],
    ),
    (["size", "f.json", "--clients", "2", "--metric", "bw"], ["size", "f.json", "--clients", "2", "--metrics", "bw"]),
    (["service", "R", "--import", "p.csv", "--metric", "bw"], ["service", "R", "--import", "p.csv", "--metrics", "bw"]),
    (["plot", "R", "--output", "d"], ["plot", "R", "--out-dir", "d"]),
    (["report", "R", "--output", "d"], ["report", "R", "--out-dir", "d"]),
    (["compare", "R", "--output", "d"], ["compare", "R", "--out-dir", "d"]),
    (["interfere", "--bursts", "R"], ["interfere", "--bursts-run", "R"]),
    (["export", "R", "--nodes"], ["export", "R", "--sample-nodes"]),
    (["history", "--plot", "d"], ["history", "--out-dir", "d"]),
]


@pytest.mark.parametrize("old,new", RENAMED, ids=[" ".join(o) for o, _ in RENAMED])
def test_an_old_spelling_is_refused_as_an_unknown_flag(old, new, capsys):
    from rooftop.cli import build_parser

    p = build_parser()
    p.parse_args(new)  # the new spelling parses
    assert capsys.readouterr().err == ""
    with pytest.raises(SystemExit) as e:
        p.parse_args(old)
    err = capsys.readouterr().err
    flag = next(a for a in old if a.startswith("--") and a.split("=")[0] not in new).split("=")[0]
    refused = f"unrecognized arguments: {flag}" in err or "the following arguments are required: RUN" in err
    assert e.value.code == 2 and refused, err  # --run=R alone leaves RUN missing
    assert "deprecated" not in err


def test_one_grammar_across_commands():
    """RUN is positional, every command that prints a result has --json,
    and a flag has one meaning wherever it appears."""
    commands = dict(_commands())
    cluster = next(a for a in commands.pop("cluster")._actions if a.dest == "action").choices
    commands.update({f"cluster {k}": v for k, v in cluster.items()})
    shown = {name: {o for a in sp._actions for o in a.option_strings} for name, sp in commands.items()}
    for name, flags in shown.items():
        assert "--json" in flags or name == "engine", f"{name}: no --json"
        assert not flags & {"--run", "--metric", "--repeat", "--sample"}, name  # RUN; --metrics, --repeats, --series
        assert ("-o" in flags) == ("--output" in flags) == (name == "export"), name  # a file; a folder is --out-dir
        assert ("--bursts" in flags) == (name == "bursts"), name  # a count; a bursts run is --bursts-run
        assert "--target" not in flags or name == "size", name  # a rate there; learn's metrics are --metrics
    for name, sp in commands.items():  # --nodes N is a count wherever it appears; no --plot DIR (--out-dir)
        nodes = [a for a in sp._actions if "--nodes" in a.option_strings]
        assert all(a.type is int for a in nodes), name
        assert "--plot" not in shown[name], name
    positional = {
        name for name, sp in commands.items() if any(a.metavar == "RUN" and not a.option_strings for a in sp._actions)
    }
    assert positional == {
        "validate",
        "service",
        "tune",
        "export",
        "model",
        "plot",
        "report",
        "learn",
        "predict",
        "check",
    }


def test_latest_is_the_newest_run_and_none_is_a_clear_error(tmp_path, capsys):
    import shutil
    from pathlib import Path

    from rooftop.cli import main
    from rooftop.store.db import Store

    res = tmp_path / "r"
    shutil.copytree(Path(__file__).parent / "data" / "learn-cluster", res)
    assert main(["runs", "--results", str(res), "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)
    newest = max(runs, key=lambda r: r["created"])["id"]
    assert len(runs) > 1 and newest == runs[-1]["id"]
    assert main(["export", "latest", "--json", "--results", str(res)]) == 0
    assert json.loads(capsys.readouterr().out)["run"] == newest
    assert main(["model", "latest", "--json", "--results", str(res)]) == 0
    assert json.loads(capsys.readouterr().out)["run"] == newest
    Store(tmp_path / "empty")  # a results folder without a run
    assert main(["report", "latest", "--results", str(tmp_path / "empty")]) == 2
    assert f"'latest': no run in {tmp_path / 'empty'} yet" in capsys.readouterr().err
    # The commands that gained --json print JSON with it, and nothing else on stdout.
    assert main(["doctor", "--results", str(res), "--json"]) == 1  # the fixture has no run folders
    doc = json.loads(capsys.readouterr().out)
    assert any(newest in p for p in doc["problems"]) and "--rebuild" in doc["advice"]
    assert main(["config", "keys", "--json"]) == 0
    keys = {k["key"]: k for k in json.loads(capsys.readouterr().out)}
    assert keys["collect.windows"]["default"] == 5 and keys["tune.run"]["only"] == "rooftop tune"
    assert main(["export", "latest", "--json", "--format", "csv", "--results", str(res)]) == 2
    assert "--json is --format json" in capsys.readouterr().err


def test_the_exit_codes_of_real_commands(tmp_path):
    import os
    import signal
    import time

    from rooftop import exits

    # 2: a bad flag; a bad config file (named, with its key)
    p = rooftop_cli("collect", "--bogus")
    assert p.returncode == exits.USAGE and "unrecognized arguments: --bogus" in p.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text("[collect]\nwindows = 'many'\n")
    p = rooftop_cli("collect", "--config", str(bad), "--results", str(tmp_path / "r"))
    assert p.returncode == exits.USAGE and "collect.windows" in p.stderr
    # 1: a result that failed (doctor finds runs whose folders are gone)
    import shutil
    from pathlib import Path

    shutil.copytree(Path(__file__).parent / "data" / "learn-cluster", tmp_path / "lc")
    p = rooftop_cli("doctor", "--results", str(tmp_path / "lc"))
    assert p.returncode == exits.FAILED and "problem: run " in p.stdout
    # 3: no emulated cluster to reach
    env = dict(os.environ, ROOFTOP_CLUSTER_STATE=str(tmp_path / "no-cluster.json"))
    p = subprocess.run(
        [sys.executable, "-m", "rooftop", "collect", "--launcher", "netns", "--results", str(tmp_path / "n")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert p.returncode == exits.UNREACHABLE and "no emulated cluster is up" in p.stderr, p.stderr
    assert not (tmp_path / "n").exists()
    # 4: check cannot tell (the only other run is on another fabric: nothing comparable)
    import synthetic

    cfg = synthetic.config_for(2)
    _, one = synthetic.scaled_run(tmp_path / "h", created="2025-03-01T06:00:00", cfg=cfg)
    cfg["fabric"]["provider"] = "ofi+shm"
    _, two = synthetic.scaled_run(tmp_path / "h", created="2025-03-02T06:00:00", cfg=cfg)
    p = rooftop_cli("check", two, "--against", one, "--results", str(tmp_path / "h" / "res"))
    assert p.returncode == exits.CANNOT_TELL and "could not tell: " in p.stderr and "fabric.provider" in p.stderr
    # 130: Ctrl-C of a real collect, once its first round started
    res = tmp_path / "c"
    args = ["collect", "--metrics", "rpc", "--duration", "0.3", "--warmup", "0.1", "--windows", "40"]
    c = subprocess.Popen(
        [sys.executable, "-m", "rooftop", *args, "--results", str(res)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not list(res.glob("*/raw/*/launch-0.log")):
            assert time.monotonic() < deadline and c.poll() is None, c.communicate(timeout=10)
            time.sleep(0.05)
        c.send_signal(signal.SIGINT)
        _, err = c.communicate(timeout=60)
    finally:
        if c.poll() is None:
            c.kill()
            c.communicate(timeout=10)
    assert c.returncode == exits.INTERRUPTED, err
    assert "rooftop collect --resume" in err


def test_the_exit_codes_are_documented_as_declared():
    from pathlib import Path

    from rooftop.exits import CODES

    page = (Path(__file__).parent.parent / "docs" / "cli.md").read_text()
    rows = [line.split("|")[1].strip() for line in page.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert rows == [str(code) for code, _ in CODES]
    help_text = rooftop_cli("--help").stdout.split("exit status:")[1]
    for code, _ in CODES:
        assert f"\n  {code} " in help_text


def test_a_reader_that_leaves_early_gets_no_traceback():
    """`rooftop config keys | head -1`: the reader closes the pipe; rooftop
    stops writing, prints no traceback and exits 141 (128 + SIGPIPE, as a
    shell reports a Unix tool that signal ends)."""
    import os
    import subprocess
    import sys

    from rooftop import exits

    r, w = os.pipe()
    os.close(r)  # the reader is gone before the first line
    try:
        p = subprocess.run(
            [sys.executable, "-m", "rooftop", "config", "keys"],
            stdout=w,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(w)
    assert p.returncode == exits.PIPE_CLOSED, p.stderr
    assert "Traceback" not in p.stderr and "Exception ignored" not in p.stderr
