"""Points measured elsewhere: a CSV file of a service's rates (a run on a
large machine, another benchmark's output) stored as imported ServicePoints
in a run, so they sit on that run's roofline like measured ones.

The file (docs/services.md, "Points measured elsewhere"): a header line,
then one line per point, columns in any order, names case-insensitive:

    server_procs   server processes of the placement (integer >= 1)
    client_procs   client processes (integer >= 1)
    per_client     the rate one client process reached: a finite number
                   above 0, also in the metric's base unit and for all its
                   clients (1e303 M ops/s, inf in ops/s, is refused); 0 or
                   empty on a line whose status is not ok
    unit           its unit: ops/s, K ops/s, M ops/s, G ops/s, T ops/s,
                   bytes/s, KiB/s, MiB/s, GiB/s, TiB/s, MB/s, GB/s
                   (rooftop.units), one that measures the
                   compared metric
    window         optional: the window's index at its placement (default:
                   0, 1, ... in file order)
    service        optional: the service's name on that line (default: the
                   name given to the import)
    status, error  optional: a status other than ok (failed, invalid) keeps
                   the line as a point without a rate, left out of
                   efficiencies with its error as the reason
    metric         optional: must be the metric imported against

The columns `rooftop export RUN --services` adds (aggregate, x, origin, key)
are ignored (derived again), and the quote it puts before a text cell a
spreadsheet would run is taken off (rooftop.files.csv_value), so its CSV
reads back.

Blank lines and lines starting with '#' are skipped. Rates are converted to
the metric's base unit (ops/s, bytes/s). Any error (a missing column, a
column given twice, an unknown unit, a non-number, a rate that is not one)
names the file, the line and the column, and nothing is stored: the file is
read one line at a time into one database transaction (its memory does not
grow with the file), committed after its last line; an error, Ctrl-C or a
kill before then leaves nothing of it. Importing a file again replaces the points with the same placement and
window (their key), so a corrected file can be imported over a bad one.
"""

from __future__ import annotations

import csv
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from rooftop import metrics, results
from rooftop.files import csv_value
from rooftop.keys import ConfigError
from rooftop.numbers import rate_problem
from rooftop.service import points
from rooftop.service.points import ServicePoint
from rooftop.units import PARAM_UNITS

#: Columns every line must have, and the optional ones.
REQUIRED = ("server_procs", "client_procs", "per_client", "unit")
OPTIONAL = ("window", "service", "status", "error", "metric")
#: Columns of `rooftop export --services` derived again on import.
IGNORED = ("aggregate", "x", "origin", "key")
#: A service name: what figures, keys and figures of merit may carry.
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$")


@dataclass
class Imported:
    """What an import stored: how many points, of which services; with
    evaluate(), the run's id and, where it has the metric's roofline, those
    services' efficiency (service.efficiency) and notes."""

    count: int
    services: list[str]
    run_id: str = ""
    evaluated: list = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def import_and_evaluate(store, run_id: str, path, name: str | None = None, metric: str = "rpc") -> Imported:
    """`rooftop service RUN --import FILE.csv`: import_csv, then the
    imported services as the run's results now evaluate them."""
    got = import_csv(store, run_id, path, name, metric)
    from rooftop.service import report  # loads matplotlib

    res = results.load(store, run_id, [report.SECTION])  # the service section only
    got.run_id = res.run.id
    got.evaluated = [s for s in res.services if s.service in got.services]
    got.notes = [n for n in res.service_notes if n.split(":")[0] in got.services]
    return got


def import_csv(store, run_id: str, path, name: str | None = None, metric: str = "rpc") -> Imported:
    """Reads FILE.csv (module docstring) and stores its points in the run
    (origin "imported"), all or none: line by line into one transaction
    (memory bounded however long the file; a kill before its commit leaves
    nothing). name: the service of lines without a service column
    (default: the file's stem); metric: the rooftop metric they are
    compared with. ConfigError names the file, line and column of the
    first error."""
    run = store.get_run(run_id)  # StoreError for an unknown run, before reading anything
    services: set[str] = set()

    def counted():
        for p in read_csv(path, name, metric):
            services.add(p.service)
            yield p

    try:
        count = points.add_all(store, run.id, counted())
    except points.DuplicatePoint as e:
        p, line = e.point, e.earlier.get("line")
        raise ConfigError(
            f"{path} line {p.detail['line']}, column window: {p.service} {p.server_procs} server x "
            f"{p.client_procs} client processes, window {p.window} is also on line {line}"
        ) from None
    if not count:
        raise ConfigError(f"{path}: a header and no points")
    return Imported(count, sorted(services))


def read_csv(path, name: str | None = None, metric: str = "rpc") -> Iterator[ServicePoint]:
    """The points of FILE.csv, validated one line at a time as they are
    read (nothing stored); ConfigError at the first bad line."""
    path = Path(path)
    if metric not in metrics.METRICS:
        raise ConfigError(f"--metrics: {metric!r} is not a metric ({', '.join(metrics.METRICS)})")
    base = metrics.get(metric).unit
    default = name if name is not None else path.stem
    if not NAME.match(default):
        raise ConfigError(f"service name {default!r}: letters, digits and _ . + - only (at most 64)")
    try:
        f = path.open(encoding="utf-8-sig", newline="")
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror}") from None
    with f:
        try:
            yield from _points(path, _lines(f), default, metric, base)
        except UnicodeDecodeError:
            raise ConfigError(f"{path}: not a text file (expected CSV)") from None
        except OSError as e:
            raise ConfigError(f"cannot read {path}: {e.strerror}") from None


def _lines(f) -> Iterator[tuple[int, str]]:
    """(line number, text) of the lines that are not blank or comments."""
    for n, line in enumerate(f, 1):
        if line.strip() and not line.lstrip().startswith("#"):
            yield n, line.rstrip("\r\n")


def _header(path: Path, head_no: int, head: str) -> list[str]:
    header = [h.strip().lower() for h in next(csv.reader([head]))]
    twice = sorted({h for h in header if header.count(h) > 1})
    if twice:
        raise ConfigError(f"{path} line {head_no}: column {', '.join(twice)} given twice (each column once)")
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise ConfigError(
            f"{path} line {head_no}: missing column {', '.join(missing)} (the header has "
            f"{', '.join(header) or 'nothing'}; required: {', '.join(REQUIRED)}; optional: {', '.join(OPTIONAL)})"
        )
    unknown = [h for h in header if h not in REQUIRED + OPTIONAL + IGNORED]
    if unknown:
        raise ConfigError(
            f"{path} line {head_no}: unknown column {', '.join(unknown)} (columns: {', '.join(REQUIRED + OPTIONAL)})"
        )
    return header


class _Bad(Exception):
    """A bad cell: its column and what is wrong (_points adds the file and line)."""

    def __init__(self, column: str, text: str):
        super().__init__(text)
        self.column = column


def _points(path: Path, lines: Iterator[tuple[int, str]], default: str, metric: str, base: str):
    first = next(lines, None)
    if first is None:
        raise ConfigError(f"{path}: no header line (expected the columns {', '.join(REQUIRED)})")
    header = _header(path, *first)
    seen: dict[tuple, int] = {}  # per placement (a few): the next window index
    for no, line in lines:
        cells = [csv_value(c.strip()) for c in next(csv.reader([line]))]  # export's quoted text cells as they were
        if len(cells) != len(header):
            raise ConfigError(f"{path} line {no}: {len(cells)} values for {len(header)} columns")
        try:
            yield _point(dict(zip(header, cells)), path, no, default, metric, base, seen)
        except _Bad as e:
            raise ConfigError(f"{path} line {no}, column {e.column}: {e}") from None


def _point(row: dict, path: Path, no: int, default: str, metric: str, base: str, seen: dict) -> ServicePoint:
    """One line's point (_Bad names the first bad cell)."""
    service = row.get("service") or default
    if not NAME.match(service):
        raise _Bad("service", f"{service!r}: letters, digits and _ . + - only (at most 64)")
    if row.get("metric") and row["metric"] != metric:
        raise _Bad("metric", f"{row['metric']!r}, but the points are imported against {metric}")
    status = row.get("status") or "ok"
    if status not in ("ok", "failed", "invalid"):
        raise _Bad("status", f"{status!r} is not ok, failed or invalid")
    sp, cp = _count(row["server_procs"], "server_procs"), _count(row["client_procs"], "client_procs")
    factor = _unit(row["unit"], base, metric)
    rate = None
    if status == "ok" or row["per_client"]:
        rate = _rate(row["per_client"], factor, cp, status == "ok", row["unit"], base)
    place = (service, sp, cp)
    window = _count(row["window"], "window", least=0) if row.get("window") else seen.get(place, 0)
    seen[place] = max(seen.get(place, 0), window + 1)
    return ServicePoint(
        service,
        metric,
        base,
        sp,
        cp,
        window,
        status,
        None if rate is None else rate * factor * cp,
        error=row.get("error") or ("" if status == "ok" else f"{status} where it was measured"),
        origin="imported",
        detail={"file": str(path), "line": no, "per_client": rate, "unit": row["unit"]},
    )


def _rate(text: str, factor: float, clients: int, measured: bool, unit: str, base: str) -> float:
    """per_client as written (a number in its unit), checked as a rate
    (rooftop.numbers.rate_problem: finite and above 0; 0 too on a line
    whose status is not ok) as written, in the metric's base unit and for
    all its clients: 1e303 M ops/s overflows to inf ops/s and is refused
    here, never stored."""
    try:
        v = float(text)
    except ValueError:
        raise _Bad("per_client", f"{text!r} is not a number") from None
    for i, value in enumerate((v, v * factor, v * factor * clients)):
        if rate_problem(value, measured):
            what = ("", f" ({value:g} {base})", f" ({clients} clients: {value:g} {base})")[i]
            need = "a finite number above 0" if measured else "a finite number, 0 or more"
            raise _Bad("per_client", f"{text!r} {unit}{what} is not a rate ({need})")
    return v


def _count(text: str, column: str, least: int = 1) -> int:
    try:
        v = int(text)
    except ValueError:
        raise _Bad(column, f"{text!r} is not a whole number") from None
    if v < least:
        raise _Bad(column, f"{v} is less than {least}")
    return v


def _unit(text: str, base: str, metric: str) -> float:
    """The factor to the metric's base unit of a unit label ('K ops/s',
    'Kops/s' and 'k ops/s' alike)."""
    found = _unit_named(text.replace(" ", "").lower())
    if found is None:
        raise _Bad("unit", f"{text!r} is not a unit (one of {', '.join(PARAM_UNITS)})")
    label, b, f = found
    if b != base:
        fit = [u for u, (bb, _) in PARAM_UNITS.items() if bb == base]
        raise _Bad("unit", f"{label} does not measure {metric} (its unit is {base}: {', '.join(fit)})")
    return f


@functools.lru_cache(maxsize=64)
def _unit_named(squashed: str) -> tuple[str, str, float] | None:
    """(label, base unit, factor) of PARAM_UNITS whose label, without spaces
    and in lower case, is squashed (a file names a few units on every line)."""
    return next(
        ((label, b, f) for label, (b, f) in PARAM_UNITS.items() if label.replace(" ", "").lower() == squashed), None
    )
