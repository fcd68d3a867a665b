"""The one reader of engine documents (the JSON each `rooftop-engine`
command writes with --output): loading one, a client result's windows
(result.windows; engines before the rename wrote result.samples and
config.samples, still read) and which of them a stopped client measured
in full, its rate field, and its latency bins merged into a distribution
(Latency). Also the one reader of a client's window log (the JSON lines
`load --window-log` appends as it measures), and the result rebuilt from
one when the client's document was never written (log_result).

Imports nothing of rooftop: the campaign, the store, the results, probe
and audit all read documents through it."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path


def load(path: Path) -> dict:
    """One engine document (OSError, ValueError when it cannot be read)."""
    return json.loads(Path(path).read_text())


def rank_of(path: Path) -> int:
    """The rank of a per-rank document: client-3.json -> 3 (ValueError otherwise)."""
    return int(Path(path).stem.split("-", 1)[1])


def client_documents(folder: Path) -> list[Path]:
    """A round's client documents (client-<rank>.json), by name."""
    return sorted(Path(folder).glob("client-*.json"))


def rate_field(work: str) -> str:
    """The engine result's rate field of a work unit ("ops", "bytes"):
    ops_per_sec or bytes_per_sec (Metric.result_field)."""
    return f"{work}_per_sec"


def rate(result: dict, field: str) -> float:
    """An engine result's rate (field: rate_field, Metric.result_field)."""
    return result[field]


#: The windows' field, in results and in config: older engines' name first.
_WINDOWS = ("windows", "samples")


def _windows_key(section: dict) -> str | None:
    """Which of _WINDOWS a result or config section holds (None: neither)."""
    return next((k for k in _WINDOWS if section.get(k) is not None), None)


def windows_of(result: dict) -> list[dict]:
    """A client result's measured windows (result.windows; result.samples
    from an engine before the rename). KeyError when it has none."""
    key = _windows_key(result)
    if key is None:
        raise KeyError("windows")
    return result[key]


def windows_asked(doc: dict) -> int:
    """The windows a client was asked for (config.windows; config.samples
    from an engine before the rename); 0 when the document does not say."""
    config = doc.get("config") or {}
    key = _windows_key(config)
    return int(config[key] or 0) if key else 0


def full_windows(doc: dict) -> dict:
    """A stopped client's document as if complete, keeping the windows it
    measured in full (result.full_windows)."""
    key = _windows_key(doc.get("result") or {})
    if key is None:
        return doc
    doc = dict(doc, complete=True, result=dict(doc["result"]))
    doc["result"][key] = doc["result"][key][: doc["result"].get("full_windows", 0)]
    return doc


def unusable(doc: dict, cut: bool) -> str:
    """Why a client document gives no result ('' when it does)."""
    if cut:
        doc = full_windows(doc)
    if not doc.get("complete"):
        return "; ".join(doc.get("errors") or []) or "incomplete"
    res = doc["result"]
    if sum(x["work_ops"] for x in windows_of(res)) > res["ops"] + res["drained_ops"] + 1e-6:
        return "its windows credit more operations than it completed"
    return ""


def window_log_event(line: str | bytes) -> dict | None:
    """One line of a window log as its event: {"event": "measure" | "window"
    | "end", "rank", "windows" (asked), ...}; a "window" event (written as
    the clock leaves the window: it was measured in full) has "window",
    "end_s", "elapsed_s" and "ops" (operations completed inside it). None
    for a line cut short by a kill, or garbled."""
    try:
        ev = json.loads(line)
    except ValueError:
        return None
    return ev if isinstance(ev, dict) and isinstance(ev.get("event"), str) else None


def window_log(path: Path) -> list[dict]:
    """Every readable event of a window log, in order ([] when it cannot be read)."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return []
    return [ev for ev in map(window_log_event, data.splitlines()) if ev is not None]


def _finite(*values) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values)


def log_result(events: list[dict], op_bytes: float) -> dict | None:
    """A client's result rebuilt from its window log (window_log), for a
    client whose document was never written (a full disk, a crash): the
    windows it measured in full, from the first, each with the operations
    completed inside it (work_ops: without the shares of operations
    straddling its ends, which only the document has, and without slices),
    the start of its measurement, and op_bytes (what its document would say:
    its --size). A window in which no operation completed measured nothing
    (its servers were gone): the windows stop before it. from_window_log
    marks the result; None when the log holds no measured window."""
    start = next((ev.get("start_s") for ev in events if ev["event"] == "measure"), None)
    if not _finite(start):
        return None
    logged = {}
    for ev in events:
        w = ev.get("window")
        if ev["event"] == "window" and isinstance(w, int) and w >= 0 and _finite(ev.get("elapsed_s"), ev.get("ops")):
            logged.setdefault(w, ev)
    windows: list[dict] = []
    while len(windows) in logged:
        ev = logged[len(windows)]
        if ev["elapsed_s"] <= 0 or ev["ops"] <= 0:
            break
        windows.append({"elapsed_s": float(ev["elapsed_s"]), "work_ops": float(ev["ops"])})
    if not windows:
        return None
    ends = [str(ev.get("end")) for ev in events if ev["event"] == "end"]
    return {
        "measure_start_s": float(start),
        "windows": windows,
        "op_bytes": op_bytes,
        "end": ends[-1] if ends else "no end logged",
        "from_window_log": True,
    }


def log_windows_asked(events: list[dict]) -> int:
    """The windows a client was asked for, as its window log says (0: it does not)."""
    asked = [ev.get("windows") for ev in events]
    return max([int(a) for a in asked if isinstance(a, int) and not isinstance(a, bool)], default=0)


def latency_bins(doc: dict) -> list:
    """A client document's latency bins: [low_us, high_us, count] each
    (KeyError, TypeError when it has none)."""
    return doc["result"]["latency_us"]["bins"]


def merge_bins(bin_lists: Iterable[list]) -> list[tuple[float, float, int]]:
    """Several clients' latency bins merged (counts of equal bins added), by bin."""
    merged: dict[tuple[float, float], int] = {}
    for bins in bin_lists:
        for lo, hi, n in bins:
            merged[(lo, hi)] = merged.get((lo, hi), 0) + n
    return [(lo, hi, n) for (lo, hi), n in sorted(merged.items())]


@dataclass
class Latency:
    """The merged latency distribution of one stage's client processes."""

    stage: str
    metric: str
    bins: list[tuple[float, float, int]]  # [low_us, high_us, count]
    processes: int
    #: Other stages the same samples stand for (measured once).
    also: tuple[str, ...] = ()
    #: The (server processes, client processes) of its samples' placements.
    placements: tuple[tuple[int, int], ...] = ()

    @property
    def count(self) -> int:
        return sum(b[2] for b in self.bins)

    def quantile(self, q: float) -> float:
        """Upper edge of the bin holding the q-th sample (microseconds)."""
        rank, seen = q * self.count, 0
        for _lo, hi, n in self.bins:
            seen += n
            if seen >= rank:
                return hi
        return self.bins[-1][1]
