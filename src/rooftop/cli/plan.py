"""`rooftop plan`: how long the suite takes on N nodes, before any
allocation (rooftop.campaign.forecast): per stage and in total, the
launches, and the client ceiling's pairs; --pairs sample: the power of its
search (rooftop.campaign.simulate)."""

from __future__ import annotations

import argparse
import sys

from rooftop import session
from rooftop.cli.common import (
    COLLECT_FLAGS,
    CONFIG_FLAGS,
    STAGE_FLAGS,
    VALIDATE_FLAGS,
    add_key_flags,
    results_arg,
    takes_runs,
)
from rooftop.numbers import json_text


def _cmd_plan(args) -> int:
    from rooftop.campaign.forecast import PlanError, calibration, forecast, resolve_planned

    overrides = session.overrides(args)
    for key, value in (("launcher.nodes", args.plan_nodes), ("launcher.cores_per_node", args.plan_cores)):
        if value is not None:
            overrides[key] = value
    try:
        cfg, topo = resolve_planned(args.config, overrides, args.groups, args.topology)
    except PlanError as e:
        print(f"rooftop plan: {e}", file=sys.stderr)
        return 2
    f = forecast(cfg, topo)
    noise = None
    if args.from_run:
        from rooftop.campaign.simulate import fit_noise
        from rooftop.store.db import Store

        store = Store(args.results, create=False)
        try:
            f.calibrate(calibration(store.get_run(args.from_run)))
        except PlanError as e:
            print(f"rooftop plan: {e}", file=sys.stderr)
            return 2
        noise = fit_noise(store, args.from_run) or None
    f.quote_power(noise)
    if args.json:
        print(json_text(f.as_dict(), indent=1))
    else:
        print("\n".join(f.lines()))
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser(
        "plan",
        help="how long the suite takes on N nodes, per stage, before any allocation",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="The expected time of 'rooftop collect' and then 'rooftop validate' on N nodes, "
        "per stage and in total,\nwith the engine launches and the client ceiling's pairs and rounds "
        "(per topology class\nwith --groups or --topology; --pairs sample: its first batch and the interval width "
        "each\nclass is expected to reach, and the power of its search, simulated on the planned nodes: how\n"
        "often a node at 0.7 x and a group link at 0.5 x are named, and the false names per run; with\n"
        "--from RUN, at that run's noise), from the config as collect resolves it "
        "and the fixed costs\nmeasured here (rooftop.campaign.costs) of its launch mode, engine.launch: "
        "agents (the default:\none node agent per node for each of collect and validate, so the launches are "
        "N per\ncampaign, and placements and rounds fork their engines) or per-placement (a launch per\nserver "
        "node of each placement and per client node of each round; --set\nengine.launch=per-placement). "
        "'rooftop collect --dry-run' on an allocation of N nodes\nprints the same figures. Nothing runs and "
        "nothing is written.",
        epilog="examples:\n"
        "  rooftop plan --nodes 17 --launcher netns\n"
        "  rooftop plan --nodes 17 --launcher srun --set engine.launch=per-placement\n"
        "  rooftop plan --nodes 1000 --groups 50 --pairs rounds --launcher srun --cores-per-node 64 --json\n"
        "  rooftop plan --nodes 1000 --groups 50 --launcher srun --set collect.pairs=sample\n"
        "  rooftop plan --topology /etc/slurm/topology.conf --launcher srun --config suite.toml",
    )
    p.add_argument("--config", help="campaign file (JSON, or TOML by extension); see 'rooftop config keys'")
    # --nodes and --cores-per-node set launcher.nodes and launcher.cores_per_node,
    # with help of their own: here they describe planned nodes, not the launcher's.
    p.add_argument(
        "--nodes",
        dest="plan_nodes",
        type=int,
        metavar="N",
        help="nodes to plan for, at least 2 (launcher.nodes; default: the config's, or the topology file's hosts)",
    )
    p.add_argument(
        "--cores-per-node",
        dest="plan_cores",
        type=int,
        metavar="C",
        help="cores of each planned node (launcher.cores_per_node; default: the config's, else the local "
        "launcher's split of this machine into N, or this machine's cores for the other launchers)",
    )
    add_key_flags(p, [f for f in CONFIG_FLAGS if f.flag != "--nodes"])
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--groups",
        type=int,
        metavar="G",
        help="the nodes in G topology groups of consecutive nodes, one switch each (pairs are counted within "
        "and across them)",
    )
    where.add_argument(
        "--topology",
        metavar="FILE",
        help="the nodes' switches and groups as collect.topology_file reads them: a Slurm topology.conf "
        "(SwitchName= lines; a group is a subtree under the top switch) or 'HOST SWITCH [GROUP]' lines",
    )
    add_key_flags(p, STAGE_FLAGS[:3], "collect")
    add_key_flags(p, COLLECT_FLAGS)
    add_key_flags(p, VALIDATE_FLAGS, "validate")
    p.add_argument(
        "--set", action="append", metavar="KEY=VALUE", help="any config key, e.g. --set validate.windows=1 (repeatable)"
    )
    p.add_argument(
        "--from",
        dest="from_run",
        metavar="RUN",
        help="price the fixed costs as that complete run measured them (in --results): its time outside windows "
        "over what the constants gave for it scales every constant; best a short run with the launcher and on "
        "the machine planned; --pairs sample: the search's power simulated at the noise of that run's pairs",
    )
    takes_runs(p, "from_run")
    results_arg(p)
    p.add_argument("--json", action="store_true", help="print the plan as JSON on stdout")
    p.set_defaults(func=_cmd_plan)
