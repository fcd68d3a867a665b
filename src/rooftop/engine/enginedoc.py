"""The one reader of engine documents (the JSON each `rooftop-engine`
command writes with --output): loading one, a client result's windows
(result.windows; engines before the rename wrote result.samples and
config.samples, still read) and which of them a stopped client measured
in full, its rate field, and its latency bins merged into a distribution
(Latency).

Imports nothing of rooftop: the campaign, the store, the results, probe
and audit all read documents through it."""

from __future__ import annotations

import json
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
