"""Issue 44, item 1: one run lifecycle (rooftop.campaign.lifecycle.Hold)
for every command that stores a run, and the same promises for each: a
second claim refused naming the live owner, Ctrl-C keeping what was
measured, a SIGKILLed command's time counted on resume."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest
from campaign_util import rooftop

import rooftop as package
from rooftop.campaign import lifecycle, tracking
from rooftop.campaign.lifecycle import Hold
from rooftop.config.resolve import build
from rooftop.store.db import Store
from rooftop.store.records import StoreError, process_start
from synthetic import sample_row

#: Each command that stores a run: its verb, and the module whose Hold it is.
COMMANDS = {
    "collect": "cli/campaign.py",
    "validate": "cli/campaign.py",
    "tune": "cli/learn.py",
    "bursts": "cli/bursts.py",
    "interfere": "cli/interfere.py",
    "audit": "audit/run.py",
    "service": "service/run.py",  # beside the run: its status kept, its time not the run's
}
SRC = Path(package.__file__).parent


def _owned_by(store: Store, run: str, pid: int, note: str) -> None:
    """The run left 'running' by process pid of this host (as a claim leaves it)."""
    store.claim(run, note)
    store.db.execute("UPDATE runs SET owner_pid = ?, owner_start = ? WHERE id = ?", (pid, process_start(pid), run))
    store.db.commit()


def _progress(store: Store, run: str, events: list[dict]) -> None:
    (store.run_dir(run) / tracking.PROGRESS_LOG).write_text("".join(json.dumps(e) + "\n" for e in events))


def _events(store: Store, run: str) -> list[dict]:
    return [json.loads(line) for line in (store.run_dir(run) / tracking.PROGRESS_LOG).read_text().splitlines()]


@pytest.mark.parametrize("verb", list(COMMANDS))
def test_every_command_keeps_the_same_promises(tmp_path, verb):
    beside = verb == "service"
    store = Store(tmp_path / "res")
    run = store.new_run({"stages": ["collect"]}, {})
    store.set_status(run, "complete", "as collect left it")

    # Another live command holds the run: refused, naming it; nothing changed.
    other = subprocess.Popen(["sleep", "60"])
    try:
        _owned_by(store, run, other.pid, "collect running")
        with pytest.raises(StoreError, match=rf"run {run} is being run by another command \(pid {other.pid} on "):
            with Hold(store, run, verb, beside=beside):
                pytest.fail("the body ran")
    finally:
        other.kill()
        other.wait()

    # That command was SIGKILLed 5 s into its work: the next one adds its time, once.
    t = time.time()
    _progress(store, run, [{"t": t - 8, "event": "command", "verb": "collect", "pid": other.pid}, {"t": t - 3}])
    before = store.get_run(run)
    assert before.status == "interrupted"  # its owner is gone
    said: list[str] = []

    # Ctrl-C: the rows stored so far are kept, the run reads interrupted
    # (beside it: as it read before), its time is counted.
    with pytest.raises(KeyboardInterrupt), Hold(store, run, verb, beside=beside, say=said.append):
        store.add_sample(**sample_row(run))
        raise KeyboardInterrupt
    after = store.get_run(run)
    assert store.stored_keys(run) == {"server_peak/rpc/s0x1/c1x1/0"}
    recovered = [e for e in _events(store, run) if e.get("recovered")]
    assert len(recovered) == 1 and abs(recovered[0]["wall_s"] - 5.0) < 0.01, recovered
    assert said == [f"run time: 5.0 s added for an earlier {recovered[0]['recovered']}"]
    if beside:
        assert (after.status, after.note) == (before.status, before.note)
        assert abs(after.wall_s - 5.0) < 0.01  # the killed command's, not the service's
    else:
        assert after.status == "interrupted" and after.note == f"{verb} interrupted: what it measured is stored"
        assert after.wall_s >= 5.0
        assert [(e.get("event"), e.get("verb")) for e in _events(store, run)][-2:] == [("command", verb), ("end", None)]

    # Resumed to the end: the status its plan gives; nothing recovered twice.
    with Hold(store, run, verb, planned=lambda: ("complete", ""), beside=beside):
        pass
    assert len([e for e in _events(store, run) if e.get("recovered")]) == 1
    assert store.get_run(run).status == ("interrupted" if beside else "complete")


@pytest.mark.parametrize("verb", list(COMMANDS))
def test_every_command_goes_through_the_one_lifecycle(verb):
    """Each command's module holds its run with Hold, under its verb."""
    assert re.search(rf'Hold\(\s*store,\s*[\w.]+,\s*(verb|"{verb}")', (SRC / COMMANDS[verb]).read_text())


def test_nothing_else_claims_a_run_sets_its_status_or_adds_its_time():
    """Only the lifecycle (and doctor, whose repairs give a status by the
    same rule, run_status) writes a run's owner, status or time."""
    writers = {
        str(p.relative_to(SRC))
        for p in SRC.rglob("*.py")
        if re.search(r"\.(claim|add_time|set_status)\(", p.read_text())
    }
    assert writers == {"campaign/lifecycle.py", "doctor.py", "store/runs.py"}, writers  # the store defines them


def test_a_second_command_on_a_live_run_is_refused_naming_its_owner(tmp_path):
    """Through the real entry points of the commands that take an existing
    run (collect --resume, validate, service): refused (exit 2) before
    anything is measured."""
    res = tmp_path / "res"
    store = Store(res)
    run = store.new_run(build(overrides={"results": str(res), "launcher.nodes": 2}), {})
    spec = tmp_path / "s.toml"
    spec.write_text(
        'name = "s"\nmetric = "rpc"\n[server]\ncommand = "sleep 30"\nbase_port = 23100\n[ready]\nfile = "{dir}"\n'
        '[client]\ncommand = "echo {server_address}:{server_port} rate=5"\n[rate]\nregex = \'rate=(\\d+)\'\nunit = "ops/s"\n'
    )
    other = subprocess.Popen(["sleep", "60"])
    try:
        _owned_by(store, run, other.pid, "collect running")
        for args in (["collect", "--resume", run], ["validate", run], ["service", run, str(spec)]):
            p = rooftop(*args, "--results", str(res), check=False)
            assert p.returncode == 2 and f"is being run by another command (pid {other.pid}" in p.stderr, p.stderr
        assert not store.samples(run) and store.get_run(run).status == "running"
    finally:
        other.kill()
        other.wait()


def test_doctor_recover_adds_a_killed_commands_time_once(tmp_path):
    """A run no command resumes (bursts, tune, interfere, audit) gets a
    killed command's time from doctor --recover, once."""
    store = Store(tmp_path / "res")
    run = store.new_run({"stages": ["bursts"]}, {})
    t = time.time()
    _progress(store, run, [{"t": t - 4, "event": "command", "verb": "bursts", "pid": 1}, {"t": t - 1}])
    killed = subprocess.Popen(["sleep", "60"])
    _owned_by(store, run, killed.pid, "bursts running")
    killed.kill()
    killed.wait()
    assert "'rooftop doctor --recover' adds its time" in store.get_run(run).note
    for _ in range(2):
        rooftop("doctor", "--recover", "--results", str(tmp_path / "res"), check=False)
    assert abs(store.get_run(run).wall_s - 3.0) < 0.01
    assert lifecycle.recover_time(store, run) == (0.0, "")


def test_an_unfinished_runs_warning_names_what_finishes_it_for_its_own_command():
    """A stopped bursts, tune, interfere or audit run is not finished by
    `collect --resume`: the warning the run's results carry (and the report
    and model print) says what its command measured is kept; collect and
    validate runs are told to resume or validate."""
    from rooftop.store.runs import finish_hint

    assert finish_hint("collect interrupted: what it measured is stored", "R") == (
        "finish it with 'rooftop collect --resume R'"
    )
    assert finish_hint("validate: a server did not answer", "R") == "finish it with 'rooftop validate R'"
    assert finish_hint("collect running", "R") == "finish it with 'rooftop collect --resume R'"
    for verb in ("bursts", "tune", "interfere", "audit"):
        hint = finish_hint(f"{verb}: 3 of 5 windows missing", "R")
        assert hint == f"what its {verb} measured is kept ('rooftop doctor --recover' adds its time)", hint
    source = (Path(package.__file__).parent / "results" / "__init__.py").read_text()
    assert "finish_hint(res.run.note, res.run.id)" in source and "collect --resume {res.run.id}" not in source
