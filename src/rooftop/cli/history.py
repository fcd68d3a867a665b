"""`rooftop history` (ceilings over time, grouped by comparability) and
`rooftop check` (the regression gate against a baseline or the history)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rooftop import files
from rooftop.cli.common import rule_args, rule_of
from rooftop.numbers import json_text

CHECK_EPILOG = """\
exit status: 1 when a ceiling fell beyond noise (and only then); 0 when none
fell; 4 when it could not tell: no comparable baseline or earlier run (the
message names the field that differs), no ceilings to compare, or a ceiling
damaged in the database (named); 2 on a usage or config error (no such
baseline or run, a bad flag). The rule and its keys (check.threshold,
check.METRIC.threshold, check.last, check.k: 'rooftop config keys'; a config
file's [check] table, --set, then these flags): docs/history.md.

examples:
  rooftop collect && rooftop check latest --against history   # a weekly job
  rooftop check --save-baseline before-upgrade $RUN
  rooftop check latest --against before-upgrade --junit check.xml
  rooftop check $RUN2 --against $RUN1 --threshold bw=20 --set check.k=4
  rooftop check --against before-upgrade --write-references refs.json   # for the ReFrame check
"""


def add_history(sub) -> None:
    p = sub.add_parser(
        "history",
        help="each ceiling's median and 95 %% interval per run, runs grouped by comparability",
        description="The complete runs of a results folder grouped by what makes them comparable "
        "(hosts, metric, and the config keys that change a ceiling: rooftop.history.comparable), "
        "each ceiling's median and 95 % interval per run in time order, the recommended ratio, the "
        "validation error, the changes the history rule finds (step, outlier, unconfirmed), and each run "
        "measured on a different machine than the run before it (what differs: docs/history.md, 'The machine').",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help='JSON on stdout: the rule applied (as check --json\'s "check") and the groups',
    )
    p.add_argument("--out-dir", metavar="DIR", help="also write the history figure of each group (PNG) into DIR")
    rule_args(p)
    p.set_defaults(func=cmd_history)


def add_check(sub) -> None:
    p = sub.add_parser(
        "check",
        help="did a ceiling fall beyond noise? against a baseline, a run or the history (exit 1 if so, "
        "4 if it cannot tell)",
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
    p.add_argument(
        "--write-references",
        metavar="FILE",
        help="write the ceilings of --against BASELINE|RUN as the ReFrame check's references file "
        "(their medians, lower bound -threshold, the model's units) and exit; no RUN",
    )
    rule_args(p)
    p.set_defaults(func=cmd_check)


def _options(args):
    """(the rule, the store)."""
    from rooftop.store.db import Store

    got, cfg = rule_of(args)
    return got, Store(cfg["results"], create=False)


def _write_references(args, store, rule) -> int:
    from rooftop.history import gate, references

    if args.run or not args.against or args.against == "history":
        print(
            "rooftop check: --write-references FILE takes --against BASELINE|RUN (the references' source), no RUN",
            file=sys.stderr,
        )
        return 2
    base_run, base, label = gate.against(store, args.against)
    if not base:
        raise gate.CheckError(f"{label} has no metric whose ceilings can be built (see 'rooftop model {base_run}')")
    doc = references.write(args.write_references, base, rule)
    names = ", ".join(doc["*"])
    print(f"{args.write_references}: references of {label}: {names}", file=sys.stderr)
    return 0


def cmd_check(args) -> int:
    """`check`, whose exit status a CI gate reads: 1 only when a ceiling
    fell. What it cannot tell exits 4 (rooftop.exits.CANNOT_TELL) with
    one line, an unforeseen error too, never 1 with a traceback."""
    from rooftop import exits
    from rooftop.history import gate
    from rooftop.keys import ConfigError
    from rooftop.store.records import StoreError

    try:
        return _check(args)
    except gate.CannotTell as e:
        print(f"rooftop check: could not tell: {e}", file=sys.stderr)
        return exits.CANNOT_TELL
    except (StoreError, ConfigError, KeyboardInterrupt):
        raise  # main's: exit 2, 130
    except OSError as e:  # a file it could not write (--junit, --write-references) or read
        where = f" {e.filename}" if e.filename else ""
        print(f"rooftop check: cannot write or read{where}: {e.strerror or e}", file=sys.stderr)
        return exits.USAGE
    except Exception as e:  # the gate's contract: no exit 1 but for a fall
        print(
            f"rooftop check: could not tell: an unexpected error, {type(e).__name__}: {e} "
            f"(a bug in rooftop: please report it)",
            file=sys.stderr,
        )
        return exits.CANNOT_TELL


def _check(args) -> int:
    from rooftop import exits
    from rooftop.history import baselines, gate, junit

    rule, store = _options(args)
    if args.write_references:
        return _write_references(args, store, rule)
    if not args.run:
        print("rooftop check: give a RUN (or 'latest')", file=sys.stderr)
        return 2
    run = gate.latest(store) if args.run == "latest" else store.get_run(args.run).id
    if args.save_baseline:
        got = baselines.save(store, args.save_baseline, run)
        print(f"baseline {args.save_baseline}: run {run} ({', '.join(got)})")
        return 0
    if not args.against:
        print("rooftop check: give --against BASELINE|RUN|history (or --save-baseline NAME)", file=sys.stderr)
        return 2
    checks, skipped, untold = gate.check(store, run, args.against, rule)
    fell = [c for mc in checks for c in mc.fell]
    if args.junit:  # whole or not at all: a CI reading it never sees half a report
        files.write(args.junit, junit.document(checks, skipped))
    if args.json:
        doc = {
            "run": run,
            "fell": bool(fell),
            "cannot_tell": untold,
            "starts_history": not checks,
            "metrics": [mc.to_dict() for mc in checks],
            "not_compared": skipped,
            "check": rule.record(),
        }
        print(json_text(doc, indent=2))
    else:
        _print_check(run, rule, checks, skipped, untold)
    if fell:
        return exits.FAILED
    return exits.CANNOT_TELL if untold else exits.OK


def _print_check(run: str, rule, checks: list, skipped: dict, untold: list) -> None:
    """check's text: each metric's ceilings against what they were checked
    against, what was not compared, whether any fell, what could not be told."""
    print(f"rule: {rule.text([mc.metric for mc in checks])}")
    for mc in checks:
        print(f"{mc.metric}: run {run} against {mc.against}")
        for c in mc.changes:
            print(f"  {'FELL' if c.fell else 'ok  '} {c.text()}")
        print(f"  {mc.bound_moved()}")
        for note in mc.notes:
            print(f"  note: {note}")
    for why in skipped.values():
        print(f"not compared: {why}")
    fell = [c for mc in checks for c in mc.fell]
    if not checks:  # gate.first_run: nothing older to fall from
        print(f"run {run} starts the history: no earlier run to check against; the next run is checked against it")
    else:
        print(f"{len(fell)} ceiling(s) fell beyond noise" if fell else "no ceiling fell beyond noise")
    for why in untold:
        print(f"could not tell: {why}")


def cmd_history(args) -> int:
    from rooftop.history import check, series
    from rooftop.units import fmt_pct, fmt_range, fmt_rate, fmt_ratio

    rule, store = _options(args)
    out = check.history(store, rule)
    if args.out_dir:
        from rooftop.history import figure

        for path in figure.write_all(out, Path(args.out_dir)):
            print(path, file=sys.stderr)
    if args.json:
        print(json_text(check.history_doc(rule, out), indent=2))
        return 0
    if not out:
        print(f"no complete run with ceilings in {store.dir}")
    else:
        print(f"rule: {rule.text(sorted({runs[0].metric for runs, _ in out}))}")
    for runs, events in out:
        sig = runs[0].signature
        print(
            f"{sig['metric']} on {len(sig['hosts'])} node(s) ({', '.join(sorted(set(sig['hosts'])))}): {len(runs)} run(s)"
        )
        kinds = {e.run: e for e in events}
        changed = {r.run: (prev, diff) for prev, r, diff in series.machine_changes(runs)}
        for r in runs:
            cells = []
            for name, p in r.ceilings.items():
                ci = f" [{fmt_range(*p.interval, r.unit)}]" if p.interval else ""
                cells.append(f"{name} {fmt_rate(p.median, r.unit)}{ci}")
            ratio = f"ratio {fmt_ratio(*r.ratio)}" if r.ratio else "no ratio (the verdict locates no ridge)"
            err = f", validation error {fmt_pct(r.validation_error / 100, 1)}" if r.validation_error is not None else ""
            print(f"  {r.run} {r.created}: {'; '.join(cells)}; {ratio}{err}")
            if r.run in changed:
                prev, diff = changed[r.run]
                print(f"    measured on a different machine than run {prev.run}: {'; '.join(diff)}")
            if r.run in kinds:
                e = kinds[r.run]
                print(f"    {e.kind}: {e.check.bound_moved()}")
    return 0
