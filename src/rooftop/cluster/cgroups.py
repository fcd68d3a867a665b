"""CPU of the emulated cluster's nodes: one cgroup per node that pins its cores
(cpuset) and caps its CPU time (CFS quota), so a node behaves like a machine
with that many (or that fast) cores.

cgroup v1 (this machine: separate cpu and cpuset hierarchies):
  <cpu mount>/rooftop/n<I>      cpu.cfs_quota_us / cpu.cfs_period_us
  <cpuset mount>/rooftop/n<I>   cpuset.cpus, cpuset.mems
cgroup v2 (/sys/fs/cgroup is cgroup2; +cpu +cpuset are enabled on the way):
  /sys/fs/cgroup/rooftop/n<I>   cpu.max, cpuset.cpus, cpuset.mems

A cap of P % on a node with K cores is a quota of P/100 x K x period: the
node's processes together get that much CPU time per period. Without a cap
the quota is unlimited and the node is bounded by its cores only.

A process joins a node by writing its pid to cgroup.procs of each of the
node's cgroup directories (see join_script); its children inherit them.
"""

from __future__ import annotations

import os
import shlex
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from rooftop.cluster.spec import ClusterError

GROUP = "rooftop"
PERIOD_US = 100_000


@dataclass(frozen=True)
class Layout:
    version: int
    cpu: Path  # root of the hierarchy with the cpu controller
    cpuset: Path  # root of the hierarchy with the cpuset controller (v2: same)

    def roots(self) -> list[Path]:
        return [self.cpu / GROUP] if self.version == 2 else [self.cpu / GROUP, self.cpuset / GROUP]

    def node_dirs(self, i: int) -> list[Path]:
        return [r / f"n{i}" for r in self.roots()]

    def describe(self) -> dict:
        return {"version": self.version, "cpu": str(self.cpu), "cpuset": str(self.cpuset)}


def _mounts() -> list[tuple[str, str, list[str]]]:
    out = []
    with open("/proc/self/mounts") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 4:
                out.append((parts[1], parts[2], parts[3].split(",")))
    return out


def detect() -> Layout:
    mounts = _mounts()
    for point, fstype, _ in mounts:
        if point == "/sys/fs/cgroup" and fstype == "cgroup2":
            root = Path(point)
            have = (root / "cgroup.controllers").read_text().split()
            missing = [c for c in ("cpu", "cpuset") if c not in have]
            if missing:
                raise ClusterError(
                    f"cgroup v2 at {root} lacks the {' and '.join(missing)} "
                    f"controller(s) (cgroup.controllers: {' '.join(have)})"
                )
            return Layout(2, root, root)
    cpu = cpuset = None
    for point, fstype, opts in mounts:
        if fstype != "cgroup":
            continue
        if "cpu" in opts and cpu is None:
            cpu = Path(point)
        if "cpuset" in opts and cpuset is None:
            cpuset = Path(point)
    if cpu is None or cpuset is None:
        missing = [n for n, p in (("cpu", cpu), ("cpuset", cpuset)) if p is None]
        raise ClusterError(
            f"no cgroup v1 hierarchy with the {' and '.join(missing)} controller is "
            f"mounted and /sys/fs/cgroup is not cgroup2 (see 'mount | grep cgroup')"
        )
    return Layout(1, cpu, cpuset)


def _write(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except OSError as e:
        raise ClusterError(f"cannot write '{value}' to {path}: {e.strerror}") from None


def _read(path: Path) -> str:
    return path.read_text().strip()


def cpulist(cores: list[int]) -> str:
    return ",".join(map(str, sorted(set(cores))))


def quota_us(cores: int, percent: float | None) -> int | None:
    if percent is None:
        return None
    return max(1000, int(round(PERIOD_US * cores * percent / 100)))


def create_root(layout: Layout) -> None:
    if layout.version == 2:
        root = layout.cpu / GROUP
        _write(layout.cpu / "cgroup.subtree_control", "+cpu +cpuset")
        root.mkdir(exist_ok=True)
        _write(root / "cgroup.subtree_control", "+cpu +cpuset")
        return
    (layout.cpu / GROUP).mkdir(exist_ok=True)
    cs = layout.cpuset / GROUP
    cs.mkdir(exist_ok=True)
    # a v1 cpuset child needs its parent's cpus and mems set first
    _write(cs / "cpuset.cpus", _read(layout.cpuset / "cpuset.cpus"))
    _write(cs / "cpuset.mems", _read(layout.cpuset / "cpuset.mems"))


def create_node(layout: Layout, i: int, cores: list[int], cpu_percent: float | None) -> None:
    for d in layout.node_dirs(i):
        d.mkdir(exist_ok=True)
    q = quota_us(len(cores), cpu_percent)
    if layout.version == 2:
        d = layout.cpu / GROUP / f"n{i}"
        _write(d / "cpuset.cpus", cpulist(cores))
        _write(d / "cpuset.mems", _read(layout.cpu / GROUP / "cpuset.mems.effective"))
        _write(d / "cpu.max", f"{q if q is not None else 'max'} {PERIOD_US}")
        return
    cpu, cs = layout.node_dirs(i)
    _write(cs / "cpuset.cpus", cpulist(cores))
    _write(cs / "cpuset.mems", _read(layout.cpuset / GROUP / "cpuset.mems"))
    _write(cpu / "cpu.cfs_period_us", str(PERIOD_US))
    _write(cpu / "cpu.cfs_quota_us", str(q if q is not None else -1))


def set_cap(layout: Layout, i: int, cores: int, cpu_percent: float | None) -> None:
    """Node i's CPU cap, in place (its processes keep running under the new quota)."""
    q = quota_us(cores, cpu_percent)
    if layout.version == 2:
        _write(layout.cpu / GROUP / f"n{i}" / "cpu.max", f"{q if q is not None else 'max'} {PERIOD_US}")
        return
    _write(layout.cpu / GROUP / f"n{i}" / "cpu.cfs_quota_us", str(q if q is not None else -1))


def read_node(layout: Layout, i: int) -> dict | None:
    """What the kernel has for node i: {"cpus": "0,1", "quota_us", "period_us"}
    (None: its cgroup is missing)."""
    dirs = layout.node_dirs(i)
    if not all(d.is_dir() for d in dirs):
        return None
    try:
        if layout.version == 2:
            d = dirs[0]
            q, period = _read(d / "cpu.max").split()
            return {
                "cpus": _read(d / "cpuset.cpus"),
                "quota_us": None if q == "max" else int(q),
                "period_us": int(period),
            }
        cpu, cs = dirs
        q = int(_read(cpu / "cpu.cfs_quota_us"))
        return {
            "cpus": _read(cs / "cpuset.cpus"),
            "quota_us": None if q < 0 else q,
            "period_us": int(_read(cpu / "cpu.cfs_period_us")),
        }
    except (OSError, ValueError):
        return None


def procs_files(layout: Layout, i: int) -> list[str]:
    return [str(d / "cgroup.procs") for d in layout.node_dirs(i)]


def join_script(files: list[str]) -> str:
    """sh -c script: moves the shell into the cgroups, then execs "$@" (the
    same process: the command stays in the caller's process group). Exits
    126 with a message naming the cgroup when it cannot join (not root)."""
    targets = " ".join(shlex.quote(f) for f in files)
    return (
        f'for f in {targets}; do {{ echo $$ > "$f"; }} 2>/dev/null || '
        f'{{ echo "rooftop: cannot join cgroup $f (root needed; is the cluster up?)" >&2; '
        f'exit 126; }}; done; exec "$@"'
    )


def _pids(d: Path) -> list[int]:
    try:
        return [int(x) for x in _read(d / "cgroup.procs").split()]
    except (OSError, ValueError):
        return []


def remove_all(layout: Layout | None = None) -> list[str]:
    """Removes every rooftop cgroup (killing what still runs in it). Idempotent."""
    try:
        layout = layout or detect()
    except ClusterError:
        return []
    removed = []
    for root in layout.roots():
        if not root.is_dir():
            continue
        children = sorted(p for p in root.iterdir() if p.is_dir())
        for d in children + [root]:
            for _ in range(50):
                pids = _pids(d)
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                try:
                    d.rmdir()
                    removed.append(f"cgroup {d}")
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)  # killed processes leave the cgroup asynchronously
            else:
                raise ClusterError(f"cannot remove cgroup {d}: processes {_pids(d)} remain in it")
    return removed
