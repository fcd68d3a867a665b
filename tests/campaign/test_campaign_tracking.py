"""Progress that moves during measurement (issue 13, item 1): the bars
advance per window as the engines log them, the ETA comes from the plan,
`--dry-run` prints the expected run time, and a campaign expected to take
over an hour says so before it starts."""

from __future__ import annotations

import datetime
import json
import signal
import subprocess
import sys
import time

import pytest
from campaign_util import engine_processes, rooftop, samples

from rooftop.campaign import plan_collect, tracking
from rooftop.campaign.costs import AGENTS, PER_PLACEMENT
from rooftop.campaign.tracking import Tracker, WindowFollower, expect, fmt_duration
from rooftop.config.files import up_to_date
from rooftop.engine import enginedoc

# A config of engine.launch = per-placement (as _cfg builds it): a launch per placement.
PLACEMENT_S, ROUND_S = PER_PLACEMENT.placement_s, PER_PLACEMENT.round_s

ENGINE = {"start": "barrier", "settle": 0.1, "start_lead": 0.5, "launch": "per-placement"}


def _cfg(nodes=2, metrics=("rpc", "bw"), samples=3, duration=1.0, warmup=0.5, pairs="serial"):
    """Every other key at its default, as a resolved config has it."""
    return up_to_date(
        {
            "nodes": [{"index": i} for i in range(nodes)],
            "metrics": list(metrics),
            "engine": ENGINE,
            "collect": {
                "server_peak": True,
                "client_peak": True,
                "client_node": True,
                "sweep_servers": False,
                "pairs": pairs,
                "windows": samples,
                "duration": duration,
                "warmup": warmup,
                "servers_per_node": 1,
                "clients_per_node": 1,
            },
        }
    )


def test_expected_time_of_a_known_plan():
    # 2 nodes: one placement (measured once for three stages), a round per
    # metric, 3 windows of 1 s each, warmup 0.5 s per round and no settle:
    # each round's lone client starts without the barrier.
    cfg = _cfg()
    x = expect(cfg, plan_collect(cfg))
    assert (x.placements, x.rounds, x.windows) == (1, 2, 6)
    assert x.measuring_s == pytest.approx(6.0) and x.warmup_s == pytest.approx(1.0)
    assert x.total_s == pytest.approx(6.0 + 1.0 + PLACEMENT_S + 2 * ROUND_S)
    # Two clients start on the barrier: its settle (0.1 s) is counted too
    # (the server peak's rounds, of 2 clients; the client peak's are lone).
    two = dict(cfg, collect=dict(cfg["collect"], clients_per_node=2))
    assert expect(two, plan_collect(two)).warmup_s == pytest.approx(2 * (0.5 + 0.1) + 2 * 0.5)
    # Every row carries its share, and the shares add up to the whole.
    assert len(x.cost) == 6 and sum(x.cost.values()) == pytest.approx(x.total_s)
    assert set(x.stage.values()) == {"server_peak"}
    # What is stored already is not expected again: the rpc round is done.
    done = {k for k in x.cost if "/rpc/" in k}
    left = expect(cfg, plan_collect(cfg), done)
    assert (left.placements, left.rounds, left.windows) == (1, 1, 3)
    assert left.total_s == pytest.approx(3.0 + 0.5 + PLACEMENT_S + ROUND_S)
    assert set(left.cost) == set(x.cost) - done
    # The clock start waits start_lead instead of settle.
    clock = dict(cfg, engine=dict(ENGINE, start="clock"))
    assert expect(clock, plan_collect(clock)).warmup_s == pytest.approx(2 * (0.5 + 0.5))
    # engine.launch = agents: the agents' start once (carried by the first
    # row), and the agents' costs per placement and round.
    agents = dict(cfg, engine=dict(ENGINE, launch="agents"))
    a = expect(agents, plan_collect(agents))
    assert a.total_s == pytest.approx(6.0 + 1.0 + AGENTS.fixed_s(2) + AGENTS.placement_s + 2 * AGENTS.round_s)
    assert AGENTS.fixed_s(2) > 0 and sum(a.cost.values()) == pytest.approx(a.total_s)


@pytest.mark.parametrize("pairs", ["serial", "rounds"])
def test_expected_time_of_a_plan_of_many_placements_and_pairs(pairs):
    cfg = _cfg(nodes=5, pairs=pairs, samples=2)
    plan = plan_collect(cfg)
    x = expect(cfg, plan)
    rows = [k for pl in plan for k in pl.keys()]
    assert sorted(x.cost) == sorted(rows)
    assert x.placements == len(plan) > 1
    assert x.total_s == pytest.approx(x.measuring_s + x.warmup_s + x.placements * PLACEMENT_S + x.rounds * ROUND_S)
    assert sum(x.cost.values()) == pytest.approx(x.total_s)
    # A pair round measures its pairs at once: one window of time for all.
    assert x.measuring_s == pytest.approx(sum(m.duration * len(m.windows) for pl in plan for m in pl.measurements))
    assert {x.stage[k] for k in x.cost} == {m.stage for pl in plan for m in pl.measurements}


def test_fmt_duration():
    assert [fmt_duration(s) for s in (0.25, 9.96, 45, 92, 3599, 3600, 7500, 86400 * 3 + 3600)] == [
        "0.2 s",
        "10.0 s",
        "45 s",
        "1 min 32 s",
        "59 min 59 s",
        "1 h 00 min",
        "2 h 05 min",
        "3 d 1 h",
    ]


def test_the_tracker_counts_a_row_once_and_scales_the_eta(tmp_path):
    cfg = _cfg(metrics=("rpc",), samples=4, duration=10.0, warmup=0.0)
    x = expect(cfg, plan_collect(cfg))  # 40 s of windows, 0.1 s settle, 3.8 s overhead
    now = [100.0]
    log = tmp_path / "progress.jsonl"
    t = Tracker(x, log, clock=lambda: now[0])
    assert t.eta() == pytest.approx(x.total_s) and t.done() == (0, 4)
    keys = list(x.cost)
    now[0] += 2 * x.cost[keys[0]]  # the first window took twice the plan's time
    assert t.count([keys[0]], "window") == [keys[0]]
    assert t.count([keys[0]], "sample") == []  # its row, stored later: counted already
    assert t.done() == (1, 4) and t.done("server_peak") == (1, 4)
    assert t.eta() == pytest.approx(2 * (x.total_s - x.cost[keys[0]]))
    now[0] += 5
    assert t.eta() == pytest.approx(2 * (x.total_s - x.cost[keys[0]]) - 5)  # counts down meanwhile
    assert t.count(keys[1:] + ["not/planned"], "sample") == keys[1:]
    assert t.eta() == 0 and t.eta("server_peak") == 0 and t.done() == (4, 4)
    events = [json.loads(l) for l in log.read_text().splitlines()]
    assert [e["event"] for e in events] == ["start", "window", "sample"]
    assert events[0]["rows"] == 4 and events[0]["expected_s"] == pytest.approx(x.total_s, abs=1e-3)
    assert [e["run_done"] for e in events[1:]] == [1, 4]
    assert events[2]["keys"] == keys[1:] and events[2]["stage_total"] == 4


def _window_line(rank: int, w: int) -> str:
    ev = {"event": "window", "rank": rank, "windows": 3, "window": w, "end_s": 1.0 + w, "elapsed_s": 1.0, "ops": 5}
    return json.dumps(ev) + "\n"


def test_the_follower_reports_a_window_once_every_client_has_measured_it(tmp_path):
    got: list[int] = []
    f = WindowFollower(tmp_path, ranks=2, windows=3, on_window=got.append)
    f.poll()
    assert got == []  # no file yet: nothing measured
    (tmp_path / "windows-0.jsonl").write_text(_window_line(0, 0) + _window_line(0, 1))
    f.poll()
    assert got == []  # rank 1 has measured nothing yet
    with open(tmp_path / "windows-1.jsonl", "w") as w1:
        w1.write(_window_line(1, 0) + _window_line(1, 1)[:12])  # the second line half written
        w1.flush()
        f.poll()
        assert got == [0]
        w1.write(_window_line(1, 1)[12:] + "garbage\n" + _window_line(1, 2))
    f.poll()
    assert got == [0, 1]  # rank 0 has not measured window 2
    with open(tmp_path / "windows-0.jsonl", "a") as w0:
        w0.write(_window_line(0, 2) + _window_line(0, 7))  # beyond the round: ignored
    f.poll()
    f.poll()
    assert got == [0, 1, 2]


def test_the_follower_survives_a_failing_callback(tmp_path):
    (tmp_path / "windows-0.jsonl").write_text(_window_line(0, 0) + _window_line(0, 1))
    calls = []

    def boom(w):
        calls.append(w)
        raise RuntimeError("a broken bar")

    with WindowFollower(tmp_path, ranks=1, windows=2, on_window=boom, period=0.01):
        time.sleep(0.2)
    assert calls == [0, 1]


def test_dry_run_prints_the_expected_run_time(tmp_path):
    p = rooftop(
        "collect",
        "--dry-run",
        "--nodes",
        "2",
        "--set",
        "launcher.cores_per_node=1",
        "--metrics",
        "rpc",
        "--windows",
        "3",
        "--duration",
        "2",
        "--warmup",
        "0.5",
        "--results",
        str(tmp_path),
    )
    # engine.launch's default, agents: their start once, then cheaper placements and rounds.
    overhead = AGENTS.fixed_s(2) + AGENTS.placement_s + AGENTS.round_s
    total = 3 * 2 + 0.5 + overhead  # a lone client: no settle
    assert p.stdout.splitlines()[-1] == (
        f"# expected run time: {fmt_duration(total)} (1 placement, 1 client round, 3 windows: "
        f"measuring 6.0 s, warmups 0.5 s, overhead {fmt_duration(overhead)} at "
        f"{AGENTS.placement_s:g} s per placement and {AGENTS.round_s:g} s per round)"
    )
    assert "warning" not in p.stderr


def test_dry_run_of_a_campaign_over_an_hour_warns(tmp_path):
    p = rooftop(
        "collect", "--dry-run", "--metrics", "rpc", "--windows", "10000", "--duration", "1", "--results", str(tmp_path)
    )
    assert "# expected run time: 2 h 46 min" in p.stdout.splitlines()[-1]
    # The line of what this run can tell comes first, then the warning, before anything runs.
    first, second = p.stderr.splitlines()[:2]
    assert first.startswith("rooftop collect: ")
    assert second.startswith("rooftop: warning: this campaign is expected to take 2 h 46 min")


def _when(utc: str) -> float:
    return datetime.datetime.fromisoformat(utc.replace("Z", "+00:00")).timestamp()


def test_progress_moves_per_window_before_the_round_ends(tmp_path):
    res = tmp_path / "res"
    p = rooftop(
        "collect",
        "--metrics",
        "rpc",
        "--windows",
        "4",
        "--duration",
        "0.5",
        "--warmup",
        "0.2",
        "--set",
        "collect.client_peak=false",
        "--set",
        "collect.client_node=false",
        "--results",
        str(res),
    )
    run = p.stdout.strip().splitlines()[-1]
    rows = samples(res, run)
    assert len(rows) == 4 and all(r["status"] == "ok" for r in rows)
    raw = res / run / "raw" / "server_peak_rpc_s0x1_c1x1"
    logged = [json.loads(l) for l in (raw / "windows-0.jsonl").read_text().splitlines()]
    ends = [l["end_s"] for l in logged if l["event"] == "window"]
    client_end = _when(json.loads((raw / "client-0.json").read_text())["environment"]["end_utc"])
    events = [json.loads(l) for l in (res / run / tracking.PROGRESS_LOG).read_text().splitlines()]
    assert [e["event"] for e in events[:2]] == ["command", "start"] and events[1]["rows"] == 4
    assert events[0]["verb"] == "collect" and events[-1]["event"] == "end" and events[-1]["wall_s"] > 0
    windows = [e for e in events if e["event"] == "window"]
    # Each window counted on its own, as it ended, not at the end of the round.
    assert [e["run_done"] for e in windows] == [1, 2, 3, 4]
    assert [e["keys"] for e in windows] == [[r["key"]] for r in rows]
    for k, e in enumerate(windows):
        assert ends[k] <= e["t"] + 0.01, (k, e, ends)
    assert all(windows[k]["t"] < ends[-1] for k in range(3)), (windows, ends)
    assert windows[0]["t"] < client_end - 1.0
    assert windows[0]["eta_s"] > windows[-1]["eta_s"] == 0
    # The log lines (stderr is not a terminal here) say so, window by window.
    lines = p.stderr.splitlines()
    measured = [i for i, l in enumerate(lines) if "window measured" in l]
    stored = [i for i, l in enumerate(lines) if l.strip().startswith(rows[0]["key"] + ": ") and "ops/s" in l]
    assert len(measured) == 4 and stored and max(measured) < stored[0]
    assert "(run 1/4, ETA " in lines[measured[0]]
    # validate --dry-run prints its own expected time.
    v = rooftop("validate", run, "--dry-run", "--windows", "2", "--duration", "1", "--results", str(res))
    assert v.stdout.splitlines()[-1].startswith("# expected run time: ")
    assert "2 windows: measuring 2.0 s" in v.stdout.splitlines()[-1]


def test_a_campaign_over_an_hour_says_so_first_and_still_runs(tmp_path):
    res = tmp_path / "res"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rooftop",
            "collect",
            "--metrics",
            "rpc",
            "--windows",
            "5000",
            "--duration",
            "1",
            "--warmup",
            "0.2",
            "--set",
            "collect.client_peak=false",
            "--set",
            "collect.client_node=false",
            "--results",
            str(res),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            lines.append(line)
            if "window measured" in line or not line:
                break
        assert lines[0].startswith("rooftop collect: ")  # what this run can tell
        assert lines[1].startswith("rooftop: warning: this campaign is expected to take 1 h 23 min")
        assert "window measured" in lines[-1], lines  # it runs
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    run = out.strip().splitlines()[-1]
    assert samples(res, run)  # the windows measured before Ctrl-C are stored
    assert not engine_processes(str(res))


def test_a_killed_commands_time_is_read_from_its_logs(tmp_path):
    """unrecorded_time: the last 'command' without an 'end' ran from its
    event to its last sign of work (a progress event, or a window its
    clients logged later); agents' beats do not count; an ended command,
    or a line cut short by the kill, adds nothing wrong."""
    run = tmp_path / "run"
    (run / "raw" / "r0").mkdir(parents=True)
    (run / "agents" / "a").mkdir(parents=True)
    t0 = time.time() - 100
    lines = [
        {"t": t0 - 50, "event": "command", "verb": "collect", "pid": 1},
        {"t": t0 - 40, "event": "end", "wall_s": 10.0},
        {"t": t0, "event": "command", "verb": "validate", "pid": 7},
        {"t": t0 + 1, "event": "start"},
        {"t": t0 + 4, "event": "window", "keys": ["k"]},
    ]
    log = run / tracking.PROGRESS_LOG
    log.write_text("".join(json.dumps(e) + "\n" for e in lines) + '{"t": 1795, "ev')
    lost, why = tracking.unrecorded_time(run)
    assert abs(lost - 4.0) < 1e-6 and "validate (pid 7)" in why, (lost, why)
    windows = run / "raw" / "r0" / enginedoc.WINDOW_LOG.format(rank=0)
    windows.write_text("{}\n")
    os_utime = __import__("os").utime
    os_utime(windows, (t0 + 9, t0 + 9))  # its client measured on after the campaign died
    beat = run / "agents" / "a" / "beat"
    beat.write_text("1")
    os_utime(beat, (t0 + 30, t0 + 30))
    assert abs(tracking.unrecorded_time(run)[0] - 9.0) < 1e-3
    os_utime(windows, (t0 - 45, t0 - 45))  # an earlier command's window: not this one's
    assert abs(tracking.unrecorded_time(run)[0] - 4.0) < 1e-3
    tracking.log_event(run, "end", wall_s=4.0, recovered="validate (pid 7)")
    assert tracking.unrecorded_time(run) == (0.0, "")
    assert tracking.unrecorded_time(tmp_path / "none") == (0.0, "")


def test_rows_rebuilt_from_documents_count_a_pair_rounds_window_once():
    """store_rows (--resume, doctor --recover and --rebuild): the pairs of one
    window of a round were measured at once, so the run's measured time
    grows by the window, not by the window per pair."""
    from rooftop.campaign.recover import store_rows

    class Store:
        def __init__(self):
            self.added = []

        def add_sample(self, run_time_s=None, **row):
            self.added.append((row["key"], run_time_s))

    rows = [
        {"key": f"p{p}/{w}", "raw_dir": "raw/r", "metric": "rpc", "window": w, "attempt": 1, "measured_s": 1.0}
        for w in range(2)
        for p in range(3)
    ] + [{"key": "other/0", "raw_dir": "raw/o", "metric": "rpc", "window": 0, "attempt": 1, "measured_s": 2.0}]
    store = Store()
    store_rows(store, rows)
    assert sum(t for _, t in store.added) == 4.0, store.added
    assert [k for k, _ in store.added] == [r["key"] for r in rows]
