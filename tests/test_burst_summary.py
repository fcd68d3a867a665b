"""rooftop bursts without the engine: progress-mode parsing, the per-process
/proc reader against a synthetic tree, the summary and the figure from
synthetic series, and the neighbour's errors."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from rooftop.bursts import figure as bursts_plot
from rooftop.bursts import neighbour, procstat
from rooftop.bursts import run as bursts
from rooftop.bursts import summary as burst_summary


def test_progress_modes_and_spindown_sweep():
    assert bursts.progress_modes("busy,spindown:10,adaptive,block") == ["busy", "spindown:10", "adaptive", "block"]
    assert bursts.progress_modes("busy, spindown:0,1,10,50") == [
        "busy",
        "spindown:0",
        "spindown:1",
        "spindown:10",
        "spindown:50",
    ]
    assert bursts.progress_modes("spindown") == ["spindown"]
    assert bursts.progress_modes("spindown:0.1,1,2.5") == ["spindown:0.1", "spindown:1", "spindown:2.5"]
    with pytest.raises(bursts.BurstsError, match="up to 3 decimals"):
        bursts.progress_modes("spindown:0.0001")
    with pytest.raises(bursts.BurstsError, match="not a progress mode"):
        bursts.progress_modes("poll")
    with pytest.raises(bursts.BurstsError, match="asked twice"):
        bursts.progress_modes("busy,busy")
    with pytest.raises(bursts.BurstsError, match="not a progress mode"):
        bursts.progress_modes("busy,10")  # a number continues only a spindown


def _proc_tree(
    root: Path, pid: int, utime: int, stime: int, tasks: dict[int, tuple[int, int, int]], ran_ns: int = 100
) -> None:
    base = root / str(pid)
    (base / "task").mkdir(parents=True, exist_ok=True)
    fields = ["S"] + ["0"] * 10 + [str(utime), str(stime)] + ["0"] * 30
    (base / "stat").write_text(f"{pid} (rooftop engine) " + " ".join(fields) + "\n")
    for tid, (vol, invol, slices) in tasks.items():
        t = base / "task" / str(tid)
        t.mkdir(exist_ok=True)
        (t / "status").write_text(f"Name:\tx\nvoluntary_ctxt_switches:\t{vol}\nnonvoluntary_ctxt_switches:\t{invol}\n")
        (t / "schedstat").write_text(f"{ran_ns} 200 {slices}\n")


def test_procstat_sums_threads_and_gives_rates(tmp_path):
    ticks = procstat.TICKS
    _proc_tree(tmp_path, 42, 0, 0, {42: (10, 1, 11), 43: (5, 0, 5)})
    m = procstat.ProcMeter(42, tmp_path)
    assert procstat.counters(42, tmp_path)["voluntary_switches"] == 15
    time.sleep(0.2)
    _proc_tree(tmp_path, 42, ticks // 10, ticks // 20, {42: (110, 1, 111), 43: (25, 3, 28)}, ran_ns=100 + 50_000_000)
    rates = {q: v for q, v, _ in m.rates()}
    dt = 0.2
    assert rates["cpu_user"] == pytest.approx(0.1 / dt, rel=0.3)
    assert rates["voluntary_switches"] == pytest.approx(120 / dt, rel=0.3)
    assert rates["involuntary_switches"] == pytest.approx(3 / dt, rel=0.3)
    assert rates["wakeups"] == pytest.approx(123 / dt, rel=0.3)
    assert rates["cpu_wanted"] == pytest.approx(2 * 0.05 / dt, rel=0.3)  # two threads ran 50 ms each
    with pytest.raises(procstat.ProcessGone):
        procstat.counters(999, tmp_path)


def test_procstat_reads_this_process():
    c = procstat.counters(os.getpid())
    assert c["cpu_user"] > 0 and c["voluntary_switches"] >= 0


def _series(mode: str, idle_cpu: float, burst_cpu: float, rate: float, watts: bool) -> list[dict]:
    """Two bursts of 2 s (0.5 s windows) at t = 1 and 5, 0.5 s server ticks to 8 s."""
    rows = []

    def add(source, t, q, v, u=""):
        rows.append({"round": f"bursts/{mode}", "source": source, "t": t, "quantity": q, "value": v, "unit": u})

    for b, start in enumerate((1.0, 5.0)):
        add("schedule", start, "burst_start", b)
        for i in range(4):
            slow = 0.5 if (b == 1 and i == 0) else 1.0
            add("client", start + 0.5 * (i + 1), "rate", rate * slow)
        add("schedule", start + 2.0, "burst_end", b)
    for k in range(1, 17):
        t = 0.5 * k
        inside = any(s <= t - 0.5 and t <= s + 2.0 for s in (1.0, 5.0))
        cpu = burst_cpu if inside else idle_cpu
        add("server", t, "cpu_user", cpu * 0.7)
        add("server", t, "cpu_sys", cpu * 0.3)
        add("server", t, "wakeups", 10.0)
        if watts:
            add("power", t, "power", 30.0 if inside else 10.0, "W")
    return rows


def test_summary_from_series():
    rows = _series("busy", 1.0, 1.0, 40000, watts=True) + _series("block", 0.001, 0.6, 20000, watts=False)
    lines = burst_summary.lines(rows, 0.5)
    assert list(lines) == ["busy", "block"]
    busy = burst_summary.summarize(lines["busy"], 0.5)
    assert busy["bursts"] == 2 and busy["windows"] == 8
    assert busy["burst_rate"] == 40000 and busy["idle_cpu"] == pytest.approx(1.0)
    assert busy["idle_watts"] == 10.0 and busy["burst_watts"] == 30.0
    assert busy["joules_per_op"] == pytest.approx(30.0 / 40000)
    # Burst 1's first window is at half rate: full rate at the end of its second.
    assert busy["time_to_full_s"] == pytest.approx(1.0)
    block = burst_summary.summarize(lines["block"], 0.5)
    assert block["idle_cpu"] == pytest.approx(0.001) and block["burst_cpu"] == pytest.approx(0.6)
    assert block["idle_watts"] is None and block["joules_per_op"] is None
    cells = burst_summary.table_rows([busy, block], {"slowdown": {"busy": 1.93}})
    assert cells[0][0] == "busy" and cells[0][-1] == "1.93x" and cells[1][-1] == "-"
    assert len(cells[0]) == len(burst_summary.HEADER)
    header, shown = burst_summary.table([busy, block], None, power=False, with_neighbour=False)
    assert "J/op" not in header and "idle W" not in header and "neighbour slowdown" not in header
    assert len(shown[0]) == len(header) and shown[1][0] == "block"


def test_a_burst_column_left_empty_is_explained():
    """Bursts as long as the interval, not aligned with it: no interval lies
    wholly inside one, burst CPU is empty, and the notes say why."""
    rows = [
        r for r in _series("busy", 1.0, 1.0, 40000, watts=False) if r["source"] != "server" or r["t"] % 1.0 == 0.5
    ]  # server points at 0.5, 1.5, ...
    line = burst_summary.lines(rows, 1.0)["busy"]
    line.measured = [(1.25, 2.25), (5.25, 6.25)]  # the bursts' measured spans
    row = burst_summary.summarize(line, 1.0)
    assert row["burst_rate"] == 40000 and row["burst_cpu"] is None
    params = {"interval": 1.0, "on": 1.0, "full_rate": 0.9}
    said = burst_summary.notes(params, "", None, [row])
    assert any("burst CPU -" in n and "--interval of at most half of --on" in n for n in said)
    full = burst_summary.summarize(burst_summary.lines(_series("busy", 1.0, 1.0, 40000, watts=False), 0.5)["busy"], 0.5)
    assert full["burst_cpu"] is not None
    assert not any("burst CPU -" in n for n in burst_summary.notes(params, "", None, [full]))


def test_figure_one_panel_per_mode_and_says_when_power_is_absent():
    rows = _series("busy", 1.0, 1.0, 40000, watts=True) + _series("block", 0.001, 0.6, 20000, watts=False)
    lines = burst_summary.lines(rows, 0.5)
    params = {
        "progress": ["busy", "block"],
        "interval": 0.5,
        "metric": "rpc",
        "clients": 1,
        "on": 2.0,
        "off": 2.0,
        "full_rate": 0.9,
    }
    run = type("Run", (), {"id": "r1"})()
    res = {
        "params": params,
        "lines": lines,
        "run": run,
        "power_note": "",
        "rows": [burst_summary.summarize(lines[m], 0.5) for m in lines],
    }
    fig = bursts_plot.figure(res)
    gids = [l.get_gid() for a in fig.axes for l in a.lines]
    # Two panels: rate and CPU each; watts only where power was measured (busy).
    assert gids.count("rate") == 2 and gids.count("cpu") == 2 and gids.count("watts") == 1
    assert "power not measured" not in fig._suptitle.get_text()
    rate_line = next(l for l in fig.axes[0].lines if l.get_gid() == "rate")
    assert 0.0 in list(rate_line.get_ydata())  # the gaps read as zero rate
    res["power_note"] = "no RAPL package zones"
    fig = bursts_plot.figure(res)
    assert "power not measured" in fig._suptitle.get_text()


def test_neighbour_bad_command_is_refused_before_anything_starts():
    with pytest.raises(neighbour.NeighbourFailed, match="not an executable command"):
        neighbour.command("no-such-program-rooftop --x")
    with pytest.raises(neighbour.NeighbourFailed, match="empty"):
        neighbour.command("   ")
    assert neighbour.command("stencil", 64, 5)[-4:] == ["--size", "64", "--iterations", "5"]


def test_neighbour_that_fails_says_why_and_leaves_nothing(tmp_path):
    argv = [sys.executable, "-c", "import sys; sys.stderr.write('boom'); sys.exit(3)"]
    with pytest.raises(neighbour.NeighbourFailed, match="exited with 3: boom"):
        neighbour.alone(argv, sorted(os.sched_getaffinity(0))[:1], tmp_path, 30)
    job = neighbour.start(
        [sys.executable, "-c", "import time; time.sleep(60)"], sorted(os.sched_getaffinity(0))[:1], tmp_path, "sleeper"
    )
    job.stop()
    assert job.proc.poll() is not None


def test_neighbour_is_pinned_and_timed_by_its_document(tmp_path):
    core = sorted(os.sched_getaffinity(0))[-1]
    res = neighbour.alone(neighbour.command("stencil", 64, 20), [core], tmp_path, 60)
    assert res["cores"] == [core] and res["document"]["cpu_affinity"] == [core]
    assert res["timed_by"] == "its own JSON 'seconds'" and 0 < res["seconds"] <= res["wall_s"]


class _Store:
    def __init__(self):
        self.saved: dict = {}

    def add_series(self, run_id, round_name, rows):
        self.saved[round_name] = rows


def _rapl_zone(tmp_path, monkeypatch):
    """A synthetic package-0 powercap zone (range 10 J, counter at 0) that
    rooftop.power reads instead of /sys/class/powercap."""
    from rooftop import power

    zone = tmp_path / "powercap" / "intel-rapl:0"
    zone.mkdir(parents=True)
    (zone / "name").write_text("package-0\n")
    (zone / "max_energy_range_uj").write_text("10000000\n")
    (zone / "energy_uj").write_text("0\n")
    monkeypatch.setattr(power, "POWERCAP", tmp_path / "powercap")
    return zone


def test_timeline_samples_a_process_power_and_client_windows(tmp_path, monkeypatch):
    """The time line of one mode against a synthetic powercap tree (the
    counter advancing 2 J per 0.1 s, wrapping at 10 J) and a window log."""
    import json
    import threading

    from rooftop.bursts.timeline import Timeline

    zone = _rapl_zone(tmp_path, monkeypatch)
    stop = threading.Event()

    def advance():
        e = 0
        while not stop.wait(0.1):
            e = (e + 2_000_000) % 10_000_000
            # Atomically, as sysfs reads are: never seen half-written.
            (zone / "energy_uj.new").write_text(f"{e}\n")
            os.replace(zone / "energy_uj.new", zone / "energy_uj")

    writer = threading.Thread(target=advance, daemon=True)
    writer.start()
    store = _Store()
    tl = Timeline(store, "r", "busy", os.getpid(), 0.2)
    tl.mark("burst_start", 0)
    sdir = tmp_path / "raw"
    sdir.mkdir()
    t0 = tl.t0
    (sdir / "windows-0.jsonl").write_text(
        "\n".join(
            json.dumps(e)
            for e in [
                {"event": "measure"},
                {"event": "window", "window": 0, "end_s": t0 + 0.5, "elapsed_s": 0.25, "ops": 100},
                {"event": "window", "window": 1, "end_s": t0 + 0.75, "elapsed_s": 0.25, "ops": 120},
            ]
        )
        + '\n{"event": "wi'
    )
    (sdir / "windows-1.jsonl").write_text(
        json.dumps({"event": "window", "window": 0, "end_s": t0 + 0.5, "elapsed_s": 0.25, "ops": 50}) + "\n"
    )
    assert tl.add_windows(sdir) == 2
    time.sleep(1.3)
    tl.mark("burst_end", 0)
    tl.stop()
    stop.set()
    tl.save()
    rows = store.saved["bursts/busy"]
    watts = [v for _, q, v, _ in rows["power"] if q == "power"]
    assert tl.power_note == "" and len(watts) >= 4
    assert sorted(watts)[len(watts) // 2] == pytest.approx(20.0, rel=0.35)  # 2 J per 0.1 s, wraps included
    rates = [(t, v) for t, q, v, _ in rows["client"] if q == "rate"]
    assert rates == [(pytest.approx(0.5, abs=0.01), 600.0), (pytest.approx(0.75, abs=0.01), 480.0)]
    assert {q for _, q, _, _ in rows["server"]} >= {"cpu_user", "cpu_sys", "voluntary_switches"}
    assert [q for _, q, _, _ in rows["schedule"]] == ["burst_start", "burst_end"]


def test_a_garbled_power_reading_skips_one_point_and_the_time_line_goes_on(tmp_path, monkeypatch):
    """A counter read that fails (here: an empty energy_uj) loses that
    interval's power, not the rest of the time line."""
    from rooftop.bursts.timeline import Timeline

    zone = _rapl_zone(tmp_path, monkeypatch)
    tl = Timeline(_Store(), "r", "busy", os.getpid(), 60.0)
    tl.stop()
    (zone / "energy_uj").write_text("")
    tl._tick()
    (zone / "energy_uj").write_text("1000000\n")
    tl._tick()
    assert tl.power_skipped == 1
    assert [q for _, q, _, _ in tl.rows["power"]] == ["power", "energy"]
    assert len([r for r in tl.rows["server"] if r[1] == "cpu_user"]) == 2


def test_a_zone_failing_after_another_was_read_advances_none(tmp_path, monkeypatch):
    """Two packages; package-1's counter cannot be read once: package-0's
    reading is not consumed by the failed point, so the next point has the
    energy of both intervals, and the skip reaches the notes."""
    from rooftop import power
    from rooftop.bursts.timeline import Timeline

    zone0 = _rapl_zone(tmp_path, monkeypatch)
    zone1 = zone0.with_name("intel-rapl:1")
    zone1.mkdir()
    (zone1 / "name").write_text("package-1\n")
    (zone1 / "max_energy_range_uj").write_text("10000000\n")
    (zone1 / "energy_uj").write_text("0\n")
    meter = power.PowerMeter(power.package_zones())
    (zone0 / "energy_uj").write_text("1000000\n")
    (zone1 / "energy_uj").write_text("")
    with pytest.raises(ValueError):
        meter.watts()
    (zone1 / "energy_uj").write_text("1000000\n")
    meter.watts()
    assert meter.joules == pytest.approx(2.0)  # 1 J each: package-0's not lost to the failed read

    tl = Timeline(_Store(), "r", "busy", os.getpid(), 60.0)
    tl.stop()
    (zone1 / "energy_uj").write_text("")
    tl._tick()
    tl.save()
    rows = [
        {"round": "bursts/busy", "source": s, "t": t, "quantity": q, "value": v, "unit": u}
        for s, pts in tl.store.saved["bursts/busy"].items()
        for t, q, v, u in pts
    ]
    rows += [{"round": "bursts/busy", "source": "client", "t": 1.0, "quantity": "rate", "value": 5.0, "unit": ""}]
    row = burst_summary.summarize(burst_summary.lines(rows, 60.0)["busy"], 60.0)
    assert row["power_skipped"] == 1
    said = burst_summary.notes({"interval": 60.0, "on": 60.0, "full_rate": 0.9}, "", None, [row])
    assert any("RAPL counter failed" in n and "busy: 1" in n for n in said)
