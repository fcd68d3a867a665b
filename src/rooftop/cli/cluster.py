"""'rooftop cluster up|reshape|status|down': the emulated cluster on this machine.

Exit codes (rooftop.exits): 0 ok; 1 'status' found a cluster with problems;
2 bad options, not root, or a command that failed (the message names it);
3 'status' found no cluster up.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time

from rooftop.cluster.spec import DEFAULT_RATE, RATE_FORMS, format_rate
from rooftop.numbers import json_text

EPILOG = f"""\
Each node is a network namespace (rooftop-n<I>, address 10.231.0.<10+I>)
joined by a veth pair to the bridge rooftop-br0 (10.231.0.1), with its link
shaped by tc in both directions and a cgroup pinning its cores and capping its
CPU; node names (rooftop-n<I>) go into /etc/hosts. Then: rooftop collect
--launcher netns, or --launcher mpiexec --set launcher.hosts=rooftop-n0,...
(an rsh agent enters the nodes), or with --slurm: export SLURM_CONF=... (up
prints it), then salloc -N 3 rooftop collect --launcher srun. Needs root.

  rooftop cluster up --nodes 4 --link-rate 1gbit
  rooftop cluster up --nodes 3 --slurm
  rooftop cluster up --nodes 4 --node 2:rate=100mbit --node 3:cpu=50%
  rooftop cluster up --nodes 2 --nics-per-node 4 --link-rate 40mbit
  rooftop cluster up --nodes 12 --groups 3 --link-rate 90mbit --group-link-rate 30mbit
  rooftop cluster reshape --link-rate 500mbit --node 0:cpu=50%
  rooftop cluster status [--json]
  rooftop cluster down

Rates: {RATE_FORMS} (bit units are bits per second; B/s units are bytes).
"""


def add_parser(sub) -> None:
    p = sub.add_parser(
        "cluster",
        help="emulated cluster on this machine (root): up, reshape, status, down",
        description="Emulated cluster: N nodes on this machine (network namespaces, shaped veth links, cgroups).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    acts = p.add_subparsers(dest="action", metavar="ACTION")
    acts.required = True

    up = acts.add_parser(
        "up", help="build the cluster (idempotent)", epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    up.add_argument("--nodes", type=int, required=True, help="number of nodes")
    up.add_argument(
        "--cores-per-node",
        type=int,
        metavar="K",
        help="cores of each node (default: the machine's cores split evenly, at least one; "
        "nodes share cores when there are more nodes than cores)",
    )
    up.add_argument(
        "--link-rate",
        metavar="RATE",
        default=None,
        help=f"every node's link rate, each direction (default {DEFAULT_RATE}; none: unshaped)",
    )
    up.add_argument(
        "--nics-per-node",
        type=int,
        default=1,
        metavar="K",
        help="NICs of each node (default 1): NIC k of every node on rail k (bridge "
        "rooftop-br<k>, subnet 10.231.<k>.0/24), each shaped to the link rate; the "
        "rails reach each other through the root namespace",
    )
    up.add_argument(
        "--groups",
        type=int,
        default=1,
        metavar="G",
        help="split the nodes into G groups of consecutive nodes (default 1), each on a switch of "
        "its own (bridge rooftop-gb<g>), joined through a top switch (rooftop-br0); with --slurm, "
        "Slurm's topology.conf describes the same tree (TopologyPlugin=topology/tree)",
    )
    up.add_argument(
        "--group-link-rate",
        metavar="RATE",
        default=None,
        help="each group's link to the top switch, each direction (default: the link rate): "
        "what traffic between groups shares",
    )
    up.add_argument(
        "--node",
        action="append",
        default=[],
        metavar="I:KEY=VALUE",
        help="one node differs: I:rate=RATE (its link) or I:cpu=P%% (its CPU time, "
        "P %% of its cores); repeatable, or I:rate=R,cpu=P%%",
    )
    up.add_argument(
        "--slurm",
        action="store_true",
        help="also run Slurm: munged, slurmctld on the bridge address, one slurmd per node "
        "in its namespace and cgroup (adds Slurm to the same cluster already up)",
    )
    up.add_argument("--json", action="store_true", help="print the status as JSON")
    up.add_argument("-v", "--verbose", action="store_true", help="print every command run")
    up.set_defaults(func=cmd_up)

    rs = acts.add_parser(
        "reshape",
        help="change the running cluster's link rates and CPU caps in place (recorded in its state)",
        description="Changes the link rates and CPU caps of the cluster that is up, without rebuilding it "
        "(namespaces, addresses, cores and the processes in the nodes stay); the state records the new "
        "emulation, so the runs started after it record what they run under, and a run measured before "
        "cannot be resumed or validated on it. Refused while a campaign holds this machine's cores lock.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    rs.add_argument("--link-rate", metavar="RATE", help="every node's link rate, each direction (none: unshaped)")
    rs.add_argument(
        "--node",
        action="append",
        default=[],
        metavar="I:KEY=VALUE",
        help="one node: I:rate=RATE (its link), I:cpu=P%% (its CPU time, P %% of its cores) or "
        "I:cpu=none (no cap); repeatable, or I:rate=R,cpu=P%%; applied after --link-rate",
    )
    rs.add_argument(
        "--force",
        action="store_true",
        help="change it even while a campaign holds this machine's cores lock (its windows measured "
        "across the change are stored invalid)",
    )
    rs.add_argument("--json", action="store_true", help="print the status as JSON")
    rs.add_argument("-v", "--verbose", action="store_true", help="print every command run")
    rs.set_defaults(func=cmd_reshape)

    st = acts.add_parser("status", help="nodes, addresses, cores, CPU caps, link rates (read from tc)")
    st.add_argument("--json", action="store_true", help="JSON for machines")
    st.set_defaults(func=cmd_status)

    dn = acts.add_parser("down", help="remove every namespace, link, bridge, qdisc and cgroup (idempotent)")
    dn.add_argument("-v", "--verbose", action="store_true", help="list what was removed")
    dn.add_argument("--json", action="store_true", help="print what was removed as JSON")
    dn.add_argument(
        "--force",
        action="store_true",
        help="remove it even while a campaign holds this machine's cores lock (its samples "
        "then fail); without it, 'down' refuses, naming the run and pid holding it",
    )
    dn.set_defaults(func=cmd_down)


def _log(msg: str) -> None:
    print(msg, file=sys.stderr)


def _trace(args) -> None:
    if getattr(args, "verbose", False):
        from rooftop.cluster import commands

        class Echo(list):
            def append(self, argv):
                import shlex

                print("+ " + shlex.join(argv), file=sys.stderr)

        commands.trace = Echo()


def cmd_up(args) -> int:
    from rooftop.cluster import lifecycle
    from rooftop.cluster.spec import build_spec

    _trace(args)
    lifecycle.require_root("up")
    spec = build_spec(
        args.nodes,
        args.cores_per_node,
        args.link_rate,
        args.node,
        nics_per_node=args.nics_per_node,
        groups=args.groups,
        group_link_rate=args.group_link_rate,
    )
    st, built = lifecycle.up(spec, log=_log, with_slurm=args.slurm)
    if not built:
        _log(f"rooftop cluster up: already up ({lifecycle.describe(st)}); nothing to do")
    if st.get("slurm"):
        _log(f"Slurm is up; its commands need: export SLURM_CONF={st['slurm']['conf']}")
    return _show(lifecycle.status(), args.json)


def cmd_reshape(args) -> int:
    from rooftop.cluster import lifecycle, reshape

    _trace(args)
    lifecycle.require_root("reshape")
    with _no_campaign(args.force, "reshape it anyway with 'rooftop cluster reshape --force'"):
        said = reshape.reshape(args.link_rate, args.node, log=_log)
    if not said:
        _log("rooftop cluster reshape: the cluster already is so; nothing to do")
    return _show(lifecycle.status(), args.json)


def cmd_status(args) -> int:
    from rooftop.cluster import lifecycle

    return _show(lifecycle.status(), args.json)


def cmd_down(args) -> int:
    from rooftop.cluster import lifecycle

    _trace(args)
    lifecycle.require_root("down")
    with _no_campaign(args.force):  # held while removing: no campaign starts meanwhile
        removed = lifecycle.down()
    if args.verbose:
        for r in removed:
            _log(f"removed {r}")
    nns = sum(r.startswith("netns") for r in removed)
    if args.json:
        print(json_text({"removed": removed}, indent=1))
        return 0
    print(
        f"emulated cluster down: removed {nns} namespace(s), {len(removed) - nns} other object(s)"
        if removed
        else "emulated cluster down: nothing to remove"
    )
    return 0


@contextlib.contextmanager
def _no_campaign(force: bool, anyway: str = "take the cluster down anyway with 'rooftop cluster down --force'"):
    """This machine's cores lock (rooftop.locks), which every local or netns
    campaign holds while it measures: a cluster taken down (or reshaped)
    under a campaign fails its samples. --force skips it."""
    from rooftop.cluster.spec import ClusterError
    from rooftop.locks import Lock, machine_lock_path

    if force:
        yield
        return
    lock = Lock(machine_lock_path(), "this machine's cores")
    try:
        if not lock.acquire(time.monotonic()):
            raise ClusterError(
                f"a campaign holds this machine's cores lock ({lock.path}): "
                f"{lock.holder()}; its samples would fail. Wait for it to end, stop it, or {anyway}"
            )
        yield
    finally:
        lock.release()


def _cap(node: dict) -> str:
    if node["cpu_percent"] is None:
        return "-"
    return f"{node['cpu_percent']:g}% ({node['cpu_quota_us'] / node['cpu_period_us']:.2f} cores)"


def _rate(bits) -> str:
    return format_rate(bits) if bits is not None else "unshaped"


def _nics_table(st: dict):
    """One row per NIC of every node: its rail, address and shaping."""
    from rich.table import Table

    t = Table(
        title=f"NICs: {st['nics_per_node']} per node, NIC k on rail k "
        f"({', '.join(r['bridge'] + ' ' + r['subnet'] for r in st['rails'])})",
        title_justify="left",
    )
    for col in ("node", "NIC", "rail", "address", "send", "receive"):
        t.add_column(col)
    for n in st["nodes"]:
        live = {x["name"]: x for x in (n["live"] or {}).get("nics", [])}
        for nic in n.get("nics", []):
            got = live.get(nic["name"])
            send = _rate(got["send_rate_bits"]) if got else _rate(n["link_rate_bits"]) + " (state)"
            recv = _rate(got["receive_rate_bits"]) if got else _rate(n["link_rate_bits"]) + " (state)"
            t.add_row(n["name"], nic["name"], str(nic["rail"]), nic["address"], send, recv)
    return t


def _groups_table(st: dict):
    """One row per group: its switch, nodes and link to the top switch."""
    from rich.table import Table

    t = Table(title="groups: each on its own switch, joined through the top switch rooftop-br0", title_justify="left")
    for col in ("group", "switch", "nodes", "link", "send", "receive"):
        t.add_column(col)
    for g in st["groups"]:
        live = g.get("live")
        send = _rate(live["send_rate_bits"]) if live else _rate(g["link_rate_bits"]) + " (state)"
        recv = _rate(live["receive_rate_bits"]) if live else _rate(g["link_rate_bits"]) + " (state)"
        nodes = ",".join(f"n{i}" for i in g["nodes"])
        t.add_row(str(g["group"]), g["switch"], nodes, f"{g['uplink']}={g['downlink']}", send, recv)
    return t


def _show(st: dict, as_json: bool) -> int:  # noqa: PLR0915
    """cluster status: the state as JSON, or a table of the nodes and links.
    Long: one table filled row by row, a statement a column."""
    from rooftop import exits

    if as_json:
        print(json_text(st, indent=1))
        return exits.UNREACHABLE if not st["up"] else exits.FAILED if st["problems"] else exits.OK
    from rich.console import Console
    from rich.table import Table

    out = Console(highlight=False)
    if not out.is_terminal:
        out.width = 120
    if not st["up"]:
        out.print(f"no emulated cluster is up (no state at {st['state']}); 'rooftop cluster up --nodes N' builds one")
        if st["leftovers"]:
            out.print(f"[yellow]leftovers[/]: {', '.join(st['leftovers'])} ('rooftop cluster down' removes them)")
        return exits.UNREACHABLE
    t = Table(title=f"emulated cluster: {st['summary']}", title_justify="left")
    grouped = bool(st.get("groups"))
    cols = ("node", "namespace", "address") + (("group",) if grouped else ())
    for col in cols + ("cores", "shared with", "CPU cap", "link send", "link receive", "ok"):
        t.add_column(col)
    for n in st["nodes"]:
        live = n["live"]
        if live is None:
            send = recv = _rate(n["link_rate_bits"]) + " (state)"
        else:
            send = _rate(live["send_rate_bits"])
            recv = _rate(live["receive_rate_bits"])
        t.add_row(
            n["name"],
            n["netns"],
            n["address"],
            *((str(n["group"]),) if grouped else ()),
            ",".join(map(str, n["cores"])),
            ",".join(f"n{j}" for j in n["shared_with"]) or "-",
            _cap(n),
            send,
            recv,
            "?" if live is None else "[green]yes[/]" if not n["problems"] else "[red]no[/]",
        )
    out.print(t)
    if st["nics_per_node"] > 1:
        out.print(_nics_table(st))
    if grouped:
        out.print(_groups_table(st))
    shared = [n for n in st["nodes"] if n["shared_with"]]
    if shared:
        ncores = len(st["machine_cores"])
        out.print(
            f"[yellow]nodes share cores[/]: {len(st['nodes'])} nodes on {ncores} core(s); "
            f"nodes sharing a core time-slice it, so their CPU-bound rates interfere"
        )
    for r in st.get("reshaped") or []:
        out.print(f"reshaped at {r['at']}: {'; '.join(r['changes'])}")
    if not st.get("verified", True):
        out.print("not root: shown from the state file, not read back from the kernel")
    if st.get("tcp_congestion_control"):
        out.print(
            f"TCP congestion control in the nodes: {st['tcp_congestion_control']} (the machine's; "
            f"it decides how flows through one link share it)"
        )
    out.print(
        f"state: {st['state']}; bridge {st['bridge']['name']} {st['bridge']['address']}; "
        f"cgroup v{st['cgroup']['version']}"
    )
    if st.get("mpi"):
        out.print(f"mpiexec: host names rooftop-n<I> in /etc/hosts; rsh agent {st['mpi']['rsh_agent']}")
    if st.get("slurm"):
        out.print(f"Slurm (SLURM_CONF={st['slurm']['conf']}):")
        out.print(st["slurm"]["sinfo"], markup=False)
    for p in st["problems"]:
        out.print(f"[red]problem[/]: {p}")
    return 0 if not st["problems"] else 1
