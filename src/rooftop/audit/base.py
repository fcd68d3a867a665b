"""What one pitfall of the audit is, and how its measured settings become a
row: per setting the median and range of its repeats, per comparison the
ratio, or "indistinguishable here" when the repeats overlap."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field

from rooftop.engine import enginedoc
from rooftop.units import fmt_pct

#: The verdict of a comparison whose two settings' repeats overlap.
INDISTINGUISHABLE = "indistinguishable here"


@dataclass(frozen=True)
class Setting:
    """One side of a pitfall: its name (stored in the sample key) and the
    engine arguments that make it. Network pitfalls: server and client
    arguments, the binding of both processes and the server's progress
    mode; storage pitfalls: the
    arguments of `rooftop-engine storage` (client)."""

    name: str
    server: tuple[str, ...] = ()
    client: tuple[str, ...] = ()
    binding: str = "core"
    progress: str = "busy"  # the server's --progress (network pitfalls)


@dataclass(frozen=True)
class Pitfall:
    """One entry of the audit's table (rooftop.audit.PITFALLS)."""

    name: str  # --only takes it
    title: str  # the table's first column
    target: str  # what it measures: network (a server and a client) | storage (the local storage mode)
    op: str  # the engine operation
    args: tuple[str, ...]  # the client's (storage: the storage command's) arguments of every setting
    unit: str  # ops/s | bytes/s
    settings: tuple[Setting, ...]
    comparisons: tuple[tuple[str, str], ...]  # (a, b): a's rate against b's
    rationale: str  # why the two settings differ, and what “The Dark Side of Microbenchmarking” measured
    meaning: Callable[[list[dict]], str]  # the comparisons -> one line for the service
    needs_direct: tuple[str, ...] = ()  # settings that need O_DIRECT (refused on tmpfs)

    @property
    def field(self) -> str:
        return enginedoc.rate_field("ops" if self.unit == "ops/s" else "bytes")

    def describe(self) -> dict:
        """Every parameter, for the run's config (and so its run_params)."""
        return {
            "title": self.title,
            "target": self.target,
            "op": self.op,
            "args": list(self.args),
            "unit": self.unit,
            "rationale": self.rationale,
            "comparisons": [f"{a} vs {b}" for a, b in self.comparisons],
            "settings": {
                s.name: {
                    "server": list(s.server),
                    "client": list(s.client),
                    "binding": s.binding,
                    **({"progress": s.progress} if self.target == "network" else {}),
                }
                for s in self.settings
            },
        }


@dataclass
class Measured:
    """The repeats of one setting: rates, or why it could not be measured."""

    setting: str
    rates: list[float] = field(default_factory=list)
    error: str = ""

    def stats(self) -> dict:
        if not self.rates:
            return {"setting": self.setting, "n": 0, "median": None, "min": None, "max": None, "error": self.error}
        return {
            "setting": self.setting,
            "n": len(self.rates),
            "median": statistics.median(self.rates),
            "min": min(self.rates),
            "max": max(self.rates),
            "error": self.error,
        }


def compare(a: dict, b: dict) -> dict:
    """a's rate against b's: ratio of medians and the verdict."""
    out = {"a": a["setting"], "b": b["setting"], "ratio": None}
    if a["error"] or b["error"] or not a["n"] or not b["n"]:
        why = a["error"] or b["error"] or "no repeat measured"
        return {**out, "verdict": f"not measurable here: {why}", "measurable": False}
    ratio = a["median"] / b["median"] if b["median"] else None
    out.update(ratio=ratio, measurable=True)
    if a["n"] < 2 or b["n"] < 2:
        overlap = False
        note = " (one repeat: no noise estimate)"
    else:
        overlap = a["min"] <= b["max"] and b["min"] <= a["max"]
        note = ""
    if overlap:
        return {**out, "verdict": INDISTINGUISHABLE, "winner": None}
    winner, loser = (a, b) if a["median"] >= b["median"] else (b, a)
    factor = winner["median"] / loser["median"] if loser["median"] else float("inf")
    return {
        **out,
        "verdict": f"{winner['setting']} {factor:.2f}x {loser['setting']}{note}",
        "winner": winner["setting"],
    }


def summarize(p: Pitfall, measured: dict[str, Measured], where: str = "") -> dict:
    """The audit row of one pitfall."""
    stats = [measured[s.name].stats() for s in p.settings]
    by_name = {s["setting"]: s for s in stats}
    comps = [compare(by_name[a], by_name[b]) for a, b in p.comparisons]
    return {
        "pitfall": p.name,
        "title": p.title,
        "unit": p.unit,
        "where": where,
        "settings": stats,
        "comparisons": comps,
        "rationale": p.rationale,
        "meaning": p.meaning(comps),
    }


def pct(ratio: float) -> str:
    """1.4 -> '40 % more', 0.7 -> '30 % less'."""
    return f"{fmt_pct(abs(ratio - 1))} {'more' if ratio >= 1 else 'less'}"
