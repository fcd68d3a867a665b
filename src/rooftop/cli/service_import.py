"""`rooftop service RUN --import FILE.csv [--name NAME] [--metrics M]`:
a service's points measured elsewhere stored in a run
(rooftop.service.importing). The `service` command's parser takes these
options with add_import_options(parser) and hands over with
`if args.import_file: return cmd_import(args)`."""

from __future__ import annotations

from rooftop.numbers import json_text


def add_import_options(p) -> None:
    """--import FILE.csv and --name (the RUN, --results, --metrics and --json
    of the `service` command are shared)."""
    p.add_argument(
        "--import",
        dest="import_file",
        metavar="FILE.csv",
        help="store points measured elsewhere instead of measuring: a CSV with columns server_procs, "
        "client_procs, per_client, unit (and optional sample, service); docs/services.md",
    )
    p.add_argument("--name", help="with --import: the service's name (default: the file's name without .csv)")


def cmd_import(args) -> int:
    """Imports args.import_file into args.run; prints what was stored and,
    when the run has the metric's roofline, the service's efficiency."""
    from rooftop import results
    from rooftop.service import importing
    from rooftop.service import report as service_report
    from rooftop.store.db import Store

    store = Store(args.results, create=False)
    metric = getattr(args, "metrics", None) or "rpc"
    got = importing.import_csv(store, args.run, args.import_file, getattr(args, "name", None), metric)
    res = results.load(store, args.run, [service_report.SECTION])  # its efficiency
    names = got.services
    mine = [s for s in res.services if s.service in names]
    if getattr(args, "json", False):
        doc = service_report.model_json(mine, [n for n in res.service_notes if n.split(":")[0] in names])
        print(json_text({"run": res.run.id, "imported": got.count, **doc}, indent=1))
        return 0
    print(
        f"imported {got.count} point(s) of {', '.join(names)} ({metric}) into run {res.run.id} from {args.import_file}"
    )
    for s in mine:
        print(s.headline())
    for n in res.service_notes:
        if n.split(":")[0] in names:
            print(n)
    return 0
