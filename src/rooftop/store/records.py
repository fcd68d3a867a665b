"""What the store's rows hold and small helpers on them: a run (Run), a config
flattened to dotted keys, a sample's ranks and stages, a run owner's identity."""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from rooftop import __version__
from rooftop.engine import enginedoc


def flatten(value, key: str = "") -> list[tuple[str, object]]:
    """(dotted key, value) of every leaf of a config: objects by key, lists
    of objects by index, other lists as their JSON text."""
    if isinstance(value, dict) and value:
        return [kv for k, v in value.items() for kv in flatten(v, f"{key}.{k}" if key else str(k))]
    if isinstance(value, list) and value and all(isinstance(x, dict) for x in value):
        return [kv for i, x in enumerate(value) for kv in flatten(x, f"{key}.{i}")]
    if isinstance(value, (dict, list, tuple)):
        return [(key, json.dumps(value))]
    return [(key, value)]


def row_ranks(docs: Path, row: dict) -> list[int] | None:
    """The client ranks a sample row stands for within its round's folder
    (round.json: one window's row keys; several are pairs, rank j is row j);
    None: all of them; [] when unknown."""
    windows = enginedoc.round_keys(docs)
    if windows is None:  # a round written before its record: all clients when their number matches
        return None if len(enginedoc.client_documents(docs)) == row["client_procs"] else []
    for keys in windows:
        if row["key"] in keys:
            return None if len(keys) == 1 else [keys.index(row["key"])]
    return []


def process_start(pid: int) -> str:
    """Identifies a process beyond its pid: boot id + start time (clock
    ticks since boot); '' if there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""
    return f"{boot}:{stat.rsplit(')', 1)[1].split()[19]}"


def owner_gone(pid: int, host: str, start: str) -> bool:
    """True when the recorded owner is known to be dead: on this host, no
    process with that pid and start time. Another host's: not known (False)."""
    if not pid or host != socket.gethostname():
        return False
    return process_start(pid) != start


def owner_elsewhere(pid: int, host: str, start: str) -> bool:
    """The recorded owner ran on another host (its process cannot be checked here)."""
    return bool(pid) and bool(host) and host != socket.gethostname()


def key_stages(key: str) -> list[str]:
    """The stages a sample key stands for: its first part, split on '+'."""
    return key.split("/", 1)[0].split("+")


def stands_for(row: dict) -> list[str]:
    """The collect stages (ceilings) a stored sample stands for."""
    text = row.get("ceilings") or ""
    return json.loads(text) if text else [row["stage"]]


def now_iso() -> str:
    """Now as the store records a time: UTC, ISO-8601 with its zone
    ('2026-11-26T09:28:57+00:00'; +00:00 rather than Z: Python 3.10's
    fromisoformat reads it), to the second."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def utc_stamp(stamp: str) -> str:
    """A time as the store records it (now_iso). A time with a zone is
    moved to UTC; one without (what databases before schema version 14 held:
    the local time of the machine that wrote it, no zone) is read in this
    machine's zone, the best guess there is. ValueError: not an ISO-8601 time."""
    t = datetime.fromisoformat(stamp.strip().replace("Z", "+00:00"))
    return (t if t.tzinfo else t.astimezone()).astimezone(timezone.utc).isoformat(timespec="seconds")


class StoreError(RuntimeError):
    pass


class NewerSchema(StoreError):
    """A database a newer rooftop wrote: its schema version is above the
    newest this one knows. Nothing here may write it (an older rooftop
    would drop what only the newer schema holds): upgrade rooftop."""

    def __init__(self, path: Path, version: int, known: int):
        self.path, self.version, self.known = Path(path), version, known
        super().__init__(
            f"results database {path} has schema version {version}, newer than this rooftop knows "
            f"(up to {known}): it was written by a newer rooftop; upgrade rooftop (this is rooftop "
            f"{__version__}, schema {known}) to one that knows schema version {version}"
        )


@dataclass
class Run:
    id: str
    created: str
    updated: str
    status: str
    config: dict
    environment: dict
    wall_s: float
    measured_s: float
    note: str
    owner: tuple = (0, "", "")  # pid, host, process start of the campaign running it

    @property
    def overhead(self) -> float | None:
        """Share of the run's time spent outside measurement windows; None
        when not known: no time recorded, or less time than its windows (a
        command was killed, and the run's progress log could not tell how
        long it ran: runs measured before its 'command' events)."""
        if self.wall_s <= 0 or self.measured_s > self.wall_s + 0.05:
            return None
        return max(0.0, 1.0 - self.measured_s / self.wall_s)
