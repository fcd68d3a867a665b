"""`rooftop history` (ceilings over time, grouped by comparability) and
`rooftop check` (the regression gate against a baseline or the history)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rooftop.cli.common import results_arg

CHECK_EPILOG = """\
exit status: 1 when a ceiling fell beyond noise, 0 otherwise, 2 on a usage
or config error (no comparable baseline: the message names the field that
differs). The rule and its keys: docs/history.md.

examples:
  rooftop collect && rooftop check latest --against history   # a weekly job
  rooftop check --save-baseline before-upgrade $RUN
  rooftop check latest --against before-upgrade --junit check.xml
  rooftop check $RUN2 --against $RUN1 --threshold bw=20
"""


def _rule_args(p) -> None:
    p.add_argument(
        "--threshold",
        action="append",
        default=[],
        metavar="METRIC=PCT",
        help="a ceiling must move more than PCT %% of its median to count (default 10 %% for every metric); repeatable",
    )
    p.add_argument("--last", type=int, default=None, metavar="K", help="runs of history the rule looks at (default 8)")
    p.add_argument("--k", type=float, default=None, help="width of the history band, in 1.4826 x MAD (default 3)")
    results_arg(p)


def add_history(sub) -> None:
    p = sub.add_parser(
        "history",
        help="each ceiling's median and 95 %% interval per run, runs grouped by comparability",
        description="The complete runs of a results folder grouped by what makes them comparable "
        "(hosts, metric, and the config keys that change a ceiling: rooftop.history.comparable), "
        "each ceiling's median and 95 %% interval per run in time order, the recommended ratio, the "
        "validation error, and the changes the history rule finds (step, outlier, unconfirmed).",
    )
    p.add_argument("--json", action="store_true", help="JSON on stdout")
    p.add_argument("--plot", metavar="DIR", help="also write the history figure of each group (PNG) into DIR")
    _rule_args(p)
    p.set_defaults(func=cmd_history)


def add_check(sub) -> None:
    p = sub.add_parser(
        "check",
        help="did a ceiling fall beyond noise? against a baseline, a run or the history (exit 1 if so)",
        description="Per ceiling of RUN ('latest': the newest complete run): whether it changed beyond "
        "noise against a named baseline, an earlier run, or the comparable history, by how much, which "
        "way, and which bound moved (the recommended ratio before and after).",
        epilog=CHECK_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("run", nargs="?", metavar="RUN", help="a run id, or 'latest' (the newest complete run)")
    p.add_argument("--against", metavar="BASELINE|RUN|history", help="what RUN is compared with")
    p.add_argument("--save-baseline", metavar="NAME", help="store RUN's ceilings as baseline NAME and exit")
    p.add_argument("--json", action="store_true", help="JSON on stdout")
    p.add_argument("--junit", metavar="FILE", help="also write JUnit XML (one test case per ceiling) to FILE")
    _rule_args(p)
    p.set_defaults(func=cmd_check)


def _store(args):
    from rooftop.store.db import Store

    return Store(args.results, create=False)


def _rule(args) -> tuple[dict, float, int]:
    from rooftop.history import check, gate

    k = check.K_MAD if args.k is None else args.k
    last = check.LAST if args.last is None else args.last
    if not k > 0 or last < check.MIN_HISTORY:
        raise gate.CheckError(f"--k must be above 0 and --last at least {check.MIN_HISTORY}")
    return gate.thresholds(args.threshold), k, last


def cmd_check(args) -> int:
    from rooftop.history import baselines, gate, junit

    if not args.run:
        print("rooftop check: give a RUN (or 'latest')", file=sys.stderr)
        return 2
    store = _store(args)
    run = gate.latest(store) if args.run == "latest" else store.get_run(args.run).id
    if args.save_baseline:
        got = baselines.save(store, args.save_baseline, run)
        print(f"baseline {args.save_baseline}: run {run} ({', '.join(got)})")
        return 0
    if not args.against:
        print("rooftop check: give --against BASELINE|RUN|history (or --save-baseline NAME)", file=sys.stderr)
        return 2
    limits, k, last = _rule(args)
    checks, skipped = gate.check(store, run, args.against, limits, k, last)
    fell = [c for mc in checks for c in mc.fell]
    if args.junit:
        Path(args.junit).write_text(junit.document(checks, skipped))
    if args.json:
        doc = {"run": run, "fell": bool(fell), "metrics": [mc.to_dict() for mc in checks], "not_compared": skipped}
        print(json.dumps(doc, indent=2))
    else:
        for mc in checks:
            print(f"{mc.metric}: run {run} against {mc.against}")
            for c in mc.changes:
                print(f"  {'FELL' if c.fell else 'ok  '} {c.text()}")
            print(f"  {mc.bound_moved()}")
            for note in mc.notes:
                print(f"  note: {note}")
        for why in skipped.values():
            print(f"not compared: {why}")
        print(f"{len(fell)} ceiling(s) fell beyond noise" if fell else "no ceiling fell beyond noise")
    return 1 if fell else 0


def cmd_history(args) -> int:
    from rooftop.config.units import fmt_rate
    from rooftop.history import check, series

    limits, k, last = _rule(args)
    store = _store(args)
    groups = list(series.history(store).values())
    out = []
    for runs in groups:
        metric = runs[0].metric
        events = check.steps(runs, limits.get(metric, check.DEFAULT_THRESHOLD), k, last)
        out.append((runs, events))
    if args.plot:
        from rooftop.history import figure

        Path(args.plot).mkdir(parents=True, exist_ok=True)
        for i, (runs, events) in enumerate(out):
            fig = figure.history_figure(runs, events)
            path = Path(args.plot) / f"history-{runs[0].metric}-{i + 1}.png"
            fig.savefig(path, dpi=110)
            print(path, file=sys.stderr)
    if args.json:
        doc = [
            {
                "signature": runs[0].signature,
                "runs": [r.to_dict() for r in runs],
                "changes": [{"run": e.run, "kind": e.kind, **e.check.to_dict()} for e in events],
            }
            for runs, events in out
        ]
        print(json.dumps(doc, indent=2))
        return 0
    if not out:
        print(f"no complete run with ceilings in {store.dir}")
    for runs, events in out:
        sig = runs[0].signature
        print(
            f"{sig['metric']} on {len(sig['hosts'])} node(s) ({', '.join(sorted(set(sig['hosts'])))}): {len(runs)} run(s)"
        )
        kinds = {e.run: e for e in events}
        for r in runs:
            cells = []
            for name, p in r.ceilings.items():
                ci = f" [{fmt_rate(p.interval[0], r.unit)} .. {fmt_rate(p.interval[1], r.unit)}]" if p.interval else ""
                cells.append(f"{name} {fmt_rate(p.median, r.unit)}{ci}")
            ratio = f"{r.ratio[0]}:{r.ratio[1]}" if r.ratio else "-"
            err = f", validation error {r.validation_error:.1f} %" if r.validation_error is not None else ""
            print(f"  {r.run} {r.created}: {'; '.join(cells)}; ratio {ratio}{err}")
            if r.run in kinds:
                e = kinds[r.run]
                print(f"    {e.kind}: {e.check.bound_moved()}")
    return 0
