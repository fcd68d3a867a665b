"""Helpers for campaign tests: run the rooftop CLI, read the store, find
engine processes a campaign left behind."""

from __future__ import annotations

import shlex
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path


def rooftop(*args, timeout=300, env=None, check=True):
    p = subprocess.run(
        [sys.executable, "-m", "rooftop", *args], capture_output=True, text=True, timeout=timeout, env=env
    )
    if check and p.returncode != 0:
        raise AssertionError(f"rooftop {' '.join(args)} -> {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def samples(results: Path, run: str) -> list[dict]:
    db = sqlite3.connect(results / "rooftop.db")
    db.row_factory = sqlite3.Row
    rows = [dict(r) for r in db.execute("SELECT * FROM samples WHERE run_id = ? ORDER BY id", (run,))]
    db.close()
    for r in rows:  # stored relative to the results folder (migration 13): as a path to open
        r["raw_dir"] = str(results / r["raw_dir"]) if r["raw_dir"] else ""
    return rows


def engine_processes(marker: str) -> list[int]:
    """PIDs of live rooftop-engine processes whose command line mentions marker."""
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (d / "stat").read_text().split()[2]
        except OSError:
            continue
        if "rooftop-engine" in cmd and marker in cmd and state != "Z":
            pids.append(int(d.name))
    return pids


QUICK = ["--duration", "0.4", "--warmup", "0.2", "--windows", "2"]


def counting_engine(folder: Path, agent_args: str = "") -> tuple[Path, Path]:
    """(wrapper, its log): an engine wrapper that logs the command
    (argv[1]) of every exec of the engine, then becomes it (an agent with
    agent_args added). Set it as ROOFTOP_ENGINE to count launches: a
    process a node agent forks is no exec."""
    from rooftop.engine.base import engine_path

    log = folder / "execs"
    wrapper = folder / "rooftop-engine"
    real = shlex.quote(engine_path())
    wrapper.write_text(
        f'#!/bin/sh\necho "$1" >> {shlex.quote(str(log))}\n'
        f'[ "$1" = agent ] && exec {real} "$@" {agent_args}\nexec {real} "$@"\n'
    )
    wrapper.chmod(0o755)
    return wrapper, log


def execs(log: Path) -> Counter:
    """The engine commands a counting_engine log counted."""
    return Counter(log.read_text().split()) if log.exists() else Counter()


def docs_table(script: str) -> str:
    """The table scripts/<script>.py makes from `rooftop plan --json` now
    (its table(plan) function), for a test that the docs hold it."""
    import contextlib
    import importlib.util
    import io
    import json

    from rooftop.cli.main import main

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location(script, root / "scripts" / f"{script}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def plan(argv: list[str]) -> dict:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(argv) == 0
        return json.loads(out.getvalue())

    return module.table(plan)
