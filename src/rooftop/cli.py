"""The rooftop command line."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

from rooftop import __version__

DESCRIPTION = """\
rooftop: empirical rooflines for distributed data services.

How fast can a data service go on this machine, and how many servers should
it run for its clients? rooftop measures it with its native engine
(rooftop-engine: noop RPCs and bulk RDMA transfers over libfabric).
"""

EPILOG = """\
commands:
  collect   measure the roofline parameters: server and client ceilings
            (prints the run id)
  validate  add validation samples (server nodes x client nodes) to a run
  runs      list the runs in a results folder
  doctor    check a results folder; --rebuild its database from the engine
            documents
  export    a run's samples as CSV or JSON
  model     the roofline: ceilings, ridge ratio, the verdict on the ratio,
            validation, outlier nodes
  plot      figures of a run or parameters file (roofline, sweep, pair matrix,
            latency), PNG and SVG
  report    one self-contained HTML report (+ Markdown) of a run
  compare   several rooflines (runs, parameters files) on one figure
  learn     compare learned models of the rate (and the roofline-informed
            ones) on runs' samples; save the best with the run
  predict   a learned model's rate for servers and clients never measured,
            capped by the roofline
  tune      the adaptive loop over engine and deployment knobs: propose from a
            learned model, measure, retrain (prints the run id)
  interfere  the stages alone, then beside background loads (cpu, mem, net,
            io, numio, cmd): impact factors both ways, ensembles
  cluster   an emulated cluster on this machine (root): up, status, down
  config    show the fully resolved config (or every key with 'config keys')
  probe     one server + one client per fabric on this machine: RPC rate and
            4 MiB bulk-read bandwidth (the quick answer)
  audit     seed 002's five benchmark pitfalls and a sixth measured here as
            deltas (buffer reuse, completion, binding, cache modes, file
            allocation, buffer pages)
  bursts    rate, server CPU, wake-ups and power per progress mode in bursts
            (seed 000's Figure 6); --neighbour: the cost to a job beside it
  nics      the NICs here (or in an hwloc XML topology) with their locality and
            the NIC each process would get under each NIC policy and binding
  engine    run rooftop-engine directly (serve, load, ping, stat, shutdown, ...)

examples:
  RUN=$(rooftop collect --duration 2 --samples 3)   # this machine, 2 logical nodes
  rooftop validate --run $RUN
  rooftop report $RUN                                # prints the HTML report's path
  rooftop runs
  rooftop export $RUN --format csv
  rooftop collect --launcher mpiexec --set launcher.hosts=n1,n2,n3 --set fabric.domain=hsn0
  rooftop collect --launcher srun --nodes 8          # inside salloc/sbatch
  rooftop collect --resume $RUN                      # after Ctrl-C
  rooftop cluster up --nodes 4 --link-rate 200mbit && rooftop collect --launcher netns
  rooftop compare $RUN examples/aurora-table2.json
  rooftop learn $RUN $RUN2 && rooftop predict $RUN --servers 3 --clients 40
  rooftop audit --only cache,allocation --storage-dir /mnt/nvme/tmp
  rooftop tune --metric bw --run $RUN --budget 12   # settings for this machine
  rooftop bursts --progress busy,spindown:10,block --neighbour stencil
  rooftop interfere --loads cpu,net --load-nodes 0,1 --ensemble 1,2,4
"""


def _cmd_probe(args) -> int:
    from rooftop import probe

    fabrics = [f.strip() for f in args.fabric.split(",") if f.strip()]
    if not fabrics:
        print("rooftop probe: --fabric names no fabric", file=sys.stderr)
        return 2
    if args.duration <= 0 or args.repeat < 1 or args.lease <= 0:
        print("rooftop probe: --duration and --lease must be > 0 and --repeat at least 1", file=sys.stderr)
        return 2
    print(f"rooftop probe: {', '.join(fabrics)}; {args.duration:g} s per measurement, "
          f"{args.repeat} run(s) each")
    summary = probe.run(fabrics, args.duration, Path(args.results), repeat=args.repeat, lease=args.lease)
    failed = [r for r in summary["rows"] if "error" in r]
    print(f"results: {summary['folder']}")
    return 1 if failed else 0


def _overrides(args) -> dict:
    """--set KEY=VALUE, then the key flags given (which win)."""
    from rooftop import config

    o: dict = {}
    for text in getattr(args, "set", None) or []:
        k, v = config.parse_override(text)
        o[k] = v
    o.update(key_values(args))
    return o


def _environment(cfg: dict) -> dict:
    import platform
    import socket

    from rooftop.engine import engine_path, run_engine

    env = {"host": socket.gethostname(), "python": platform.python_version(),
           "rooftop": __version__, "argv": sys.argv, "launcher": cfg["launcher"]["type"],
           "nodes": cfg["nodes"]}
    try:
        path = cfg["engine"]["path"] or engine_path()
        import subprocess

        env["engine"] = subprocess.run([path, "version"], capture_output=True, text=True,
                                       timeout=10).stdout.strip()
        env["engine_path"] = path
    except Exception as e:  # recorded, not fatal: the samples record it too
        env["engine"] = f"unknown ({e})"
    return env


def _claim(store, run_id: str, verb: str) -> None:
    """This process runs the run now; refused while another live campaign
    on this host runs it (one whose owner is gone reads as interrupted)."""
    import os
    import socket

    from rooftop.store import StoreError

    run = store.get_run(run_id)
    pid, host, _ = run.owner
    if run.status == "running" and pid and pid != os.getpid() and host == socket.gethostname():
        raise StoreError(f"run {run_id} is being run by another campaign (pid {pid} on {host}); "
                         f"wait for it or stop it first")
    store.claim(run_id, f"{verb} running")


def _quietly(fn, *args) -> None:
    """A bookkeeping write that must not hide the error being reported."""
    from rooftop.store import StoreError

    try:
        fn(*args)
    except StoreError:
        pass


def _run_stage(args, store, run_id: str, cfg: dict, groups, verb: str) -> int:
    import time

    from rooftop.store import StoreError

    from rooftop import ui
    from rooftop.campaign import Runner, SampleFailed
    from rooftop.doctor import run_status
    from rooftop.launchers import make_launcher
    from rooftop.campaign.progress import PROGRESS_LOG

    launcher = make_launcher(cfg["launcher"])
    log = (lambda m: ui.console.print(f"[dim]{m}[/]")) if args.verbose else None
    done = store.done_keys(run_id)
    _warn_if_long(cfg, groups, done)
    t0 = time.monotonic()
    rc = 0
    _claim(store, run_id, verb)
    try:
        with ui.stage_progress(groups, done, cfg, quiet=args.json,
                               log=store.run_dir(run_id) / PROGRESS_LOG) as bars:
            runner = Runner(cfg, store, run_id, launcher, on_sample=bars.on_sample, log=log,
                            on_window=bars.on_window)
            ok, failed = runner.run_placements(groups, fail_fast=cfg["fail_fast"])
        status, note = run_status(store, run_id, cfg)
        if failed:
            note = f"{verb}: {failed} failed samples" + (f"; {note}" if note else "")
        store.set_status(run_id, status, note)
        rc = 1 if failed else 0
    except KeyboardInterrupt:
        _quietly(store.set_status, run_id, "interrupted", f"{verb} interrupted")
        ui.console.print(f"[yellow]interrupted[/]: completed samples are saved; continue with "
                         f"'rooftop {verb} {'--resume' if verb == 'collect' else '--run'} {run_id}"
                         f"{' --results ' + str(store.dir) if str(store.dir) != 'rooftop-results' else ''}'")
        rc = _interrupted_rc()
    except SampleFailed as e:
        store.set_status(run_id, "failed", str(e))
        ui.console.print(f"[red]stopped (--fail-fast)[/]: {e}")
        rc = 1
    except StoreError:
        # The database took no more rows (its message names them): the run
        # is left for --resume or rooftop doctor --recover, its time kept if it can be.
        _quietly(store.set_status, run_id, "interrupted", f"{verb} stopped: the results database "
                 f"could not be written; 'rooftop doctor --recover' brings in what was measured")
        raise
    finally:
        _quietly(store.add_time, run_id, time.monotonic() - t0)
    run = store.get_run(run_id)
    samples = store.samples(run_id)
    if args.json:
        print(json.dumps({"run": run_id, "status": run.status, "overhead": run.overhead,
                          "wall_s": run.wall_s, "measured_s": run.measured_s,
                          "summary": ui.summarize(samples)}, indent=1))
    else:
        ui.print_summary(run, samples)
        ui.console.print(f"results: {store.path} and {store.run_dir(run_id)}/")
        print(run_id)
    return rc


def _warn_if_long(cfg: dict, groups, done=frozenset()) -> None:
    """A campaign expected to take over an hour says so (stderr) before it starts."""
    from rooftop.campaign.progress import expect

    warning = expect(cfg, groups, done).warning()
    if warning:
        print(f"rooftop: warning: {warning}", file=sys.stderr, flush=True)


def _dry_run(runner, cfg: dict, groups) -> int:
    """The exact commands of every placement, then the expected run time."""
    from rooftop.campaign.progress import expect

    print("\n".join(runner.dry_run(groups)))
    print(f"# {expect(cfg, groups).line()}")
    _warn_if_long(cfg, groups)
    return 0


class _PlannedStore:
    """Where a run's files would go, for --dry-run (nothing is created)."""

    def __init__(self, results: str):
        self.dir = Path(results)

    def run_dir(self, run_id: str) -> Path:
        return self.dir / run_id


def _cmd_collect(args) -> int:
    from rooftop import config, emulation
    from rooftop.campaign import Runner, plan_collect
    from rooftop.nics import check as nic_check
    from rooftop.nics import policy as nics
    from rooftop.store import Store

    if args.nic_policy and "," in args.nic_policy:  # one run per policy
        return nics.collect_each(args, _cmd_collect)
    if args.resume:
        # The run's own config is measured again: refuse what would be ignored.
        ignored = sorted(k for k in _overrides(args) if k != "results") + (["--config"] if args.config else [])
        if ignored:
            raise config.ConfigError(f"--resume {args.resume} measures that run's config, so these would be "
                                     f"ignored: {', '.join(ignored)} (start a new run to change them)")
        store = Store(args.results or "./rooftop-results", create=False)
        run = store.get_run(args.resume)
        cfg, run_id = run.config, run.id
    else:
        cfg = config.build(args.config, _overrides(args))
        if not args.dry_run:
            nic_check.preflight(cfg)  # before a run exists or anything starts
        cfg["stages"] = ["collect"]  # stages asked for so far: the run's status covers each
        # A dry run only prints: it creates no folder and no database.
        store = _PlannedStore(cfg["results"]) if args.dry_run else Store(cfg["results"])
        run_id = None
    if args.dry_run:
        from rooftop.launchers import make_launcher

        return _dry_run(Runner(cfg, store, "<run>", make_launcher(cfg["launcher"])), cfg, plan_collect(cfg))
    if args.resume:
        nic_check.preflight(cfg)
    emulation.preflight(cfg)  # an emulated cluster not as the run recorded it: refused
    with _campaign_locks(args, store, cfg) as locks:  # a refused campaign creates no run
        run_id = run_id or store.new_run(cfg, _environment(cfg))
        locks.name_run(run_id)
        return _run_stage(args, store, run_id, cfg, plan_collect(cfg), "collect")


def _campaign_locks(args, store, cfg: dict):
    """The results folder's lock, and this machine's cores' for launchers on
    it (rooftop.locks); --allow-concurrent marks every sample stored."""
    from rooftop.locks import CampaignLocks

    if args.allow_concurrent:
        store.marks["concurrent"] = 1
    say = lambda m: print(f"rooftop: {m}", file=sys.stderr, flush=True)
    return CampaignLocks(store.dir, cfg["launcher"]["type"], args.wait_lock, args.allow_concurrent, say)


def _cmd_validate(args) -> int:
    from rooftop import config, emulation
    from rooftop.campaign import Runner, plan_validate
    from rooftop.nics import check as nic_check
    from rooftop.nics import policy as nics
    from rooftop.store import Store

    store = Store(args.results or "./rooftop-results", create=False)
    run = store.get_run(args.run)
    cfg = json.loads(json.dumps(run.config))  # a copy
    for path, value in key_values(args).items():  # validate.* and fail_fast
        config.set_key(cfg, path, value)
    if args.nic_policy:  # a run measures under one policy (old runs: passthrough)
        nics.same_policy(cfg, args.nic_policy, args.run)
    config.resolve_grid(cfg)  # against the run's own nodes
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
    with _campaign_locks(args, store, cfg) as locks:
        locks.name_run(run.id)
        store.update_config(run.id, cfg)
        return _run_stage(args, store, run.id, cfg, groups, "validate")


def _cmd_runs(args) -> int:
    from rooftop.store import Store
    from rooftop import ui

    if Path(args.results).is_dir() and not Store.exists(args.results) or not Path(args.results).exists():
        # Nothing to list: create nothing either (a file in the way is an error below).
        print("[]" if args.json else f"no runs in {args.results} (start one with 'rooftop collect')")
        return 0
    store = Store(args.results, create=False)
    runs = store.runs()
    if args.json:
        print(json.dumps([{"id": r.id, "created": r.created, "status": r.status,
                           "launcher": r.config["launcher"]["type"], "nodes": len(r.config["nodes"]),
                           "metrics": r.config["metrics"], "samples": len(store.samples(r.id)),
                           "invalid": sum(1 for s in store.samples(r.id) if s["status"] == "invalid"),
                           "wall_s": r.wall_s, "overhead": r.overhead, "note": r.note} for r in runs],
                         indent=1))
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
        t.add_row(r.id, r.created, r.status, r.config["launcher"]["type"], str(len(r.config["nodes"])),
                  f"{len(n)}" + (f" ({bad} failed)" if bad else "") + (f" ({invalid} invalid)" if invalid else ""),
                  f"{r.wall_s:.0f} s",
                  f"{r.overhead:.0%}" if r.overhead is not None else "-")
    ui.print_table(ui.console, t)
    return 0


def _cmd_doctor(args) -> int:
    from rooftop import doctor
    from rooftop.store import StoreError

    if args.recover and not args.rebuild:
        try:
            for line in doctor.recover(args.results):
                print(line)
        except StoreError as e:
            print(f"rooftop doctor: cannot recover in {args.results}: {e}", file=sys.stderr)
            return 1
        left = doctor.check(args.results)
        for p in left:
            print(f"still: {p}")
        return 1 if left else 0
    problems = doctor.check(args.results)
    if not args.rebuild:
        for p in problems:
            print(f"problem: {p}")
        if problems:
            if all("--recover" in p for p in problems):
                print(f"bring them in: rooftop doctor --results {args.results} --recover")
            else:
                print(f"rebuild from the engine documents: rooftop doctor --results {args.results} --rebuild")
            return 1
        print(f"{args.results}: no problem found")
        return 0
    try:
        for line in doctor.rebuild(args.results):
            print(line)
    except OSError as e:
        print(f"rooftop doctor: cannot rebuild in {args.results}: {e}", file=sys.stderr)
        return 1
    left = doctor.check(args.results)
    for p in left:
        print(f"still: {p}")
    return 1 if left else 0


def _cmd_export(args) -> int:
    from rooftop import export
    from rooftop.store import Store

    store = Store(args.results, create=False)
    run = store.get_run(args.run).id
    if args.series:
        if args.format == "fom":
            print("rooftop export: --series is csv or json", file=sys.stderr)
            return 2
        text = export.series_text(store, run, args.format)
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


def _cmd_model(args) -> int:
    from rooftop import kinds, model, results, ui
    from rooftop.store import Store

    if not args.run and not args.params:
        print("rooftop model: give a RUN, a --params FILE, or both", file=sys.stderr)
        return 2
    samples, res = [], None
    if args.run:
        store = Store(args.results, create=False)
        kind = kinds.of(store, store.get_run(args.run))
        if kind is not None:
            raise model.ModelError(kind.no_roofline(store.get_run(args.run).id))
        res = results.load(store, args.run)
        samples = res.samples
    if args.params:
        rooflines = model.load_params(args.params)
        evals = [model.evaluate(r, [s for s in samples if s["stage"] == "validate"],
                                res.run.config.get("nodes") if res else None)
                 for _, r in sorted(rooflines.items())]
    else:
        if not res.rooflines:
            metrics = sorted({s["metric"] for s in samples})
            if metrics:  # the model's own message names what is missing
                model.from_run(samples, metrics[0])
            raise model.ModelError(f"run {args.run} has no ceiling samples (rooftop collect)")
        evals = [res.evaluations[m] for m in sorted(res.rooflines)]
    run_res = res if res and not args.params else None  # outlier scores: the run's own model only
    mixes = _mixes(args.mix, {e.roofline.metric: e.roofline for e in evals})
    if args.json:
        doc = _model_json(args, evals, samples, run_res)
        if mixes:
            doc["mixes"] = [c.to_dict() for c in mixes]
        print(json.dumps(doc, indent=1))
        return 0
    out = ui.Console(highlight=False)
    if not out.is_terminal:
        out.width = 110
    for e in evals:
        _print_roofline(out, e, run_res)
        _print_validation(out, e, args.run)
        for line in results.invalid_lines(samples, e.roofline.metric):
            out.print(f"[yellow]{line}[/]")
    for comb in mixes:
        head, *rest = comb.lines()
        out.print(f"[bold]{head}[/]", soft_wrap=True)
        for line in rest:
            out.print(line, soft_wrap=True)
    return 0


def _mixes(files, rooflines) -> list:
    """The combined roofline of each --mix FILE (rooftop.mix)."""
    from rooftop import mix

    return [mix.combine(mix.load_mix(f), rooflines) for f in files or ()]


def _model_json(args, evals, samples, res) -> dict:
    """`rooftop model --json` (schema: rooftop/schemas/model.schema.json)."""
    from rooftop import export

    return export.model_doc(args.run, args.params, evals, samples, res)


def _print_roofline(out, e, res) -> None:
    """One metric's verdict and roofline table (res: the run, for outlier nodes)."""
    from rich.table import Table

    from rooftop import ui

    r = e.roofline
    f = lambda v: ui.fmt_rate(v, r.unit)
    v = r.verdict()
    out.print(f"[bold]{r.metric}: {_verdict_headline(v)}[/]")
    t = Table(title=f"{r.metric} roofline ({r.source})", title_justify="left", show_header=False)
    t.add_column(no_wrap=True)
    t.add_column(overflow="fold")
    t.add_row("client ceiling (per process)", _ceiling_text(r.client, f))
    if r.client_node_rejected:
        t.add_row("client ceiling, node full", "not used: " + r.client_node_rejected)
    if r.client_node:
        t.add_row("client ceiling, node full", _ceiling_text(r.client_node, f) + ": "
                  + ("lower, the model uses it" if r.node_binds else "not lower, unused"))
    t.add_row("server ceiling (per process)", _ceiling_text(r.server, f))
    for stages in r.measured_once:
        t.add_row("measured once", ", ".join(x.replace("_", " ") for x in stages)
                  + ": the same placement, one set of samples stands for each")
    if r.core_shared:
        t.add_row("not used for ceilings", f"{len({k for _, k, _ in r.core_shared})} sample(s): "
                  f"{r.core_shared[0][2]}")
    if e.excluded:
        t.add_row("not used for validation", f"{len(e.excluded)} sample(s): {e.excluded[0][1]}")
    t.add_row("roofline", "r(x) = min(client, x * server), x = server / client processes")
    ri = r.ridge_interval
    t.add_row("ridge x*", f"{r.ridge.lo:.3g} .. {r.ridge.hi:.3g}  (median {r.ridge.centre:.3g}"
              + (f"; 95 % interval {ri[0]:.3g} .. {ri[1]:.3g})" if ri and r.server.n else ")"))
    t.add_row("verdict", v["text"])
    if v["ratio"]:
        rec = r.recommended()
        t.add_row("recommended", f"x >= {rec['x']:.3g}; in practice {v['ratio'][0]} server process(es) "
                                 f"per {v['ratio'][1]} client process(es)")
    pm = res.pairs.get(r.metric) if res else None
    if pm and len(pm.nodes) >= 3:
        t.add_row("outlier nodes", "; ".join(pm.outlier_lines()))
    for sc in (res.scores if res else {}).get(r.metric, []):
        if sc.flagged:
            t.add_row(f"[red]outlier node n{sc.node}[/]",
                      f"{sc.flagged}, score {sc.z:+.1f}: its pairs' median {f(sc.median)}; "
                      + ", ".join(f"n{a}-n{b} {f(v)}" for (a, b), v in sc.pairs[:3]))
    if res:
        from rooftop.interference import report as interference_report

        for name, text in interference_report.model_rows(res, r.metric, f):
            t.add_row(name, text)
    w = res.without_flagged.get(r.metric) if res else None
    if w:
        t.add_row("without flagged nodes", f"client {f(w.client.lo)} .. {f(w.client.hi)}, "
                                           f"ridge {w.ridge.lo:.3g} .. {w.ridge.hi:.3g}")
    ui.print_table(out, t)


def _print_validation(out, e, run: str | None) -> None:
    """One metric's validation samples against its model."""
    from rich.table import Table

    from rooftop import ui

    r = e.roofline
    f = lambda v: ui.fmt_rate(v, r.unit)
    if not e.checks:
        out.print(f"no validation samples for {r.metric}"
                  + (f" (rooftop validate --run {run})" if run else ""))
        return
    v = Table(title=f"{r.metric} validation ({len(e.checks)} samples)", title_justify="left")
    for c in ("x", "nodes s/c", "measured", "predicted", "error", "binds", "efficiency"):
        v.add_column(c, justify="right", no_wrap=True)
    for c in e.checks:
        v.add_row(f"{c.x:.3g}", f"{c.server_nodes}/{c.client_nodes}", f(c.measured), f(c.predicted),
                  f"{c.error_pct:+.0f}%", c.binding,
                  f"{c.efficiency:.2f}" + (" [red]above roofline[/]" if c.above_roofline else ""))
    ui.print_table(out, v)
    for b in ("server", "client"):
        m = e.median_abs_error(b)
        if m is not None:
            out.print(f"median |error| where {b}s bind: {m:.0f}%")
    if e.without_node:
        a, b = e.median_abs_error(), e.without_node.median_abs_error()
        out.print(f"median |error| over all samples: {a:.0f}% with the client-node ceiling, "
                  f"{b:.0f}% without it")


def _ceiling_text(c, f) -> str:
    """'a .. b  (median m; 95 % interval of the mean c-d, n samples)'."""
    text = f"{f(c.lo)} .. {f(c.hi)}  (median {f(c.centre)}"
    if c.n == 0:
        return text + ")"
    if c.interval is None:
        return text + f"; {c.n} sample, no interval)"
    return text + f"; 95 % interval {f(c.interval[0])} .. {f(c.interval[1])}, {c.n} samples)"


def _verdict_headline(v: dict) -> str:
    """The one line `model` leads with: a ratio only when the model can tell."""
    if v["kind"] == "ratio":
        return f"{v['ratio'][0]} server process(es) per {v['ratio'][1]} client process(es)"
    return v["text"]


def _verdict_short(v: dict) -> str:
    """'1:3'; '12:1 (11:1-12:1)'; 'not distinguishable (1:2-2:1)'; 'cannot tell'."""
    span = "-".join(model_ratio(e) for e in v["range"]) if v["range"] else ""
    if v["kind"] == "ratio":
        return model_ratio(v["ratio"])
    if v["kind"] == "range":
        return f"{model_ratio(v['ratio'])} ({span})"
    if v["kind"] == "indistinguishable":
        return f"not distinguishable ({span})" if span else "not distinguishable"
    return "cannot tell"


def model_ratio(r) -> str:
    return "?" if r is None else f"{r[0]}:{r[1]}"


def _seconds(text: str) -> float:
    import math

    try:
        v = float(text)
    except ValueError:
        v = -1.0
    if not math.isfinite(v) or v < 0 or v > 30 * 86400:
        raise argparse.ArgumentTypeError(f"seconds from 0 to 30 days, not {text!r}")
    return v


def _formats(text: str) -> tuple[str, ...]:
    fmts = tuple(f.strip().lower() for f in text.split(",") if f.strip())
    bad = [f for f in fmts if f not in ("png", "svg", "pdf")]
    if bad or not fmts:
        raise argparse.ArgumentTypeError(f"formats are png, svg, pdf (comma-separated), not {text!r}")
    return fmts


def _print_files(files: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps({k: [str(p) for p in v] for k, v in files.items()}, indent=1))
    else:
        for paths in files.values():
            for p in paths:
                print(p)


def _figures_dir(store, run_id: str, sub: str = "") -> Path:
    """RESULTS/RUN/figures[/sub], refused when a symlink leads it out of the run's folder."""
    from rooftop.plots.save import inside
    from rooftop.store import StoreError

    out = store.run_dir(run_id) / "figures" / sub if sub else store.run_dir(run_id) / "figures"
    try:
        return inside(out, store.run_dir(run_id))
    except ValueError as e:
        raise StoreError(str(e)) from None


def _cmd_plot(args) -> int:
    from rooftop import kinds, model, results
    from rooftop.plots.run import plot_params, plot_run
    from rooftop.store import Store

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
        files = plot_params(rooflines, Path(args.output or out), args.format, samples, run_id,
                            args.yscale, nodes)
    else:
        store = Store(args.results, create=False)
        run = store.get_run(args.run)
        kind = kinds.of(store, run)
        if kind is not None:  # audit, tune, bursts...: their own figures
            out = Path(args.output) if args.output else _figures_dir(store, run.id)
            files = kind.plot(store, run, out, args.format)
            if not files:
                raise model.ModelError(f"{kind.no_roofline(run.id)}; it has no figure of its own")
            _print_files(files, args.json)
            return 0
        res = results.load(store, args.run)
        if not res.rooflines:
            raise model.ModelError(f"run {args.run} has no ceiling samples (rooftop collect)")
        out = Path(args.output) if args.output else _figures_dir(store, res.run.id)
        files = plot_run(res, out, args.format, args.yscale)
    _print_files(files, args.json)
    return 0


def _cmd_audit(args) -> int:
    from rooftop import audit
    from rooftop.audit import run as audit_run, show
    from rooftop.locks import CampaignLocks
    from rooftop.store import Store

    try:
        pitfalls = audit.select(args.only)
    except ValueError as e:
        print(f"rooftop audit: {e}", file=sys.stderr)
        return 2
    if args.repeats < 1 or args.duration <= 0 or args.warmup < 0 or args.lease <= 0:
        print("rooftop audit: --repeats must be >= 1, --duration and --lease > 0, --warmup >= 0", file=sys.stderr)
        return 2
    if args.storage_dir and not Path(args.storage_dir).is_dir():
        print(f"rooftop audit: --storage-dir {args.storage_dir}: not a directory", file=sys.stderr)
        return 2
    store = Store(args.results)
    opts = {"repeats": args.repeats, "duration": args.duration, "warmup": args.warmup, "fabric": args.fabric,
            "storage_dir": str(Path(args.storage_dir).resolve()) if args.storage_dir else "",
            "results": str(store.dir), "lease": args.lease}
    say = (lambda m: None) if args.json else (lambda m: print(m, file=sys.stderr, flush=True))
    with CampaignLocks(store.dir, "local", args.wait_lock, False,
                       lambda m: print(f"rooftop: {m}", file=sys.stderr, flush=True)) as locks:
        run_id, rows = audit_run.run(store, pitfalls, opts, say)
        locks.name_run(run_id)
    page, _ = show.write(store.get_run(run_id), rows, store.run_dir(run_id) / "report")
    if args.json:
        print(json.dumps({"run": run_id, "report": str(page), "rows": rows}, indent=1))
        return 0
    print(show.table_text(rows))
    print(f"run {run_id}; report: {page}")
    return 0


def _nic_comparison(store, res, nic_runs: str):
    """The NIC policy comparison of this run and the --nic-runs runs, on
    the first metric they all measured."""
    from rooftop.config import ConfigError
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


def _cmd_report(args) -> int:
    from rooftop import kinds, model, report, results
    from rooftop.store import Store

    store = Store(args.results, create=False)
    run = store.get_run(args.run)
    kind = kinds.of(store, run)
    if kind is not None:  # audit, tune, bursts...: their own report
        page, md = kind.report(store, run, Path(args.output) if args.output else store.run_dir(run.id) / "report")
        print(f"markdown summary: {md}", file=sys.stderr)
        print(page)
        return 0
    res = results.load(store, args.run)
    if not res.rooflines and not args.nic_runs:    # a NIC comparison needs server peaks only
        raise model.ModelError(f"run {args.run} has no ceiling samples to report (rooftop collect)")
    out = Path(args.output) if args.output else store.run_dir(res.run.id) / "report"
    nic = _nic_comparison(store, res, args.nic_runs) if args.nic_runs else None
    page, md = report.write(res, out, _mixes(args.mix, res.rooflines), nic)
    if nic is not None:
        for line in nic.verdict:
            print(f"NIC policies: {line}", file=sys.stderr)
    for w in res.warnings:
        print(f"warning: {w}", file=sys.stderr)
    print(f"markdown summary: {md}", file=sys.stderr)
    print(page)
    return 0





def _compare_source(text: str, results_dir: str):
    """A run id in results_dir, or a parameters file."""
    from rooftop import model, results
    from rooftop.store import Store, StoreError

    if text.endswith((".json", ".JSON")) or Path(text).is_file():
        rooflines = model.load_params(text)
        label = next(iter(rooflines.values())).source
        return label, rooflines
    try:
        res = results.load(Store(results_dir, create=False), text)
    except StoreError as e:
        raise StoreError(f"{text}: neither a parameters file nor a run ({e})") from None
    if not res.rooflines:
        raise model.ModelError(f"run {text} has no ceiling samples")
    return f"{res.host}, {res.provider} ({text})", res.rooflines


def _cmd_compare(args) -> int:
    from rich.table import Table

    from rooftop import ui
    from rooftop.plots.run import plot_compare

    sources = [_compare_source(s, args.results) for s in args.sources]
    if args.label:
        if len(args.label) != len(sources):
            print(f"rooftop compare: {len(args.label)} --label for {len(sources)} sources", file=sys.stderr)
            return 2
        sources = [(label, rs) for label, (_, rs) in zip(args.label, sources)]
    files = plot_compare(sources, Path(args.output), args.format, args.yscale, args.normalise)
    if not args.json:
        out = ui.Console(highlight=False, stderr=True)
        if not out.is_terminal:
            out.width = 110
        t = Table(title="rooflines compared", title_justify="left")
        for c in ("source", "metric", "client ceiling", "server ceiling", "ridge x*", "servers:clients"):
            t.add_column(c, no_wrap=c not in ("source", "servers:clients"),
                         min_width=16 if c == "source" else None)
        for label, rs in sources:
            for m, r in sorted(rs.items()):
                t.add_row(label, m, ui.fmt_range(r.client_bound.lo, r.client_bound.hi, r.unit),
                          ui.fmt_range(r.server.lo, r.server.hi, r.unit),
                          f"{r.ridge.lo:.3g}-{r.ridge.hi:.3g}", _verdict_short(r.verdict()))
        ui.print_table(out, t)
    _print_files(files, args.json)
    return 0


def _cmd_learn(args) -> int:
    from rooftop.learn.run import learn, metrics_to_learn
    from rooftop.learn.show import print_learned
    from rooftop.store import Store

    store = Store(args.results, create=False)
    runs = [store.get_run(r).id for r in args.runs]
    metrics = metrics_to_learn(store, runs, args.target)
    outcomes = [learn(store, runs, m, args.folds, args.seed) for m in metrics]
    if args.json:
        print(json.dumps([o.to_dict() for o in outcomes], indent=1))
    for o in [] if args.json else outcomes:
        print_learned(o, args.folds)
    return 0


def _cmd_predict(args) -> int:
    from rooftop import config
    from rooftop.learn.predict import predict
    from rooftop.learn.show import print_prediction
    from rooftop.store import Store

    sets = dict(config.parse_override(t) for t in args.set or [])
    p = predict(Store(args.results, create=False), args.run, args.servers, args.clients, sets,
                args.metric, args.model, args.server_nodes, args.client_nodes)
    if args.json:
        print(json.dumps(p, indent=1))
    else:
        print_prediction(p)
    return 0


def _cmd_tune(args) -> int:
    from rooftop import config, metrics
    from rooftop.learn import space as spaces
    from rooftop.learn.predict import load_model
    from rooftop.learn.tune import Settings
    from rooftop.learn.tune_run import prepare, tune
    from rooftop.nics import check as nic_check
    from rooftop.store import Store

    settings = Settings(args.budget, args.init, args.repeat, args.duration, args.warmup, args.seed)
    settings.check()  # before anything is created
    overrides = _overrides(args)
    space = spaces.load(args.space, args.metric, config.build(args.config, overrides))
    if args.metric and space.metric != args.metric:
        print(f"rooftop tune: {args.space} tunes {space.metric}, not --metric {args.metric}", file=sys.stderr)
        return 2
    overrides["metrics"] = [space.metric]
    build = lambda knobs: config.build(args.config, {**overrides, **knobs})  # noqa: E731
    base = dict(build({}), stages=["tune"])
    nic_check.preflight(base)
    store = Store(base["results"])
    doc = load_model(Path(args.model)) if args.model else None
    proposer = prepare(store, base, build, space, settings, args.run, doc)
    with _campaign_locks(args, store, base) as locks:  # a refused tune creates no run
        run_id = store.new_run(base, dict(_environment(base), tune={
            "space": space.to_dict(), "settings": vars(settings), "roofline_run": args.run,
            "model": args.model}))
        locks.name_run(run_id)
        return _tune_run(args, store, run_id, proposer, build, settings, metrics.get(space.metric).unit)


def _tune_run(args, store, run_id: str, proposer, build, settings, unit: str) -> int:
    import time

    from rooftop.learn.tune_report import outcome_lines, step_line
    from rooftop.learn.tune_run import tune

    say = (lambda m: None) if args.json else (lambda m: print(m, file=sys.stderr, flush=True))
    log = say if args.verbose else (lambda m: None)
    say(f"rooftop tune: run {run_id}, {proposer.space.metric} over {proposer.space.size()} configurations "
        f"({', '.join(proposer.space.knobs)}), budget {settings.budget}")
    t0 = time.monotonic()
    _claim(store, run_id, "tune")
    try:
        out = tune(store, run_id, proposer, build, settings, args.run, log, lambda s: say(step_line(s, unit)))
    except KeyboardInterrupt:
        store.set_status(run_id, "interrupted", "tune interrupted: its steps so far are stored")
        raise
    except Exception as e:
        store.set_status(run_id, "failed", f"tune: {e}")
        raise
    finally:
        store.add_time(run_id, time.monotonic() - t0)
    best = out["best"]
    store.set_status(run_id, "complete" if best else "failed",
                     f"tune {out['metric']}: {len(out['steps'])} steps; " + (
                         f"best at step {best['step']}" if best else "nothing measured"))
    if args.json:
        print(json.dumps(dict(out, run=run_id), indent=1, default=str))
    else:
        for line in outcome_lines(out, unit):
            say(line)
        print(run_id)
    return 0 if best else 1


def _cmd_config(args) -> int:
    from rooftop import config

    if args.action == "keys":
        print(config.describe_keys())
        return 0
    cfg = config.build(args.config, _overrides(args))
    print(json.dumps(cfg, indent=2))
    return 0


def _cmd_engine(args) -> int:
    from rooftop.engine import EngineError, engine_path

    try:
        path = engine_path()
    except EngineError as e:
        print(f"rooftop engine: {e}", file=sys.stderr)
        return 2
    os.execv(path, [path, *args.engine_args])
    return 0  # not reached


# Command-line flags that set config keys --------------------------------------
@dataclass(frozen=True)
class KeyFlag:
    """A flag that sets one config key. Its type, choices, help and default
    come from the key's entry in config.KEYS, as fio's option table and
    ReFrame's declared variables carry their own type, default and doc: the
    command line cannot drift from the config."""

    flag: str
    #: The config key; "{stage}" is the command's stage (collect or validate).
    key: str
    metavar: str | None = None

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")


#: Every command that builds a config (collect, config show).
CONFIG_FLAGS = (KeyFlag("--launcher", "launcher.type"), KeyFlag("--nodes", "launcher.nodes", "N"),
                KeyFlag("--metrics", "metrics", "LIST"), KeyFlag("--fabric", "fabric.provider"),
                KeyFlag("--binding", "binding"), KeyFlag("--nic-policy", "nic.policy", "POLICY"))
#: Both campaign stages (collect, validate).
STAGE_FLAGS = (KeyFlag("--duration", "{stage}.duration", "S"), KeyFlag("--warmup", "{stage}.warmup", "S"),
               KeyFlag("--samples", "{stage}.samples", "K"), KeyFlag("--fail-fast", "fail_fast"),
               KeyFlag("--sample", "sample", "LIST"))
COLLECT_FLAGS = (KeyFlag("--pairs", "collect.pairs"), KeyFlag("--sweep-servers", "collect.sweep_servers"))
VALIDATE_FLAGS = (KeyFlag("--server-nodes", "validate.server_nodes", "N,..."),
                  KeyFlag("--client-nodes", "validate.client_nodes", "N,..."),
                  KeyFlag("--servers-per-node", "validate.servers_per_node", "N"),
                  KeyFlag("--clients-per-node", "validate.clients_per_node", "N"))
RESULTS_FLAG = KeyFlag("--results", "results", "DIR")


def _int_list(text: str) -> list[int] | None:
    """'1,2' -> [1, 2]; blank: not given."""
    if not text.strip():
        return None
    try:
        return [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"comma-separated integers, not {text!r}") from None


def _str_list(text: str) -> list[str]:
    """'rpc, bw' -> ['rpc', 'bw']; blank or ',' -> [] (the config then refuses an empty
    metrics list, naming the key, rather than running the defaults)."""
    return [v.strip() for v in text.split(",") if v.strip()]


def _key_help(key) -> str:
    """The key's own help, its path and its default (a computed default,
    None here, is stated by the help itself: see test_config_contract)."""
    if key.kind == "bool":
        note = f"sets {key.path} to true"
    elif key.default is None:
        note = key.path
    else:
        shown = ",".join(map(str, key.default)) if isinstance(key.default, list) else key.default
        note = f"{key.path}; default {json.dumps(shown) if shown == '' else shown}"
    if key.kind.startswith("list["):
        note = note.replace(key.path, f"{key.path}; comma-separated", 1)
    return f"{key.help} ({note})".replace("%", "%%")


def _argparse_kind(key) -> dict:
    """add_argument keywords for a key's kind."""
    if key.kind == "bool":
        return {"action": "store_true", "default": None}
    if key.kind == "choice":
        return {"choices": list(key.choices)}
    return {"type": {"int": int, "float": float, "list[int]": _int_list}.get(
        key.kind, _str_list if key.kind.startswith("list[") else str)}


def add_key_flags(p: argparse.ArgumentParser, flags, stage: str = "collect") -> None:
    """Adds flags to p, each from its config key; the parsed values become
    config overrides through key_values()."""
    from rooftop import config

    mapping = dict(p.get_default("key_flags") or {})
    for f in flags:
        key = config.KEY_BY_PATH[f.key.format(stage=stage)]
        kw = _argparse_kind(key)
        if f.metavar and "choices" not in kw and kw.get("action") != "store_true":
            kw["metavar"] = f.metavar
        p.add_argument(f.flag, dest=f.dest, help=_key_help(key), **kw)
        mapping[f.dest] = key.path
    p.set_defaults(key_flags=mapping)


def key_values(args) -> dict:
    """{config key: value} of the key flags given on the command line."""
    out = {}
    for dest, path in (getattr(args, "key_flags", None) or {}).items():
        value = getattr(args, dest, None)
        if value is not None and value != "":
            out[path] = value
    return out


# The parser: one function per command ---------------------------------------
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rooftop", description=DESCRIPTION, epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"rooftop {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for add in (_add_collect, _add_validate, _add_runs, _add_doctor, _add_export, _add_model, _add_plot,
                _add_report, _add_compare, _add_learn, _add_predict, _add_config, _add_probe, _add_tune, _add_audit):
        add(sub)
    from rooftop.cluster.cli import add_parser as add_cluster_parser
    from rooftop.interference.command import add_parser as add_interfere_parser
    from rooftop.nics.policy import add_parser as add_nics_parser

    from rooftop.bursts.run import add_parser as add_bursts_parser

    add_bursts_parser(sub)
    add_interfere_parser(sub)
    add_cluster_parser(sub)
    add_nics_parser(sub)
    _add_engine(sub)
    return p


def _config_args(p) -> None:
    """A config file, the config key flags, and --set."""
    p.add_argument("--config", help="campaign file (JSON, or TOML by extension); see 'rooftop config keys'")
    add_key_flags(p, CONFIG_FLAGS)
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="any config key, e.g. --set bw.size=1MiB (repeatable)")


def _campaign_args(p, stage: str) -> None:
    """What collect and validate share: the stage's key flags, and how the campaign runs."""
    add_key_flags(p, STAGE_FLAGS[:3], stage)
    p.add_argument("--dry-run", action="store_true", help="print the exact commands of every stage, then the expected run time; run nothing")
    add_key_flags(p, STAGE_FLAGS[3:], stage)
    p.add_argument("--json", action="store_true", help="print a JSON summary on stdout (no progress bar)")
    p.add_argument("-v", "--verbose", action="store_true", help="log every command started")
    from rooftop.locks import ON_THIS_MACHINE

    p.add_argument("--wait-lock", type=_seconds, default=0.0, metavar="SECONDS",
                   help=f"another campaign holds the results folder (or, {' and '.join(ON_THIS_MACHINE)} "
                        "launchers, this machine's cores): wait up to SECONDS for it (default 0: refuse "
                        "at once, naming its run id, pid and host)")
    p.add_argument("--allow-concurrent", action="store_true",
                   help="run even if another campaign holds the locks; every sample is then "
                        "marked concurrent and the report warns")


def _add_collect(sub) -> None:
    co = sub.add_parser("collect", help="measure server and client ceilings; prints the run id",
                        formatter_class=argparse.RawDescriptionHelpFormatter,
                        description="The roofline parameter suite, per metric (rpc: sequential noop "
                        "RPCs; bw: sequential bulk reads):\n"
                        "  server peak: one node runs S servers, every other node C clients\n"
                        "               (per-server-process rate = aggregate / S)\n"
                        "  client peak: one client vs one idle server, every node pair\n"
                        "               (--pairs rounds: disjoint pairs at once)\n"
                        "  client node: the last node full of clients vs every other node's servers\n"
                        "  sweep:       one server node's aggregate as S grows (--sweep-servers)\n"
                        "Each sample is saved as soon as it is measured; Ctrl-C stops every process "
                        "and 'rooftop collect --resume RUN' continues.")
    _config_args(co)
    add_key_flags(co, [RESULTS_FLAG])
    _campaign_args(co, "collect")
    add_key_flags(co, COLLECT_FLAGS)
    co.add_argument("--resume", metavar="RUN", help="continue an interrupted run, under its own config "
                    "(config options given with it are refused, not ignored; --results names its folder)")
    co.set_defaults(func=_cmd_collect)


def _add_validate(sub) -> None:
    va = sub.add_parser("validate", help="add validation samples to a run",
                        description="Runs the validation grid: server nodes x client nodes "
                        f"(default 1..min({_validate_server_nodes()}, N-1) x 1..N-servers). Each "
                        "sample stores the aggregate rate, the per-client-process rate and x = server "
                        "processes / client processes. Re-running continues where it stopped.")
    va.add_argument("--run", required=True, help="the run (from 'rooftop collect' or 'rooftop runs')")
    add_key_flags(va, VALIDATE_FLAGS, "validate")
    va.add_argument("--nic-policy", help="must be the run's nic.policy (a run measures under one; "
                    "'rooftop collect --nic-policy A,B' measures one run per policy)")
    va.add_argument("--results", default=None,
                    help="results folder holding the run's rooftop.db (default: ./rooftop-results)")
    _campaign_args(va, "validate")
    va.set_defaults(func=_cmd_validate)


def _validate_server_nodes() -> int:
    from rooftop.config import VALIDATE_SERVER_NODES

    return VALIDATE_SERVER_NODES


def _results_arg(p, what: str = "results folder") -> None:
    p.add_argument("--results", default="./rooftop-results", help=f"{what} (default: %(default)s)")


def _add_runs(sub) -> None:
    ru = sub.add_parser("runs", help="list runs")
    _results_arg(ru)
    ru.add_argument("--json", action="store_true", help="JSON on stdout")
    ru.set_defaults(func=_cmd_runs)


def _add_doctor(sub) -> None:
    dr = sub.add_parser("doctor", help="check a results folder; --rebuild its database from the engine documents",
                        description="Checks the results database (integrity, runs without folders, "
                        "run folders without rows, measured windows in engine documents but not in the "
                        "database). --recover stores those windows; --rebuild moves the database aside and rebuilds it "
                        "from the engine documents under RESULTS/<run>/ (each run's config.json and "
                        "its client documents), keeping the rows the old database still holds.")
    _results_arg(dr)
    dr.add_argument("--rebuild", action="store_true", help="rebuild the database from the engine documents")
    dr.add_argument("--recover", action="store_true",
                    help="store the measured windows the engine documents hold and the database lacks "
                         "(a campaign killed, or stopped by a locked or full database), each once")
    dr.set_defaults(func=_cmd_doctor)


def _add_export(sub) -> None:
    from rooftop.export import FORMATS, SCHEMA_VERSION

    ex = sub.add_parser(
        "export", help="export a run's samples", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="A run's samples for other tools. Formats:\n"
        + "".join(f"  {k:5} {v}\n" for k, v in FORMATS.items())
        + f"\nJSON carries schema_version {SCHEMA_VERSION} (a MINOR release only adds fields). CSV columns "
        "are typed:\nserver_nodes/client_nodes hold JSON lists of node indices (\"[0, 1]\"), their "
        "counts are\nserver_node_count/client_node_count, ceilings is a JSON list, raw_dir is relative "
        "to\nthe results folder. With pandas: pd.read_csv(path, converters={'server_nodes': json.loads,\n"
        "'client_nodes': json.loads, 'ceilings': json.loads}).")
    ex.add_argument("run", help="a run id (see 'rooftop runs')")
    ex.add_argument("--format", choices=list(FORMATS), default="csv", help="csv (default), json or fom")
    ex.add_argument("--series", action="store_true",
                    help="the run's time series instead (collect/validate --sample cpu,power): one point "
                         "per row: round, sampler, t, quantity, value, unit")
    _results_arg(ex)
    ex.add_argument("--output", help="write to this file instead of stdout")
    ex.set_defaults(func=_cmd_export)


def _add_model(sub) -> None:
    mo = sub.add_parser("model", help="the roofline of a run (or of a parameters file)",
                        description="Per metric: client and server ceilings (per process) as "
                        "[min, max], the roofline r(x) = min(client, x * server) with x = server "
                        "processes / client processes, the ridge x* = client / server, each "
                        "ceiling's and the ridge's 95 % interval, the verdict (one practical "
                        "ratio; a range of them; or the ceilings are not distinguishable, or the "
                        "model cannot tell, and why), and every validation sample against the model "
                        "(predicted, error, which ceiling binds, efficiency). --params FILE takes "
                        "published or hand-written ceilings instead (JSON: {\"name\": ..., "
                        "\"metrics\": {\"rpc\": {\"unit\": \"K ops/s\", \"client\": [148, 173], "
                        "\"server\": [524, 530]}}}); with a RUN too, the run's validation samples "
                        "are set against those ceilings.")
    mo.add_argument("run", nargs="?", help="a run id (see 'rooftop runs')")
    mo.add_argument("--params", help="roofline parameters file (JSON)")
    mo.add_argument("--mix", action="append", metavar="FILE", help="a workload mix (TOML or JSON: what one operation of your service costs in each metric, e.g. a key-value put = 1 rpc + 1 iops); adds the combined roofline: the lowest of the mix's metric rooflines, in mix operations per second, and which resource binds where (docs/storage.md). Repeatable")
    _results_arg(mo)
    mo.add_argument("--json", action="store_true", help="JSON on stdout")
    mo.set_defaults(func=_cmd_model)


def _add_plot(sub) -> None:
    pl = sub.add_parser("plot", help="figures of a run (or of a parameters file): PNG and SVG",
                        description="Per metric: the roofline (rate per client process against x = "
                        "server/client processes, log scale, ceilings as bands, validation points "
                        "coloured by server-node count, ridge marked), the server-process sweep, the "
                        "client pair matrix (outlier pairs boxed) and latency distributions. Files go "
                        "to RESULTS/RUN/figures (--output to change); their paths are printed. "
                        "--params FILE draws published or hand-written ceilings (see 'rooftop model "
                        "--help') into rooftop-plots/FILE-STEM, or, with a RUN's validation samples "
                        "on them when a RUN is given too, into RESULTS/RUN/figures/params-FILE-STEM.")
    pl.add_argument("run", nargs="?", help="a run id (see 'rooftop runs')")
    pl.add_argument("--params", help="roofline parameters file (JSON)")
    _results_arg(pl)
    pl.add_argument("--output", help="folder for the figures")
    pl.add_argument("--format", type=_formats, default=("png", "svg"), help="png,svg (default), pdf")
    pl.add_argument("--yscale", choices=["auto", "log", "linear"], default="auto",
                    help="the roofline's y axis: log (every ceiling and point inside the frame), "
                         "linear (seed 000's style: the server ceiling leaves the frame past the "
                         "ridge), or auto (default: linear only when it keeps everything inside)")
    pl.add_argument("--json", action="store_true", help="print the files as JSON")
    pl.set_defaults(func=_cmd_plot)


def _add_report(sub) -> None:
    rp = sub.add_parser("report", help="one self-contained HTML report (+ Markdown) of a run",
                        description="Writes RESULTS/RUN/report/report.html (every figure inline: "
                        "open it anywhere, no network needed) and report.md beside it: the verdict "
                        "(ratio, ceilings, ridge), what to do (the ratio to deploy, where the pair "
                        "matrix points, what to measure again), figures, warnings (wide client "
                        "ceiling, samples above the roofline, overhead, failures), the validation "
                        "table, the learned models (after 'rooftop learn'), the environment and the resolved config. Prints the HTML file's path.")
    rp.add_argument("run", help="a run id (see 'rooftop runs')")
    rp.add_argument("--mix", action="append", metavar="FILE", help="a workload mix (TOML or JSON: what one operation of your service costs in each metric, e.g. a key-value put = 1 rpc + 1 iops); the report adds a section and a figure with the combined roofline: the lowest of the mix's metric rooflines, in mix operations per second, and which resource binds where (docs/storage.md). Repeatable")
    _results_arg(rp)
    rp.add_argument("--output", help="folder for the report (default: RESULTS/RUN/report)")
    rp.add_argument("--nic-runs", metavar="RUN,...",
                    help="add a NIC policy comparison (seed 000, Figure 2) of RUN and these runs: their "
                         "server-peak aggregates by binding and nic.policy, a bar chart (mean, one "
                         "standard deviation) and the best policy, or that they are indistinguishable")
    rp.set_defaults(func=_cmd_report)


def _add_compare(sub) -> None:
    cp = sub.add_parser("compare", help="several rooflines on one figure (runs and parameters files)",
                        description="Each SOURCE is a run id (in --results) or a parameters file "
                        "(JSON, see 'rooftop model --help'). One figure per metric with every "
                        "roofline in its own colour, and a table of ceilings and ridges. Example: "
                        "rooftop compare RUN examples/aurora-table2.json")
    cp.add_argument("sources", nargs="+", metavar="SOURCE", help="run id or parameters file")
    cp.add_argument("--label", action="append", help="a label per source, in order (repeat)")
    _results_arg(cp)
    cp.add_argument("--output", default="./rooftop-compare", help="folder for the figures (default: %(default)s)")
    cp.add_argument("--format", type=_formats, default=("png", "svg"), help="png,svg (default), pdf")
    cp.add_argument("--yscale", choices=["auto", "log", "linear"], default="auto",
                    help="y axis: auto (default: log unless linear keeps every ceiling inside the "
                         "frame; tcp next to shm is log), log or linear; the figure says which")
    cp.add_argument("--normalise", action="store_true",
                    help="y = each source's rate / its own client ceiling: every roofline flat at 1, "
                         "the ridges side by side (linear unless --yscale log)")
    cp.add_argument("--json", action="store_true", help="print the files as JSON")
    cp.set_defaults(func=_cmd_compare)


def _add_learn(sub) -> None:
    le = sub.add_parser("learn", help="learned models of the rate, compared; the best saved with the run",
                        description="Builds a dataset from the runs' validation samples (features: every "
                        "resolved parameter that varies, and the placement; target: the per-client rate) "
                        "and compares, by cross-validation grouped by configuration and by extrapolation "
                        "(trained on small footprints, tested on the largest), scikit-learn's linear, "
                        "ridge, lasso, elastic net, SVR, k-nearest neighbours, Gaussian process, tree, "
                        "forest and boosting models with the run's roofline alone and roofline x a learned "
                        "efficiency. Prints the tables and feature importances; saves the best model to "
                        "RESULTS/RUN/learned/METRIC.model.json (RUN: the first run named; JSON: "
                        "the model's name, seed and training data, refitted and checked when loaded; "
                        "an older rooftop's METRIC.joblib pickle is never loaded: learn again).")
    le.add_argument("runs", nargs="+", metavar="RUN", help="run ids (see 'rooftop runs')")
    le.add_argument("--target", metavar="METRIC", help="the metric to learn (default: every metric the runs validated)")
    le.add_argument("--folds", type=int, default=5, metavar="K", help="cross-validation folds (default: %(default)s)")
    le.add_argument("--seed", type=int, default=0, metavar="N", help="random seed of the models (default: %(default)s)")
    _results_arg(le)
    le.add_argument("--json", action="store_true", help="JSON on stdout")
    le.set_defaults(func=_cmd_learn)


def _add_predict(sub) -> None:
    pr = sub.add_parser("predict", help="a learned model's rate for a footprint, capped by the roofline",
                        description="The per-client and aggregate rate the run's learned model (rooftop "
                        "learn) predicts for S server processes and C client processes, with a "
                        "90 % interval (from its cross-validated errors), capped by the roofline measured "
                        "with those knobs, and which ceiling binds. --set KEY=VALUE changes a knob the "
                        "model learned; a model trained on other parameters than the run's is refused.")
    pr.add_argument("run", help="a run id (see 'rooftop runs')")
    pr.add_argument("--servers", type=int, required=True, metavar="S", help="server processes")
    pr.add_argument("--clients", type=int, required=True, metavar="C", help="client processes")
    pr.add_argument("--server-nodes", type=int, metavar="N", help="server nodes (default: packed as the training was)")
    pr.add_argument("--client-nodes", type=int, metavar="N", help="client nodes (default: packed as the training was)")
    pr.add_argument("--set", action="append", metavar="KEY=VALUE", help="a knob's value (repeatable)")
    pr.add_argument("--metric", help="which learned model, when the run has several")
    pr.add_argument("--model", metavar="FILE", help="a model file (METRIC.model.json) instead of the run's")
    _results_arg(pr)
    pr.add_argument("--json", action="store_true", help="JSON on stdout")
    pr.set_defaults(func=_cmd_predict)


def _add_tune(sub) -> None:
    tu = sub.add_parser("tune", help="the adaptive loop: propose settings from a learned model, measure, "
                        "retrain; prints the run id",
                        description="Measures configurations of a search space on the engine, each "
                        "proposed by a model of the rates measured so far (seed 003's predict-the-best; "
                        "roofline-informed with --run), until --budget configurations are measured or the "
                        "best predicted rate stops improving. Every step is stored; 'rooftop report RUN' "
                        "shows the trajectory. See docs/learning.md.")
    _tune_config_args(tu)
    from rooftop import metrics

    tu.add_argument("--metric", choices=list(metrics.METRICS), help="what to tune (default: the space file's, else rpc)")
    tu.add_argument("--space", metavar="FILE", help="search space (JSON, or TOML by extension): knob -> "
                    "list of values or {min, max, step|factor}; default: a built-in space per metric")
    tu.add_argument("--budget", type=int, default=12, metavar="N", help="configurations measured at most "
                    "(default: %(default)s)")
    tu.add_argument("--init", type=int, default=3, metavar="N", help="configurations measured before the "
                    "model proposes: the default, then a model file's best or seeded random ones "
                    "(default and minimum: %(default)s)")
    tu.add_argument("--repeat", type=int, default=3, metavar="K", help="windows per configuration; its "
                    "rate is their median (default: %(default)s)")
    tu.add_argument("--duration", type=float, default=1.0, metavar="S", help="seconds per window (default: %(default)s)")
    tu.add_argument("--warmup", type=float, default=0.5, metavar="S", help="warmup seconds per configuration "
                    "(default: %(default)s)")
    tu.add_argument("--seed", type=int, default=0, metavar="N", help="random seed: same seed, same proposals "
                    "for the same measurements (default: %(default)s)")
    tu.add_argument("--run", metavar="RUN", help="a run with ceilings on these nodes: the model learns the "
                    "efficiency against its roofline, and the best is compared with it")
    tu.add_argument("--model", metavar="FILE", help="a model file of 'rooftop learn' "
                    "(RESULTS/RUN/learned/METRIC.model.json) ranking the initial "
                    "configurations (refused when it does not match the tune's parameters)")
    tu.add_argument("--json", action="store_true", help="print the outcome as JSON on stdout")
    tu.add_argument("-v", "--verbose", action="store_true", help="log every command started")
    tu.add_argument("--wait-lock", type=_seconds, default=0.0, metavar="SECONDS",
                    help="wait up to SECONDS for another campaign's locks (default 0: refuse at once)")
    tu.add_argument("--allow-concurrent", action="store_true",
                    help="run even if another campaign holds the locks (samples marked concurrent)")
    tu.set_defaults(func=_cmd_tune)


def _tune_config_args(p) -> None:
    """The base config of a tune: a file, key flags (not --metrics: the
    space's metric is measured), --set."""
    p.add_argument("--config", help="campaign file (JSON, or TOML by extension): the base configuration")
    add_key_flags(p, [f for f in CONFIG_FLAGS if f.flag != "--metrics"] + [RESULTS_FLAG])
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="any config key of the base configuration, e.g. --set bw.stream_size=256MiB")


def _add_config(sub) -> None:
    cf = sub.add_parser("config", help="show the resolved config, or list every key",
                        description="'rooftop config show' prints the fully resolved config "
                        "(every default, the nodes found, the validation grid) for the given file "
                        "and overrides; 'rooftop config keys' documents every key.")
    cf.add_argument("action", choices=["show", "keys"])
    _config_args(cf)
    add_key_flags(cf, [RESULTS_FLAG])
    cf.set_defaults(func=_cmd_config)


def _add_probe(sub) -> None:
    from rooftop.engine import DEFAULT_LEASE

    pr = sub.add_parser("probe", help="quick RPC-rate and bandwidth check on this machine",
                        description="One pinned server and one pinned client per fabric: "
                                    "sequential noop RPC rate and 4 MiB bulk-read bandwidth "
                                    "(streaming buffer), each measured --repeat times (a fresh "
                                    "server each time): the median, the range of the runs and "
                                    "their spread, with a warning when they disagree by more "
                                    "than 20 %. Engine documents are saved under --results.")
    pr.add_argument("--fabric", default="ofi+tcp,ofi+shm",
                    help="comma-separated fabrics (default: %(default)s)")
    pr.add_argument("--duration", type=float, default=3.0,
                    help="measured seconds per test (default: %(default)s)")
    pr.add_argument("--repeat", type=int, default=3,
                    help="runs per test; the median is reported (default: %(default)s)")
    pr.add_argument("--lease", type=_seconds, default=DEFAULT_LEASE, metavar="SECONDS",
                    help="seconds its engines run on once this command is gone (killed): they stop when a lease "
                         "file it renews is no longer renewed (default: %(default)s)")
    _results_arg(pr)
    pr.set_defaults(func=_cmd_probe)


def _add_audit(sub) -> None:
    from rooftop.audit import PITFALLS
    from rooftop.audit.run import DEFAULTS

    au = sub.add_parser("audit", help="seed 002's five benchmark pitfalls and a sixth, measured here as deltas",
                        description="Measures each pitfall's settings side by side on this machine "
                                    "(local launcher, one logical node of its usable cores): "
                                    + "; ".join(f"{p.name}: {p.title}" for p in PITFALLS.values())
                                    + ". Settings alternate over the repeats; two settings whose repeats "
                                    "overlap are 'indistinguishable here'. Stored as a run (rooftop runs, "
                                    "rooftop report RUN); prints the table and the report's path.")
    au.add_argument("--only", metavar="NAMES", help=f"comma-separated pitfalls (default: all: {','.join(PITFALLS)})")
    au.add_argument("--repeats", type=int, default=DEFAULTS["repeats"],
                    help="runs per setting (default: %(default)s)")
    au.add_argument("--duration", type=_seconds, default=DEFAULTS["duration"], metavar="SECONDS",
                    help="measured seconds per run (default: %(default)s)")
    au.add_argument("--warmup", type=_seconds, default=DEFAULTS["warmup"], metavar="SECONDS",
                    help="warm-up seconds per run (default: %(default)s)")
    au.add_argument("--fabric", default=DEFAULTS["fabric"], help="fabric of the network pitfalls (default: %(default)s)")
    au.add_argument("--storage-dir", metavar="DIR",
                    help="directory of the storage pitfalls (default: a temporary directory in the run's "
                         "folder under --results, removed after; on tmpfs the O_DIRECT settings are "
                         "reported not measurable)")
    au.add_argument("--lease", type=_seconds, default=DEFAULTS["lease"], metavar="SECONDS",
                    help="seconds its engines run on once this command is gone (killed): they stop when a lease "
                         "file it renews is no longer renewed (default: %(default)s)")
    _results_arg(au)
    au.add_argument("--json", action="store_true", help="print the run id, the report's path and the rows as JSON")
    au.add_argument("--wait-lock", type=_seconds, default=0.0, metavar="SECONDS",
                    help="another campaign holds the results folder or this machine's cores: wait up to "
                         "SECONDS (default 0: refuse at once)")
    au.set_defaults(func=_cmd_audit)


def _add_engine(sub) -> None:
    en = sub.add_parser("engine", help="run rooftop-engine with the given arguments",
                        add_help=False)
    en.add_argument("engine_args", nargs=argparse.REMAINDER)
    en.set_defaults(func=_cmd_engine)


#: The signal that stopped this command (SIGINT, SIGTERM, SIGHUP), if any.
_STOPPED_BY: list[int] = []


def _sigterm(signum, frame):
    """SIGTERM and SIGHUP (a closed terminal) stop like Ctrl-C: clean up,
    keep every measured window. After SIGHUP nothing may read the terminal
    any more: output goes nowhere rather than failing."""
    _STOPPED_BY.append(signum)
    if signum == signal.SIGHUP:
        import os

        for stream in (sys.stdout, sys.stderr):
            try:
                if stream.isatty():
                    null = os.open(os.devnull, os.O_WRONLY)
                    os.dup2(null, stream.fileno())
                    os.close(null)
            except (OSError, ValueError):
                pass
    raise KeyboardInterrupt


def _interrupted_rc() -> int:
    """128 + the signal for SIGHUP (129); 130 for Ctrl-C and SIGTERM, as before."""
    return 128 + signal.SIGHUP if signal.SIGHUP in _STOPPED_BY else 130


def _write_error(e: OSError) -> str | None:
    """One line for a file the command could not write (a read-only mount,
    a folder the user may not write, a full disk), None for other errors."""
    import errno

    if e.errno not in (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT):
        return None
    what = {errno.EROFS: "the file system is mounted read-only",
            errno.ENOSPC: "the file system is full", errno.EDQUOT: "the disk quota is used up"}.get(
        e.errno, "permission denied for this user")
    where = f" {e.filename}" if e.filename else ""
    return (f"cannot write{where}: {what} ({e.strerror}); make the results folder writable "
            f"or choose another --results")


def main(argv: list[str] | None = None) -> int:
    from rooftop.config import ConfigError
    from rooftop.engine import EngineError
    from rooftop.launchers import LauncherError
    from rooftop.learn import LearnError
    from rooftop.locks import LockBusy
    from rooftop.model import ModelError
    from rooftop.store import StoreError

    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["engine"]:  # everything after it is the engine's, --help included
        return _cmd_engine(argparse.Namespace(engine_args=argv[1:]))
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    signal.signal(signal.SIGTERM, _sigterm)  # stop like Ctrl-C: clean up, keep samples
    signal.signal(signal.SIGHUP, _sigterm)   # a closed terminal, too
    try:
        return args.func(args)
    except ConfigError as e:
        print(f"rooftop {args.command}: config error: {e}", file=sys.stderr)
        return 2
    except (StoreError, LauncherError, EngineError, ModelError, LockBusy, LearnError) as e:
        print(f"rooftop {args.command}: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\nrooftop: interrupted", file=sys.stderr)
        return _interrupted_rc()
    except OSError as e:
        line = _write_error(e)
        if line is None:
            raise
        print(f"rooftop {args.command}: {line}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
