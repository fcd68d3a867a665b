"""Issue 42, item 1: a results folder is data. A stored run's config value
that names what would run (engine.path, launcher.command, launcher.hosts,
...: Key.executes) is used by a later command only from a folder and
database of the user's own, not writable by others, or when given again;
otherwise the command refuses (exit 2) naming the key, before anything
runs."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest
from campaign_util import rooftop

from rooftop.bursts.run import build_config as bursts_config
from rooftop.config import trust
from rooftop.config.files import set_key
from rooftop.config.resolve import build
from rooftop.engine.base import engine_path
from rooftop.store.db import Store

NOBODY = 65534
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")


def stored_run(res: Path, cfg: dict | None = None, **values) -> str:
    """A run stored as a campaign would (no measurement), then its config
    changed as another user would change it: the database and config.json."""
    cfg = cfg or build(
        overrides={"results": str(res), "launcher.nodes": 2, "metrics": ["rpc"], "collect.windows": 1}
        | {"collect.duration": 0.1, "collect.warmup": 0.0, "validate.duration": 0.1, "validate.warmup": 0.0}
    )
    for path, value in values.items():
        set_key(cfg, path, value)
    store = Store(res)
    run = store.new_run(cfg, {})
    store.set_status(run, "interrupted", "")
    store.close()
    return run


def marking(tmp_path: Path, then: str) -> tuple[Path, Path]:
    """(a script that leaves a marker file when run, then runs `then`; the marker)."""
    marker, script = tmp_path / "it-ran", tmp_path / "theirs.sh"
    script.write_text(f"#!/bin/sh\ntouch {shlex.quote(str(marker))}\n{then}\n")
    script.chmod(0o755)
    return script, marker


def refused(*args) -> str:
    p = rooftop(*args, check=False)
    assert p.returncode == 2 and "Traceback" not in p.stderr, (p.returncode, p.stdout, p.stderr)
    return p.stderr


@as_root
def test_validate_refuses_an_engine_path_from_a_database_of_another_user(tmp_path):
    res = tmp_path / "res"
    script, marker = marking(tmp_path, f'exec {shlex.quote(engine_path())} "$@"')
    run = stored_run(res, **{"engine.path": str(script)})
    os.chown(res / "rooftop.db", NOBODY, NOBODY)
    err = refused("validate", run, "--results", str(res), "--server-nodes", "1", "--client-nodes", "1")
    assert f"engine.path = '{script}'" in err and f"{res / 'rooftop.db'} is owned by" in err, err
    assert f"--set engine.path={script}" in err and "chmod -R go-w" in err, err
    assert not marker.exists()
    # Given again, it is the user's own choice: taken (a dry run prints, runs nothing).
    ok = rooftop("validate", run, "--results", str(res), "--set", f"engine.path={script}", "--dry-run")
    assert str(script) in ok.stdout
    err = refused("validate", run, "--results", str(res), "--set", "engine.path=/bin/true", "--dry-run")
    assert f"recorded '{script}'" in err
    err = refused("validate", run, "--results", str(res), "--set", "collect.duration=1", "--dry-run")
    assert "--set collect.duration" in err and "engine.path" in err


def test_service_refuses_a_stored_launcher_command_from_a_group_writable_folder(tmp_path):
    res = tmp_path / "res"
    script, marker = marking(tmp_path, "echo 'mpiexec (OpenRTE) 4.1.4'")
    run = stored_run(
        res, **{"launcher.type": "mpiexec", "launcher.command": str(script), "launcher.hosts": ["localhost"] * 2}
    )
    res.chmod(0o775)
    # --dry-run too: it would ask the launcher command its version.
    err = refused("service", run, "--preset", "redis", "--results", str(res), "--dry-run")
    assert "launcher.command" in err and "launcher.hosts" in err and "writable by group (mode 775)" in err, err
    assert not marker.exists()
    res.chmod(0o755)  # the user's own folder again: the run's launcher is taken as stored
    ok = rooftop("service", run, "--preset", "redis", "--results", str(res), "--dry-run")
    assert f"\n{script} " in ok.stdout and marker.exists()


@as_root
def test_collect_resume_refuses_a_stored_engine_path_from_a_run_folder_of_another_user(tmp_path):
    res = tmp_path / "res"
    script, marker = marking(tmp_path, f'exec {shlex.quote(engine_path())} "$@"')
    run = stored_run(res, **{"engine.path": str(script)})
    os.chown(res / run, NOBODY, NOBODY)
    err = refused("collect", "--resume", run, "--results", str(res))
    assert "engine.path" in err and f"{res / run} is owned by" in err, err
    assert not marker.exists()
    err = refused("collect", "--resume", run, "--results", str(res), "--set", "collect.duration=1")
    assert "would be ignored: collect.duration" in err


def test_interfere_refuses_a_bursts_run_whose_engine_path_another_user_could_write(tmp_path):
    res = tmp_path / "res"
    cfg = bursts_config(None, {"results": str(res), "launcher.nodes": 2, "bursts.bursts": 1})
    run = stored_run(res, cfg, **{"engine.path": "/bin/true"})
    (res / "rooftop.db").chmod(0o666)
    err = refused("interfere", "--results", str(res), "--loads", "cpu", "--bursts-run", run, "--dry-run")
    assert "engine.path = '/bin/true'" in err and "writable by group and others (mode 666)" in err, err


@pytest.mark.parametrize("where", ["folder", "run folder", "database", "config.json"])
def test_what_the_trust_check_looks_at(tmp_path, where):
    res = tmp_path / "res"
    run = stored_run(res, **{"launcher.extra_args": ["--mca", "x", "y"], "iops.dir": "/var/tmp"})
    store = Store(res, create=False)
    assert trust.acting(store.get_run(run).config) == {
        "launcher.extra_args": ["--mca", "x", "y"],
        "iops.dir": "/var/tmp",
    }
    assert trust.doubts(store, run) == []
    assert trust.acting(build(overrides={"launcher.nodes": 2})) == {}  # the defaults name nothing
    path = {"folder": res, "run folder": res / run, "database": res / "rooftop.db", "config.json": res / run}[where]
    path = path / "config.json" if where == "config.json" else path
    path.chmod(path.stat().st_mode | 0o002)
    assert trust.doubts(store, run) == [f"{path} is writable by others (mode {path.stat().st_mode & 0o777:o})"]
    with pytest.raises(trust.Untrusted, match="launcher.extra_args = .*iops.dir = '/var/tmp'"):
        trust.check_reuse(store, run, store.get_run(run).config)
    again = {"launcher.extra_args": ["--mca", "x", "y"], "iops.dir": "/var/tmp"}
    trust.check_reuse(store, run, store.get_run(run).config, again)  # given again: taken
