"""`rooftop interfere`: its parser and its driver (rooftop.interference.run does
the work: conditions, load placement, impact factors)."""

from __future__ import annotations

import argparse
import sys
import textwrap

from rooftop import session, stages, ui
from rooftop.cli.common import (
    RESULTS_FLAG,
    KeyFlag,
    add_key_flags,
    campaign_args,
    config_args,
    interrupted_rc,
    resolve_run,
)
from rooftop.interference import run as interfere
from rooftop.interference.loads import LOADS, background
from rooftop.numbers import json_text

DESCRIPTION = (
    """\
Roofline stages alone, then beside background loads (one run each):
  1. the isolated run: the chosen stages, nothing else running;
  2. per load and ensemble size k: k copies of the load on their nodes
     (--load-nodes, or --placement random with a recorded --seed), alone for
     --load-warmup seconds (their own baseline), then the same stages beside
     them; then they are stopped (SIGTERM, SIGKILL after --grace).
Per stage: impact factor = isolated / loaded mean rate, and loaded / isolated
99th-percentile latency; per load copy: its own slowdown (alone / beside the
service) and, for ensembles, the normalized slowdown against one copy alone.
Loads:
"""
    + "\n".join(
        textwrap.fill(f"{l.name}: {l.help}", 79, initial_indent="  ", subsequent_indent="    ") for l in LOADS.values()
    )
    + """
With --bursts-run RUN the service is a bursts run (rooftop bursts) instead
of --stages: its modes measured again alone and beside each load, an impact
per progress mode.
--loads, --stages, --load-nodes, --placement, --seed, --load-node-count,
--ensemble, --load-warmup and --grace set config keys interference.* (e.g.
interference.load_warmup); the loads' knobs are keys loads.KIND.KNOB
(--load-set KIND.KNOB=VALUE). Set any with --set or a config file's
[interference] and [loads.KIND] tables; 'rooftop config keys' and
docs/interference.md list them.
--duration, --warmup and --windows apply to the validate stage too."""
)


#: The command's own flags, each setting a key of rooftop.interference.keys
#: (--bursts-run names a run and --load-set sets loads.KIND.KNOB keys: not here).
INTERFERE_FLAGS = (KeyFlag("--loads", "interference.loads", "LIST"), KeyFlag("--stages", "interference.stages", "LIST"))
PLACEMENT_FLAGS = (
    KeyFlag("--load-nodes", "interference.load_nodes", "N,..."),
    KeyFlag("--placement", "interference.placement"),
    KeyFlag("--seed", "interference.seed", "N"),
    KeyFlag("--load-node-count", "interference.load_node_count", "N"),
    KeyFlag("--ensemble", "interference.ensemble", "K,..."),
    KeyFlag("--load-warmup", "interference.load_warmup", "S"),
    KeyFlag("--grace", "interference.grace", "S"),
)


def add_parser(sub) -> None:
    p = sub.add_parser(
        "interfere",
        help="roofline stages alone and beside background loads (cpu, mem, net, io, ...): impact factors",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=DESCRIPTION,
    )
    config_args(p)
    add_key_flags(p, [RESULTS_FLAG])
    campaign_args(p, "collect")
    add_key_flags(p, INTERFERE_FLAGS)
    p.add_argument(
        "--bursts-run",
        metavar="RUN",
        help="the service is a bursts run instead of --stages: RUN's modes, bursts and clients, "
        "measured again alone and beside each load (impact per progress mode); 'latest': the newest run",
    )
    p.add_argument(
        "--load-set",
        action="append",
        default=[],
        metavar="KIND.KNOB=VALUE",
        help="a load's knob, e.g. cpu.procs=1, the same as --set loads.cpu.procs=1 (repeatable; "
        "'rooftop config keys' lists every loads.* key)",
    )
    add_key_flags(p, PLACEMENT_FLAGS)
    p.set_defaults(func=cmd)


#: The studies whose keys `rooftop interfere` reads (rooftop.config's
#: STUDY_KEYS): its own and the loads' knobs. Not report sections
#: (rooftop.kinds.sections.SECTIONS).
STUDIES = ("loads", "interference")


def _config(args) -> tuple[dict, interfere.Plan]:
    """The isolated run's config and the plan, from a config file, --set,
    the key flags and --load-set; a bad value is a ConfigError naming its key."""
    from rooftop.config.resolve import build
    from rooftop.keys import ConfigError

    o = session.overrides(args)
    for k in ("duration", "warmup", "windows"):  # the flags set both phases' keys here
        if f"collect.{k}" in o:
            o.setdefault(f"validate.{k}", o[f"collect.{k}"])
    cfg = build(args.config, o, STUDIES)
    try:
        if args.load_set:  # --load-set wins over --set; its loads are those of interference.loads
            o.update(interfere.load_set_overrides(args.load_set, cfg["interference"]["loads"] or []))
            cfg = build(args.config, o, STUDIES)
        plan = interfere.plan_of(cfg["interference"], {})  # a drawn seed is recorded in cfg["interference"]
    except ValueError as e:
        raise ConfigError(str(e)) from None
    # The loads' knobs are keys (loads.KIND.KNOB): a file, --set, --load-set; those of the loads run recorded.
    cfg["loads"] = {k: cfg["loads"][k] for k in plan.loads}
    plan.knobs = {k: dict(v) for k, v in cfg["loads"].items()}
    cfg["stages"] = ["collect"] + (["validate"] if "validate" in plan.stages else [])
    for st in stages.STAGES.values():  # the config says which stages ran
        if st.switch:
            section, key = st.switch.split(".")
            cfg[section][key] = st.name in plan.stages
    cfg["interfere"] = {"role": "isolated", **plan.record()}
    return cfg, plan


def cmd(args) -> int:
    from rooftop.keys import ConfigError

    cfg, plan = _config(args)
    if args.bursts_run:
        cfg, plans = _bursts_service(args, plan, cfg)
    else:
        plans = interfere.placements(cfg, plan.stages)
    if not plans:
        raise ConfigError(
            f"interference.stages (--stages) {','.join(plan.stages)}: nothing to measure with this config"
        )
    from rooftop.launchers import make_launcher

    try:  # every load's command lines, before anything runs: a bad knob is named now
        lines = _load_lines(cfg, plan, make_launcher(cfg["launcher"]))
    except ValueError as e:
        raise ConfigError(str(e)) from None
    if args.dry_run:
        return _dry_run(cfg, plan, plans, lines)
    from rooftop.nics import check as nic_check
    from rooftop.store.db import Store

    nic_check.preflight(cfg)
    store = Store(cfg["results"])
    with session.campaign_locks(args, store, cfg) as locks:
        base = store.new_run(cfg, _run_environment(cfg))
        locks.name_run(base)
        return _campaign(args, store, cfg, plan, plans, base)


def _bursts_service(args, plan, cfg: dict) -> tuple[dict, list]:
    """--bursts-run RUN: RUN's config (results and load keys from this command;
    a value of RUN's naming what would run may be given again, config.trust;
    any other key given is refused rather than ignored)."""
    from rooftop.config import trust
    from rooftop.config.catalog import KEY_BY_PATH
    from rooftop.interference import bursts as interfere_bursts
    from rooftop.keys import ConfigError
    from rooftop.store.db import Store
    from rooftop.store.records import StoreError

    given = session.overrides(args)
    if "interference.stages" in given:
        raise ConfigError(
            "--bursts-run and interference.stages (--stages): the service is either a bursts run or roofline stages"
        )
    # The run's values that name what would run, given again (config.trust).
    again = {k: v for k, v in given.items() if k.split(".")[0] not in STUDIES and KEY_BY_PATH[k].executes}
    ignored = sorted(k for k in given if k != "results" and k.split(".")[0] not in STUDIES and k not in again) + (
        ["--config"] if args.config else []
    )
    if ignored:
        raise ConfigError(
            f"--bursts-run {args.bursts_run} measures that run's config again, so these would be ignored: "
            f"{', '.join(ignored)} (give them to 'rooftop bursts' when making the run)"
        )
    plan.stages = ["bursts"]
    try:
        run = resolve_run(cfg["results"], args.bursts_run)  # 'latest': in the results folder of the config
        store = Store(cfg["results"], create=False)
        bcfg = interfere_bursts.config(store, run, plan.record())
    except (ValueError, StoreError) as e:
        raise ConfigError(str(e)) from None
    # The run's config as measured again (its neighbour left out), before this command's own keys join it.
    trust.check_reuse(store, run, bcfg, again, "interfere --bursts-run")
    bcfg["results"] = cfg["results"]
    bcfg["loads"] = cfg["loads"]
    bcfg["interference"] = dict(cfg["interference"], stages=plan.stages)
    return bcfg, interfere_bursts.placements(bcfg)


def _run_environment(cfg: dict) -> dict:
    """A run's environment; a bursts service's also says why power is not
    measured, as 'rooftop bursts' does (its report and table read it)."""
    env = session.environment(cfg)
    if cfg.get("stages") == ["bursts"]:
        from rooftop.bursts import run as bursts

        env["power_note"] = bursts.power_note()
    return env


def _measure_fn(cfg: dict, store, run_id: str, log):
    """How the service is measured: None (the stages' placements) or a
    bursts run's modes."""
    if cfg.get("stages") != ["bursts"]:
        return None
    from rooftop.interference import bursts as interfere_bursts

    say = lambda m: ui.console.print(f"[cyan]bursts[/] {m}")  # stderr: --json keeps stdout
    return lambda: interfere_bursts.measure(cfg, store, run_id, log, say)


def _impacts(store, base: str, current: str, plans: list, cfg: dict, copies: list[dict]) -> list[dict]:
    if cfg.get("stages") == ["bursts"]:
        from rooftop.interference import bursts as interfere_bursts

        rows = interfere_bursts.impacts(store, base, current, cfg)
        interfere_bursts.add_load_slowdowns(rows, copies)
        return rows
    return interfere.impacts(store, base, current, plans, cfg["metrics"])


def _campaign(args, store, cfg, plan, plans, base) -> int:
    from rooftop.launchers import make_launcher

    launcher = make_launcher(cfg["launcher"])
    say = (lambda m: None) if args.json else (lambda m: ui.console.print(m))
    log = (lambda m: ui.console.print(f"[dim]{m}[/]")) if args.verbose else None
    conds = interfere.conditions(plan, launcher.nodes())
    try:
        say(f"isolated: run {base}")
        _measure(store, base, cfg, launcher, plans, None, plan, log)
        for cond in conds:
            ccfg = interfere.loaded_config(cfg, base, cond, plan)
            current = store.new_run(ccfg, _run_environment(ccfg))
            say(f"beside {cond['copies']} x {cond['load']} on nodes {cond['nodes']}: run {current}")
            cond["run"] = current
            cond["result"] = _measure(store, current, ccfg, launcher, plans, cond, plan, log)
            cond["impacts"] = _impacts(store, base, current, plans, cfg, cond["result"]["copies"])
    except KeyboardInterrupt:  # the run being measured reads interrupted (campaign.lifecycle)
        say("[yellow]interrupted[/]: every load and engine was stopped")
        return interrupted_rc()
    except RuntimeError as e:  # a load that died before the stages started
        print(f"rooftop interfere: {e}", file=sys.stderr)
        return 1
    interfere.normalise(conds)
    doc = interfere.summary(base, plan, conds)
    path = interfere.save(store, doc)
    if args.json:
        print(json_text(doc, indent=1))
    else:
        print_summary(doc)
        ui.console.print(f"results: {store.path}, {path}")
        print(base)
    return 0 if all(c["result"]["failed"] == 0 for c in conds) else 1


def _measure(store, run_id, cfg, launcher, plans, cond, plan, log):
    """One run: the stages alone (cond None) or beside cond's loads."""
    from rooftop.campaign import Runner
    from rooftop.campaign.lifecycle import Hold, keys_status

    keys = {k for pl in plans for k in pl.keys()}
    with Hold(store, run_id, "interfere", planned=lambda: keys_status(store, run_id, keys, "interfere")):
        measure = _measure_fn(cfg, store, run_id, log)
        if cond is None:
            ok, failed = measure() if measure else Runner(cfg, store, run_id, launcher, log=log).run_placements(plans)
            return {"ok": ok, "failed": failed}
        groups = None
        if measure is not None:
            from rooftop.interference import bursts as interfere_bursts

            groups = interfere_bursts.mode_intervals(cfg)
        return interfere.run_condition(cfg, store, run_id, launcher, plans, cond, plan, log, measure, groups)


def print_summary(doc: dict) -> None:
    from rooftop.units import fmt_rate

    for c in doc["conditions"]:
        ui.console.print(f"[bold]{c['copies']} x {c['load']}[/] (run {c['run']}): shared {c['shared']}")
        for i in c["impacts"]:
            rate = f"{i['impact_rate']:.2f}" if i["impact_rate"] else "-"
            p99 = f"{i['impact_p99']:.2f}" if i["impact_p99"] else "-"
            iso = fmt_rate(i["rate_isolated"], i["unit"]) if i["rate_isolated"] else "-"
            own = f"; the load's own slowdown {i['load_slowdown']:.2f}" if i.get("load_slowdown") else ""
            ui.console.print(
                f"  {i['stage']} {i['metric']}: rate {iso} alone, impact {rate} (mean), {p99} (p99 latency){own}"
            )
        for x in c["loads"]:
            sd = f"{x['slowdown']:.2f}" if x["slowdown"] else "-"
            ui.console.print(
                f"  load copy {x['copy']} on nodes {x['nodes']}: own slowdown {sd} "
                f"({x['units_alone']} units alone, {x['units_beside']} beside)"
            )


def _load_lines(cfg, plan, launcher) -> list[str]:
    """Each condition's load command lines (as --dry-run prints them)."""
    import shlex
    from pathlib import Path

    lines, nodes = [], launcher.nodes()
    for cond in interfere.conditions(plan, nodes):
        lines.append(
            f"# beside {cond['copies']} x {cond['load']} on nodes {cond['nodes']} "
            f"(started {plan.warmup:g} s before the same stages)"
        )
        for i, idxs in enumerate(cond["nodes"]):
            folder = Path(cfg["results"]) / "<run>" / "loads" / f"{cond['load']}-{i}"
            lines += [
                shlex.join(l.argv)
                for l in background.launches(
                    cond["load"], cond["knobs"], [nodes[j] for j in idxs], launcher, cfg, folder, copy=i
                )
            ]
    return lines


def _dry_run(cfg, plan, plans, lines) -> int:
    from rooftop.campaign import Runner
    from rooftop.launchers import make_launcher

    if cfg.get("stages") == ["bursts"]:
        p = cfg["bursts"]
        print(
            f"# isolated run: the bursts of run {cfg['interfere']['bursts_of']} again: {p['bursts']} x "
            f"{p['on']:g} s of {p['metric']}, {p['off']:g} s gaps, modes {','.join(p['progress'])}; "
            f"then the same beside each load"
        )
    else:
        print("# isolated run")
        print(
            "\n".join(
                Runner(cfg, session.PlannedStore(cfg["results"]), "<run>", make_launcher(cfg["launcher"])).dry_run(
                    plans
                )
            )
        )
    print("\n".join(lines))
    if plan.seed is not None:
        print(f"# placement seed {plan.seed}")
    return 0
