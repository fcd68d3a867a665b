"""A client's rate from what it left in its sample folder (client-R.out,
progress-R.jsonl), and whether a sample's clients shared their window
(the engine's rule: engine.min_overlap of the window measured together)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from rooftop.service.spec import ServiceSpec

#: Lines of a client's output quoted when its rate cannot be read.
TAIL_LINES = 5


class RateError(ValueError):
    """A client's rate cannot be read (the message quotes its output's end)."""


@dataclass(frozen=True)
class Window:
    """When each client ran, and the time they all shared."""

    starts: dict[int, float]
    ends: dict[int, float]

    @property
    def lo(self) -> float:
        return max(self.starts.values())

    @property
    def hi(self) -> float:
        return min(self.ends.values())

    @property
    def shared_s(self) -> float:
        return max(0.0, self.hi - self.lo)

    @property
    def overlap(self) -> float:
        """The shared time over the longest client's run (1: all ran together)."""
        longest = max(self.ends[r] - self.starts[r] for r in self.starts)
        return self.shared_s / longest if longest > 0 else 0.0

    @property
    def skew_s(self) -> float:
        return self.lo - min(self.starts.values())


def tail(path: Path, n: int = TAIL_LINES) -> str:
    try:
        text = path.read_bytes().decode(errors="replace")
    except OSError:
        return "(no output)"
    lines = [ln.strip() for ln in re.split(r"[\r\n]", text) if ln.strip()]
    return " / ".join(lines[-n:]) if lines else "(no output)"


def _json_path(doc, path: str):
    for part in path.split("."):
        if isinstance(doc, list) and part.lstrip("-").isdigit():
            doc = doc[int(part)]
        elif isinstance(doc, dict) and part in doc:
            doc = doc[part]
        else:
            raise KeyError(part)
    return doc


def _last_json(text: str):
    """The last JSON document of text: the last line that is one, else the whole text."""
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith(("{", "[")):
            try:
                return json.loads(line)
            except ValueError:
                continue
    return json.loads(text)


def final_rate(spec: ServiceSpec, out: Path) -> float:
    """The rate a client printed at its end (rate.regex or rate.json), in rate.unit."""
    text = out.read_bytes().decode(errors="replace") if out.exists() else ""
    if spec.rate.regex:
        rx = re.compile(spec.rate.regex)
        found = [m for m in (rx.search(ln) for ln in re.split(r"[\r\n]", text)) if m]
        if not found:
            raise RateError(f"output does not match rate.regex {spec.rate.regex!r}; last lines: {tail(out)}")
        m = found[-1]
        g = m.group("rate") if "rate" in rx.groupindex else m.group(1)
        try:
            return float(g)
        except (TypeError, ValueError):
            raise RateError(f"rate.regex matched {g!r}, not a number; last lines: {tail(out)}") from None
    try:
        v = _json_path(_last_json(text), spec.rate.json)
        return float(v)
    except (ValueError, KeyError, IndexError, TypeError) as e:
        raise RateError(f"no number at rate.json {spec.rate.json!r} ({e}); last lines: {tail(out)}") from None


def progress_rate(spec: ServiceSpec, prog: Path, out: Path, lo: float, hi: float) -> float:
    """The work of a client's progress lines over [lo, hi] (each line's rate
    over the interval since the line before it), per second of that time."""
    points = []
    if prog.exists():
        for line in prog.read_text().splitlines():
            if line.strip():
                d = json.loads(line)
                points.append((d["t"], d["rate"]))
    work = covered = 0.0
    for (t0, _), (t1, r) in zip(points, points[1:], strict=False):
        a, b = max(t0, lo), min(t1, hi)
        if b > a:
            work += r * (b - a)
            covered += b - a
    if covered <= 0 or covered < 0.5 * (hi - lo):
        raise RateError(
            f"{len(points)} progress lines matching rate.progress {spec.rate.progress!r}, too few in the "
            f"{hi - lo:.2f} s all clients shared; last lines: {tail(out)}"
        )
    return work / covered
