"""rooftop service: a real data service measured over a run's validation
grid, its points stored in the run beside the engine's samples."""

from __future__ import annotations

import argparse
import shlex
import sys

from rooftop import metrics, session
from rooftop.cli.common import DEFAULT_RESULTS, campaign_flags, interrupted_rc, restate_arg, results_arg, run_arg
from rooftop.numbers import json_text
from rooftop.units import fmt_rate

DESCRIPTION = """\
Measures a real data service (its own servers and clients, as a service spec
declares them, or a preset) over the same grid of server and client nodes as
'rooftop validate' on RUN: the run's launcher, nodes, processes per node and
binding; servers started once per server placement, one port each (base port
+ rank); clients spread over the servers round-robin and released together
from a barrier; collect.windows windows (a sample each) of collect.duration seconds per
placement. A sample whose clients shared less than engine.min_overlap of
their time is measured again (engine.retries), then stored invalid. Points
are stored in the run as soon as measured; every command line and output is
kept under RUN/service/NAME/. The spec's fields: docs/services.md.

With --import FILE.csv nothing is measured: points measured elsewhere are
stored in RUN instead (columns: docs/services.md)."""


def _spec(args):
    from rooftop.keys import ConfigError
    from rooftop.service import presets
    from rooftop.service.spec import load

    if bool(args.spec) == bool(args.preset):
        raise ConfigError("give a service spec file or --preset NAME (one of them)")
    if args.preset:
        preset = presets.get(args.preset)
        return presets.spec(args.preset), preset.programs, f" ({preset.install})"
    spec = load(args.spec)
    progs = tuple(
        shlex.split(t)[0] for t in (spec.server.command, spec.client.command) if not shlex.split(t)[0].startswith("{")
    )
    return spec, progs, ""


def _cmd_service(args) -> int:
    if args.import_file:
        from rooftop.keys import ConfigError

        if args.spec or args.preset or args.resume or args.dry_run or args.set:
            raise ConfigError(
                "--import stores points measured elsewhere: no spec, --preset, --resume, --dry-run or --set"
            )
        return _cmd_import(args)
    from rooftop import ui
    from rooftop.service.run import measure, prepare
    from rooftop.store.db import Store

    spec, programs, install = _spec(args)
    store = Store(args.results, create=False)
    # The run's config checked for reuse before anything runs, --dry-run too.
    _, placements, runner = prepare(store, args.run, spec, session.restated(args))
    if args.dry_run:
        print("\n".join(runner.dry_run(placements)))
        return 0

    counts = {"ok": 0, "failed": 0, "invalid": 0}

    def on_point(p) -> None:
        counts[p.status] = counts.get(p.status, 0) + 1
        rate = (
            ""
            if p.aggregate is None
            else f" {fmt_rate(p.aggregate, p.unit)} ({fmt_rate(p.per_client, p.unit)} per client)"
        )
        line = f"{spec.name} {p.key} S={p.server_procs} C={p.client_procs}: {p.status}{rate}"
        if not args.json:
            ui.console.print(line + (f" [dim]{p.error}[/]" if p.error else ""), highlight=False)

    say = (lambda m: None) if args.json else ui.console.print
    rc = 0
    try:
        measure(
            runner,
            placements,
            programs,
            install,
            args.resume,
            lambda cfg: session.campaign_locks(args, store, cfg),
            on_point,
            say,
        )
    except KeyboardInterrupt:
        print(
            f"\nrooftop service: interrupted; the points measured are stored: continue with "
            f"'rooftop service {runner.run_id} {args.spec or '--preset ' + args.preset} --resume"
            f"{'' if args.results == DEFAULT_RESULTS else ' --results ' + args.results}'",
            file=sys.stderr,
        )
        rc = interrupted_rc()
    if args.json:
        print(json_text({"run": runner.run_id, "service": spec.name, **counts}, indent=1))
    elif rc != interrupted_rc():
        ui.console.print(
            f"service {spec.name}: {counts['ok']} ok, {counts['failed']} failed, {counts['invalid']} invalid"
        )
    return rc or (1 if counts["failed"] else 0)


def _cmd_import(args) -> int:
    """service RUN --import FILE.csv: prints what was stored and, when the
    run has the metric's roofline, the service's efficiency."""
    from rooftop.service import importing
    from rooftop.service import report as service_report
    from rooftop.store.db import Store

    metric = args.metrics or "rpc"
    got = importing.import_and_evaluate(
        Store(args.results, create=False), args.run, args.import_file, args.name, metric
    )
    if args.json:
        doc = service_report.model_json(got.evaluated, got.notes)
        print(json_text({"run": got.run_id, "imported": got.count, **doc}, indent=1))
        return 0
    print(
        f"imported {got.count} point(s) of {', '.join(got.services)} ({metric}) into run {got.run_id} "
        f"from {args.import_file}"
    )
    for s in got.evaluated:
        print(s.headline())
    for n in got.notes:
        print(n)
    return 0


def add_parser(sub) -> None:
    from rooftop.service import presets

    p = sub.add_parser(
        "service",
        help="measure a real data service (a spec, or a preset) over a run's validation grid",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run_arg(p, "the run whose launcher, nodes and grid are used")
    p.add_argument("spec", nargs="?", metavar="SPEC", help="the service spec (TOML; docs/services.md)")
    p.add_argument("--preset", choices=presets.names(), help="a service that ships with rooftop instead of a spec")
    results_arg(p)
    restate_arg(p)
    p.add_argument("--resume", action="store_true", help="measure only the points not stored yet")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the exact commands (each launch, and under it each process's own command, "
        "its placeholders filled in); run nothing",
    )
    campaign_flags(p)
    p.add_argument(
        "--import",
        dest="import_file",
        metavar="FILE.csv",
        help="store points measured elsewhere instead of measuring: a CSV with columns server_procs, "
        "client_procs, per_client, unit (and optional sample, service); docs/services.md",
    )
    p.add_argument("--name", help="with --import: the service's name (default: the file's name without .csv)")
    p.add_argument(
        "--metrics",
        choices=metrics.METRICS,
        help="with --import: the rooftop metric the points are compared with, one (default: rpc)",
    )
    p.set_defaults(func=_cmd_service)
