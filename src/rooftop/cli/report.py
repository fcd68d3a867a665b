"""The commands that write a run out: report (HTML and Markdown), plot
(figures) and export (CSV, JSON, figures of merit)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rooftop.cli.common import formats, print_files, results_arg
from rooftop.cli.model import combined_mixes


def _cmd_report(args) -> int:
    from rooftop import kinds, model, report, results
    from rooftop.kinds.sections import SECTIONS
    from rooftop.store.db import Store

    store = Store(args.results, create=False)
    run = store.get_run(args.run)
    kind = kinds.of(store, run)
    if kind is not None:  # audit, tune, bursts...: their own report
        page, md = kind.report(store, run, Path(args.output) if args.output else store.run_dir(run.id) / "report")
        print(f"markdown summary: {md}", file=sys.stderr)
        print(page)
        return 0
    res = results.load(store, args.run, SECTIONS)
    if not res.rooflines and not args.nic_runs:  # a NIC comparison needs server peaks only
        raise model.ModelError(f"run {args.run} has no ceiling samples to report (rooftop collect)")
    out = Path(args.output) if args.output else store.run_dir(res.run.id) / "report"
    nic = _nic_comparison(store, res, args.nic_runs) if args.nic_runs else None
    page, md = report.write(res, out, combined_mixes(args.mix, res.rooflines), nic)
    if nic is not None:
        for line in nic.verdict:
            print(f"NIC policies: {line}", file=sys.stderr)
    for w in res.warnings:
        print(f"warning: {w}", file=sys.stderr)
    print(f"markdown summary: {md}", file=sys.stderr)
    print(page)
    return 0


def _nic_comparison(store, res, nic_runs: str):
    """The NIC policy comparison of this run and the --nic-runs runs, on
    the first metric they all measured."""
    from rooftop.config.keys import ConfigError
    from rooftop.nics import compare as nic_compare

    ids = [res.run.id] + [r.strip() for r in nic_runs.split(",") if r.strip() and r.strip() != res.run.id]
    runs = [(r, store.get_run(r).config, store.samples(r)) for r in ids]
    shared = [m for m in runs[0][1].get("metrics", []) if all(m in c.get("metrics", []) for _, c, _ in runs)]
    if not shared:
        raise ConfigError(f"--nic-runs: runs {', '.join(ids)} share no metric")
    try:
        return nic_compare.compare(runs, "bw" if "bw" in shared else shared[0])
    except ValueError as e:
        raise ConfigError(str(e)) from None


def _cmd_plot(args) -> int:
    from rooftop import kinds, model, results
    from rooftop.kinds.sections import SECTIONS
    from rooftop.plots.run import left_out, plot_params, plot_run
    from rooftop.store.db import Store

    if not args.run and not args.params:
        print("rooftop plot: give a RUN, a --params FILE, or both", file=sys.stderr)
        return 2
    if args.params:
        rooflines = model.load_params(args.params)
        samples, run_id, nodes = [], None, None
        out = Path("rooftop-plots") / Path(args.params).stem
        if args.run:
            store = Store(args.results, create=False)
            run_id = store.get_run(args.run).id
            samples = store.samples(run_id)
            nodes = store.get_run(run_id).config.get("nodes")
            # Under the run's figures: plot --params alone does not overwrite it.
            out = _figures_dir(store, run_id, f"params-{Path(args.params).stem}")
        files = plot_params(rooflines, Path(args.output or out), args.format, samples, run_id, args.yscale, nodes)
    else:
        store = Store(args.results, create=False)
        run = store.get_run(args.run)
        kind = kinds.of(store, run)
        if kind is not None:  # audit, tune, bursts...: their own figures
            out = Path(args.output) if args.output else _figures_dir(store, run.id)
            files = kind.plot(store, run, out, args.format)
            if not files:
                raise model.ModelError(f"{kind.no_roofline(run.id)}; it has no figure of its own")
            print_files(files, args.json)
            return 0
        res = results.load(store, args.run, SECTIONS)
        if not res.rooflines:
            raise model.ModelError(f"run {args.run} has no ceiling samples (rooftop collect)")
        out = Path(args.output) if args.output else _figures_dir(store, res.run.id)
        files = plot_run(res, out, args.format, args.yscale)
        for name, why in left_out(res).items():  # figures that would carry no information
            print(f"{name}: not drawn: {why}", file=sys.stderr)
    print_files(files, args.json)
    return 0


def _figures_dir(store, run_id: str, sub: str = "") -> Path:
    """RESULTS/RUN/figures[/sub], refused when a symlink leads it out of the run's folder."""
    from rooftop.plots.save import inside
    from rooftop.store.records import StoreError

    out = store.run_dir(run_id) / "figures" / sub if sub else store.run_dir(run_id) / "figures"
    try:
        return inside(out, store.run_dir(run_id))
    except ValueError as e:
        raise StoreError(str(e)) from None


def _cmd_export(args) -> int:
    from rooftop import export
    from rooftop.store.db import Store

    store = Store(args.results, create=False)
    run = store.get_run(args.run).id
    if args.series + args.services + args.nodes > 1:
        print("rooftop export: --series, --services and --nodes are separate exports: give one", file=sys.stderr)
        return 2
    if args.nodes:
        if args.format == "fom":
            print("rooftop export: --nodes is csv or json", file=sys.stderr)
            return 2
        text = export.nodes_text(store, run, args.format)
    elif args.series:
        if args.format == "fom":
            print("rooftop export: --series is csv or json", file=sys.stderr)
            return 2
        text = export.series_text(store, run, args.format)
    elif args.services:
        if args.format == "fom":
            print("rooftop export: --services is csv or json", file=sys.stderr)
            return 2
        text = export.services_text(store, run, args.format)
    elif args.format == "json":
        text = json.dumps(export.json_doc(store, run), indent=1)
    elif args.format == "fom":
        text = export.fom_text(store, run)
    else:
        text = export.csv_text(store, run)
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


def add_export(sub) -> None:
    from rooftop.export import FORMATS, SCHEMA_VERSION

    ex = sub.add_parser(
        "export",
        help="export a run's samples",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="A run's samples for other tools. Formats:\n"
        + "".join(f"  {k:5} {v}\n" for k, v in FORMATS.items())
        + f"\nJSON carries schema_version {SCHEMA_VERSION} (a MINOR release only adds fields). CSV columns "
        "are typed,\nnumbers and text only (no JSON in a cell): server_node_count/client_node_count count "
        "the\nnodes (which ones: --nodes, one row per sample, side and node), ceilings is the stage\n"
        "names separated by spaces, created is ISO-8601 with its time zone, raw_dir is relative to\n"
        "the results folder; emulation is in the JSON only. docs/exports.md shows pandas reading both.",
    )
    ex.add_argument("run", help="a run id (see 'rooftop runs')")
    ex.add_argument("--format", choices=list(FORMATS), default="csv", help="csv (default), json or fom")
    ex.add_argument(
        "--series",
        action="store_true",
        help="the run's time series instead (collect/validate --sample cpu,power): one point "
        "per row: round, sampler, t, quantity, value, unit",
    )
    ex.add_argument(
        "--services",
        action="store_true",
        help="the run's service points instead (rooftop service): one per row: service, metric, "
        "server_procs, client_procs, sample, per_client, unit, status, ...; the CSV reads back "
        "with 'rooftop service --import'",
    )
    ex.add_argument(
        "--nodes",
        action="store_true",
        help="which nodes each sample ran on instead: one row per sample, side and node: sample_id "
        "(the samples' id), side (server, client), node (index)",
    )
    results_arg(ex)
    ex.add_argument("--output", help="write to this file instead of stdout")
    ex.set_defaults(func=_cmd_export)


def add_plot(sub) -> None:
    pl = sub.add_parser(
        "plot",
        help="figures of a run (or of a parameters file): PNG and SVG",
        description="Per metric: the roofline (rate per client process against x = "
        "server/client processes, log scale, ceilings as bands, validation points "
        "coloured by server-node count, ridge marked), the server-process sweep, the "
        "client pair matrix (outlier pairs boxed) and latency distributions. Files go "
        "to RESULTS/RUN/figures (--output to change); their paths are printed. "
        "--params FILE draws published or hand-written ceilings (see 'rooftop model "
        "--help') into rooftop-plots/FILE-STEM, or, with a RUN's validation samples "
        "on them when a RUN is given too, into RESULTS/RUN/figures/params-FILE-STEM.",
    )
    pl.add_argument("run", nargs="?", help="a run id (see 'rooftop runs')")
    pl.add_argument("--params", help="roofline parameters file (JSON)")
    results_arg(pl)
    pl.add_argument("--output", help="folder for the figures")
    pl.add_argument("--format", type=formats, default=("png", "svg"), help="png,svg (default), pdf")
    pl.add_argument(
        "--yscale",
        choices=["auto", "log", "linear"],
        default="auto",
        help="the roofline's y axis: log (every ceiling and point inside the frame), "
        "linear (the CUG 2025 roofline paper's style: the server ceiling leaves the frame past the "
        "ridge), or auto (default: linear only when it keeps everything inside)",
    )
    pl.add_argument("--json", action="store_true", help="print the files as JSON")
    pl.set_defaults(func=_cmd_plot)


def add_report(sub) -> None:
    rp = sub.add_parser(
        "report",
        help="one self-contained HTML report (+ Markdown) of a run",
        description="Writes RESULTS/RUN/report/report.html (every figure inline: "
        "open it anywhere, no network needed) and report.md beside it: the verdict "
        "(ratio, ceilings, ridge), what to do (the ratio to deploy, where the pair "
        "matrix points, what to measure again), figures, warnings (wide client "
        "ceiling, samples above the roofline, overhead, failures), the validation "
        "table, the learned models (after 'rooftop learn'), the environment and the resolved config. Prints the HTML file's path.",
    )
    rp.add_argument("run", help="a run id (see 'rooftop runs')")
    rp.add_argument(
        "--mix",
        action="append",
        metavar="FILE",
        help="a workload mix (TOML or JSON: what one operation of your service costs in each metric, e.g. a key-value put = 1 rpc + 1 iops); the report adds a section and a figure with the combined roofline: the lowest of the mix's metric rooflines, in mix operations per second, and which resource binds where (docs/storage.md). Repeatable",
    )
    results_arg(rp)
    rp.add_argument("--output", help="folder for the report (default: RESULTS/RUN/report)")
    rp.add_argument(
        "--nic-runs",
        metavar="RUN,...",
        help="add a NIC policy comparison (Carns et al., CUG 2025, Figure 2) of RUN and these runs: their "
        "server-peak aggregates by binding and nic.policy, a bar chart (mean, one "
        "standard deviation) and the best policy, or that they are indistinguishable",
    )
    rp.set_defaults(func=_cmd_report)
