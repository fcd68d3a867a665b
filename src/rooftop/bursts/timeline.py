"""One progress mode's time line in `rooftop bursts`: every interval, the
server process's CPU, context switches and wake-ups (rooftop.bursts.procstat) and
package power (rooftop.power, where RAPL is readable); the client's rate
per window (its window logs); when each burst started and ended.

Stored in the `series` table under the round `bursts/MODE`, sources:
`server` (cpu_user, cpu_sys, cpu_wanted in cores; voluntary_switches,
involuntary_switches, wakeups per second), `power` (power in W, energy in J
since the mode started), `client` (rate: operations per second, and
ops: operations completed in the window) and `schedule` (burst_start, burst_end: the burst's index
at its time). t is seconds since the server was ready; a point is stamped
at the end of its interval. Saved after every burst, so an interrupted
run keeps what it measured.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from rooftop import power
from rooftop.bursts import procstat
from rooftop.engine import enginedoc


class Timeline:
    def __init__(self, store, run_id: str, mode: str, pid: int, interval: float):
        self.store, self.run_id, self.round = store, run_id, f"bursts/{mode}"
        self.interval = interval
        self.rows: dict[str, list[tuple]] = {"server": [], "power": [], "client": [], "schedule": []}
        self.lock = threading.Lock()
        self.proc = procstat.ProcMeter(pid)
        try:
            self.meter: power.PowerMeter | None = power.PowerMeter(power.package_zones())
            self.power_note = ""
        except power.PowerUnavailable as e:
            self.meter, self.power_note = None, str(e)
        self.power_skipped = 0
        self.t0 = time.time()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rooftop-bursts-timeline", daemon=True)
        self._thread.start()

    def now(self) -> float:
        return round(time.time() - self.t0, 4)

    def _run(self) -> None:
        # Ticks on a fixed grid (t0 + k * interval), not after each reading:
        # the intervals do not drift on a loaded machine.
        k = 1
        while not self._stop.wait(max(0.0, self.t0 + k * self.interval - time.time())):
            self._tick()
            k = max(k + 1, int((time.time() - self.t0) / self.interval) + 1)

    def _tick(self) -> None:
        t = self.now()
        try:
            server = self.proc.rates()
        except procstat.ProcessGone:
            self._stop.set()
            return
        power_rows = self._power(t)
        with self.lock:
            self.rows["server"] += [(t, q, v, u) for q, v, u in server]
            self.rows["power"] += power_rows

    def _power(self, t: float) -> list[tuple]:
        """This interval's power; a counter that cannot be read this time
        (a zone gone, a garbled read) skips the point (counted in
        power_skipped) instead of ending the time line."""
        if self.meter is None:
            return []
        try:
            watts = self.meter.watts()
        except (OSError, ValueError):
            self.power_skipped += 1
            return []
        return [(t, "power", watts, "W"), (t, "energy", self.meter.joules, "J")]

    def mark(self, event: str, burst: int) -> None:
        with self.lock:
            self.rows["schedule"].append((self.now(), event, float(burst), ""))

    def add_windows(self, sdir: Path) -> int:
        """The client's windows of one burst (every rank's window logs summed
        per window); returns how many."""
        per_window: dict[int, list[float]] = {}
        for log in enginedoc.window_logs(sdir):
            for ev in enginedoc.window_log(log):  # (a line cut by a kill is left out)
                if ev["event"] == "window":
                    w = per_window.setdefault(ev["window"], [ev["end_s"], ev["elapsed_s"], 0.0])
                    w[2] += float(ev["ops"])
        with self.lock:
            for _, (end_s, elapsed, ops) in sorted(per_window.items()):
                t = round(end_s - self.t0, 4)
                self.rows["client"] += [(t, "rate", ops / max(elapsed, 1e-9), "ops/s"), (t, "ops", ops, "ops")]
        return len(per_window)

    def save(self) -> None:
        with self.lock:
            rows = {k: list(v) for k, v in self.rows.items()}
        if self.power_skipped:  # said under the bursts table
            rows["power"].append((self.now(), "skipped", float(self.power_skipped), "readings"))
        self.store.add_series(self.run_id, self.round, rows)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
