"""The machine a campaign measures on, read once per node and command where
its engines run, and stored with the run (its environment's "machine":
rooftop.engine.machine says what it holds).

`rooftop-engine machine` runs on each node the way the campaign starts its
engines: forked by the node's agent (engine.launch = agents), or through
the launcher (a launch per node: an srun step, an mpiexec line, a process
in an emulated node's namespace). Nodes that are logical slices of this
machine (the local launcher) are one machine: read once, on node 0. A node
that cannot be read is named in the record with the reason; nothing here
stops the campaign (a missing agent does, as it would at the first
placement). A command that resumes a run on another machine than the one
an earlier command measured on says so, and the record keeps the earlier
identity (its "earlier")."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from rooftop.engine import enginedoc
from rooftop.engine import machine as mach
from rooftop.engine.agents import AgentsError
from rooftop.engine.reaping import terminate
from rooftop.launchers import Launch, LauncherError, Node, on_this_machine
from rooftop.store.records import StoreError, now_iso

#: The folder of a run holding each node's machine document.
FOLDER = "machine"
#: Seconds every node has to write its document (libfabric's start-up, hwloc).
TIMEOUT_S = 60.0

#: Runs whose machine this process has read: once per command, however
#: many times the command runs placements of the run (pair-sample batches).
_read: set[str] = set()


def one_machine(cfg: dict, nodes: list[Node]) -> bool:
    """Whether the nodes are slices of this one machine, seen alike by
    every engine (the local launcher: no node has a namespace of its own)."""
    return on_this_machine(cfg["launcher"]["type"]) and all(n.emulation is None for n in nodes)


def argv(runner, node: Node, folder: Path) -> list[str]:
    """The engine command that describes node (the NICs its servers serve
    on, when the node has addresses of its own)."""
    out = [runner.commands.engine, "machine", *runner.commands.fabric_args()]
    if node.address and not runner.cfg["fabric"]["domain"]:
        out += ["--address", ",".join(node.nic_addresses())]
    return [*out, "--output", str(folder / "node-{rank}.json")]


def read_nodes(runner) -> list[dict]:
    """Each node's record (rooftop.engine.machine.node_record), read where it runs."""
    folder = runner.run_dir / FOLDER
    folder.mkdir(exist_ok=True)
    nodes = runner.nodes
    where = nodes[:1] if one_machine(runner.cfg, nodes) else nodes
    started: dict[int, Any] = {}
    errors: dict[int, str] = {}
    for node in where:
        doc = folder / f"node-{node.index}.json"
        doc.unlink(missing_ok=True)  # an earlier command's: never read as this one's
        try:
            launch: Launch = runner.commands.launches(node, argv(runner, node, folder), 1, node.index)[0]
            started[node.index] = runner.procs.start(launch, folder / f"node-{node.index}.log")
        except AgentsError:
            raise  # no agent at all: the campaign stops here as it would at its first placement
        except (LauncherError, OSError, ValueError) as e:
            errors[node.index] = f"not started: {e}"
    deadline = time.monotonic() + TIMEOUT_S
    while any(p.poll() is None for p in started.values()) and time.monotonic() < deadline:
        time.sleep(0.02)
    late = [p for p in started.values() if p.poll() is None]
    terminate(late, 2.0)
    runner.procs.forget_finished()
    by_index: dict[int, tuple[dict | None, str]] = {}
    for i, p in started.items():
        path = folder / f"node-{i}.json"
        try:
            by_index[i] = (enginedoc.load(path), "")
        except (OSError, ValueError):
            rc = p.poll()
            why = f"no document after {TIMEOUT_S:g} s" if p in late else f"no document (exit code {rc})"
            by_index[i] = (None, f"{why}; see {folder / f'node-{i}.log'}")
    for i, why in errors.items():
        by_index[i] = (None, why)
    first = by_index.get(where[0].index, (None, "not read")) if where else (None, "no node")
    return [
        mach.node_record(n.index, n.host, *(by_index.get(n.index) or first))  # one machine: node 0's read
        for n in nodes
    ]


def record(runner) -> None:
    """Reads the machine of runner's run (once per command) and stores it
    in the run's environment; a resumed run measured before on another
    machine is said so, on stderr and in the record."""
    if runner.run_id in _read:
        return
    _read.add(runner.run_id)
    new = mach.machine(read_nodes(runner), now_iso())
    try:
        old = mach.of_environment(runner.store.get_run(runner.run_id).environment)
        if old is not None and new["identity"] is not None and old["identity"] != new["identity"]:
            new["earlier"] = [*old.get("earlier", []), {k: old.get(k) for k in ("identity", "summary", "gathered_utc")}]
            said = "; ".join(mach.differences(old["summary"], new["summary"]))
            msg = f"run {runner.run_id} was measured on another machine before ({said}): both are recorded"
            runner.log(msg)
            print(f"rooftop: warning: {msg}", file=sys.stderr, flush=True)
        elif old is not None and new["identity"] is None:
            return  # nothing read this time: the earlier record stands
        runner.store.update_environment(runner.run_id, {mach.KEY: new})
    except StoreError as e:  # the samples matter more: the campaign goes on
        runner.log(f"the machine's record was not stored: {e}")
        print(f"rooftop: warning: the machine's record was not stored: {e}", file=sys.stderr, flush=True)
    unread = [r for r in new["nodes"] if "error" in r]
    if unread:
        runner.log(f"machine: {len(unread)} node(s) not read, e.g. n{unread[0]['node']}: {unread[0]['error']}")
