"""Package power from RAPL through Linux's powercap interface.

    /sys/class/powercap/intel-rapl:N/            one zone per package
        name                 "package-N" (sub-zones: core, uncore, dram)
        energy_uj            energy counter, microjoules, wraps at
        max_energy_range_uj  its range

AMD processors (Zen and later) report through the same `intel-rapl` zones
with the `rapl` driver. The counter wraps around: a reading below the last
one adds the range. Since Linux 5.10 (CVE-2020-8694, "Platypus"),
`energy_uj` is readable by root only: a user gets one line saying so
instead of numbers. Virtual machines usually have no RAPL at all (as here);
then there is nothing to read, and callers say so.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

#: Where powercap lives (tests point ROOFTOP_POWERCAP at a synthetic tree).
POWERCAP = Path(os.environ.get("ROOFTOP_POWERCAP", "/sys/class/powercap"))

PERMISSION_HINT = (
    "RAPL energy counters (energy_uj) are readable by root only since Linux 5.10 "
    "(CVE-2020-8694): run as root, or have an administrator grant read access"
)


class PowerUnavailable(RuntimeError):
    """No RAPL here, or not readable; the message says which, in one line."""


@dataclass
class Zone:
    name: str  # "package-0"
    path: Path
    range_uj: int
    last_uj: int = 0
    total_uj: int = 0  # energy since the first reading, wrap-arounds included

    def counter(self) -> int:
        """The counter as it reads now (OSError, ValueError: unreadable)."""
        return int((self.path / "energy_uj").read_text())

    def read(self) -> int:
        """Reads the counter; returns microjoules since the last reading."""
        return self.advance(self.counter())

    def advance(self, now: int) -> int:
        """Takes a counter value as the new reading; microjoules since the last."""
        delta = now - self.last_uj
        if delta < 0:  # wrapped around
            delta += self.range_uj
        self.last_uj = now
        self.total_uj += delta
        return delta


def package_zones(root: Path | None = None) -> list[Zone]:
    """The package zones (top-level intel-rapl:N whose name starts with
    'package'), opened with a first reading. Raises PowerUnavailable."""
    root = POWERCAP if root is None else root
    tops = sorted(p for p in root.glob("intel-rapl:*") if p.name.count(":") == 1) if root.is_dir() else []
    zones = []
    for top in tops:
        try:
            name = (top / "name").read_text().strip()
            if not name.startswith("package"):
                continue
            zone = Zone(name, top, int((top / "max_energy_range_uj").read_text()))
            zone.last_uj = int((top / "energy_uj").read_text())
        except PermissionError:
            raise PowerUnavailable(f"{top / 'energy_uj'}: permission denied; {PERMISSION_HINT}") from None
        except (OSError, ValueError) as e:
            raise PowerUnavailable(f"{top}: unreadable RAPL zone ({e})") from None
        zones.append(zone)
    if not zones:
        raise PowerUnavailable(
            f"no RAPL package zones under {root} (virtual machines usually have none): power is not measured, CPU is"
        )
    return zones


@dataclass
class PowerMeter:
    """Watts of every package between readings."""

    zones: list[Zone]
    t_last: float = field(default_factory=time.monotonic)

    def watts(self) -> float:
        """Average package power (all packages) since the last call."""
        now = time.monotonic()
        counters = [z.counter() for z in self.zones]  # every zone read before any advances
        joules = sum(z.advance(c) for z, c in zip(self.zones, counters)) / 1e6
        elapsed, self.t_last = max(now - self.t_last, 1e-6), now
        return joules / elapsed

    @property
    def joules(self) -> float:
        return sum(z.total_uj for z in self.zones) / 1e6
