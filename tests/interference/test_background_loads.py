"""Every background load starts through the local launcher, records units
of work, reports its document and leaves no process or file behind when
stopped; numio's three overlap modes hide different shares of their I/O."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from rooftop.campaign import Leases, Processes
from rooftop.config.resolve import build
from rooftop.interference.loads import LOADS, background, get
from rooftop.launchers.local import LocalLauncher

#: Small knobs, so that each load finishes units within a second or two.
SMALL = {
    "cpu": {"procs": 1, "size": 128, "iterations": 20},
    "mem": {"size_mib": 8, "copies": 2},
    "net": {"window": 0.2, "size": "64KiB"},
    "io": {"block_mib": 1, "file_mib": 8},
    "numio": {"sweeps": 40, "write_every": 10, "size": 128, "inflate": 2},
    "cmd": {"command": "sleep 0.1"},
}


@pytest.fixture(autouse=True)
def _stop_what_a_failed_test_started(monkeypatch):
    """A test that fails before background.stop must not leave its loads
    running beside every later test (they would be foreign CPU there)."""
    started = []
    start = background.start
    monkeypatch.setattr(background, "start", lambda *a, **k: started.append(start(*a, **k)) or started[-1])
    yield
    for r in started:
        background.stop(r, grace=2.0)


class _Runner:
    """What background.start needs of a campaign.Runner."""

    def __init__(self):
        self.cfg = build(None, {"engine.timeout": 10})
        self.launcher = LocalLauncher(2)
        self.procs = Processes()
        self.leases = Leases(10.0)  # the loads watch theirs


def processes_mentioning(marker: str) -> list[int]:
    """Live processes whose command line mentions marker (zombies excluded)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmd and state != "Z":
            out.append(int(d.name))
    return out


def wait_units(r, n: int, timeout: float = 40.0) -> None:
    end = time.monotonic() + timeout
    while background.units_done(r) < n:
        assert time.monotonic() < end, f"load {r.load} finished no {n} units in {timeout} s: " + " ".join(
            p.read_text()[-400:] for p in r.folder.glob("*.log")
        )
        assert all(p.poll() is None for p in r.procs), (r.folder / "worker-0.log").read_text()[-800:]
        time.sleep(0.1)


@pytest.mark.parametrize("kind", list(LOADS))
def test_every_load_starts_measures_and_leaves_nothing(kind, tmp_path):
    runner = _Runner()
    nodes = runner.launcher.nodes()
    knobs = get(kind).resolve(SMALL[kind])
    r = background.start(kind, knobs, nodes, runner, tmp_path / kind)
    wait_units(r, 2)
    t_mark = time.time()
    time.sleep(0.5)
    done = background.stop(r, grace=5.0)
    assert done["killed"] == 0, "a load process ignored SIGTERM"
    docs = [d for d in done["documents"] if d]
    assert len(docs) == len(r.launches), done["documents"]
    assert sum(d["units"] for d in docs) == len(done["units"]) >= 2
    assert all(d["load"] == kind for d in docs)
    rates = [d["rate"] for d in docs if d["units"]]
    assert rates and all(x > 0 for x in rates)
    split = background.split(done["units"], t_mark, [(t_mark, time.time())])
    assert split["units_alone"] >= 1 and split["rate_alone"] > 0
    assert processes_mentioning(str(tmp_path)) == [], "a load left processes behind"
    data = tmp_path / kind / "data"
    assert not data.exists() or not any(data.iterdir()), "a load left its data files behind"


def test_cpu_load_is_pinned_one_process_per_core(tmp_path):
    runner = _Runner()
    node = runner.launcher.nodes()[0]
    r = background.start("cpu", get("cpu").resolve({"size": 64, "iterations": 5}), [node], runner, tmp_path)
    wait_units(r, 1)
    docs = background.stop(r)["documents"]
    assert len(docs) == len(node.cores)
    assert sorted(c for d in docs for c in d["cpu_affinity"]) == sorted(node.cores)


def _numio(mode: str, tmp_path) -> dict:
    runner = _Runner()
    knobs = get("numio").resolve(
        {"mode": mode, "sweeps": 60, "write_every": 10, "size": 256, "inflate": 16, "dir": str(tmp_path / "data")}
    )
    r = background.start("numio", knobs, runner.launcher.nodes()[:1], runner, tmp_path / mode)
    wait_units(r, 1, timeout=60)
    return background.stop(r)["documents"][0]


def test_numio_modes_hide_different_shares_of_their_io(tmp_path):
    docs = {m: _numio(m, tmp_path) for m in ("sync+imm", "sync", "async")}
    for m, d in docs.items():
        assert d["mode"] == m and d["units"] >= 1 and d["io_work_s"] > 0, d
        assert d["runtime"] > d["io_blocked_s"] >= 0
    per_unit = {m: d["io_blocked_s"] / d["units"] for m, d in docs.items()}
    # sync+imm waits for every write and fsync; sync waits for its calls
    # (the write-back runs during compute); async waits only when its I/O
    # thread is not done by the next write point.
    assert docs["sync+imm"]["io_hidden"] < 0.1 and docs["sync"]["io_hidden"] < 0.1
    # async hid 0.23-0.45 of its I/O on this 2-core machine (less when the
    # other core is busy: its I/O thread then shares a core with compute);
    # the sync modes hide none.
    assert docs["async"]["io_hidden"] > 0.15, docs["async"]
    assert per_unit["async"] < per_unit["sync+imm"], per_unit


def test_the_gaps_between_measuring_windows_are_not_counted_as_slowness():
    """A load as fast beside the service as alone, whose units beside it fall
    in two windows 20 s apart (a bursts run's gap): slowdown 1, not the
    (20 + 2) / 2 the span from first to last unit would give."""

    def units(t0, n, rank=0):
        return [{"t0": t0 + k, "t1": t0 + k + 1, "work": 1.0, "rank": rank} for k in range(n)]

    done = units(0, 3) + units(10, 1) + units(31, 1) + units(3, 1, rank=1)
    got = background.split(done, 5.0, [(10.0, 11.0), (31.0, 32.0)])
    assert got["units_alone"] == 4 and got["units_beside"] == 2
    assert got["rate_alone"] == 1.0 and got["rate_beside"] == 1.0 and got["slowdown"] == 1.0
    slower = background.split(units(0, 3) + [{"t0": 10, "t1": 12, "work": 1.0}], 5.0, [(10.0, 12.0)])
    assert slower["slowdown"] == 2.0


def test_a_unit_still_being_written_is_not_read(tmp_path):
    """A worker's buffered write can end mid-line (seen in CI: the reader
    failed on '{"t0": ..., "t1": ...'): only whole lines are units."""
    (tmp_path / "units-0.jsonl").write_text(
        '{"t0": 1.0, "t1": 2.0, "work": 3}\n{"t0": 2.0, "t1": 3.0, "work": 0}\n{"t0": 3.0, "t1": 3.5'
    )
    r = background.Running("cpu", {}, [], tmp_path, 0)
    assert background.units_done(r) == 1
    assert [u["t0"] for u in background._units(tmp_path)] == [1.0, 2.0]
