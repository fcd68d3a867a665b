"""The roofline commands: model (a run's or a parameters file's roofline,
verdict and validation) and compare (several rooflines on one figure)."""

from __future__ import annotations

import sys
from pathlib import Path

from rooftop.cli.common import formats, json_flag, out_dir_arg, print_files, results_arg, run_arg, takes_runs
from rooftop.numbers import json_text
from rooftop.units import fmt_num, fmt_pct, fmt_range, fmt_rate, fmt_ratio, fmt_span


def _cmd_model(args) -> int:
    from rooftop import export, results, ui
    from rooftop.model.answer import answer_of

    if not args.run and not args.params:
        print("rooftop model: give a RUN, a --params FILE, or both", file=sys.stderr)
        return 2
    got = export.model_of(args.results, args.run, args.params, args.mix)
    if args.json:
        print(json_text(got.doc(args.run, args.params), indent=1))
        return 0
    out = ui.Console(highlight=False)
    if not out.is_terminal:
        out.width = 110
    for e in got.evals:
        a = answer_of(e, got.res)
        _print_roofline(out, e, a, got.res)
        _print_validation(out, e, a, args.run)
        for line in results.invalid_lines(got.samples, e.roofline.metric):
            out.print(f"[yellow]{line}[/]")
    _print_services(out, *got.services)
    for comb in got.mixes:
        head, *rest = comb.lines()
        out.print(f"[bold]{head}[/]", soft_wrap=True)
        for line in rest:
            out.print(line, soft_wrap=True)
    return 0


def _print_services(out, services, notes) -> None:
    """Each service's headline, table and left-out points (rich console)."""
    from rich.table import Table

    from rooftop import ui

    for s in services:
        out.print(f"[bold]{s.headline()}[/]", soft_wrap=True)
        t = Table(title=f"{s.service} against the {s.metric} roofline ({s.roofline.source})", title_justify="left")
        for c in s.HEAD:
            t.add_column(c, justify="left" if c == "binds" else "right", no_wrap=True)
        for row in s.rows():
            t.add_row(*row)
        if s.placements:
            ui.print_table(out, t)
        for line in s.left_out_lines():
            out.print(f"[yellow]{line}[/]", soft_wrap=True)
    for line in notes:
        out.print(f"[yellow]{line}[/]", soft_wrap=True)


def _print_roofline(out, e, a, res) -> None:  # noqa: PLR0915
    """One metric's verdict and roofline table (a: its answer; res: the run,
    for outlier nodes). Long: one table filled row by row, a statement a
    row."""
    from rich.table import Table

    from rooftop import ui

    r = e.roofline
    f = lambda v: ui.fmt_rate(v, r.unit)
    v = a.verdict
    out.print(f"[bold]{r.metric}: {v['text']}[/]")  # a ratio only when the model can tell
    t = Table(title=f"{r.metric} roofline ({r.source})", title_justify="left", show_header=False)
    t.add_column(no_wrap=True)
    t.add_column(overflow="fold")
    t.add_row("client ceiling (per process)", _ceiling_text(r.client, r.unit))
    _class_rows(t, res, r.metric, r.unit)
    if r.client_node_rejected:
        t.add_row("client ceiling, node full", "not used: " + r.client_node_rejected)
    if r.client_node:
        t.add_row(
            "client ceiling, node full",
            _ceiling_text(r.client_node, r.unit)
            + ": "
            + ("lower, the model uses it" if r.node_binds else "not lower, unused"),
        )
    t.add_row("server ceiling (per process)", _ceiling_text(r.server, r.unit))
    for stages in r.measured_once:
        t.add_row(
            "measured once",
            ", ".join(x.replace("_", " ") for x in stages) + ": the same placement, one set of samples stands for each",
        )
    if r.core_shared:
        t.add_row("not used for ceilings", f"{len({k for _, k, _ in r.core_shared})} sample(s): {r.core_shared[0][2]}")
    if e.excluded:
        t.add_row("not used for validation", f"{len(e.excluded)} sample(s): {e.excluded[0][1]}")
    t.add_row("roofline", "r(x) = min(client, x * server), x = server / client processes")
    g = a.ridge
    if g.located:
        ri = g.interval
        t.add_row(
            "ridge x*",
            f"{fmt_span(g.lo, g.hi)}  (median {fmt_num(g.centre)}"
            + (f"; 95 % interval {fmt_span(*ri)})" if ri and r.server.n else ")"),
        )
    else:
        t.add_row("ridge x*", f"not located: {g.reason}")
    t.add_row("verdict", v["text"])
    if a.located and v["ratio"]:
        rec = r.recommended()
        t.add_row("recommended", f"x >= {fmt_num(rec['x'])}; in practice {fmt_ratio(*v['ratio'])} (servers:clients)")
    pm = res.pairs.get(r.metric) if res else None
    if pm and len(pm.nodes) >= 3:
        t.add_row("outlier nodes", "; ".join(pm.outlier_lines()))
    for sc in (res.scores if res else {}).get(r.metric, []):
        if sc.flagged:
            t.add_row(
                f"[red]outlier node n{sc.node}[/]",
                f"{sc.flagged}, score {sc.z:+.1f}: its pairs' median {f(sc.median)}; "
                + ", ".join(f"n{a}-n{b} {f(v)}" for (a, b), v in sc.pairs[:3]),
            )
    if res:
        from rooftop.interference import report as interference_report

        for name, text in interference_report.model_rows(res, r.metric, f):
            t.add_row(name, text)
    w = res.without_flagged.get(r.metric) if res else None
    if w:
        from rooftop.report.parts import ridge_short

        t.add_row(
            "without flagged nodes", f"client {fmt_range(w.client.lo, w.client.hi, r.unit)}, ridge {ridge_short(w)}"
        )
    ui.print_table(out, t)


def _class_rows(t, res, metric: str, unit: str) -> None:
    """The client ceiling per topology class (a run that recorded its
    topology: collect --pairs sample), and what a deployment would see."""
    from rooftop.model import classes as model_classes

    found = (res.classes if res else {}).get(metric) or []
    if not found:
        return
    for c, line in zip(found, model_classes.lines(found, unit)):
        t.add_row(f"client ceiling, {c.label}", line.split(": ", 1)[1])
    t.add_row("deployment", model_classes.deployment_text(found, lambda v: fmt_rate(v, unit)))
    sample = res.run.config.get("pair_sample") or {}
    topo = res.topology
    if sample:
        t.add_row(
            "pairs sampled",
            f"{len(sample['pairs'])} of {topo.n * (topo.n - 1) // 2} in {len(sample['batches'])} batch(es) "
            f"({topo.describe()})" + (f"; stopped: {sample['stop']}" if sample.get("stop") else ""),
        )


def _print_validation(out, e, a, run: str | None) -> None:
    """One metric's validation samples against its model, each labelled:
    a placement that tests the model, or the ceilings' own measured again
    (repeatability); the accuracy counts the first kind only (a.accuracy)."""
    from rich.table import Table

    from rooftop import ui
    from rooftop.model.drift import drift_lines

    r = e.roofline
    f = lambda v: ui.fmt_rate(v, r.unit)
    if not e.checks:
        out.print(f"no validation samples for {r.metric}" + (f" (rooftop validate {run})" if run else ""))
        return
    v = Table(title=f"{r.metric} validation ({len(e.checks)} samples)", title_justify="left")
    for c in ("x", "nodes s/c", "tests", "measured", "predicted", "error", "binds", "efficiency"):
        v.add_column(c, justify="right", no_wrap=True)
    for c in e.checks:
        v.add_row(
            fmt_num(c.x),
            f"{c.server_nodes}/{c.client_nodes}",
            "the model" if c.tests_model else "repeatability",
            f(c.measured),
            f(c.predicted),
            fmt_pct(c.error_pct / 100, sign=True),
            c.binding,
            fmt_pct(c.efficiency) + (" [red](above roofline)[/]" if c.above_roofline else ""),
        )
    ui.print_table(out, v)
    out.print(f"accuracy: {a.accuracy.text}", soft_wrap=True)
    for b, (m, n) in sorted(a.accuracy.by_binding.items()):
        out.print(f"median |error| where {b}s bind: {fmt_pct(m / 100)} over {n} placement(s) that test the model")
    if e.without_node and a.accuracy.tested:
        a, b = e.median_abs_error(), e.without_node.median_abs_error()
        out.print(
            f"median |error| over all samples: {fmt_pct(a / 100)} with the client-node ceiling, "
            f"{fmt_pct(b / 100)} without it"
        )
    by = e.class_errors()
    if by:
        from rooftop.topology import CLASSES

        each = ", ".join(f"{CLASSES[k]}: {fmt_pct(m / 100)} over {n}" for k, (m, n) in by.items() if k != "all")
        out.print(
            f"median |error| against each placement's own topology class (the farthest its servers and clients "
            f"are apart, with that class's client ceiling): {fmt_pct(by['all'][0] / 100)} ({each})",
            soft_wrap=True,
        )
    for line in drift_lines(e.drift, f):
        out.print(f"[yellow]warning: {line}[/]", soft_wrap=True)


def _ceiling_text(c, unit: str) -> str:
    """'a–b U  (median m; 95 % interval c–d U, n samples)'."""
    text = f"{fmt_range(c.lo, c.hi, unit)}  (median {fmt_rate(c.centre, unit)}"
    if c.n == 0:
        return text + ")"
    if c.interval is None:
        return text + f"; {c.n} sample, no interval)"
    lo, hi = c.interval
    return text + f"; 95 % interval {fmt_range(lo, hi, unit)}, {c.n} samples)"


def _compare_source(text: str, results_dir: str):
    """A run id in results_dir, or a parameters file: (label, rooflines,
    the run's services against its rooflines, the machine it was measured
    on: rooftop.engine.machine, None when unknown)."""
    from rooftop import model, results
    from rooftop.engine import machine as mach
    from rooftop.service import report as service_report
    from rooftop.store.db import Store
    from rooftop.store.records import StoreError

    if text.endswith((".json", ".JSON")) or Path(text).is_file():
        rooflines = model.load_params(text)
        label = next(iter(rooflines.values())).source
        return label, rooflines, [], None
    try:
        res = results.load(Store(results_dir, create=False), text, [service_report.SECTION])
    except StoreError as e:
        raise StoreError(f"{text}: neither a parameters file nor a run ({e})") from None
    if not res.rooflines:
        raise model.ModelError(f"run {text} has no ceiling samples")
    machine = mach.of_environment(res.run.environment)
    return f"{res.host}, {res.provider} ({text})", res.rooflines, res.services + res.service_notes, machine


def _cmd_compare(args) -> int:
    from rooftop.plots.run import plot_compare

    loaded = [_compare_source(s, args.results) for s in args.sources]
    sources = [(label, rs) for label, rs, _, _ in loaded]
    if args.label:
        if len(args.label) != len(sources):
            print(f"rooftop compare: {len(args.label)} --label for {len(sources)} sources", file=sys.stderr)
            return 2
        sources = [(label, rs) for label, (_, rs) in zip(args.label, sources)]
    from rooftop.files import confined

    with confined(Path(args.out_dir)):  # a link in it leading elsewhere is refused
        files = plot_compare(sources, Path(args.out_dir), args.format, args.yscale, args.normalise)
    if not args.json:
        _print_compare(sources, loaded)
    print_files(files, args.json)
    return 0


def _print_compare(sources: list, loaded: list) -> None:
    """compare's tables: the rooflines side by side, the services on them,
    and the machines they were measured on."""
    from rich.table import Table

    from rooftop import ui, units
    from rooftop.plots import roofline as roofline_plot
    from rooftop.report.parts import ridge_short, verdict_short

    out = ui.Console(highlight=False)  # the table is the output: 'rooftop compare … > f' keeps it
    if not out.is_terminal:
        out.width = 110
    t = Table(title="rooflines compared", title_justify="left")
    heads = ("source", "metric", "client ceiling per process", "server ceiling per process", "ridge x*")
    for c in (*heads, "servers:clients"):
        t.add_column(c, no_wrap=c in ("metric", "ridge x*"), min_width=16 if c == "source" else None)
    for label, rs in sources:
        for m, r in sorted(rs.items()):
            t.add_row(
                label,
                m,
                roofline_plot.client_text(r, units.rate_scale(r.unit, r.client.hi)),
                f"{ui.fmt_range(r.server.lo, r.server.hi, r.unit)} ({r.provenance('server')})",
                ridge_short(r),
                verdict_short(r.verdict(), r.one_measurement),
            )
    ui.print_table(out, t)
    services = [(label, s) for (label, _), (_, _, found, _) in zip(sources, loaded) for s in found]
    if services:
        st = Table(title="services on those rooflines", title_justify="left")
        for c in ("source", "service", "metric", "placements", "headline"):
            st.add_column(c, overflow="fold")
        for label, s in services:
            if isinstance(s, str):  # a service whose metric has no roofline in that run
                st.add_row(label, "", "", "", s)
            else:
                st.add_row(label, s.service, s.metric, str(len(s.placements)), s.headline())
        ui.print_table(out, st)
    for line in machine_lines([label for label, _ in sources], [m for *_, m in loaded]):
        out.print(line, markup=False, highlight=False, soft_wrap=True)


def machine_lines(labels: list[str], machines: list) -> list[str]:
    """What `compare` says of the machines its sources were measured on: a
    line each, then what differs wherever two were measured on different
    machines (rooftop.engine.machine)."""
    from rooftop.engine import machine as mach

    out = ["machines:"]
    for label, m in zip(labels, machines):
        out.append(
            f"  {label}: {mach.one_line(m) if m else 'not recorded (a parameters file, or a run before rooftop named machines)'}"
        )
    known = [(label, m) for label, m in zip(labels, machines) if m]
    if not known:
        return out
    first_label, first = known[0]
    for label, m in known[1:]:
        if m["identity"] != first["identity"]:
            diff = "; ".join(mach.differences(first["summary"], m["summary"]))
            out.append(f"  measured on different machines: {first_label} vs {label}: {diff}")
    if len(known) > 1 and all(m["identity"] == first["identity"] for _, m in known):
        out.append(f"  every run measured on the same machine ({first['identity']})")
    return out


def add_model(sub) -> None:
    mo = sub.add_parser(
        "model",
        help="the roofline of a run (or of a parameters file): ceilings, ridge, verdict, validation",
        description="Per metric: client and server ceilings (per process) as "
        "[min, max], the roofline r(x) = min(client, x * server) with x = server "
        "processes / client processes, the ridge x* = client / server, each "
        "ceiling's and the ridge's 95 % interval, the verdict (one practical "
        "ratio; a range of them; or the ceilings are not distinguishable, or the "
        "model cannot tell, and why), and every validation sample against the model "
        "(predicted, error, which ceiling binds, efficiency). --params FILE takes "
        'published or hand-written ceilings instead (JSON: {"name": ..., '
        '"metrics": {"rpc": {"unit": "K ops/s", "client": [148, 173], '
        '"server": [524, 530]}}}); with a RUN too, the run\'s validation samples '
        "are set against those ceilings.",
    )
    run_arg(mo, "the run (see 'rooftop runs')", optional=True)
    mo.add_argument("--params", help="roofline parameters file (JSON)")
    mo.add_argument(
        "--mix",
        action="append",
        metavar="FILE",
        help="a workload mix (TOML or JSON: what one operation of your service costs in each metric, e.g. a key-value put = 1 rpc + 1 iops); adds the combined roofline: the lowest of the mix's metric rooflines, in mix operations per second, and which resource binds where (docs/storage.md). Repeatable",
    )
    results_arg(mo)
    json_flag(mo, "the rooflines, verdicts and validation")
    mo.set_defaults(func=_cmd_model)


def add_compare(sub) -> None:
    cp = sub.add_parser(
        "compare",
        help="several rooflines on one figure (runs and parameters files)",
        description="Each SOURCE is a run id (in --results; 'latest': the newest run) or a parameters file "
        "(JSON, see 'rooftop model --help'). One figure per metric with every "
        "roofline in its own colour, a table of ceilings and ridges, and the machine each run was measured "
        "on (with what differs where two differ). Example: "
        "rooftop compare RUN examples/aurora-table2.json",
    )
    cp.add_argument("sources", nargs="+", metavar="SOURCE", help="run id, 'latest', or parameters file")
    takes_runs(cp, "sources")
    cp.add_argument("--label", action="append", help="a label per source, in order (repeat)")
    results_arg(cp)
    out_dir_arg(cp, "folder for the figures (default: %(default)s)", "./rooftop-compare")
    cp.add_argument("--format", type=formats, default=("png", "svg"), help="png,svg (default), pdf")
    cp.add_argument(
        "--yscale",
        choices=["auto", "log", "linear"],
        default="auto",
        help="y axis: auto (default: log unless linear keeps every ceiling inside the "
        "frame; tcp next to shm is log), log or linear; the figure says which",
    )
    cp.add_argument(
        "--normalise",
        action="store_true",
        help="y = each source's rate / its own client ceiling: every roofline flat at 1, "
        "the ridges side by side (linear unless --yscale log)",
    )
    json_flag(cp, "the files written (no table)")
    cp.set_defaults(func=_cmd_compare)
