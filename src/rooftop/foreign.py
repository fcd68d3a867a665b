"""Foreign load: CPU used by other processes on a round's cores while it ran.

A campaign is not alone on a machine just because it holds the locks
(rooftop.locks): a build, another user's job or a campaign run with
--allow-concurrent takes CPU from the engines, and the rates drop with no
error anywhere. For launchers on this machine (local, netns), each round is
metered from just before its clients start until they have all exited:

  busy  = CPU time of the measured cores (every core of the round's server
          and client nodes) from /proc/stat: user + nice + system + irq + softirq
  own   = the campaign's own CPU in the same interval: its client processes
          (reaped in the interval: getrusage(RUSAGE_CHILDREN)), its servers
          (/proc/PID/stat utime + stime) and the campaign process itself
  kernel = CPU of the kernel's threads last seen on the measured cores
          (kworkers, loop devices, ksoftirqd: the I/O path of the round's
          own traffic and storage, not another job)
  foreign_cpu = max(0, busy - own - kernel) / interval, in cores (1.0: a whole core)

Stored per sample (samples.foreign_cpu); the report warns above
FOREIGN_WARN. On other launchers the engines run on other hosts: None.
"""

from __future__ import annotations

import os
import resource
import time

from rooftop.locks import ON_THIS_MACHINE

#: A sample with more foreign CPU than this (cores) is flagged in the report.
FOREIGN_WARN = 0.10

_TICK = os.sysconf("SC_CLK_TCK")


def cores_busy_s(cores: set[int]) -> float:
    """Seconds of non-idle CPU time of these cores since boot."""
    total = 0
    with open("/proc/stat") as f:
        for line in f:
            name, *vals = line.split()
            if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cores:
                user, nice, system, _idle, _iowait, irq, softirq = map(int, vals[:7])
                total += user + nice + system + irq + softirq
    return total / _TICK


def cpu_times(cores: set[int]) -> tuple[float, float, float, float]:
    """(user + nice seconds, system + irq + softirq seconds) of these cores
    since boot, and the machine's context switches and interrupts so far."""
    user = system = 0
    ctxt = intr = 0
    with open("/proc/stat") as f:
        for line in f:
            name, *vals = line.split()
            if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cores:
                u, nice, sy, _idle, _iowait, irq, softirq = map(int, vals[:7])
                user += u + nice
                system += sy + irq + softirq
            elif name == "ctxt":
                ctxt = int(vals[0])
            elif name == "intr":
                intr = int(vals[0])
    return user / _TICK, system / _TICK, float(ctxt), float(intr)


def _stat(pid: int | str) -> list[str] | None:
    """/proc/PID/stat after the command name (fields[0] is field 3, the
    state); None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _cpu_s(fields: list[str]) -> float:
    """utime + stime (all threads) of a _stat, seconds."""
    return (int(fields[11]) + int(fields[12])) / _TICK


def process_cpu_s(pid: int) -> float:
    """utime + stime of a live process (all its threads), seconds; 0 when gone."""
    fields = _stat(pid)
    return _cpu_s(fields) if fields else 0.0


#: /proc/PID/stat flags bit of a kernel thread (include/linux/sched.h).
PF_KTHREAD = 0x00200000


def kernel_threads_cpu(cores: set[int]) -> dict[int, float]:
    """pid -> utime + stime seconds of every kernel thread whose last CPU is
    one of these cores."""
    out = {}
    for d in os.scandir("/proc"):
        fields = _stat(d.name) if d.name.isdigit() else None
        if fields and int(fields[6]) & PF_KTHREAD and int(fields[36]) in cores:
            out[int(d.name)] = _cpu_s(fields)
    return out


def kernel_delta_s(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU the kernel threads used between two kernel_threads_cpu (threads
    born meanwhile count from 0; those that died are not counted)."""
    return sum(max(0.0, t - before.get(pid, 0.0)) for pid, t in after.items())


def _own_s(server_pids: list[int]) -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    me = resource.getrusage(resource.RUSAGE_SELF)
    return (
        children.ru_utime + children.ru_stime + me.ru_utime + me.ru_stime + sum(process_cpu_s(p) for p in server_pids)
    )


class Meter:
    """Started before a round's clients, stopped once they are reaped."""

    def __init__(self, cores: set[int], server_pids: list[int]):
        self.cores, self.servers = cores, list(server_pids)
        self.t0 = time.monotonic()
        self.busy0, self.own0 = cores_busy_s(cores), _own_s(self.servers)
        self.kernel0 = kernel_threads_cpu(cores)

    def stop(self) -> float:
        """Cores' worth of CPU others used on the measured cores."""
        busy, own = cores_busy_s(self.cores) - self.busy0, _own_s(self.servers) - self.own0
        kernel = kernel_delta_s(self.kernel0, kernel_threads_cpu(self.cores))
        elapsed = max(time.monotonic() - self.t0, 1e-3)
        return round(max(0.0, busy - own - kernel) / elapsed, 4)


class NoMeter:
    """Engines on other hosts: nothing on this machine to meter."""

    @staticmethod
    def stop() -> None:
        return None


def meter(runner, placement, spec) -> Meter | NoMeter:
    """A meter for one client round of a campaign.Runner (the start hook of
    the foreign_cpu sampler, rooftop.samplers): the cores of its server and
    client nodes, its live processes (the placement's servers) as its own."""
    if runner.launcher.name not in ON_THIS_MACHINE:
        return NoMeter()
    nodes = set(placement.server_nodes) | set(spec.client_nodes)
    cores = {c for n in runner.nodes if n.index in nodes for c in n.cores}
    return Meter(cores, [p.pid for p in runner.procs.procs if p.poll() is None])
