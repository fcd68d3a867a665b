"""The one reader of engine documents (the JSON each `rooftop-engine`
command writes with --output, or prints: parse), and the one place that
names their files (CLIENT_DOCUMENT, SERVER_DOCUMENT, STORAGE_DOCUMENT,
WINDOW_LOG; a test keeps it so): loading one, a client result's windows
(result.windows; engines before the rename wrote result.samples and
config.samples, still read) and which of them a stopped client measured
in full, its rate field, and its latency bins merged into a distribution
(Latency). Also the one reader of a client's window log (the JSON lines
`load --window-log` appends as it measures: WindowLog, window_log), and
the result rebuilt from one when the client's document was never written
(log_result).

Imports nothing of rooftop: the campaign, the store, the results, probe,
audit, bursts, interfere and nics all read documents through it."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

#: A client's document in its round's folder ({rank}: the engine replaces it in --output).
CLIENT_DOCUMENT = "client-{rank}.json"
#: A server's document in its group's folder.
SERVER_DOCUMENT = "server-{rank}.json"
#: A client's window log (load --window-log) in its round's folder.
WINDOW_LOG = "windows-{rank}.jsonl"
#: The document of `rooftop audit`'s one storage command (rooftop-engine storage), in its folder.
STORAGE_DOCUMENT = "storage-0.json"
#: The campaign's record of a round, beside its client documents: window by
#: window, the keys of the sample rows it measured at once ({"keys": [[key, ...], ...]}).
ROUND_DOCUMENT = "round.json"


def load(path: Path) -> dict:
    """One engine document (OSError, ValueError when it cannot be read)."""
    return json.loads(Path(path).read_text())


def parse(text: str) -> dict | None:
    """An engine document from its text (a command's standard output, a
    file read); None when there is none or it is not JSON."""
    text = text.strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def rank_of(path: Path) -> int:
    """The rank of a per-rank document: client-3.json -> 3 (ValueError otherwise)."""
    return int(Path(path).stem.split("-", 1)[1])


def client_document(folder: Path, rank: int) -> Path:
    """The document of client rank in a round's folder (CLIENT_DOCUMENT)."""
    return Path(folder) / CLIENT_DOCUMENT.format(rank=rank)


def client_documents(folder: Path) -> list[Path]:
    """A round's client documents (CLIENT_DOCUMENT), by name."""
    return sorted(Path(folder).glob(CLIENT_DOCUMENT.format(rank="*")))


def round_keys(folder: Path) -> list[list[str]] | None:
    """A round's row keys, window by window (ROUND_DOCUMENT); None when its
    folder has no readable record (a round measured before there was one)."""
    try:
        keys = load(Path(folder) / ROUND_DOCUMENT)["keys"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return keys if isinstance(keys, list) and all(isinstance(k, list) for k in keys) else None


def server_documents(folder: Path) -> list[Path]:
    """A server group's documents (SERVER_DOCUMENT), by name."""
    return sorted(Path(folder).glob(SERVER_DOCUMENT.format(rank="*")))


def window_log_path(folder: Path, rank: int) -> Path:
    """The window log of client rank in a round's folder (WINDOW_LOG)."""
    return Path(folder) / WINDOW_LOG.format(rank=rank)


def window_logs(folder: Path) -> list[Path]:
    """A round's window logs (WINDOW_LOG), by name."""
    return sorted(Path(folder).glob(WINDOW_LOG.format(rank="*")))


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


def _finite(*values) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values)


def window_log_event(line: str | bytes) -> dict | None:
    """One line of a window log as its event: {"event": "measure" | "window"
    | "end", "rank", "windows" (asked), ...}; a "measure" event has
    "start_s", a "window" event (written as the clock leaves the window: it
    was measured in full) "window" (an index from 0), "end_s", "elapsed_s"
    and "ops" (operations completed inside it). None for a damaged line:
    cut short by a kill, garbled, or a measure or window event whose
    numbers are missing, not numbers or not finite (NaN, Infinity)."""
    try:
        ev = json.loads(line)
    except ValueError:
        return None
    if not isinstance(ev, dict) or not isinstance(ev.get("event"), str):
        return None
    if ev["event"] == "measure" and not _finite(ev.get("start_s")):
        return None
    if ev["event"] == "window":
        w = ev.get("window")
        if not (_finite(w, ev.get("end_s"), ev.get("elapsed_s"), ev.get("ops")) and isinstance(w, int) and w >= 0):
            return None
    return ev


class WindowLog:
    """One client's window log, read as it grows: each read() gives the
    events of the lines completed since the last. A line counts once its
    newline is written (the engine appends a line and its newline in one
    write, and counts a short write as not written): a last line without
    one is still being written, or was cut short by a kill, and is left
    out; a damaged line (window_log_event) is skipped. Never blocks the
    reader or the engine: the file is opened non-blocking (a FIFO too)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._pos = 0
        self._rest = b""

    def read(self) -> list[dict]:
        """The events of the lines completed since the last read ([] when
        the file cannot be read, or does not exist yet)."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            return []
        data = b""
        try:
            os.lseek(fd, self._pos, os.SEEK_SET)
            while chunk := os.read(fd, 1 << 20):
                data += chunk
        except OSError:
            pass  # what was read so far counts
        finally:
            os.close(fd)
        self._pos += len(data)
        *lines, self._rest = (self._rest + data).split(b"\n")
        return [ev for ev in map(window_log_event, lines) if ev is not None]


def window_log(path: Path) -> list[dict]:
    """Every event of a window log, in order (WindowLog read once; [] when
    it cannot be read)."""
    return WindowLog(path).read()


def log_result(events: list[dict], op_bytes: float) -> dict | None:
    """A client's result rebuilt from its window log (the events of
    window_log, checked there), for a
    client whose document was never written (a full disk, a crash): the
    windows it measured in full, from the first, each with the operations
    completed inside it (work_ops: without the shares of operations
    straddling its ends, which only the document has, and without slices),
    the start of its measurement, and op_bytes (what its document would say:
    its --size). A window in which no operation completed measured nothing
    (its servers were gone): the windows stop before it. from_window_log
    marks the result; None when the log holds no measured window."""
    start = next((ev["start_s"] for ev in events if ev["event"] == "measure"), None)
    if start is None:
        return None
    logged: dict[int, dict] = {}
    for ev in events:
        if ev["event"] == "window":
            logged.setdefault(ev["window"], ev)
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


def result_bins(result: dict) -> list:
    """A client result's latency bins ([] when it has none: a result
    rebuilt from a window log, an engine that kept none)."""
    latency = result.get("latency_us")
    return (latency.get("bins") or []) if isinstance(latency, dict) else []


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
