"""Foreign load: CPU used by other processes on a round's cores while it ran.

A campaign is not alone on a machine just because it holds the locks
(rooftop.locks): a build, another user's job or a campaign run with
--allow-concurrent takes CPU from the engines, and the rates drop with no
error anywhere. For launchers on this machine (local, netns), each round is
metered from just before its clients start until they have all exited, by
the CPU time of the processes that are not the round's:

  theirs = every process (from /proc/PID/stat) that is neither the
           campaign process nor one of its descendants (its engines, its
           loads) nor a kernel thread (kworkers, ksoftirqd, loop devices:
           the I/O path of the round's own traffic and storage), whose
           last CPU is one of the measured cores (every core of the round's
           server and client nodes)
  gained = what each of them used in the interval: utime + stime, plus
           the children it reaped meanwhile (cutime + cstime: a build's
           short-lived compilers), less what a process that ended
           meanwhile had used before the interval (its reaper's cutime
           holds its whole life)
  foreign_cpu = sum of gained / interval, in cores (1.0: a whole core)

Interrupt and softirq time is nobody's here: the round's own network
traffic is handled there, often while its cores are otherwise idle (a
shaped link's queue drains from a timer), which a meter of the cores' busy
time (/proc/stat) would count as foreign. (On kernels without
CONFIG_IRQ_TIME_ACCOUNTING a softirq tick is charged to the process it
interrupted: a foreign process's share then includes some.)

Stored per sample (samples.foreign_cpu); the report warns above
FOREIGN_WARN, and a round above engine.foreign_cpu_gate is invalid
(rooftop.campaign.rounds). On other launchers the engines run on other
hosts: None.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from rooftop.launchers import ON_THIS_MACHINE

#: A sample with more foreign CPU than this (cores) is flagged in the report.
FOREIGN_WARN = 0.10

_TICK = os.sysconf("SC_CLK_TCK")

#: How a sample invalid for its foreign CPU (over_gate) is described.
OVER_GATE = "other processes used"


def over_gate(foreign_cpu: float | None, gate: float) -> str:
    """Why a round with this much foreign CPU is invalid under
    engine.foreign_cpu_gate ('' when it is not, or was not measured)."""
    if foreign_cpu is None or foreign_cpu <= gate:
        return ""
    return f"{OVER_GATE} {foreign_cpu:.2f} cores of CPU on its cores while it ran (engine.foreign_cpu_gate: {gate:g})"


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


def cores_busy_s(cores: set[int]) -> float:
    """Seconds of non-idle CPU time of these cores since boot (anyone's)."""
    user, system, _, _ = cpu_times(cores)
    return user + system


#: /proc/PID/stat flags bit of a kernel thread (include/linux/sched.h).
PF_KTHREAD = 0x00200000


@dataclass(frozen=True)
class Proc:
    """One process as /proc/PID/stat shows it (times in seconds)."""

    ppid: int
    #: Start time since boot (ticks): with the pid, its identity.
    born: int
    #: utime + stime, all its threads.
    cpu: float
    #: cutime + cstime: the children it has reaped (and theirs).
    reaped: float
    #: The CPU it last ran on.
    core: int
    kernel: bool


def processes() -> dict[int, Proc]:
    """Every process now: pid -> Proc (those that end while read are left out)."""
    out = {}
    for d in os.scandir("/proc"):
        if not d.name.isdigit():
            continue
        try:
            with open(f"/proc/{d.name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            out[int(d.name)] = Proc(
                ppid=int(fields[1]),
                born=int(fields[19]),
                cpu=(int(fields[11]) + int(fields[12])) / _TICK,
                reaped=(int(fields[13]) + int(fields[14])) / _TICK,
                core=int(fields[36]),
                kernel=bool(int(fields[6]) & PF_KTHREAD),
            )
        except (OSError, IndexError, ValueError):
            continue
    return out


def _descends(pid: int, me: int, table: dict[int, Proc]) -> bool:
    """pid is me or one of my descendants, by the parents in table."""
    for _ in range(4096):  # a pid's parent chain, never a loop
        if pid == me:
            return True
        p = table.get(pid)
        if p is None or p.ppid <= 0:
            return False
        pid = p.ppid
    return False


def foreign_s(before: dict[int, Proc], after: dict[int, Proc], cores: set[int], me: int) -> float:
    """CPU seconds the processes that are not me, mine or the kernel's used
    on these cores between two processes() snapshots (see the module)."""

    def alive(pid: int) -> bool:
        return pid in after and pid in before and after[pid].born == before[pid].born

    def mine(pid: int, table: dict[int, Proc]) -> bool:  # or the kernel's
        return table[pid].kernel or _descends(pid, me, table)

    gained = {}
    for pid, p in after.items():
        if not (mine(pid, after) or alive(pid) and mine(pid, before)):
            then = (before[pid].cpu + before[pid].reaped) if alive(pid) else 0.0
            gained[pid] = p.cpu + p.reaped - then
    for pid, p in before.items():  # ended meanwhile: its reaper holds its whole life
        if alive(pid) or mine(pid, before):
            continue
        up = p.ppid
        for _ in range(4096):  # its parent ended too: the first ancestor still there
            if alive(up) or up not in before:
                break
            up = before[up].ppid
        up = up if alive(up) else 1  # orphans go to init
        if up in gained:
            gained[up] -= p.cpu + p.reaped
    return max(0.0, sum(g for pid, g in gained.items() if after[pid].core in cores))


class Meter:
    """Started before a round's clients, stopped once they are reaped."""

    def __init__(self, cores: set[int], me: int | None = None):
        self.cores, self.me = set(cores), me or os.getpid()
        self.t0 = time.monotonic()
        self.before = processes()

    def stop(self) -> float:
        """Cores' worth of CPU others used on the measured cores."""
        after = processes()
        elapsed = max(time.monotonic() - self.t0, 1e-3)
        return round(foreign_s(self.before, after, self.cores, self.me) / elapsed, 4)


class BusyMeter:
    """The busy share of a round's cores while it ran (anyone's work,
    interrupts included: /proc/stat), started before its clients and
    stopped once they are reaped: 0.25, a quarter of those cores' time."""

    def __init__(self, cores: set[int]):
        self.cores = set(cores)
        self.t0, self.busy0 = time.monotonic(), cores_busy_s(self.cores)

    def stop(self) -> float | None:
        elapsed = time.monotonic() - self.t0
        if not self.cores or elapsed <= 0:
            return None
        return round(min(1.0, (cores_busy_s(self.cores) - self.busy0) / (elapsed * len(self.cores))), 4)


class NoMeter:
    """Engines on other hosts: nothing on this machine to meter."""

    @staticmethod
    def stop() -> None:
        return None


def busy_meter(campaign, placement, measurement) -> BusyMeter | NoMeter:
    """A BusyMeter of one client round's cores (the start hook of the
    cores_busy meter, rooftop.meters); engines on other hosts: none."""
    if campaign.launcher.name not in ON_THIS_MACHINE:
        return NoMeter()
    nodes = set(placement.server_nodes) | set(measurement.client_nodes)
    return BusyMeter({c for n in campaign.nodes if n.index in nodes for c in n.cores})


def meter(campaign, placement, measurement) -> Meter | NoMeter:
    """A meter for one client round of a campaign (the start hook of
    the foreign_cpu meter, rooftop.meters): the cores of its server and
    client nodes; this process and its descendants (the engines) are the
    campaign's own."""
    if campaign.launcher.name not in ON_THIS_MACHINE:
        return NoMeter()
    nodes = set(placement.server_nodes) | set(measurement.client_nodes)
    return Meter({c for n in campaign.nodes if n.index in nodes for c in n.cores})
