"""Every knob of a measuring command is a declared config key (issue 28,
item 4): its study declares it in its own folder (rooftop/bursts/keys.py,
...) and registers it in the key table, so `rooftop config keys` lists it,
`--set` and a config file set it, a bad value is an error naming it, and
the run's resolved config records it. The command's flags are KeyFlags of
the same keys; the campaign flags are declared once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rooftop import cli
from rooftop.config.catalog import STUDY_KEYS, register
from rooftop.keys import Key

SRC = str(Path(__file__).resolve().parents[1] / "src")


def rooftop(*args, check=True, timeout=120):
    env = dict(os.environ, PYTHONPATH=SRC)
    p = subprocess.run(
        [sys.executable, "-m", "rooftop", *args], capture_output=True, text=True, env=env, timeout=timeout
    )
    if check:
        assert p.returncode == 0, p.stderr
    return p


def commands() -> dict:
    return next(a for a in cli.build_parser()._actions if a.dest == "command").choices


def test_config_keys_lists_every_study_key():
    out = rooftop("config", "keys").stdout
    for keys in STUDY_KEYS.values():
        for k in keys:
            assert f"{k.path:30s} {k.kind}" in out and k.help in out, k.path
    assert f"{'bursts.interval':30s} float, default 1.0, at least 0.1 and at most 3600" in out
    assert "[rooftop bursts only]" in out
    assert f"{'interference.load_warmup':30s} float, default 3.0, at least 0" in out
    assert "[rooftop interfere only]" in out


def test_a_study_key_declared_twice_is_an_error():
    with pytest.raises(ValueError, match="bursts.on is declared twice"):
        register("bursts", [Key("bursts.on", "float", 1.0, "again")])
    with pytest.raises(ValueError, match="not under a section of their own"):
        register("engine", [Key("engine.x", "int", 1, "a common section")])


def test_campaign_flags_are_declared_once_with_one_help():
    helps: dict[str, set] = {}
    for name in ("collect", "validate", "interfere", "bursts", "tune", "audit"):
        for a in commands()[name]._actions:
            for flag in ("--json", "--verbose", "--wait-lock", "--allow-concurrent"):
                if flag in a.option_strings:
                    helps.setdefault(flag, set()).add(a.help)
    assert set(helps) == {"--json", "--verbose", "--wait-lock", "--allow-concurrent"}
    assert all(len(h) == 1 for h in helps.values()), helps


def test_bad_values_name_the_key(tmp_path):
    res = str(tmp_path / "r")
    cases = [
        (["bursts", "--interval", "0.01"], "bursts.interval: 0.01 is too small (at least 0.1)"),
        (["bursts", "--set", "bursts.bursts=zero"], "bursts.bursts: expected an integer"),
        (["bursts", "--on", "0.5", "--interval", "1"], "bursts.on (--on) 0.5: at least one bursts.interval"),
        (["bursts", "--progress", "busy,poll"], "bursts.progress (--progress): 'poll' is not a progress mode"),
        (["config", "show", "--set", "bursts.on=3"], "bursts.on: a key of 'rooftop bursts', not read"),
        (["tune", "--init", "2"], "tune.init: 2 is too small (at least 3)"),
        (["audit", "--only", "nope"], "audit.only[0]: 'nope' is not one of buffer"),
        (["audit", "--set", "collect.windows=3"], "collect.windows: not read by rooftop audit"),
        (["audit", "--lease", "0"], "engine.lease: must be > 0"),
        (["probe", "--set", "probe.repeat=0"], "probe.repeat: 0 is too small (at least 1)"),
        (["interfere"], "interference.loads (--loads): name at least one load"),
        (["interfere", "--loads", "cpu", "--ensemble", "2,0"], "interference.ensemble[1]: 0 is too small (at least 1)"),
        (["interfere", "--loads", "cpu", "--placement", "anywhere"], "invalid choice: 'anywhere'"),
        (
            ["interfere", "--set", "interference.placement=anywhere", "--loads", "cpu"],
            "interference.placement: 'anywhere' is not one of given, random",
        ),
        (["interfere", "--loads", "cpu", "--load-warmup", "-1"], "interference.load_warmup: -1.0 is too small"),
        (["interfere", "--loads", "cpu", "--load-nodes", "9"], "interference.load_nodes (--load-nodes) 9: nodes are"),
        (["bursts", "--set", "interference.grace=1"], "interference.grace: a key of 'rooftop interfere', not read"),
    ]
    for argv, message in cases:
        p = rooftop(*argv, "--results", res, check=False)
        assert p.returncode == 2 and message in p.stderr, (argv, p.stderr)
    assert not Path(res).exists()  # refused before anything is created


def test_a_config_file_sets_study_keys_and_other_commands_leave_them_out(tmp_path):
    from rooftop.bursts.run import build_config

    f = tmp_path / "c.toml"
    f.write_text('[bursts]\non = 3\nprogress = ["busy", "spindown:1", "5"]\n[collect]\nwindows = 2\n')
    cfg = build_config(str(f), {"bursts.interval": 0.5})
    assert cfg["bursts"]["on"] == 3 and cfg["bursts"]["interval"] == 0.5
    assert cfg["bursts"]["progress"] == ["busy", "spindown:1", "spindown:5"]
    assert cfg["bursts"]["windows_per_burst"] == 6 and cfg["collect"]["windows"] == 2
    shown = json.loads(rooftop("config", "show", "--config", str(f)).stdout)
    assert "bursts" not in shown and shown["collect"]["windows"] == 2


def test_interfere_keys_from_a_file_set_and_flags_resolve_into_the_config(tmp_path):
    """File < --set < flags, as for every key; the resolved `interference`
    section (a drawn seed and the sorted ensemble included) is what the
    runs' configs record; other commands leave the file's table out."""
    from rooftop.cli.interfere import _config

    f = tmp_path / "c.toml"
    f.write_text(
        '[interference]\nloads = ["cpu", "mem"]\nensemble = [4, 1]\nload_warmup = 2\nplacement = "random"\n'
        "[loads.cpu]\nprocs = 1\n"
    )
    argv = ["interfere", "--config", str(f), "--set", "interference.load_warmup=0.5", "--set", "interference.grace=1"]
    args = cli.build_parser().parse_args([*argv, "--ensemble", "2,1", "--results", str(tmp_path / "r")])
    cfg, plan = _config(args)
    keys = cfg["interference"]
    assert (keys["loads"], keys["ensemble"], keys["load_warmup"], keys["grace"]) == (["cpu", "mem"], [1, 2], 0.5, 1.0)
    assert keys["placement"] == "random" and isinstance(keys["seed"], int)  # drawn, and recorded
    assert cfg["interfere"] == {"role": "isolated", **plan.record()} and plan.seed == keys["seed"]
    assert (plan.ensemble, plan.warmup, plan.grace, plan.knobs["cpu"]["procs"]) == ([1, 2], 0.5, 1.0, 1)
    shown = json.loads(rooftop("config", "show", "--config", str(f)).stdout)
    assert "interference" not in shown and "loads" not in shown


@pytest.fixture(scope="module")
def bursts_run(tmp_path_factory):
    """One short real bursts run, its knobs given by --set and by flags."""
    res = tmp_path_factory.mktemp("bursts") / "r"
    p = rooftop(
        "bursts",
        "--progress",
        "busy",
        "--set",
        "bursts.bursts=1",
        "--set",
        "bursts.interval=0.25",
        "--on",
        "0.5",
        "--off",
        "0",
        "--results",
        str(res),
        "--json",
    )
    return res, json.loads(p.stdout)


def test_set_and_flags_land_in_the_runs_config(bursts_run):
    from rooftop.store.db import Store

    res, out = bursts_run
    run = Store(res, create=False).get_run(out["run"])
    p = run.config["bursts"]
    assert (p["bursts"], p["interval"], p["on"], p["off"], p["progress"]) == (1, 0.25, 0.5, 0.0, ["busy"])
    assert p["windows_per_burst"] == 2 and p["full_rate"] == 0.9  # a default, recorded
    assert out["status"] == "complete"


def test_probe_reads_its_keys_from_a_file_and_set(tmp_path):
    f = tmp_path / "c.json"
    f.write_text(
        json.dumps({"probe": {"repeat": 1, "compare": []}, "fabric": {"provider": "ofi+tcp"}, "engine": {"lease": 7}})
    )
    p = rooftop("probe", "--config", str(f), "--set", "probe.duration=0.2", "--results", str(tmp_path / "r"))
    assert "ofi+tcp; 0.2 s per measurement, 1 run(s) each" in p.stderr  # what it will do: stderr; the table: stdout
    summary = json.loads(next((tmp_path / "r").glob("probe-*/summary.json")).read_text())
    assert (summary["repeat"], summary["duration_s"], summary["lease_s"]) == (1, 0.2, 7.0)
