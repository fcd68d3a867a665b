"""The commands that write a run out: report (HTML and Markdown), plot
(figures) and export (CSV, JSON, figures of merit)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rooftop.cli.common import (
    formats,
    json_flag,
    out_dir_arg,
    print_files,
    results_arg,
    rule_args,
    rule_of,
    run_arg,
    takes_runs,
)
from rooftop.model import mix
from rooftop.numbers import json_text


def _sections(args):
    """The report sections, the history one judging by the check.* keys
    given (--config's [check] table, --set, --threshold, --last, --k) as
    `rooftop check` does."""
    from rooftop.kinds.sections import judged_by

    return judged_by(rule_of(args)[0])


def _cmd_report(args) -> int:
    from rooftop import kinds, model, report, results
    from rooftop.store.db import Store

    sections = _sections(args)  # a bad check.* key is refused before anything is read
    store = Store(args.results, create=False)
    run = store.get_run(args.run)
    kind = kinds.of(store, run)
    out = Path(args.out_dir) if args.out_dir else store.run_dir(run.id) / "report"
    if kind is not None:  # audit, tune, bursts...: their own report
        with _confined(args, store, run.id):
            page, md = kind.report(store, run, out)
        return _report_written(args, run.id, page, md, [], [])
    res = results.load(store, args.run, sections)
    if not res.rooflines and not args.nic_runs:  # a NIC comparison needs server peaks only
        raise model.ModelError(f"run {args.run} has no ceiling samples to report (rooftop collect)")
    nic = _nic_comparison(store, res, args.nic_runs) if args.nic_runs else None
    with _confined(args, store, run.id):
        page, md = report.write(res, out, mix.combine_files(args.mix, res.rooflines), nic)
    return _report_written(args, res.run.id, page, md, nic.verdict if nic is not None else [], res.warnings)


def _confined(args, store, run_id: str | None, default: Path | None = None):
    """Where report and plot may write (rooftop.files.confined): inside
    the --out-dir given, else inside the run's folder (a `report` or
    `figures` link out of it is refused), else inside default."""
    from rooftop import files

    if args.out_dir:
        return files.confined(Path(args.out_dir))
    return files.confined(store.run_dir(run_id) if run_id else default)


def _report_written(args, run_id: str, page, md, nic_verdict, warnings) -> int:
    """The page's path on stdout (or, --json, the paths, verdict and
    warnings); the rest on stderr."""
    if args.json:
        doc = {"run": run_id, "html": str(page), "markdown": str(md), "warnings": list(warnings)}
        print(json_text(dict(doc, nic_policies=list(nic_verdict)) if nic_verdict else doc, indent=1))
        return 0
    for line in nic_verdict:
        print(f"NIC policies: {line}", file=sys.stderr)
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    print(f"markdown summary: {md}", file=sys.stderr)
    print(page)
    return 0


def _nic_comparison(store, res, nic_runs: str):
    """The NIC policy comparison of this run and the --nic-runs runs, on
    the first metric they all measured."""
    from rooftop.keys import ConfigError
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
    from rooftop.plots.run import left_out, plot_params, plot_run
    from rooftop.store.db import Store

    if not args.run and not args.params:
        print("rooftop plot: give a RUN, a --params FILE, or both", file=sys.stderr)
        return 2
    if args.params:
        rooflines = model.load_params(args.params)
        samples, run_id, nodes, store = [], None, None, None
        out = Path("rooftop-plots") / Path(args.params).stem
        if args.run:
            store = Store(args.results, create=False)
            run_id = store.get_run(args.run).id
            samples = store.samples(run_id)
            nodes = store.get_run(run_id).config.get("nodes")
            # Under the run's figures: plot --params alone does not overwrite it.
            out = store.run_dir(run_id) / "figures" / f"params-{Path(args.params).stem}"
        with _confined(args, store, run_id, default=out):
            written = plot_params(
                rooflines, Path(args.out_dir or out), args.format, samples, run_id, args.yscale, nodes
            )
    else:
        store = Store(args.results, create=False)
        run = store.get_run(args.run)
        kind = kinds.of(store, run)
        out = Path(args.out_dir) if args.out_dir else store.run_dir(run.id) / "figures"
        if kind is not None:  # audit, tune, bursts...: their own figures
            with _confined(args, store, run.id):
                written = kind.plot(store, run, out, args.format)
            if not written:
                raise model.ModelError(f"{kind.no_roofline(run.id)}; it has no figure of its own")
            print_files(written, args.json)
            return 0
        res = results.load(store, args.run, _sections(args))
        if not res.rooflines:
            raise model.ModelError(f"run {args.run} has no ceiling samples (rooftop collect)")
        with _confined(args, store, run.id):
            written = plot_run(res, out, args.format, args.yscale)
        for name, why in left_out(res).items():  # figures that would carry no information
            print(f"{name}: not drawn: {why}", file=sys.stderr)
    print_files(written, args.json)
    return 0


def _cmd_export(args) -> int:
    from rooftop import export, files
    from rooftop.store.db import Store

    if args.json:
        if args.format not in (None, "json"):
            print(f"rooftop export: --json is --format json, not --format {args.format}", file=sys.stderr)
            return 2
        args.format = "json"
    args.format = args.format or "csv"
    store = Store(args.results, create=False)
    run = store.get_run(args.run).id
    if args.series + args.services + args.sample_nodes > 1:
        print("rooftop export: --series, --services and --sample-nodes are separate exports: give one", file=sys.stderr)
        return 2
    if args.sample_nodes:
        if args.format not in ("csv", "json"):
            print("rooftop export: --sample-nodes is csv or json", file=sys.stderr)
            return 2
        text = export.nodes_text(store, run, args.format)
    elif args.series:
        if args.format not in ("csv", "json"):
            print("rooftop export: --series is csv or json", file=sys.stderr)
            return 2
        text = export.series_text(store, run, args.format)
    elif args.services:
        if args.format not in ("csv", "json"):
            print("rooftop export: --services is csv or json", file=sys.stderr)
            return 2
        text = export.services_text(store, run, args.format)
    elif args.format == "json":
        text = json_text(export.json_doc(store, run), indent=1)
    elif args.format == "fom":
        text = export.fom_text(store, run)
    elif args.format == "openmetrics":
        text = export.openmetrics_text(store, run)
    else:
        text = export.csv_text(store, run)
    if args.output:  # the user's file: whole or not at all, a link there replaced, not followed
        files.write(args.output, text)
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


def _history_rule(p) -> None:
    rule_args(
        p.add_argument_group(
            "since the last comparable run",
            "the rule that judges this run against the last comparable one and marks step changes in "
            "the history figure: rooftop check's, from the same check.* keys (docs/history.md)",
        ),
        results=False,
    )


def add_export(sub) -> None:
    from rooftop.export import FORMATS, SCHEMA_VERSION

    ex = sub.add_parser(
        "export",
        help="export a run's samples",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="A run's samples for other tools. Formats:\n"
        + "".join(f"  {k:11} {v}\n" for k, v in FORMATS.items())
        + f"\nJSON carries schema_version {SCHEMA_VERSION} (a MINOR release only adds fields). CSV columns "
        "are typed,\nnumbers and text only (no JSON in a cell): server_node_count/client_node_count count "
        "the\nnodes (which ones: --sample-nodes, one row per sample, side and node), ceilings is the stage\n"
        "names separated by spaces, created is ISO-8601 in UTC with its zone, raw_dir is relative to\n"
        "the results folder; emulation is in the JSON only. docs/exports.md shows pandas reading both.",
    )
    run_arg(ex, "the run (see 'rooftop runs')")
    ex.add_argument("--format", choices=list(FORMATS), help="csv (default), json, fom or openmetrics")
    ex.add_argument("--json", action="store_true", help="the same as --format json")
    ex.add_argument(
        "--series",
        action="store_true",
        help="the run's time series instead (collect/validate --series cpu,power): one point "
        "per row: round, source, t, quantity, value, unit",
    )
    ex.add_argument(
        "--services",
        action="store_true",
        help="the run's service points instead (rooftop service): one per row: service, metric, "
        "server_procs, client_procs, sample, per_client, unit, status, ...; the CSV reads back "
        "with 'rooftop service --import'",
    )
    ex.add_argument(
        "--sample-nodes",
        action="store_true",
        help="which nodes each sample ran on instead: one row per sample, side and node: sample_id "
        "(the samples' id), side (server, client), node (index)",
    )
    results_arg(ex)
    ex.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    ex.set_defaults(func=_cmd_export)


def add_plot(sub) -> None:
    pl = sub.add_parser(
        "plot",
        help="figures of a run (or of a parameters file): PNG and SVG",
        description="Per metric: the roofline (rate per client process against x = "
        "server/client processes, log scale, ceilings as bands, validation points "
        "coloured by server-node count, ridge marked), the server-process sweep, the "
        "client pair matrix (outlier pairs boxed) and latency distributions. Files go "
        "to RESULTS/RUN/figures (--out-dir to change); their paths are printed. "
        "--params FILE draws published or hand-written ceilings (see 'rooftop model "
        "--help') into rooftop-plots/FILE-STEM, or, with a RUN's validation samples "
        "on them when a RUN is given too, into RESULTS/RUN/figures/params-FILE-STEM.",
    )
    run_arg(pl, "the run (see 'rooftop runs')", optional=True)
    pl.add_argument("--params", help="roofline parameters file (JSON)")
    results_arg(pl)
    out_dir_arg(pl, "folder for the figures (default: RESULTS/RUN/figures)")
    pl.add_argument("--format", type=formats, default=("png", "svg"), help="png,svg (default), pdf")
    pl.add_argument(
        "--yscale",
        choices=["auto", "log", "linear"],
        default="auto",
        help="the roofline's y axis: log (every ceiling and point inside the frame), "
        "linear (the CUG 2025 roofline paper's style: the server ceiling leaves the frame past the "
        "ridge), or auto (default: linear only when it keeps everything inside)",
    )
    json_flag(pl, "the files written")
    _history_rule(pl)
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
    run_arg(rp, "the run (see 'rooftop runs')")
    rp.add_argument(
        "--mix",
        action="append",
        metavar="FILE",
        help="a workload mix (TOML or JSON: what one operation of your service costs in each metric, e.g. a key-value put = 1 rpc + 1 iops); the report adds a section and a figure with the combined roofline: the lowest of the mix's metric rooflines, in mix operations per second, and which resource binds where (docs/storage.md). Repeatable",
    )
    results_arg(rp)
    out_dir_arg(rp, "folder for the report (default: RESULTS/RUN/report)")
    rp.add_argument(
        "--nic-runs",
        metavar="RUN,...",
        help="add a NIC policy comparison (Carns et al., CUG 2025, Figure 2) of RUN and these runs: their "
        "server-peak aggregates by binding and nic.policy, a bar chart (mean, one "
        "standard deviation) and the best policy, or that they are indistinguishable",
    )
    takes_runs(rp, "nic_runs")
    json_flag(rp, "the files written, the warnings and the NIC policy verdict")
    _history_rule(rp)
    rp.set_defaults(func=_cmd_report)
