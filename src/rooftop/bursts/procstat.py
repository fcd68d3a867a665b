"""One process's CPU, context switches and wake-ups from /proc, as rates.

    /proc/PID/stat                  utime, stime (fields 14, 15): every thread's, in clock ticks
    /proc/PID/task/TID/status       voluntary_ctxt_switches, nonvoluntary_ctxt_switches (per thread)
    /proc/PID/task/TID/schedstat    run time, wait time, timeslices run (per thread)

A voluntary switch is the thread giving the CPU up (it sleeps: a blocking
CQ read, an epoll wait); an involuntary one is the scheduler taking it (the
core is shared). Wake-ups are the timeslices the threads got
(schedstat's third field): every sleep ended and every preemption resumed.
CPU wanted is the time the threads ran or waited to run (schedstat's first
two fields), in cores: what the process would use on cores of its own. On a
loaded machine a spinning server gets a share of a core (cpu_user +
cpu_sys well below 1) but still wants a whole one (cpu_wanted near 1).
Counters are summed over the process's threads alive at each reading;
a thread that ended between two readings takes its counts with it (a
delta below zero reads as zero).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


class ProcessGone(RuntimeError):
    """The process exited (its /proc entry is gone)."""


def counters(pid: int, proc: Path = Path("/proc")) -> dict[str, float]:
    """Cumulative: user and system CPU seconds, voluntary and involuntary
    switches; wake-ups and CPU seconds wanted (schedstat: absent without it)."""
    base = proc / str(pid)
    try:
        stat = (base / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        raise ProcessGone(f"process {pid} is gone") from None
    fields = stat.rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
    out = {
        "cpu_user": int(fields[11]) / TICKS,
        "cpu_sys": int(fields[12]) / TICKS,
        "voluntary_switches": 0.0,
        "involuntary_switches": 0.0,
    }
    wakeups = wanted = 0.0
    have_schedstat = False
    for task in (base / "task").iterdir() if (base / "task").is_dir() else ():
        try:
            for line in (task / "status").read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    out["voluntary_switches"] += int(line.split()[1])
                elif line.startswith("nonvoluntary_ctxt_switches:"):
                    out["involuntary_switches"] += int(line.split()[1])
            sched = (task / "schedstat").read_text().split()
            wakeups += int(sched[2])
            wanted += (int(sched[0]) + int(sched[1])) / 1e9
            have_schedstat = True
        except (OSError, IndexError, ValueError):
            continue  # the thread ended meanwhile, or no schedstat here
    if have_schedstat:
        out["wakeups"], out["cpu_wanted"] = wakeups, wanted
    return out


UNITS = {
    "cpu_user": "cores",
    "cpu_sys": "cores",
    "voluntary_switches": "1/s",
    "involuntary_switches": "1/s",
    "wakeups": "1/s",
    "cpu_wanted": "cores",
}


class ProcMeter:
    """Rates of one process between readings: CPU in cores (1.0: a whole
    core busy), switches and wake-ups per second."""

    def __init__(self, pid: int, proc: Path = Path("/proc")):
        self.pid, self.proc = pid, proc
        self.last = counters(pid, proc)
        self.t_last = time.monotonic()

    def rates(self) -> list[tuple[str, float, str]]:
        """(quantity, rate, unit) since the last call; ProcessGone when it exited."""
        now, t = counters(self.pid, self.proc), time.monotonic()
        dt = max(t - self.t_last, 1e-6)
        out = [(q, max(0.0, now[q] - self.last.get(q, now[q])) / dt, UNITS[q]) for q in now]
        self.last, self.t_last = now, t
        return out
