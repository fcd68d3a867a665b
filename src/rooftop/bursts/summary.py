"""What a bursts run measured, per progress mode, from its stored series
(rooftop.bursts.timeline): the time lines for the figure and the summary table.

- burst rate: the median of the client's windows (operations per second);
- burst CPU, idle CPU: the median server CPU (user + system, cores) over the
  intervals entirely inside bursts' measured windows, or entirely inside
  gaps (outside the bursts, the client's start included); idle CPU wanted:
  the same of the time it ran or waited to run (rooftop.bursts.procstat), which a
  loaded machine does not lower;
- burst and idle watts: the same medians of package power (RAPL);
- J/op: burst watts / burst rate (the energy of one operation in a burst,
  the package's idle share included);
- time to full rate: per burst after the first, from its first window's
  start to the end of the first window at `full_rate` (90 %) of the mode's
  burst rate; the median over bursts. Its resolution is one interval.
- neighbour: its time with the service / its time alone.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from rooftop.units import fmt_pct, fmt_rate


@dataclass
class ModeLine:
    mode: str
    #: source -> quantity -> [(t, value)]
    points: dict[str, dict[str, list[tuple[float, float]]]] = field(default_factory=dict)
    #: [(start, end)] of each burst, from its client's launch to its end
    #: (end None: interrupted in it); outside them: the gaps
    bursts: list[tuple[float, float | None]] = field(default_factory=list)
    #: [(start, end)] of each burst's measured windows (launch and
    #: connection excluded): inside them, the burst's intervals
    measured: list[tuple[float, float]] = field(default_factory=list)

    def series(self, source: str, quantity: str) -> list[tuple[float, float]]:
        return self.points.get(source, {}).get(quantity, [])

    def cpu(self) -> list[tuple[float, float]]:
        """Server CPU (user + system, cores) per interval."""
        sys_ = dict(self.series("server", "cpu_sys"))
        return [(t, u + sys_.get(t, 0.0)) for t, u in self.series("server", "cpu_user")]

    def in_burst(self, t0: float, t1: float) -> bool:
        return any(s <= t0 + 1e-6 and t1 <= e + 1e-6 for s, e in self.measured)

    def find_measured(self, interval: float) -> None:
        """Each burst's measured span: its first window's start to its last window's end."""
        self.measured = []
        for start, end in self.bursts:
            ts = [t for t, _ in self.series("client", "rate") if start <= t and (end is None or t <= end + 1e-6)]
            if ts:
                self.measured.append((ts[0] - interval, ts[-1]))

    def unmeasured(self, t0: float, t1: float) -> bool:
        """No measured window overlaps [t0, t1] (the rate there is 0)."""
        return not any(s < t1 - 1e-6 and t0 < e - 1e-6 for s, e in self.measured)

    def in_gap(self, t0: float, t1: float) -> bool:
        return not any(s < t1 and (e is None or t0 < e) for s, e in self.bursts)


def lines(series_rows: list[dict], interval: float) -> dict[str, ModeLine]:
    """Mode -> its time line, from store.series() rows (rounds 'bursts/MODE'),
    in the order the modes ran."""
    out: dict[str, ModeLine] = {}
    for r in series_rows:
        if not r["round"].startswith("bursts/"):
            continue
        line = out.setdefault(r["round"].split("/", 1)[1], ModeLine(r["round"].split("/", 1)[1]))
        if r["source"] == "schedule":
            if r["quantity"] == "burst_start":
                line.bursts.append((r["t"], None))
            elif line.bursts:
                line.bursts[-1] = (line.bursts[-1][0], r["t"])
            continue
        line.points.setdefault(r["source"], {}).setdefault(r["quantity"], []).append((r["t"], r["value"]))
    for line in out.values():
        line.find_measured(interval)
    return out


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _within(points, line: ModeLine, interval: float, where: str) -> list[float]:
    test = line.in_burst if where == "burst" else line.in_gap
    return [v for t, v in points if test(t - interval, t)]


def time_to_full(line: ModeLine, interval: float, full: float, rate: float | None) -> float | None:
    """Median over bursts after the first (all bursts if only one) of the
    time from a burst's first window's start to the end of its first window
    at full x rate."""
    if not rate:
        return None
    times = []
    for start, end in line.measured[1:] or line.measured:
        wins = [(t, v) for t, v in line.series("client", "rate") if start <= t <= end + 1e-6]
        if not wins:
            continue
        first_start = wins[0][0] - interval
        hit = next((t for t, v in wins if v >= full * rate), None)
        if hit is not None:
            times.append(hit - first_start)
    return _median(times)


def summarize(line: ModeLine, interval: float, full: float = 0.9) -> dict:
    """The summary row of one mode (None where nothing was measured)."""
    rates = [v for _, v in line.series("client", "rate")]
    rate = _median(rates)
    watts = line.series("power", "power")
    out = {
        "mode": line.mode,
        "bursts": len(line.bursts),
        "windows": len(rates),
        "burst_rate": rate,
        "burst_cpu": _median(_within(line.cpu(), line, interval, "burst")),
        "idle_cpu": _median(_within(line.cpu(), line, interval, "gap")),
        "burst_watts": _median(_within(watts, line, interval, "burst")) if watts else None,
        "idle_watts": _median(_within(watts, line, interval, "gap")) if watts else None,
        "time_to_full_s": time_to_full(line, interval, full, rate),
    }
    for q in ("voluntary_switches", "involuntary_switches", "wakeups", "cpu_wanted"):
        out[f"idle_{q}"] = _median(_within(line.series("server", q), line, interval, "gap"))
        out[f"burst_{q}"] = _median(_within(line.series("server", q), line, interval, "burst"))
    out["joules_per_op"] = (out["burst_watts"] / rate) if out["burst_watts"] is not None and rate else None
    out["power_skipped"] = int(max((v for _, v in line.series("power", "skipped")), default=0))
    return out


def _num(v, fmt: str, unit: str = "") -> str:
    return "-" if v is None else f"{v:{fmt}}{unit}"


HEADER = [
    "mode",
    "burst rate",
    "burst CPU",
    "idle CPU",
    "idle CPU wanted",
    "idle wake-ups",
    "burst W",
    "idle W",
    "J/op",
    "to full rate",
    "neighbour slowdown",
]
POWER_COLUMNS = ("burst W", "idle W", "J/op")


def table_rows(rows: list[dict], neighbour: dict | None = None) -> list[list[str]]:
    """The summary table's text cells (HEADER), one row per mode."""
    slow = (neighbour or {}).get("slowdown", {})
    return [
        [
            r["mode"],
            fmt_rate(r["burst_rate"], "ops/s"),
            _num(r["burst_cpu"], ".2f"),
            _num(r["idle_cpu"], ".3f"),
            _num(r["idle_cpu_wanted"], ".3f"),
            _num(r["idle_wakeups"], ",.0f", "/s"),
            _num(r["burst_watts"], ".1f"),
            _num(r["idle_watts"], ".1f"),
            _num(r["joules_per_op"], ".3g"),
            _num(r["time_to_full_s"], ".2f", " s"),
            _num(slow.get(r["mode"]), ".2f", "x"),
        ]
        for r in rows
    ]


def table(rows: list[dict], neighbour: dict | None, power: bool, with_neighbour: bool):
    """(header, cells) as shown: without the power columns where no power
    was measured (a note says why) and without the neighbour's where none ran."""
    drop = set() if power else set(POWER_COLUMNS)
    if not with_neighbour:
        drop.add("neighbour slowdown")
    keep = [i for i, h in enumerate(HEADER) if h not in drop]
    return [HEADER[i] for i in keep], [[r[i] for i in keep] for r in table_rows(rows, neighbour)]


def notes(params: dict, power_note: str, nb: dict | None = None, rows: list[dict] = ()) -> list[str]:
    """The lines that go under the table (CLI, report); rows: the summary
    rows, to explain a burst column left empty."""
    out = []
    if power_note:
        out.append(f"power: not measured ({power_note}); CPU only")
    if params.get("neighbour"):
        alone = (nb or {}).get("alone_s")
        out.append(
            f"neighbour: {' '.join(params['neighbour_argv'])}, pinned to core(s) "
            f"{params['neighbour_cores']} (the server's); alone "
            + (f"{alone:.2f} s" if alone is not None else "not measured")
            + "; slowdown = its time beside the server / its time alone"
        )
    out.append(
        "CPU in cores (1.0: one core busy); idle: median over the intervals entirely in gaps; time "
        f"to full rate: to {fmt_pct(params['full_rate'])} of the burst rate, resolution one interval "
        f"({params['interval']:g} s)"
    )
    skipped = {r["mode"]: r["power_skipped"] for r in rows if r.get("power_skipped")}
    if skipped:
        out.append(
            "power: readings of the RAPL counter failed and those intervals have no power point ("
            + ", ".join(f"{m}: {n}" for m, n in skipped.items())
            + ")"
        )
    if any(r.get("burst_rate") is not None and r.get("burst_cpu") is None for r in rows):
        out.append(
            f"burst CPU -: no sampling interval of {params['interval']:g} s lay entirely inside a burst of "
            f"{params['on']:g} s (intervals are not aligned with bursts): an --interval of at most half "
            "of --on gives one"
        )
    return out
