"""Points measured elsewhere: a CSV file of a service's rates (a run on a
large machine, another benchmark's output) stored as imported ServicePoints
in a run, so they sit on that run's roofline like measured ones.

The file (docs/services.md, "Points measured elsewhere"): a header line,
then one line per sample, columns in any order, names case-insensitive:

    server_procs   server processes of the placement (integer >= 1)
    client_procs   client processes (integer >= 1)
    per_client     the rate one client process reached (number >= 0)
    unit           its unit: ops/s, K ops/s, M ops/s, bytes/s, KiB/s, MiB/s,
                   GiB/s, MB/s, GB/s (rooftop.units), one that measures the
                   compared metric
    sample         optional: the sample's index at its placement (default:
                   0, 1, ... in file order)
    service        optional: the service's name on that line (default: the
                   name given to the import)
    status, error  optional: a status other than ok (failed, invalid) keeps
                   the line as a point without a rate, left out of
                   efficiencies with its error as the reason
    metric         optional: must be the metric imported against

The columns `rooftop export RUN --services` adds (aggregate, x, source, key)
are ignored (derived again), and the quote it puts before a text cell a
spreadsheet would run is taken off (rooftop.files.csv_value), so its CSV
reads back.

Blank lines and lines starting with '#' are skipped. Rates are converted to
the metric's base unit (ops/s, bytes/s). Any error (a missing column, an
unknown unit, a non-number) names the file, the line and the column, and
nothing is stored: the whole file is read before the first point is.
Importing a file again replaces the points with the same placement and
sample (their key), so a corrected file can be imported over a bad one.
"""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

from rooftop import metrics
from rooftop.files import csv_value
from rooftop.keys import ConfigError
from rooftop.service import points
from rooftop.service.points import ServicePoint
from rooftop.units import PARAM_UNITS

#: Columns every line must have, and the optional ones.
REQUIRED = ("server_procs", "client_procs", "per_client", "unit")
OPTIONAL = ("sample", "service", "status", "error", "metric")
#: Columns of `rooftop export --services` derived again on import.
IGNORED = ("aggregate", "x", "source", "key")
#: A service name: what figures, keys and figures of merit may carry.
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$")


def import_csv(store, run_id: str, path, name: str | None = None, metric: str = "rpc") -> list[ServicePoint]:
    """Reads FILE.csv (module docstring) and stores its points in the run
    (source "imported"), all or none; returns them. name: the service of
    lines without a service column (default: the file's stem); metric: the
    rooftop metric they are compared with. ConfigError names the file,
    line and column of the first error."""
    run = store.get_run(run_id)  # StoreError for an unknown run, before reading anything
    pts = read_csv(path, name, metric)
    for p in pts:
        points.add(store, run.id, p)
    return pts


def read_csv(path, name: str | None = None, metric: str = "rpc") -> list[ServicePoint]:
    """The points of FILE.csv, validated (nothing stored)."""
    path = Path(path)
    if metric not in metrics.METRICS:
        raise ConfigError(f"--metrics: {metric!r} is not a metric ({', '.join(metrics.METRICS)})")
    base = metrics.get(metric).unit
    default = name if name is not None else path.stem
    if not NAME.match(default):
        raise ConfigError(f"service name {default!r}: letters, digits and _ . + - only (at most 64)")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a text file (expected CSV)") from None
    lines = [
        (n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip() and not line.lstrip().startswith("#")
    ]
    if not lines:
        raise ConfigError(f"{path}: no header line (expected the columns {', '.join(REQUIRED)})")
    head_no, head = lines[0]
    header = [h.strip().lower() for h in next(csv.reader([head]))]
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
    out: list[ServicePoint] = []
    seen: dict[tuple, int] = {}
    for no, line in lines[1:]:
        cells = [csv_value(c.strip()) for c in next(csv.reader([line]))]  # export's quoted text cells as they were
        if len(cells) != len(header):
            raise ConfigError(f"{path} line {no}: {len(cells)} values for {len(header)} columns")
        row = dict(zip(header, cells))
        where = lambda col, _no=no: f"{path} line {_no}, column {col}"  # noqa: E731
        service = row.get("service") or default
        if not NAME.match(service):
            raise ConfigError(f"{where('service')}: {service!r}: letters, digits and _ . + - only (at most 64)")
        if row.get("metric") and row["metric"] != metric:
            raise ConfigError(f"{where('metric')}: {row['metric']!r}, but the points are imported against {metric}")
        status = row.get("status") or "ok"
        if status not in ("ok", "failed", "invalid"):
            raise ConfigError(f"{where('status')}: {status!r} is not ok, failed or invalid")
        sp, cp = _count(row["server_procs"], where("server_procs")), _count(row["client_procs"], where("client_procs"))
        factor = _unit(row["unit"], base, metric, where("unit"))
        rate = _number(row["per_client"], where("per_client")) if status == "ok" or row["per_client"] else None
        place = (service, sp, cp)
        if row.get("sample"):
            sample = _count(row["sample"], where("sample"), least=0)
        else:
            sample = seen.get(place, 0)
        seen[place] = max(seen.get(place, 0), sample + 1)
        out.append(
            ServicePoint(
                service,
                metric,
                base,
                sp,
                cp,
                sample,
                status,
                None if rate is None else rate * factor * cp,
                error=row.get("error") or ("" if status == "ok" else f"{status} where it was measured"),
                source="imported",
                detail={"file": str(path), "line": no, "per_client": rate, "unit": row["unit"]},
            )
        )
    if not out:
        raise ConfigError(f"{path}: a header and no points")
    keys = {}
    for p in out:
        k = (p.service, p.the_key())
        if k in keys:
            raise ConfigError(
                f"{path} line {p.detail['line']}, column sample: {p.service} {p.server_procs} server x "
                f"{p.client_procs} client processes, sample {p.sample} is also on line {keys[k]}"
            )
        keys[k] = p.detail["line"]
    return out


def _number(text: str, where: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise ConfigError(f"{where}: {text!r} is not a number") from None
    if not math.isfinite(v) or v < 0:
        raise ConfigError(f"{where}: {text!r} is not a rate (a finite number, 0 or more)")
    return v


def _count(text: str, where: str, least: int = 1) -> int:
    try:
        v = int(text)
    except ValueError:
        raise ConfigError(f"{where}: {text!r} is not a whole number") from None
    if v < least:
        raise ConfigError(f"{where}: {v} is less than {least}")
    return v


def _unit(text: str, base: str, metric: str, where: str) -> float:
    """The factor to the metric's base unit of a unit label ('K ops/s',
    'Kops/s' and 'k ops/s' alike)."""
    squash = lambda s: s.replace(" ", "").lower()  # noqa: E731
    found = [(label, b, f) for label, (b, f) in PARAM_UNITS.items() if squash(label) == squash(text)]
    if not found:
        raise ConfigError(f"{where}: {text!r} is not a unit (one of {', '.join(PARAM_UNITS)})")
    label, b, f = found[0]
    if b != base:
        fit = [u for u, (bb, _) in PARAM_UNITS.items() if bb == base]
        raise ConfigError(f"{where}: {label} does not measure {metric} (its unit is {base}: {', '.join(fit)})")
    return f
