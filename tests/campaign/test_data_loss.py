"""Every measured window survives every way a campaign can end (issue 27,
item 4): SIGKILL (the clients' lease lapses mid-round), SIGHUP, a database
another process holds past the wait, a full file system. 'rooftop doctor'
names the windows that are in engine documents but not in the database,
'--recover' (and 'collect --resume') brings each in once, and --resume never
overwrites a document it has not ingested."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from campaign_util import rooftop, samples
from test_kill import LEASE, only_run, run_row, start_collect, wait_for_round, wait_no_engines


def stored_once(res: Path, run: str) -> list[dict]:
    rows = samples(res, run)
    keys = [r["key"] for r in rows]
    assert len(keys) == len(set(keys)), keys
    return rows


def test_sigkill_mid_round_windows_are_recovered_and_resume_keeps_their_documents(tmp_path):
    res = tmp_path / "res"
    p = start_collect(res, "--duration", "0.5", "--warmup", "0.1", "--windows", "12")
    raw = wait_for_round(res, p)
    time.sleep(3.2)  # some windows measured, the round not over
    p.kill()
    p.communicate(timeout=10)
    run = only_run(res)
    wait_no_engines(str(res), LEASE + 4)  # the clients stop once their lease lapsed, and write
    doc = json.loads((raw / "client-0.json").read_text())
    assert not doc["complete"] and doc["result"]["end"] == "lease lapsed", doc["result"].get("end")
    full = doc["result"]["full_windows"]
    assert 2 <= full < 12, full
    assert samples(res, run) == []
    p = rooftop("doctor", "--results", str(res), check=False)
    assert p.returncode == 1 and f"{full} measured samples are in its engine documents" in p.stdout, p.stdout
    assert "--recover" in p.stdout
    # --resume stores them first, keeps their document, then measures the rest.
    rooftop("collect", "--resume", run, "--results", str(res))
    rows = stored_once(res, run)
    assert sorted(r["window"] for r in rows) == list(range(12))
    assert all(r["status"] == "ok" for r in rows), rows
    recovered = [r for r in rows if "lease lapsed" in r["error"]]
    assert sorted(r["window"] for r in recovered) == list(range(full))
    kept = raw / "earlier-1" / "client-0.json"
    assert json.loads(kept.read_text()) == doc
    assert all(Path(r["raw_dir"]) == kept.parent for r in recovered)
    assert run_row(res, run)["status"] == "complete"
    assert rooftop("doctor", "--results", str(res)).returncode == 0
    # The documents hold every window: a rebuild finds all 12 again, once each.
    (res / "rooftop.db").unlink()
    out = rooftop("doctor", "--results", str(res), "--rebuild").stdout
    assert f"run {run}: 12 samples from engine documents" in out, out
    assert sorted(r["window"] for r in stored_once(res, run)) == list(range(12))


def test_sighup_keeps_the_windows_measured(tmp_path):
    res = tmp_path / "res"
    p = start_collect(res, "--duration", "0.5", "--warmup", "0.1", "--windows", "12")
    raw = wait_for_round(res, p)
    time.sleep(3.2)
    p.send_signal(signal.SIGHUP)  # a closed terminal
    p.communicate(timeout=60)
    assert p.returncode == 129
    full = min(json.loads(f.read_text())["result"]["full_windows"] for f in raw.glob("client-*.json"))
    assert full >= 2
    run = only_run(res)
    assert sorted(r["window"] for r in stored_once(res, run)) == list(range(full))
    assert run_row(res, run)["status"] == "interrupted"
    assert rooftop("doctor", "--results", str(res)).returncode == 0
    wait_no_engines(str(res), LEASE + 4)


def test_a_database_held_past_the_wait_loses_no_window(tmp_path):
    """A reader inside a transaction (BEGIN; SELECT) blocks every commit:
    collect waits ROOFTOP_DB_WAIT seconds (default 300; 3 here), then
    stops naming each sample not stored; doctor finds them, --recover
    stores each once."""
    res = tmp_path / "res"
    env = dict(os.environ, ROOFTOP_DB_WAIT="3")
    args = [
        sys.executable,
        "-m",
        "rooftop",
        "collect",
        "--metrics",
        "rpc",
        "--results",
        str(res),
        "--duration",
        "0.4",
        "--warmup",
        "0.1",
        "--windows",
        "3",
        "--set",
        f"engine.lease={LEASE}",
    ]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    wait_for_round(res, p)
    reader = sqlite3.connect(res / "rooftop.db", isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT * FROM samples").fetchall()  # holds its shared lock until COMMIT
    try:
        out, err = p.communicate(timeout=120)
    finally:
        reader.execute("COMMIT")
        reader.close()
    assert p.returncode == 2, (out, err)
    assert "Traceback" not in err, err
    run = only_run(res)
    assert "locked" in err and "3 measured sample(s)" in err and "--recover" in err, err
    assert samples(res, run) == []
    p = rooftop("doctor", "--results", str(res), check=False)
    assert p.returncode == 1 and "3 measured samples are in its engine documents" in p.stdout, p.stdout
    rooftop("doctor", "--results", str(res), "--recover")
    rows = stored_once(res, run)
    assert sorted(r["window"] for r in rows) == [0, 1, 2] and all(r["status"] == "ok" for r in rows)
    assert rooftop("doctor", "--results", str(res)).stdout.strip().endswith("no problem found")
    assert run_row(res, run)["status"] == "complete"
    rooftop("doctor", "--results", str(res), "--recover")  # again: nothing doubled
    assert len(stored_once(res, run)) == 3


def fill(mnt: Path, leave_kib: int) -> Path:
    """Fills a file system but leave_kib KiB (the filler file, to remove after)."""
    filler = mnt / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)
    os.truncate(filler, max(0, filler.stat().st_size - leave_kib * 1024))
    return filler


#: Where in a bw round of 3 windows the file system fills: as its client
#: starts measuring (no window yet, its document never written), between two
#: windows, and once its document exists.
FILL_POINTS = {
    "measure": lambda raw: '"event":"measure"' in _text(raw / "windows-0.jsonl"),
    "window": lambda raw: '"window":0' in _text(raw / "windows-0.jsonl"),
    "document": lambda raw: (raw / "client-0.json").exists(),
}


def _text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _logged(raw: Path) -> int:
    """The windows client rank 0's window log holds, in full, from the first
    (each with an operation completed: a window without one measured nothing)."""
    got = {}
    for line in _text(raw / "windows-0.jsonl").splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if ev.get("event") == "window" and ev.get("ops", 0) > 0:
            got[ev["window"]] = ev
    n = 0
    while n in got:
        n += 1
    return n


@pytest.mark.parametrize("point", sorted(FILL_POINTS))
def test_a_file_system_full_at_any_point_of_a_round_loses_no_window(point):
    """Results on a 2 MiB tmpfs filled at a point of a bw round (FILL_POINTS).
    collect names the full file system and every measured sample not
    stored, leaves no temporary file; once there is room doctor names them,
    --recover stores each once, marked when read from a window log (the
    client's document was never written), and a second --recover stores
    nothing."""
    from mounts import tmpfs_mount

    with tmpfs_mount(2) as mnt:
        res = mnt / "res"
        args = [
            sys.executable,
            "-m",
            "rooftop",
            "collect",
            "--metrics",
            "bw",
            "--results",
            str(res),
            "--duration",
            "0.4",
            "--warmup",
            "0.1",
            "--windows",
            "3",
            "--set",
            f"engine.lease={LEASE}",
            "--set",
            "engine.retries=0",
        ]
        p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        raw = wait_for_round(res, p)
        while not FILL_POINTS[point](raw) and p.poll() is None:  # the round measured, not yet stored
            time.sleep(0.002)
        filler = fill(mnt, 0)
        out, err = p.communicate(timeout=120)
        wait_no_engines(str(res), LEASE + 4)
        assert p.returncode == 2, (out, err)
        assert "Traceback" not in err and "is full" in err, err
        left = [f for f in res.rglob("*") if ".tmp" in f.name or f.name.endswith(".new")]
        assert not left, left
        filler.unlink()
        run = only_run(res)
        keys = [k for window in json.loads((raw / "round.json").read_text())["keys"] for k in window]
        documented = _text(raw / "client-0.json").startswith("{")
        assert documented == (point == "document"), point
        n_logged = 0 if documented else _logged(raw)
        measured = keys[:n_logged] or keys
        assert documented or n_logged, _text(raw / "windows-0.jsonl")  # the log kept what was measured
        # Every measured sample is stored or named (where the journal found room for some, fewer are named).
        stored = {r["key"] for r in stored_once(res, run)}
        named = re.search(r"\d+ measured sample\(s\) of run \S+ are NOT in the database: (.*?); ", err)
        unstored = set(named[1].split(", ")) if named else set()
        assert stored | unstored == set(measured) and not stored & unstored, err
        p = rooftop("doctor", "--results", str(res), check=False)
        assert p.returncode == (1 if unstored else 0), p.stdout
        assert all(k in p.stdout for k in unstored) and "--recover" in p.stdout or not unstored, p.stdout
        if point == "window":  # collect --resume brings them in first, then measures the rest
            p = rooftop("collect", "--resume", run, "--results", str(res), check=False)
            assert p.returncode in (0, 1) and (
                f"{len(unstored)} sample(s) an earlier session" in p.stderr or not unstored
            )
            measured = keys
        else:
            p = rooftop("doctor", "--results", str(res), "--recover")
            assert f"{len(unstored)} samples recovered" in p.stdout or not unstored, p.stdout
        rows = stored_once(res, run)
        assert sorted(r["key"] for r in rows) == sorted(measured) and all(r["status"] != "failed" for r in rows)
        logged = [r for r in rows if "recovered from the window log of client rank(s) 0" in r["error"]]
        assert len(logged) == n_logged, rows
        assert rooftop("doctor", "--results", str(res), "--recover").stdout.strip() == ""  # again: nothing
        assert len(stored_once(res, run)) == len(measured)
        assert rooftop("doctor", "--results", str(res)).returncode == 0


def test_a_window_log_gives_the_windows_measured_in_full(tmp_path):
    """The one reader of window logs (rooftop.engine.enginedoc): a line cut
    by a kill or garbled is left out; the windows are those measured in
    full from the first, up to a gap or a window in which no operation
    completed; without its measuring start a log gives nothing."""
    from rooftop.engine import enginedoc

    log = tmp_path / "windows-0.jsonl"
    head = '"rank":0,"windows":5'
    lines = [
        f'{{"event":"measure",{head},"start_s":100.0,"duration_s":0.5}}',
        f'{{"event":"window",{head},"window":0,"end_s":100.5,"elapsed_s":0.5,"ops":10}}',
        "garbled",
        f'{{"event":"window",{head},"window":1,"end_s":101.0,"elapsed_s":0.5,"ops":12}}',
        f'{{"event":"window",{head},"window":2,"end_s":101.5,"elapsed_s":0.5,"ops":0}}',
        f'{{"event":"window",{head},"window":3,"end_s":102.0,"elapsed_s":0.5,"ops":9}}',
        f'{{"event":"end",{head},"end":"lease lapsed"',  # cut by a kill
    ]
    log.write_text("\n".join(lines))
    events = enginedoc.window_log(log)
    assert [ev["event"] for ev in events] == ["measure", "window", "window", "window", "window"]
    got = enginedoc.log_result(events, 4096)
    assert got is not None
    assert got["windows"] == [{"elapsed_s": 0.5, "work_ops": 10.0}, {"elapsed_s": 0.5, "work_ops": 12.0}]
    assert (got["measure_start_s"], got["op_bytes"], got["end"]) == (100.0, 4096, "no end logged")
    assert enginedoc.log_windows_asked(events) == 5
    assert enginedoc.log_result(events[1:], 1) is None  # no start: the windows cannot be placed
    assert enginedoc.log_result(events[:1], 1) is None  # no window measured
    assert enginedoc.window_log(tmp_path / "absent.jsonl") == []
