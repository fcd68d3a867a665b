"""`rooftop size`: how many server processes for C client processes, from a
run's roofline or a parameters file's (rooftop.service.sizing)."""

from __future__ import annotations

import re
from pathlib import Path

from rooftop.cli.common import json_flag, results_arg, takes_runs
from rooftop.numbers import json_text


def parse_rate(text: str, base: str, metric: str) -> float:
    """'10e6', '10 M ops/s', '10Mops/s', '50 GiB/s' -> base units (ops/s,
    bytes/s); a unit must measure the metric."""
    from rooftop.keys import ConfigError
    from rooftop.units import PARAM_UNITS

    m = re.match(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*(.*?)\s*$", text)
    if not m:
        raise ConfigError(f"--target: {text!r} is not a rate (e.g. 10e6, '10 M ops/s', '50 GiB/s')")
    value, unit = float(m.group(1)), m.group(2)
    if not unit:
        return value
    squash = lambda s: s.replace(" ", "").lower()  # noqa: E731
    found = [(label, b, f) for label, (b, f) in PARAM_UNITS.items() if squash(label) == squash(unit)]
    if not found:
        raise ConfigError(f"--target: {unit!r} is not a unit (one of {', '.join(PARAM_UNITS)})")
    label, b, f = found[0]
    if b != base:
        raise ConfigError(f"--target: {label} does not measure {metric} ({base})")
    return value * f


def _source(args):
    """(rooflines, the run's results or None) of SOURCE: a parameters file,
    or a run with its services' answers attached (the report's very
    objects: rooftop.service.report.SECTION)."""
    from rooftop import model, results
    from rooftop.service import report as service_report
    from rooftop.store.db import Store
    from rooftop.store.records import StoreError

    text = args.source
    if text.endswith((".json", ".JSON")) or Path(text).is_file():
        return model.load_params(text), None
    try:
        store = Store(args.results, create=False)
        res = results.load(store, text, [service_report.SECTION] if args.service else ())
    except StoreError as e:
        raise StoreError(f"{text}: neither a parameters file nor a run ({e})") from None
    if not res.rooflines:
        raise model.ModelError(f"run {text} has no ceiling samples (rooftop collect)")
    return res.rooflines, res


def _cmd_size(args) -> int:
    from rooftop import model
    from rooftop.service import report as service_report
    from rooftop.service import sizing

    rooflines, res = _source(args)
    service = None
    if args.service:
        if res is None:
            raise model.ModelError("--service needs a run (its points are stored there), not a parameters file")
        service = next((s for s in res.services if s.service == args.service), None)
        if service is None:
            known = ", ".join(s.service for s in res.services) or "none"
            raise model.ModelError(
                f"--service {args.service}: no such service with a roofline in run {res.run.id} ({known})"
            )
        if not service.placements:
            raise model.ModelError(f"--service {args.service}: {service.headline()}")
        if args.metrics and args.metrics != service.metric:
            raise model.ModelError(f"--service {args.service} is compared with {service.metric}, not {args.metrics}")
    metric = service.metric if service else args.metrics or ("rpc" if "rpc" in rooflines else sorted(rooflines)[0])
    if metric not in rooflines:
        raise model.ModelError(f"--metrics {metric}: no roofline for it here ({', '.join(sorted(rooflines))})")
    r = rooflines[metric]
    target = parse_rate(args.target, r.unit, metric) if args.target is not None else None
    if service is not None:  # the report's own line (rooftop.service.report.service_sizing)
        answer = service_report.service_sizing(service, args.clients, target)
    else:
        answer = sizing.size(r, args.clients, target)
    if args.json:
        print(json_text(answer.to_dict(), indent=1))
    else:
        print("\n".join(sizing.lines(answer)))
    return 0


def add_size(sub) -> None:
    p = sub.add_parser(
        "size",
        help="how many server processes for C client processes (from a run or a parameters file)",
        description="From the roofline of a run or a parameters file (A(S) = min(C x client ceiling, "
        "S x server ceiling) for S server and C client processes) and, with --service, the "
        "service's measured efficiency at the nearest ratios its answer quotes one (the line the "
        "report's How many servers shows for it): with --target RATE the "
        "smallest S whose aggregate reaches it; without, the knee (the smallest S from which "
        "the clients bind) and the aggregate for a few S around it. Each end of the answer "
        "uses the ends of the ceilings' 95 % intervals (a published range is its own): "
        "'19 to 20 server processes; 19 at the median'. When the target is reachable at one "
        "end and not at the other, or the model cannot tell the ceilings apart, the answer "
        "says 'not distinguishable' instead of recommending. Example: rooftop size "
        "examples/aurora-table2.json --clients 100 --target '10 M ops/s' (docs/services.md)",
    )
    p.add_argument("source", metavar="SOURCE", help="a run id (in --results), 'latest', or a parameters file (JSON)")
    takes_runs(p, "source")
    p.add_argument("--clients", type=int, required=True, metavar="C", help="client processes")
    p.add_argument(
        "--target",
        metavar="RATE",
        help="aggregate rate to reach: a number in the metric's base unit (ops/s, bytes/s) or with "
        "a unit: '10 M ops/s', '50 GiB/s'",
    )
    p.add_argument("--service", metavar="NAME", help="scale by this service's measured efficiency (a run's service)")
    p.add_argument(
        "--metrics",
        metavar="METRIC",
        help="the roofline's metric, one (default: the service's, else rpc, else the first)",
    )
    results_arg(p)
    json_flag(p, "the answer")
    p.set_defaults(func=_cmd_size)
