"""rooftop interfere's plan, without running anything: knobs, placements
(given, and seeded random draws reproduced by their seed), the shared
resource in words (including a load on cores the service does not use,
which this 2-core machine cannot run), and the dry run's command lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from rooftop.interference.loads import background
from rooftop.interference.run import Plan, conditions, parse_knobs, shared
from rooftop.launchers import Launch, Node
from rooftop.launchers.local import LocalLauncher


def test_knobs_resolve_with_defaults_and_unknown_ones_are_named():
    knobs = parse_knobs(["cpu.procs=1", "numio.mode=async"], ["cpu", "numio"])
    assert knobs["cpu"] == {"procs": 1, "size": 256, "iterations": 50}
    assert knobs["numio"]["mode"] == "async" and knobs["numio"]["sweeps"] == 200
    with pytest.raises(ValueError, match="no knob 'speed'"):
        parse_knobs(["cpu.speed=3"], ["cpu"])
    with pytest.raises(ValueError, match=r"not in interference.loads \(--loads\)"):
        parse_knobs(["mem.copies=3"], ["cpu"])


def test_random_placement_is_reproduced_by_its_seed():
    nodes = LocalLauncher(4, cores=[0, 1, 2, 3]).nodes()
    plan = Plan(["cpu", "net"], parse_knobs([], ["cpu", "net"]), ["server_peak"], [1, 2], placement="random", seed=11)
    first = conditions(plan, nodes)
    assert first == conditions(plan, nodes)
    assert [len(c["nodes"]) for c in first] == [1, 2, 1, 2]
    assert all(len(n) == 2 for c in first if c["load"] == "net" for n in c["nodes"])
    other = conditions(Plan(**{**plan.__dict__, "seed": 12}), nodes)
    assert [c["nodes"] for c in other] != [c["nodes"] for c in first]


def _service(servers: list[int], clients: list[int]) -> list:
    """A plan of one placement: servers on those nodes, clients on these."""
    return [SimpleNamespace(server_nodes=servers, measurements=[SimpleNamespace(client_nodes=clients)])]


def _running(kind: str, node, cpus: str, tmp_path):
    """One started-looking copy of a load: one process pinned to cpus."""
    r = background.Running(kind, {}, [node], tmp_path, 0)
    r.launches = [Launch(["worker", kind, "--rank", "0", "--cpus", cpus], node, [0])]
    return r


# Nodes of 2 cores; the service's processes are pinned to each node's
# first core (Node.cores below lists the cores its processes use).
NODES = [Node(0, "h", (0,)), Node(1, "h", (2,)), Node(2, "h", (4,))]


def test_shared_resource_names_the_services_cores(tmp_path):
    words = shared("cpu", [_running("cpu", NODES[0], "0", tmp_path)], _service([0], [1]), NODES)
    assert words == "CPU: the load runs on cores 0 of n0 (server), which the service uses"
    words = shared("mem", [_running("mem", NODES[1], "2", tmp_path)], _service([0], [1]), NODES)
    assert words.startswith("CPU and memory bandwidth: the load runs on cores 2 of n1 (client)")


def test_shared_resource_on_cores_the_service_does_not_use(tmp_path):
    # What this 2-core machine cannot run: the load on n0's second core (1).
    words = shared("cpu", [_running("cpu", NODES[0], "1", tmp_path)], _service([0], [1]), NODES)
    assert words == (
        "CPU cores: the load runs on n0 but on cores the service does not use (memory, caches and I/O are shared)"
    )
    words = shared("cpu", [_running("cpu", NODES[2], "4", tmp_path)], _service([0], [1]), NODES)
    assert words == "CPU cores: no node of the service runs the load (only machine-wide resources)"


def test_shared_resource_of_a_flood_names_the_links(tmp_path):
    flood = background.Running("net", {}, [NODES[0], NODES[2]], tmp_path, 0)
    flood.launches = [Launch(["worker", "net"], NODES[0], [0]), Launch(["worker", "net"], NODES[2], [1])]
    assert (
        shared("net", [flood], _service([0], [1]), NODES) == "network: the links of n0 (a server node) carry the flood"
    )
    flood.launches = [Launch(["worker", "net"], NODES[2], [1])]
    assert shared("net", [flood], _service([0], [1]), NODES).startswith(
        "network: the flood runs between nodes the service does not use"
    )


def test_dry_run_prints_every_condition_and_creates_nothing(tmp_path):
    res = tmp_path / "res"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "rooftop",
            "interfere",
            "--dry-run",
            "--results",
            str(res),
            "--loads",
            "cpu,net",
            "--load-nodes",
            "0,1",
            "--ensemble",
            "1,2",
            "--metrics",
            "rpc",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "# isolated run" in out and out.count("# beside") == 4
    assert out.count("rooftop.interference.loads.worker cpu") == 2 + 4  # 1 and 2 copies, a process per node each
    assert "rooftop.interference.loads.worker net" in out and "--cpus" in out
    assert not Path(res).exists()


def test_bad_load_options_are_config_errors():
    for args, says in (
        (["--loads", "gpu"], "interference.loads[0]: 'gpu' is not one of cpu, mem"),
        (["--loads", "cmd"], "needs a command"),
        (["--loads", "net", "--load-nodes", "0"], "at least two nodes"),
        (["--loads", "numio", "--load-set", "numio.mode=later"], "numio.mode 'later'"),
        (["--loads", "net", "--load-set", "net.pattern=ring"], "net.pattern=ring: one of"),
        (
            ["--loads", "net", "--load-set", "net.pattern=broadcast", "--load-set", "net.op=write"],
            "a broadcast sends out of the hub",
        ),
    ):
        p = subprocess.run(
            [sys.executable, "-m", "rooftop", "interfere", "--dry-run", *args],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert p.returncode == 2 and says in p.stderr, (args, p.stderr)


def test_net_patterns_are_gpcnets_congestors_with_their_direction(tmp_path):
    """incast writes into the hub, broadcast reads out of it, alltoall reads
    unless op says otherwise: the engine lines the dry run prints."""
    from rooftop.interference.loads.net import direction

    assert [direction(p, "auto") for p in ("incast", "broadcast", "alltoall")] == ["write", "read", "read"]
    assert direction("incast", "read") == "read" and direction("alltoall", "write") == "write"
    for pattern, op in (("incast", "write"), ("broadcast", "read")):
        p = subprocess.run(
            [
                sys.executable,
                "-m",
                "rooftop",
                "interfere",
                "--dry-run",
                "--results",
                str(tmp_path),
                "--loads",
                "net",
                "--load-nodes",
                "0,1",
                "--metrics",
                "rpc",
                "--load-set",
                f"net.pattern={pattern}",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert p.returncode == 0, p.stderr
        (hub, spoke) = [line for line in p.stdout.splitlines() if "rooftop.interference.loads.worker net" in line]
        assert '"serve"' in hub and '"load"' in spoke and f'"--op", "{op}"' in spoke, spoke


def test_an_impact_whose_isolated_run_has_no_usable_window_keeps_its_unit():
    """A progress mode (or stage) with no usable window in the isolated run
    (every one invalid on a loaded machine) but some beside the load: its
    impact row still has the metric's unit, so the bursts run's report
    writes the loaded rate instead of ending in a KeyError."""
    from rooftop.interference import bursts as interfere_bursts
    from rooftop.interference.report import table_rows

    class Store:
        def samples(self, run_id, metric=None):
            if run_id == "base":
                return [{"status": "invalid", "key": "bursts/rpc/busy/0", "aggregate": 1.0, "unit": "ops/s", "id": 1}]
            return [{"status": "ok", "key": "bursts/rpc/busy/0", "aggregate": 900.0, "unit": "ops/s", "id": 2}]

        def sample_quantities(self, sample_id):
            return {}

    cfg = {"bursts": {"progress": ["busy"], "metric": "rpc"}}
    (impact,) = interfere_bursts.impacts(Store(), "base", "loaded", cfg)
    assert impact["unit"] == "ops/s" and impact["rate_isolated"] is None and impact["rate_loaded"] == 900.0
    doc = {"conditions": [{"copies": 1, "load": "cpu", "loads": [], "impacts": [impact], "shared": "CPU"}]}
    assert "900 ops/s" in " ".join(table_rows(doc)[0])
