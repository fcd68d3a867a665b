"""What a campaign tracks of its own run (its progress while it runs; not
the engine's progress modes, engine.server_progress and the like): the time its plan is expected
to take, row by row (the warning before a long campaign, the ETAs; priced
by rooftop.campaign.estimate), the windows its clients have measured so
far (followed from the engine's `load --window-log` files while a round
runs) and the progress log (`progress.jsonl` in the run's folder).
`rooftop.ui` draws the bars.

Names no stage and no metric: it reads the plan (placements, their
measurements) and the config's start options."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rooftop.campaign.estimate import Estimate, count, estimate, fmt_duration, round_start_s
from rooftop.campaign.plan import client_rounds
from rooftop.engine import enginedoc
from rooftop.stages import Placement

__all__ = [
    "LONG_S",
    "PROGRESS_LOG",
    "Expected",
    "Tracker",
    "WindowFollower",
    "expect",
    "fmt_duration",
    "log_event",
    "unrecorded_time",
]

#: A campaign expected to take longer than this says so before it starts.
LONG_S = 3600.0
#: The campaign's progress log, in the run's folder.
PROGRESS_LOG = "progress.jsonl"


@dataclass
class Expected:
    """A plan's expected run time (its Estimate: rooftop.campaign.estimate),
    and what each stored row costs of it."""

    estimate: Estimate
    #: Row key -> seconds, in plan order: its share of its window, and for
    #: the first window of a round (of a placement, of the campaign) the
    #: round's start (and the placement's, the launch mode's once per
    #: campaign), as the bars count it once that window is measured.
    cost: dict[str, float] = field(default_factory=dict)
    #: Row key -> the stage whose bar counts it.
    stage: dict[str, str] = field(default_factory=dict)

    @property
    def placements(self) -> int:
        return self.estimate.work.placements

    @property
    def rounds(self) -> int:
        return self.estimate.work.rounds

    @property
    def windows(self) -> int:
        return self.estimate.work.windows

    @property
    def measuring_s(self) -> float:
        return self.estimate.work.measuring_s

    @property
    def warmup_s(self) -> float:
        return self.estimate.work.warmup_s

    @property
    def overhead_s(self) -> float:
        return self.estimate.overhead_s

    @property
    def total_s(self) -> float:
        return self.estimate.total_s

    def line(self) -> str:
        return self.estimate.line()

    def warning(self) -> str | None:
        """What to say before a campaign longer than LONG_S starts (None: nothing)."""
        if self.total_s <= LONG_S:
            return None
        return (
            f"this campaign is expected to take {fmt_duration(self.total_s)} "
            f"({self.line().split('(', 1)[1]}; fewer samples, a shorter duration or fewer "
            f"stages shorten it. It runs: Ctrl-C stops it with every sample measured so far "
            f"stored, and it can be continued"
        )


def expect(cfg: dict, placements: list[Placement], done: set[str] | frozenset = frozenset()) -> Expected:
    """The expected run time of what is left of a plan (rows in done are
    stored already), as the Runner measures it: a server group per
    placement with something left, then its client rounds."""
    x = Expected(estimate(cfg, count(cfg, placements, done)))
    mode = x.estimate.mode
    windows: list[tuple[list[str], float]] = []  # (rows left, seconds), in order
    for pl in placements:
        todo = client_rounds(pl.measurements, done)
        if not todo:
            continue
        placement = len(windows)
        for rnd in todo:
            first, m = len(windows), rnd.measurement
            for w in rnd.windows:
                windows.append(([k for k in m.row_keys(w) if k not in done], m.duration + mode.window.value))
                for k in windows[-1][0]:
                    x.stage[k] = m.stage
            start = mode.round_start.value + round_start_s(cfg, m.warmup, m.client_procs)
            windows[first] = (windows[first][0], windows[first][1] + start)
            windows[-1] = (windows[-1][0], windows[-1][1] + mode.round_end.value)
        windows[placement] = (windows[placement][0], windows[placement][1] + mode.placement_start.value)
        windows[-1] = (windows[-1][0], windows[-1][1] + mode.placement_stop.value)
    if windows:
        windows[0] = (windows[0][0], windows[0][1] + x.estimate.fixed_s)
    _spread(windows, x.cost)
    return x


def _spread(windows: list[tuple[list[str], float]], cost: dict[str, float]) -> None:
    """Each window's seconds over its rows (a window without rows left
    passes them on to the next one, or back to the last one that has)."""
    carry, last = 0.0, None
    for keys, seconds in windows:
        carry += seconds
        if keys:
            for k in keys:
                cost[k] = carry / len(keys)
            carry, last = 0.0, keys
    if carry and last:
        for k in last:
            cost[k] += carry / len(last)


class Tracker:
    """Rows counted so far (a window every client measured, or a row stored:
    whichever comes first), per stage and for the run, and the time left:
    the plan's cost of the rows left, scaled by how long the counted ones
    actually took. Thread-safe (windows are reported from a follower
    thread). Writes each event to the progress log, if given one."""

    def __init__(self, expected: Expected, log: Path | None = None, clock: Callable[[], float] = time.monotonic):
        self.x, self.log, self.clock = expected, log, clock
        self.t0 = clock()
        self.counted: set[str] = set()
        self.done_cost = 0.0
        self.order = list(dict.fromkeys(expected.stage.values()))  # stages in plan order
        self.left = dict.fromkeys(self.order, 0.0)
        self.total = dict.fromkeys(self.order, 0)
        for k, st in expected.stage.items():
            self.left[st] += expected.cost[k]
            self.total[st] += 1
        self.n = dict.fromkeys(self.order, 0)
        self._lock = threading.Lock()
        self._at = self.t0  # when the ETAs below were computed
        self._finish = self._finishes(1.0)
        self._write(
            {
                "event": "start",
                "expected_s": round(expected.total_s, 3),
                "rows": len(expected.cost),
                "stages": self.total,
            }
        )

    def factor(self) -> float:
        """Time taken per second of plan, over the rows counted (1 before any)."""
        return (self.clock() - self.t0) / self.done_cost if self.done_cost > 0 else 1.0

    def _finishes(self, factor: float) -> dict[str | None, float]:
        """Seconds from now until each stage (and the run: None) is done."""
        out: dict[str | None, float] = {}
        before = 0.0
        for st in self.order:
            before += self.left[st]
            out[st] = before * factor
        out[None] = before * factor
        return out

    def count(self, keys: list[str], event: str) -> list[str]:
        """Counts the rows of keys not counted yet; returns those."""
        with self._lock:
            new = [k for k in keys if k in self.x.cost and k not in self.counted]
            for k in new:
                self.counted.add(k)
                self.done_cost += self.x.cost[k]
                self.left[self.x.stage[k]] -= self.x.cost[k]
                self.n[self.x.stage[k]] += 1
            if new:
                self._at, self._finish = self.clock(), self._finishes(self.factor())
                st = self.x.stage[new[0]]
                self._write(
                    {
                        "event": event,
                        "keys": new,
                        "stage": st,
                        "stage_done": self.n[st],
                        "stage_total": self.total[st],
                        "run_done": len(self.counted),
                        "run_total": len(self.x.cost),
                        "stage_eta_s": round(self._eta(st), 3),
                        "eta_s": round(self._eta(None), 3),
                    }
                )
            return new

    def _eta(self, stage: str | None) -> float:
        return max(0.0, self._finish.get(stage, 0.0) - (self.clock() - self._at))

    def eta(self, stage: str | None = None) -> float:
        """Seconds until stage (None: the run) is expected to be done."""
        with self._lock:
            n, total = self.done(stage)
            return 0.0 if n == total else self._eta(stage)

    def done(self, stage: str | None = None) -> tuple[int, int]:
        """(rows counted, rows planned) of stage (None: the run)."""
        if stage is None:
            return len(self.counted), len(self.x.cost)
        return self.n.get(stage, 0), self.total.get(stage, 0)

    def _write(self, event: dict) -> None:
        if self.log is None:
            return
        try:
            _append(self.log, event)
        except OSError:
            self.log = None  # progress is not worth failing a campaign for


def log_event(run_dir: Path, event: str, **fields) -> None:
    """Appends one event to a run's progress log (PROGRESS_LOG): a command's
    'command' when it starts measuring and 'end' (with the wall time it
    adds to the run) once it has stopped; the Tracker writes the rest."""
    try:
        _append(run_dir / PROGRESS_LOG, {"event": event, **fields})
    except OSError:
        pass  # progress is not worth failing a campaign for


def _append(log: Path, event: dict) -> None:
    """One event, one line, on a line of its own (a line a killed campaign
    cut short is left as it is, not joined to this one)."""
    with open(log, "ab+") as f:
        head = b""
        if f.seek(0, os.SEEK_END) > 0:
            f.seek(-1, os.SEEK_END)
            head = b"" if f.read(1) == b"\n" else b"\n"
        f.write(head + (json.dumps({"t": round(time.time(), 3), **event}) + "\n").encode())


def unrecorded_time(run_dir: Path) -> tuple[float, str]:
    """Seconds a command of this run spent measuring and did not add to the
    run's time, because it died without a word (SIGKILL, a crash): the span
    from its 'command' event, the last in the progress log, to its last
    sign of work -- its last progress event, or the last window its
    clients logged (their window logs under raw/<round>; clients left running
    finish their windows under the lease, and a resumed campaign stores
    those). (0, '') when the last command ended ('end' after it) or the
    log has none. Agents' beats and servers' documents written when their
    lease ran out are not work, so they do not count."""
    try:
        lines = (run_dir / PROGRESS_LOG).read_text().splitlines()
    except OSError:
        return 0.0, ""
    events = []
    for line in lines:
        try:
            ev = json.loads(line)
            events.append((float(ev["t"]), str(ev.get("event", "")), ev))
        except (ValueError, KeyError, TypeError):
            continue  # a line cut short by the kill
    starts = [i for i, (_, name, _) in enumerate(events) if name == "command"]
    if not starts:
        return 0.0, ""
    first = starts[-1]
    t0, _, cmd = events[first]
    later = events[first + 1 :]
    if any(name == "end" for _, name, _ in later):
        return 0.0, ""
    last = max([t for t, _, _ in later], default=t0)
    for log in (run_dir / "raw").glob("*/" + enginedoc.WINDOW_LOG.format(rank="*")):
        try:
            mtime = log.stat().st_mtime
        except OSError:
            continue
        if mtime >= t0:
            last = max(last, mtime)
    verb = cmd.get("verb", "a command")
    return max(0.0, last - t0), f"{verb} (pid {cmd.get('pid', '?')}) stopped without recording its time"


class WindowFollower:
    """Follows the window logs (rooftop.engine.enginedoc.WindowLog) of one
    client round from a thread, and calls on_window(w) once every client
    has measured window w.

    Never blocks the campaign or the engines: it reads what the engines have
    appended so far, every period seconds, on a daemon thread; a missing,
    partial or damaged line only delays the count; an exception in
    on_window is swallowed (a progress bar is not worth a measurement)."""

    def __init__(self, folder: Path, ranks: int, windows: int, on_window: Callable[[int], None], period: float = 0.2):
        self.folder, self.ranks, self.windows, self.on_window = folder, ranks, windows, on_window
        self.period = period
        self.seen = [0] * ranks  # windows each rank has logged
        self.reported = 0
        self._logs = [enginedoc.WindowLog(enginedoc.window_log_path(folder, r)) for r in range(ranks)]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rooftop-windows", daemon=True)

    def __enter__(self) -> WindowFollower:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            self.poll()
        self.poll()  # what was written before the round ended

    def poll(self) -> None:
        for r, log in enumerate(self._logs):
            for ev in log.read():
                if ev["event"] == "window":
                    self.seen[r] = max(self.seen[r], ev["window"] + 1)
        done = min(self.seen) if self.seen else 0
        while self.reported < min(done, self.windows):
            w, self.reported = self.reported, self.reported + 1
            try:
                self.on_window(w)
            except Exception:
                pass
