"""rooftop bursts end to end with the real engine, short bursts (1 s on, 2 s
off): idle CPU per progress mode, the run stored like any (runs, export,
report), the neighbour's slowdown on the server's core, and Ctrl-C.

Bounds are generous: the machine is shared and loaded. A busy server spins
in the gaps (about a core; less when another process shares its core: the
engine's own progress test takes 0.3); spindown and block sleep there.
Block's lower burst rate than busy's is not asserted: on a loaded 2-core
machine a burst's rate follows the load more than the mode; the benchmark
(benchmarks/engine_vs_reference.py, adjacent pairs) measures it.
"""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from campaign_util import rooftop, samples

FABRICS = ["ofi+tcp", "ofi+shm"]
SHORT = ["--bursts", "2", "--on", "1", "--off", "2", "--interval", "0.25"]


def _env(tmp_path: Path, mark: str = "") -> dict:
    env = dict(os.environ, ROOFTOP_CORES_LOCK=str(tmp_path / "cores.lock"))
    if mark:
        env["ROOFTOP_TEST_MARK"] = mark
    return env


def _marked(mark: str) -> list[str]:
    """Live processes (not zombies) whose environment carries the mark: every
    engine and neighbour a run started inherits it."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            if f"ROOFTOP_TEST_MARK={mark}".encode() not in (d / "environ").read_bytes():
                continue
            if (d / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                continue
            found.append((d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:
            continue
    return found


@pytest.mark.parametrize(
    "fabric,modes,nbursts", [("ofi+tcp", "busy,spindown:10,block", 1), ("ofi+shm", "busy,spindown:10", 1)]
)
def test_bursts_idle_cpu_per_mode_and_the_run_is_stored(fabric, modes, nbursts, tmp_path):
    res = tmp_path / "r"
    p = rooftop(
        "bursts",
        "--progress",
        modes,
        *SHORT,
        "--bursts",
        str(nbursts),
        "--fabric",
        fabric,
        "--results",
        str(res),
        "--json",
        env=_env(tmp_path),
        timeout=120,
    )
    out = json.loads(p.stdout)
    rows = {r["mode"]: r for r in out["modes"]}
    assert out["status"] == "complete" and list(rows) == modes.split(",")
    for r in rows.values():
        assert r["bursts"] == nbursts and r["windows"] == 4 * nbursts and r["burst_rate"] > 0, r
    # In the gaps busy spins: it wants a whole core (running or runnable)
    # and gets what the load leaves it; spindown and block sleep (over shm,
    # with no fd to sleep on, in short sleeps whose wake-ups queue on a
    # loaded machine: their CPU wanted is not asserted).
    assert rows["busy"]["idle_cpu_wanted"] > 0.7, rows["busy"]
    assert rows["busy"]["idle_cpu"] > 0.1, rows["busy"]
    for m in modes.split(",")[1:]:
        assert rows[m]["idle_cpu"] < 0.1, rows[m]
        assert rows["busy"]["idle_cpu"] > 5 * rows[m]["idle_cpu"], (rows["busy"], rows[m])
    if fabric != "ofi+tcp":
        return  # the run's storage is the same over every fabric: checked once
    run = out["run"]
    # Like any run: listed, exported (samples and series), reported.
    listed = json.loads(rooftop("runs", "--results", str(res), "--json").stdout)
    nrows = 4 * nbursts * len(rows)
    assert [(r["id"], r["status"], r["samples"]) for r in listed] == [(run, "complete", nrows)]
    rows_csv = list(csv.DictReader(io.StringIO(rooftop("export", run, "--results", str(res)).stdout)))
    assert {r["stage"] for r in rows_csv} == {"bursts"} and len(rows_csv) == nrows
    series = list(csv.DictReader(io.StringIO(rooftop("export", run, "--series", "--results", str(res)).stdout)))
    assert {f"bursts/{m}" for m in rows} <= {s["round"] for s in series}
    assert {"server", "client", "schedule"} <= {s["source"] for s in series}
    assert rooftop("plot", run, "--results", str(res)).stdout.split() == [
        str(res / run / "figures" / "bursts.png"),
        str(res / run / "figures" / "bursts.svg"),
    ]
    page = Path(rooftop("report", run, "--results", str(res)).stdout.strip())
    text = page.read_text()
    assert "Per progress mode" in text and "spindown:10" in text and "data:image/png" in text
    if out["power_note"]:
        assert "Power is not measured here" in text
    # Every parameter is recorded, defaults included.
    b = json.loads((res / run / "config.json").read_text())["bursts"]
    assert b["full_rate"] == 0.9 and b["clients"] == 1 and b["neighbour"] is None and b["off"] == 2.0
    assert b["progress"] == modes.split(",") and b["windows_per_burst"] == 4


def test_neighbour_slowdown_busy_above_spindown(tmp_path):
    res = tmp_path / "r"
    # A short burst and a longer gap: the job runs mostly in the gap, where
    # the modes differ (in a burst both poll).
    p = rooftop(
        "bursts",
        "--progress",
        "busy,spindown:10",
        "--bursts",
        "1",
        "--on",
        "0.5",
        "--off",
        "4",
        "--interval",
        "0.5",
        "--neighbour",
        "stencil",
        "--stencil-size",
        "256",
        "--stencil-iterations",
        "4000",
        "--results",
        str(res),
        "--json",
        env=_env(tmp_path),
        timeout=120,
    )
    out = json.loads(p.stdout)
    nb = out["neighbour"]
    assert out["status"] == "complete" and nb["alone_s"] > 0, out
    slow = nb["slowdown"]
    # On a core of its own a spinning server takes half of it: the stencil
    # about halves its speed (2x). Other work on the core dilutes that: on
    # this 2-core machine under a load of 9 to 17, busy measured 1.15x to
    # 1.7x and spindown 1.05x to 1.15x; the bounds allow for it. A spindown
    # server gives the core back in the gaps.
    assert slow["busy"] > 1.1, nb
    assert slow["busy"] > slow["spindown:10"] * 1.05, nb
    text = Path(rooftop("report", out["run"], "--results", str(res)).stdout.strip()).read_text()
    assert "Cost to the job beside the server" in text


def test_bad_neighbour_is_a_clear_error_and_leaves_nothing(tmp_path):
    mark = uuid.uuid4().hex
    p = rooftop(
        "bursts",
        "--progress",
        "busy",
        *SHORT,
        "--neighbour",
        "no-such-cmd-rooftop --go",
        "--results",
        str(tmp_path / "r"),
        env=_env(tmp_path, mark),
        check=False,
    )
    assert p.returncode == 2 and "'no-such-cmd-rooftop' is not an executable command" in p.stderr
    failing = f"{sys.executable} -c 'import sys; sys.exit(4)'"
    p = rooftop(
        "bursts",
        "--progress",
        "busy",
        *SHORT,
        "--neighbour",
        failing,
        "--results",
        str(tmp_path / "r"),
        env=_env(tmp_path, mark),
        check=False,
    )
    assert p.returncode == 1 and "exited with 4" in p.stderr, p.stderr
    assert _marked(mark) == []


def test_ctrl_c_in_a_burst_keeps_its_intervals_and_leaves_no_process(tmp_path):
    mark, res = uuid.uuid4().hex, tmp_path / "r"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rooftop",
            "bursts",
            "--progress",
            "busy",
            "--bursts",
            "2",
            "--on",
            "4",
            "--off",
            "1",
            "--interval",
            "0.25",
            "--neighbour",
            "stencil",
            "--stencil-size",
            "128",
            "--stencil-iterations",
            "3000",
            "--neighbour-timeout",
            "60",
            "--results",
            str(res),
        ],
        env=_env(tmp_path, mark),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    logs: list[Path] = []
    while time.monotonic() < deadline:  # until the first burst has measured 3 windows
        logs = list(res.glob("*/raw/bursts_rpc_busy_b0/windows-0.jsonl"))
        if logs and logs[0].read_text().count('"event":"window"') >= 3:
            break
        time.sleep(0.1)
    assert logs, "the first burst never measured"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert _marked(mark) == []  # no engine, no neighbour
    run = out.strip().splitlines()[-1]
    kept = [s for s in samples(res, run) if s["status"] == "ok"]
    assert len(kept) >= 3 and {s["stage"] for s in kept} == {"bursts"}
    listed = json.loads(rooftop("runs", "--results", str(res), "--json").stdout)
    assert listed[0]["status"] == "interrupted"
    series = json.loads(rooftop("export", run, "--series", "--format", "json", "--results", str(res)).stdout)
    assert any(p["source"] == "server" for p in series["series"])
    assert any(p["source"] == "client" for p in series["series"])
