"""The campaign commands: collect and validate (measure a run's stages),
runs (list them), doctor (check, recover, rebuild a results folder)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rooftop import session
from rooftop.cli.common import (
    COLLECT_FLAGS,
    DEFAULT_RESULTS,
    RESULTS_FLAG,
    VALIDATE_FLAGS,
    add_key_flags,
    campaign_args,
    config_args,
    interrupted_rc,
    json_flag,
    key_values,
    restate_arg,
    results_arg,
    run_arg,
    takes_runs,
)
from rooftop.numbers import json_text
from rooftop.units import fmt_pct


def _cmd_collect(args) -> int:
    """collect: resolves the config, plans, prints or measures."""
    from rooftop import emulation
    from rooftop.campaign import plan_collect, separable
    from rooftop.config.resolve import build
    from rooftop.nics import check as nic_check
    from rooftop.nics import policy as nics
    from rooftop.store.db import Store

    if args.nic_policy and "," in args.nic_policy:  # one run per policy
        return nics.collect_each(args, _cmd_collect)
    run_id: str | None
    if args.resume:
        store, cfg, run_id = _resumed(args)
    else:
        cfg = build(args.config, session.overrides(args))
        if not args.dry_run:
            nic_check.preflight(cfg)  # before a run exists or anything starts
        cfg["stages"] = ["collect"]  # stages asked for so far: the run's status covers each
        if args.dry_run:  # it only prints: it creates no folder and no database
            return _dry_collect(cfg, session.PlannedStore(cfg["results"]))
        store = Store(cfg["results"])
        run_id = None
    from rooftop.campaign import sampling
    from rooftop.launchers import make_launcher

    if args.dry_run:
        return _dry_collect(cfg, store)
    if args.resume:
        nic_check.preflight(cfg)
    emulation.preflight(cfg)  # an emulated cluster not as the run recorded it: refused
    with session.campaign_locks(args, store, cfg) as locks:  # a refused campaign creates no run
        if not run_id:  # --pairs sample: its topology and first batch go into the run's config
            for line in sampling.prepare(cfg, make_launcher(cfg["launcher"])):
                print(f"rooftop: {line}", file=sys.stderr, flush=True)
        run_id = run_id or store.new_run(cfg, session.environment(cfg))
        locks.name_run(run_id)
        # What this run can tell, before measuring anything (stderr); a
        # refused campaign (locked, unwritable folder) prints only its error.
        print(separable.line(cfg, plan_collect(cfg)), file=sys.stderr, flush=True)
        return _run_stage(args, store, run_id, cfg, plan_collect(cfg), "collect")


def _resumed(args) -> tuple:
    """collect --resume RUN: (its store, its config, its id). The run's own
    config is measured again: what would be ignored is refused (a value
    naming what would run may be given again: config.trust)."""
    from rooftop.config import trust
    from rooftop.config.catalog import KEY_BY_PATH
    from rooftop.keys import ConfigError
    from rooftop.store.db import Store

    given = session.overrides(args)
    again = {k: v for k, v in given.items() if KEY_BY_PATH[k].executes}
    ignored = sorted(k for k in given if k != "results" and k not in again) + (["--config"] if args.config else [])
    if ignored:
        raise ConfigError(
            f"--resume {args.resume} measures that run's config, so these would be "
            f"ignored: {', '.join(ignored)} (start a new run to change them)"
        )
    store = Store(args.results or DEFAULT_RESULTS, create=False)
    run = store.get_run(args.resume)
    trust.check_reuse(store, run.id, run.config, again, "collect --resume")  # before anything runs
    return store, run.config, run.id


def _cmd_validate(args) -> int:
    from rooftop import emulation
    from rooftop.campaign import Runner, plan_validate
    from rooftop.config import trust
    from rooftop.config.files import set_key
    from rooftop.config.resolve import resolve_grid
    from rooftop.nics import check as nic_check
    from rooftop.nics import policy as nics
    from rooftop.store.db import Store

    store = Store(args.results or DEFAULT_RESULTS, create=False)
    run = store.get_run(args.run)
    cfg = json.loads(json.dumps(run.config))  # a copy
    for path, value in key_values(args).items():  # validate.* and fail_fast
        set_key(cfg, path, value)
    trust.check_reuse(store, run.id, cfg, session.restated(args), "validate")  # before anything runs
    if args.nic_policy:  # a run measures under one policy (old runs: passthrough)
        nics.same_policy(cfg, args.nic_policy, args.run)
    resolve_grid(cfg)  # against the run's own nodes
    if not args.dry_run:
        nic_check.preflight(cfg)
        emulation.preflight(cfg)  # the cluster rebuilt or changed since the run: refused
    groups = plan_validate(cfg)
    if args.dry_run:
        from rooftop.launchers import make_launcher

        return _dry_run(Runner(cfg, store, run.id, make_launcher(cfg["launcher"])), cfg, groups)
    # The run's status now covers validation too (runs from before
    # "stages" was recorded asked for collect).
    stages = cfg.get("stages") or ["collect"]
    cfg["stages"] = stages + ([] if "validate" in stages else ["validate"])
    with session.campaign_locks(args, store, cfg) as locks:
        locks.name_run(run.id)
        store.update_config(run.id, cfg)
        return _run_stage(args, store, run.id, cfg, groups, "validate")


def _run_stage(args, store, run_id: str, cfg: dict, groups, verb: str) -> int:
    """Measures one stage of a held run (collect or validate) with its
    progress and sampling batches, and says how it ended (_print_end)."""
    from rooftop import ui
    from rooftop.campaign import Runner, SampleFailed, sampling
    from rooftop.campaign.lifecycle import Hold, run_status
    from rooftop.campaign.tracking import PROGRESS_LOG
    from rooftop.launchers import make_launcher

    launcher = make_launcher(cfg["launcher"])
    log = (lambda m: ui.console.print(f"[dim]{m}[/]")) if args.verbose else None
    done = store.done_keys(run_id)
    _warn_if_long(cfg, groups, done)
    rc = 0

    def measure(groups, done) -> tuple[int, int]:
        with ui.stage_progress(groups, done, cfg, quiet=args.json, log=store.run_dir(run_id) / PROGRESS_LOG) as bars:
            runner = Runner(cfg, store, run_id, launcher, on_sample=bars.on_sample, log=log, on_window=bars.on_window)
            return runner.run_placements(groups, fail_fast=cfg["fail_fast"])

    say = None if args.json else (lambda m: ui.console.print(f"[dim]{m}[/]"))
    try:
        with Hold(store, run_id, verb, say=say) as hold:  # claim, time, events, status (campaign.lifecycle)
            ok, failed = measure(groups, done)
            if verb == "collect" and sampling.adaptive(cfg):  # --pairs sample: batches while classes need them
                more_ok, more_failed = _sample_batches(args, store, run_id, cfg, measure)
                ok, failed = ok + more_ok, failed + more_failed
            status, note = run_status(store, run_id, cfg)
            hold.finish(status, f"{verb}: {failed} failed samples" + (f"; {note}" if note else "") if failed else note)
            rc = 1 if failed else 0
    except KeyboardInterrupt:
        ui.console.print(
            f"[yellow]interrupted[/]: completed samples are saved; continue with "
            f"'rooftop {verb} {'--resume ' if verb == 'collect' else ''}{run_id}"
            f"{' --results ' + str(store.dir) if store.dir != Path(DEFAULT_RESULTS) else ''}'"
        )
        rc = interrupted_rc()
    except SampleFailed as e:
        ui.console.print(f"[red]stopped (--fail-fast)[/]: {e}")
        rc = 1
    _print_end(store, run_id, args.json)
    return rc


def _sample_batches(args, store, run_id: str, cfg: dict, measure) -> tuple[int, int]:
    """--pairs sample: the batches after the first (each drawn from the
    pairs measured so far, the suspects' follow-up first) until the search
    ends, then the search's power at the run's own noise recorded in its
    config. (ok, failed) samples of those batches."""
    from rooftop import ui
    from rooftop.campaign import plan_collect, sampling, simulate

    ok = failed = 0
    while True:
        adds, why = sampling.extend(cfg, store, run_id)
        if not adds:
            if not args.json:
                ui.console.print(f"pair sample: no more pairs: {why}")
            simulate.record_power(cfg, store, run_id)  # how likely this search was to miss one
            return ok, failed
        if not args.json:
            ui.console.print(f"pair sample: {len(adds)} more pair(s) (batch {len(cfg['pair_sample']['batches'])})")
        n_ok, n_failed = measure(plan_collect(cfg), store.done_keys(run_id))
        ok, failed = ok + n_ok, failed + n_failed


def _print_end(store, run_id: str, as_json: bool) -> None:
    """How a stage ended: the run's status, times and a summary of its
    samples (JSON, or a table, its files and its id)."""
    from rooftop import ui

    run = store.get_run(run_id)
    samples = store.samples(run_id)
    if as_json:
        print(
            json_text(
                {
                    "run": run_id,
                    "status": run.status,
                    "overhead": run.overhead,
                    "wall_s": run.wall_s,
                    "measured_s": run.measured_s,
                    "summary": ui.summarize(samples),
                },
                indent=1,
            )
        )
    else:
        ui.print_summary(run, samples)
        ui.console.print(f"results: {store.path} and {store.run_dir(run_id)}/")
        print(run_id)


def _warn_if_long(cfg: dict, groups, done=frozenset()) -> None:
    """A campaign expected to take over an hour says so (stderr) before it starts."""
    from rooftop.campaign.tracking import expect

    warning = expect(cfg, groups, done).warning()
    if warning:
        print(f"rooftop: warning: {warning}", file=sys.stderr, flush=True)


def _dry_collect(cfg: dict, store) -> int:
    """collect --dry-run: what the run can tell, the pairs it would sample
    first, and _dry_run."""
    from rooftop.campaign import Runner, plan_collect, sampling, separable
    from rooftop.launchers import make_launcher

    print(separable.line(cfg, plan_collect(cfg)), file=sys.stderr)  # what this run can tell
    notes = sampling.prepare(cfg) or sampling.describe(cfg)  # (--pairs sample: the topology, the first batch)
    for line in notes:
        print(f"# {line}")
    return _dry_run(Runner(cfg, store, "<run>", make_launcher(cfg["launcher"])), cfg, plan_collect(cfg))


def _dry_run(runner, cfg: dict, groups) -> int:
    """The exact commands of every placement, then the expected run time
    (the figures 'rooftop plan' gives for as many nodes)."""
    from rooftop.campaign.forecast import of_placements

    print("\n".join(runner.dry_run(groups)))
    x = of_placements(cfg, groups)
    print("\n".join(f"#   {line}" for line in x.lines()))
    print(f"# {x.line()}")
    _warn_if_long(cfg, groups)
    return 0


def _cmd_runs(args) -> int:
    from rooftop import ui
    from rooftop.store.db import Store

    if not Path(args.results).exists():
        print(
            f"rooftop runs: no results folder {args.results} (start one with 'rooftop collect --results "
            f"{args.results}')",
            file=sys.stderr,
        )
        return 2
    if Path(args.results).is_dir() and not Store.exists(args.results):
        # A folder without a database: nothing to list, and nothing created (a file in the way is an error below).
        print("[]" if args.json else f"no runs in {args.results} (start one with 'rooftop collect')")
        return 0
    store = Store(args.results, create=False)
    runs = store.runs()
    if args.json:
        print(
            json_text(
                [
                    {
                        "id": r.id,
                        "created": r.created,
                        "status": r.status,
                        "launcher": r.config["launcher"]["type"],
                        "nodes": len(r.config["nodes"]),
                        "metrics": r.config["metrics"],
                        "samples": len(store.samples(r.id)),
                        "invalid": sum(1 for s in store.samples(r.id) if s["status"] == "invalid"),
                        "wall_s": r.wall_s,
                        "measured_s": r.measured_s,
                        "overhead": r.overhead,
                        "note": r.note,
                    }
                    for r in runs
                ],
                indent=1,
            )
        )
        return 0
    if not runs:
        ui.console.print(f"no runs in {store.path} (start one with 'rooftop collect')")
        return 0
    from rich.table import Table

    t = Table(title=str(store.path), title_justify="left")
    for c in ("run", "created", "status", "launcher", "nodes", "samples", "time", "overhead"):
        t.add_column(c)
    for r in runs:
        n = store.samples(r.id)
        bad = sum(1 for s in n if s["status"] == "failed")
        invalid = sum(1 for s in n if s["status"] == "invalid")
        t.add_row(
            r.id,
            r.created,
            r.status,
            r.config["launcher"]["type"],
            str(len(r.config["nodes"])),
            f"{len(n)}" + (f" ({bad} failed)" if bad else "") + (f" ({invalid} invalid)" if invalid else ""),
            f"{r.wall_s:.0f} s",
            fmt_pct(r.overhead),
        )
    ui.print_table(ui.Console(highlight=False), t)  # the table is the output: 'rooftop runs > f' keeps it
    return 0


def _cmd_doctor(args) -> int:
    from rooftop import doctor

    with doctor.folder_lock(args.results, writes=args.recover or args.rebuild):  # refused while a campaign runs
        return _doctor(args)


def _doctor(args) -> int:
    from rooftop import doctor
    from rooftop.store.records import StoreError

    done = None  # the lines of --recover or --rebuild
    if args.recover and not args.rebuild:
        try:
            done = list(doctor.recover(args.results))
        except StoreError as e:
            print(f"rooftop doctor: cannot recover in {args.results}: {e}", file=sys.stderr)
            return 1
    elif args.rebuild:
        try:
            done = list(doctor.rebuild(args.results))
        except OSError as e:
            print(f"rooftop doctor: cannot rebuild in {args.results}: {e}", file=sys.stderr)
            return 1
    problems = doctor.check(args.results)
    advice = doctor.advice(problems, args.results) if done is None and problems else None
    if args.json:
        doc = {"results": str(args.results), "problems": problems, "advice": advice}
        print(json_text(doc if done is None else dict(doc, done=done), indent=1))
    elif done is not None:
        for line in done + [f"still: {p}" for p in problems]:
            print(line)
    else:
        for p in problems:
            print(f"problem: {p}")
        if advice:
            print(advice)
        if not problems:
            print(f"{args.results}: no problem found")
    return 1 if problems else 0


def add_collect(sub) -> None:
    co = sub.add_parser(
        "collect",
        help="measure server and client ceilings; prints the run id",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="The roofline parameter suite, per metric (rpc: sequential noop "
        "RPCs; bw: sequential bulk reads):\n"
        "  server peak: one node runs S servers, every other node C clients\n"
        "               (per-server-process rate = aggregate / S)\n"
        "  client peak: one client vs one idle server, every node pair\n"
        "               (--pairs rounds: disjoint pairs at once; --pairs sample: pairs\n"
        "               drawn by topology class until each class's ceiling is known)\n"
        "  client node: the last node full of clients vs every other node's servers\n"
        "  sweep:       one server node's aggregate as S grows (--sweep-servers)\n"
        "Each sample is saved as soon as it is measured; Ctrl-C stops every process "
        "and 'rooftop collect --resume RUN' continues.",
    )
    config_args(co)
    add_key_flags(co, [RESULTS_FLAG])
    campaign_args(co, "collect")
    add_key_flags(co, COLLECT_FLAGS)
    co.add_argument(
        "--resume",
        metavar="RUN",
        help="continue an interrupted run ('latest': the newest), under its own config "
        "(config options given with it are refused, not ignored; --results names its folder; "
        "--set gives again a value of the run that names what would run: see 'rooftop validate --set')",
    )
    takes_runs(co, "resume")
    co.set_defaults(func=_cmd_collect)


def add_validate(sub) -> None:
    va = sub.add_parser(
        "validate",
        help="add validation samples (server nodes x client nodes) to a run",
        description="Runs the validation grid: server nodes x client nodes "
        f"(default 1..min({_validate_server_nodes()}, N-1) x 1..16, then doubling up to N-servers). Each "
        "sample stores the aggregate rate, the per-client-process rate and x = server "
        "processes / client processes. Re-running continues where it stopped.",
    )
    run_arg(va, "the run (from 'rooftop collect' or 'rooftop runs')")
    add_key_flags(va, VALIDATE_FLAGS, "validate")
    va.add_argument(
        "--nic-policy",
        help="must be the run's nic.policy (a run measures under one; "
        "'rooftop collect --nic-policy A,B' measures one run per policy)",
    )
    va.add_argument(
        "--results", default=None, help=f"results folder holding the run's rooftop.db (default: {DEFAULT_RESULTS})"
    )
    restate_arg(va)
    campaign_args(va, "validate")
    va.set_defaults(func=_cmd_validate)


def _validate_server_nodes() -> int:
    from rooftop.config.catalog import VALIDATE_SERVER_NODES

    return VALIDATE_SERVER_NODES


def add_runs(sub) -> None:
    ru = sub.add_parser("runs", help="list the runs in a results folder")
    results_arg(ru)
    json_flag(ru, "the runs")
    ru.set_defaults(func=_cmd_runs)


def add_doctor(sub) -> None:
    dr = sub.add_parser(
        "doctor",
        help="check a results folder; --rebuild its database from the engine documents",
        description="Checks the results database (integrity, runs without folders, "
        "run folders without rows, measured windows in engine documents or window logs but not in the "
        "database, samples whose engine documents folder does not resolve in RESULTS). --recover stores those windows; --rebuild moves the database aside and rebuilds it "
        "from the engine documents under RESULTS/<run>/ (each run's config.json and "
        "its client documents), keeping the rows the old database still holds (service points, "
        "baselines, series and tune steps carried over). Refused while a campaign holds the "
        "folder's lock; a database of a newer schema is never rebuilt (upgrade rooftop).",
    )
    results_arg(dr)
    dr.add_argument("--rebuild", action="store_true", help="rebuild the database from the engine documents")
    dr.add_argument(
        "--recover",
        action="store_true",
        help="store the measured windows the engine documents hold and the database lacks "
        "(a campaign killed, or stopped by a locked or full database), each once, and add a "
        "killed command's time to its run",
    )
    json_flag(dr, "the problems found and what was done")
    dr.set_defaults(func=_cmd_doctor)
