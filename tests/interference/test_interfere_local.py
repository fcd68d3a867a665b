"""rooftop interfere on the local launcher (2 logical nodes of one core
each on this machine): a cpu load on the server's core lowers the RPC
rate and the report names CPU as the shared resource; ensembles of 1, 2
and 4 copies run and their slowdown grows with the copies sharing one
core; Ctrl-C leaves no load or engine behind, whichever load runs."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_background_loads import processes_mentioning

from hung import finish

QUICK = ["--metrics", "rpc", "--windows", "2", "--duration", "0.4", "--warmup", "0.3", "--load-warmup", "0.5"]


def env():
    e = dict(os.environ)
    e.setdefault("ROOFTOP_CORES_LOCK", "/tmp/rooftop-interfere-tests.lock")
    return e


def interfere(results: Path, *args, timeout=240) -> tuple[dict, str]:
    p = subprocess.run(
        [sys.executable, "-m", "rooftop", "interfere", "--results", str(results), "--json", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env(),
    )
    assert p.returncode == 0, f"{p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}"
    doc = json.loads(p.stdout)
    return doc, doc["run"]


def test_cpu_load_on_the_servers_core_lowers_rpc_and_the_report_says_cpu(tmp_path):
    # Four stencils time-share the server's core with a busy-polling server
    # (four, not one: CFS shares a core per session, so the server's loss is
    # diluted by whatever else runs on this machine).
    doc, base = interfere(
        tmp_path,
        "--loads",
        "cpu",
        "--load-nodes",
        "0",
        "--load-set",
        "cpu.procs=4",
        "--set",
        "engine.server_progress=busy",
        *QUICK,
    )
    (cond,) = doc["conditions"]
    (impact,) = [i for i in cond["impacts"] if i["stage"] == "server_peak"]  # also client peak here
    assert impact["impact_rate"] > 1.3, impact
    assert cond["shared"].startswith("CPU"), cond["shared"]
    assert [x["nodes"] for x in cond["loads"]] == [[0]]
    db = sqlite3.connect(tmp_path / "rooftop.db")
    stored = db.execute("SELECT impact_rate, shared FROM interference WHERE run_id = ?", (base,)).fetchall()
    assert stored and stored[0][0] == pytest.approx(impact["impact_rate"]) and stored[0][1] == cond["shared"]
    status = dict(db.execute("SELECT id, status FROM runs").fetchall())
    assert status == {base: "complete", cond["run"]: "complete"}
    config = json.loads(db.execute("SELECT config FROM runs WHERE id = ?", (cond["run"],)).fetchone()[0])
    assert config["interfere"]["load"] == "cpu" and config["interfere"]["knobs"]["procs"] == 4
    rep = subprocess.run(
        [sys.executable, "-m", "rooftop", "report", base, "--results", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=240,
        env=env(),
    )
    assert rep.returncode == 0, rep.stderr
    md = (tmp_path / base / "report" / "report.md").read_text()
    assert "## Under load" in md and "shared resource: CPU" in md
    assert (tmp_path / base / "report" / "figures" / "interference.png").exists()
    rep = subprocess.run(
        [sys.executable, "-m", "rooftop", "report", cond["run"], "--results", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=240,
        env=env(),
    )
    assert rep.returncode == 0, rep.stderr
    assert f"the same stages alone: run {base}" in (tmp_path / cond["run"] / "report" / "report.md").read_text()
    # The roofline under load: a second, lower band on the isolated run's figure.
    from rooftop import results
    from rooftop.kinds.sections import SECTIONS
    from rooftop.plots import roofline
    from rooftop.store.db import Store

    res = results.load(Store(tmp_path, create=False), base, SECTIONS)
    ((name, loaded),) = res.loaded["rpc"]
    assert name == "beside cpu" and loaded.client_bound.centre < res.rooflines["rpc"].client_bound.centre
    fig = roofline.figure(res.evaluations["rpc"], "t", loaded=res.loaded["rpc"])
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert any(label.startswith("under load, beside cpu: client") for label in labels), labels
    # What other tools read: the loaded ceilings and the impact factors,
    # in model --json, export --format json and the figures of merit.
    _check_exports(tmp_path, base, cond, loaded)


def _rooftop(results: Path, *args) -> str:
    p = subprocess.run(
        [sys.executable, "-m", "rooftop", *args, "--results", str(results)],
        capture_output=True,
        text=True,
        timeout=240,
        env=env(),
    )
    assert p.returncode == 0, p.stderr
    return p.stdout


def _check_exports(results: Path, base: str, cond: dict, loaded) -> None:
    import jsonschema

    from rooftop import export

    m = json.loads(_rooftop(results, "model", base, "--json"))
    jsonschema.validate(m, export.schema("model"))
    (under,) = m["metrics"][0]["under_load"]
    assert under["run"] == cond["run"] and under["condition"] == "beside cpu"
    assert under["client"]["median"] == pytest.approx(loaded.client_bound.centre)
    assert under["isolated_over_loaded"]["client"] > 1
    (c,) = m["interference"]["conditions"]
    assert m["interference"]["isolated_run"] == base and c["impacts"] == cond["impacts"]
    assert c["loads"][0]["slowdown"] == cond["loads"][0]["slowdown"]
    x = json.loads(_rooftop(results, "export", base, "--format", "json"))
    jsonschema.validate(x, export.schema("export"))
    assert x["interference"] == m["interference"]
    fom = _rooftop(results, "export", base, "--format", "fom")
    (sp,) = [i for i in cond["impacts"] if i["stage"] == "server_peak"]
    assert f"interference.cpu.server_peak.rpc.impact_rate: {sp['impact_rate']:.6g} x (lower is better)" in fom
    assert "interference.cpu.load_slowdown:" in fom
    # The loaded run itself was not measured alone by interfere: nothing to say.
    assert json.loads(_rooftop(results, "model", cond["run"], "--json"))["interference"] is None


def test_ensembles_of_1_2_4_copies_run_and_are_recorded(tmp_path):
    # Every copy on the client's core (node 1). How much CPU k copies take
    # from the client here depends on the machine's other sessions (CFS
    # autogroups share a core per session): monotonicity is tested where
    # physics fixes it, on a shaped link (tests/cluster/test_interfere_netns.py).
    doc, base = interfere(
        tmp_path,
        "--loads",
        "cpu",
        "--ensemble",
        "4,1,2",
        "--load-nodes",
        "1",
        "--load-set",
        "cpu.procs=1",
        "--set",
        "loads.cpu.size=128",  # a load's knob is a config key too
        "--set",
        "interference.grace=2",  # and so is each option of the command
        "--stages",
        "client_peak",
        *QUICK,
    )
    conds = doc["conditions"]
    from rooftop.store.db import Store

    config = Store(tmp_path, create=False).get_run(base).config
    # (the run's config as loaded: up to date, so the loads it did not run are there at their defaults)
    assert config["loads"]["cpu"] == {"procs": 1, "size": 128, "iterations": 50}
    keys = config["interference"]  # the interference.* keys, as resolved
    assert (keys["loads"], keys["ensemble"], keys["load_nodes"], keys["stages"]) == (
        ["cpu"],
        [1, 2, 4],
        [1],
        ["client_peak"],
    )
    assert (keys["grace"], keys["load_warmup"], keys["placement"], keys["seed"]) == (2.0, 0.5, "given", None)
    assert config["interfere"]["grace"] == 2.0 and config["interfere"]["role"] == "isolated"
    assert [c["copies"] for c in conds] == [1, 2, 4]
    assert [len(c["loads"]) for c in conds] == [1, 2, 4]
    for c in conds:
        assert c["ok"] > 0 and c["failed"] == 0
        assert all(x["nodes"] == [1] and x["units_alone"] >= 1 and x["units_beside"] >= 1 for x in c["loads"])
        assert all(x["normalized"] > 0 and x["slowdown"] > 0 for x in c["loads"])
    # One copy alone is the reference of the normalized slowdown.
    assert conds[0]["loads"][0]["normalized"] == pytest.approx(conds[0]["loads"][0]["slowdown"])
    db = sqlite3.connect(tmp_path / "rooftop.db")
    assert db.execute("SELECT count(*) FROM load_runs WHERE run_id = ?", (base,)).fetchone()[0] == 7
    assert (
        db.execute("SELECT count(DISTINCT loaded_run) FROM interference WHERE run_id = ?", (base,)).fetchone()[0] == 3
    )
    before = db.execute("SELECT * FROM load_runs ORDER BY rowid").fetchall()
    db.close()
    # A rebuilt database gets the comparison back from the isolated run's interference.json.
    p = subprocess.run(
        [sys.executable, "-m", "rooftop", "doctor", "--rebuild", "--results", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env(),
    )
    assert p.returncode == 0 and "interference of 3 loaded run(s) restored" in p.stdout + p.stderr, p.stdout
    db = sqlite3.connect(tmp_path / "rooftop.db")
    assert db.execute("SELECT * FROM load_runs ORDER BY rowid").fetchall() == before


def _first_line(folder: Path, pattern: str, timeout: float) -> Path:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for f in folder.glob(pattern):
            if f.stat().st_size > 0:
                return f
        time.sleep(0.1)
    raise AssertionError(f"no {pattern} under {folder} within {timeout} s")


@pytest.mark.parametrize(
    "kind,knobs",
    [
        ("cpu", []),
        ("mem", ["mem.size_mib=8"]),
        ("net", ["net.window=0.2"]),
        ("io", ["io.file_mib=16"]),
        ("numio", ["numio.sweeps=40"]),
        ("cmd", ["cmd.command=sh -c 'sleep 0.3' {tmp}"]),
    ],
)
def test_ctrl_c_leaves_no_load_behind(kind, knobs, tmp_path):
    # cmd: the command names the test's folder ($0 of sh), so a command left
    # running would be found below.
    sets = [a for k in knobs for a in ("--load-set", k.format(tmp=tmp_path))]
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rooftop",
            "interfere",
            "--results",
            str(tmp_path),
            "--loads",
            kind,
            "--load-nodes",
            "0,1",
            *sets,
            "--stages",
            "client_peak",
            "--metrics",
            "rpc",
            "--windows",
            "1",
            "--duration",
            "3",
            "--warmup",
            "0.2",
            "--load-warmup",
            "0.3",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(),
    )
    try:
        # The loaded run's client measures beside the load: interrupt then.
        units = _first_line(tmp_path, "*/loads/*/units-*.jsonl", 120)
        _first_line(units.parents[2], "raw/*/windows-*.jsonl", 60)
        time.sleep(0.3)
    finally:
        p.send_signal(signal.SIGINT)
        out, err = finish(p, 60)
    assert p.returncode == 130, err
    assert processes_mentioning(str(tmp_path)) == [], f"left behind after Ctrl-C: {err[-800:]}"
    db = sqlite3.connect(tmp_path / "rooftop.db")
    assert db.execute("SELECT status FROM runs ORDER BY created DESC, id DESC").fetchone()[0] == "interrupted"


def _wait_for_command(text: str, marker: str, timeout: float) -> None:
    """Until a live process's command line holds both text and marker."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pid in processes_mentioning(marker):
            try:
                if text in Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode():
                    return
            except OSError:
                pass
        time.sleep(0.2)
    raise AssertionError(f"no process running {text!r} for {marker} within {timeout} s")


@pytest.mark.parametrize(
    "kind,knobs",
    [
        ("cpu", []),
        ("net", ["net.window=0.2"]),
        ("cmd", ["cmd.command=sh -c 'sleep 0.3' {tmp}"]),
        # A command that ignores SIGTERM, with a grandchild: the worker's group is ended.
        ("cmd", ["""cmd.command=sh -c 'trap "" TERM; sh -c "sleep 60; :" {tmp} & wait' {tmp}"""]),
    ],
    ids=["cpu", "net", "cmd", "cmd-ignoring-sigterm"],
)
def test_sigkill_of_interfere_leaves_no_load_behind(kind, knobs, tmp_path):
    """A SIGKILLed campaign cannot stop its loads: they watch its lease
    (engine.lease, 2 s here) and stop themselves, with their children
    (net: engines; cmd: the command, and its group when it will not stop)."""
    sets = [a for k in knobs for a in ("--load-set", k.format(tmp=tmp_path))]
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rooftop",
            "interfere",
            "--results",
            str(tmp_path),
            "--loads",
            kind,
            "--load-nodes",
            "0,1",
            *sets,
            "--stages",
            "client_peak",
            "--metrics",
            "rpc",
            "--windows",
            "1",
            "--duration",
            "3",
            "--warmup",
            "0.2",
            "--load-warmup",
            "0.3",
            "--set",
            "engine.lease=2",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env(),
    )
    try:
        if "trap" in " ".join(knobs):  # its first unit never ends: wait for the grandchild itself
            _wait_for_command("sh -c sleep 60; :", str(tmp_path), 120)  # the inner sh, not a quoting argv
        else:
            units = _first_line(tmp_path, "*/loads/*/units-*.jsonl", 120)
            _first_line(units.parents[2], "raw/*/windows-*.jsonl", 60)
    finally:
        p.kill()
        p.wait(timeout=30)
    deadline = time.monotonic() + 30
    while processes_mentioning(str(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert processes_mentioning(str(tmp_path)) == []


def test_a_bursts_run_as_the_service_alone_and_beside_a_cpu_load(tmp_path):
    """interfere --bursts-run RUN: RUN's modes measured again alone and beside
    four stencils on the server's core; an impact per progress mode, the
    load's own slowdown, both reports say so, and nothing is left behind."""
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "rooftop",
            "bursts",
            "--results",
            str(tmp_path),
            "--json",
            "--progress",
            "busy,block",
            "--bursts",
            "1",
            "--on",
            "1",
            "--off",
            "0.5",
            "--interval",
            "0.25",
        ],
        capture_output=True,
        text=True,
        timeout=240,
        env=env(),
    )
    assert p.returncode == 0, p.stderr
    source = json.loads(p.stdout)["run"]
    doc, base = interfere(
        tmp_path,
        "--bursts-run",
        source,
        "--loads",
        "cpu",
        "--load-nodes",
        "0",
        "--load-set",
        "cpu.procs=4",
        "--load-warmup",
        "0.5",
        "--grace",
        "2",  # a key of this command: not refused as ignored
    )
    assert base != source
    (cond,) = doc["conditions"]
    assert [i["stage"] for i in cond["impacts"]] == ["bursts/busy", "bursts/block"]
    busy = cond["impacts"][0]
    assert busy["metric"] == "rpc" and busy["impact_rate"] > 1.3 and busy["impact_p99"], busy
    assert cond["shared"].startswith("CPU") and cond["loads"][0]["slowdown"], cond
    # The load's own slowdown per mode, from its units inside that mode's bursts.
    assert all(i["load_slowdown"] for i in cond["impacts"]), cond["impacts"]
    assert set(cond["loads"][0]["by"]) == {"busy", "block"}
    fom = _rooftop(tmp_path, "export", base, "--format", "fom")
    assert (
        "interference.cpu.bursts/busy.rpc.impact_rate:" in fom and "interference.cpu.bursts/block.load_slowdown:" in fom
    )
    db = sqlite3.connect(tmp_path / "rooftop.db")
    for run in (base, cond["run"]):  # each an ordinary, complete bursts run
        status, config = db.execute("SELECT status, config FROM runs WHERE id = ?", (run,)).fetchone()
        assert status == "complete" and json.loads(config)["stages"] == ["bursts"]
    base_config = json.loads(db.execute("SELECT config FROM runs WHERE id = ?", (base,)).fetchone()[0])
    assert base_config["interfere"]["bursts_of"] == source
    assert base_config["interference"]["grace"] == 2.0 and base_config["interference"]["stages"] == ["bursts"]
    _rooftop(tmp_path, "report", base)
    md = (tmp_path / base / "report" / "report.md").read_text()
    assert "## Under load" in md and "| bursts/busy | rpc |" in md
    from rooftop.bursts.run import power_note

    assert ("power: not measured" in md) == bool(power_note())  # as a 'rooftop bursts' run says
    _rooftop(tmp_path, "report", cond["run"])
    assert f"the same stages alone: run {base}" in (tmp_path / cond["run"] / "report" / "report.md").read_text()
    assert processes_mentioning(str(tmp_path)) == []


def test_bursts_service_refuses_what_is_not_a_bursts_run(tmp_path):
    doc, base = interfere(tmp_path, "--loads", "cpu", "--load-nodes", "0", *QUICK)
    for extra, says in (
        (["--bursts-run", base], "not a bursts run"),
        (["--bursts-run", "nope"], "no run 'nope'"),
        (["--bursts-run", base, "--stages", "validate"], "either a bursts run or roofline stages"),
        (["--bursts-run", base, "--stages", "server_peak,client_peak"], "either a bursts run"),
        (
            ["--bursts-run", base, "--duration", "2", "--set", "engine.lease=3"],
            "would be ignored: collect.duration, engine.lease",
        ),
    ):
        p = subprocess.run(
            [sys.executable, "-m", "rooftop", "interfere", "--results", str(tmp_path), "--loads", "cpu", *extra],
            capture_output=True,
            text=True,
            timeout=60,
            env=env(),
        )
        assert p.returncode == 2 and says in p.stderr, (extra, p.returncode, p.stderr)
