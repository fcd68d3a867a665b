"""`rooftop plan` (issue 31, item 4): a campaign's expected time on N nodes
before any allocation, with the dry run's own estimator and constants --
the same figures as `collect --dry-run` on as many nodes, pairs and rounds
as each pair strategy's formula says, and bad input refused by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from campaign_util import docs_table, rooftop

from rooftop.campaign.costs import AGENTS, LAUNCH_MODES, PER_PLACEMENT
from rooftop.campaign.forecast import forecast, resolve_planned
from rooftop.config.catalog import KEYS
from rooftop.stages.pairs import sample
from rooftop.topology import Topology

SAME = ["--metrics", "rpc,bw", "--windows", "3", "--duration", "2", "--warmup", "0.5"]


@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory):
    """The dry run of a local collect on 2 logical nodes, and the plan of 2
    nodes with the same options."""
    results = tmp_path_factory.mktemp("dry") / "results"
    dry = rooftop("collect", "--dry-run", "--nodes", "2", *SAME, "--results", str(results)).stdout
    plan = rooftop("plan", "--nodes", "2", *SAME).stdout
    as_json = json.loads(rooftop("plan", "--nodes", "2", *SAME, "--json").stdout)
    return dry, plan, as_json


def _collect_section(plan: str) -> list[str]:
    lines = plan.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("collect: "))
    end = lines.index("", start)
    return lines[start:end]


def test_plan_prints_the_dry_run_figures_for_as_many_nodes(two_nodes):
    dry, plan, as_json = two_nodes
    section = _collect_section(plan)
    table = [line[len("#   ") :] for line in dry.splitlines() if line.startswith("#   ")]
    assert table and [line[2:] for line in section[1:]] == table
    expected = [line for line in dry.splitlines() if line.startswith("# expected run time: ")]
    assert expected == ["# " + section[0][len("collect: ") :]]
    # 2 nodes of one core each: one placement measured once for the three
    # shared stages, a round per metric of 3 windows.
    c = as_json["phases"]["collect"]
    assert (c["placements"], c["rounds"], c["windows"]) == (1, 2, 6)
    assert list(c["stages"]) == ["server_peak+client_peak+client_node"]
    # engine.launch's default, agents: started once, then their costs per placement and round.
    overhead = AGENTS.fixed_s(2) + AGENTS.placement_s + 2 * AGENTS.round_s
    assert c["total_s"] == pytest.approx(6 * 2 + 2 * 0.5 + overhead)  # lone clients: warmup, no settle
    assert as_json["total_s"] == pytest.approx(c["total_s"] + as_json["phases"]["validate"]["total_s"])
    assert as_json["launch_mode"] == "agents" and c["launches"] == 2
    assert as_json["constants"] == {k.name: k.value for k in AGENTS.constants()}


def test_sample_dry_run_and_plan_print_the_same_pairs(tmp_path):
    """--pairs sample: the dry run's first batch (drawn and recorded as a run
    draws it) is what plan expects on as many nodes."""
    args = ["--nodes", "2", "--pairs", "sample", *SAME]
    dry = rooftop("collect", "--dry-run", *args, "--results", str(tmp_path / "results")).stdout
    plan = rooftop("plan", *args).stdout
    table = [line[len("#   ") :] for line in dry.splitlines() if line.startswith("#   ")]
    assert [line[2:] for line in _collect_section(plan)[1:]] == table
    assert any(line.startswith("client peak pairs (sample): first batch 1 pair in 1 round") for line in table)


def _plan17(*args) -> dict:
    return json.loads(
        rooftop("plan", "--nodes", "17", "--launcher", "local", "--metrics", "rpc,bw", "--json", *args).stdout
    )


@pytest.mark.parametrize("pairs", ["serial", "rounds"])
def test_plan_for_17_nodes_scales_as_the_formulas_say(pairs):
    # A launch per placement (engine.launch = per-placement): the launches follow the formulas.
    x = _plan17(
        "--pairs", pairs, "--groups", "3", "--cores-per-node", "4", "--windows", "5", "--duration", "5",
        "--set", "engine.launch=per-placement",
    )  # fmt: skip
    n, m, k = 17, 2, 5
    every = n * (n - 1) // 2  # 136
    rounds = {"serial": every, "rounds": n}[pairs]  # n odd: n rounds of (n-1)/2 pairs
    c = x["phases"]["collect"]
    p = c["pairs"]
    assert (p["strategy"], p["pairs"], p["rounds"]) == (pairs, every, rounds)
    # 3 groups (one switch each) of 6, 6 and 5 nodes: 15 + 15 + 10 pairs within one.
    assert p["by_class"] == {"same switch": 40, "across groups": every - 40}
    assert p["interval"] is None and p["widths"] == {}
    assert x["groups"] == [6, 6, 5] and x["cores_per_node"] == 4
    peak = c["stages"]["client_peak"]
    assert peak["rounds"] == rounds * m and peak["windows"] == rounds * m * k and peak["rows"] == every * m * k
    # A launch per server node of each placement, per client node of each round.
    assert peak["placements"] == {"serial": n - 1, "rounds": rounds}[pairs]
    assert peak["launches"] == {"serial": n - 1, "rounds": every}[pairs] + every * m
    assert peak["measuring_s"] == pytest.approx(rounds * m * k * 5)
    # The server peak: node 0's 4 servers against 16 client nodes, a round per metric.
    sp = c["stages"]["server_peak"]
    assert (sp["placements"], sp["rounds"], sp["launches"], sp["processes"]) == (1, m, 1 + 16 * m, 4 + 16 * 4 * m)
    total = sum(s["total_s"] for s in c["stages"].values())
    assert c["total_s"] == pytest.approx(total, abs=0.01)
    assert c["launches"] == sum(s["launches"] for s in c["stages"].values())
    overhead = c["placements"] * PER_PLACEMENT.placement_s + c["rounds"] * PER_PLACEMENT.round_s
    assert c["overhead_s"] == pytest.approx(overhead)
    assert x["launches"] == c["launches"] + x["phases"]["validate"]["launches"]


def test_plan_with_agents_launches_once_per_node_and_campaign():
    """engine.launch = agents (the default): one agent per node for collect
    and one for validate, whatever the pairs; no launch per stage; the
    agents' start once and their own costs per placement and round."""
    x = _plan17("--pairs", "rounds", "--cores-per-node", "4", "--windows", "5", "--duration", "5")
    assert x["launch_mode"] == "agents" and x["launches"] == 2 * 17
    for phase in x["phases"].values():
        assert phase["launch_mode"] == "agents" and phase["launches"] == 17
        assert all(s["launches"] is None for s in phase["stages"].values())
        overhead = phase["placements"] * AGENTS.placement_s + phase["rounds"] * AGENTS.round_s + AGENTS.fixed_s(17)
        assert phase["overhead_s"] == pytest.approx(overhead)
    # engine.launch's choices are the table's launch modes, its default the agents.
    (key,) = [k for k in KEYS if k.path == "engine.launch"]
    assert set(key.choices) == set(LAUNCH_MODES) and key.default == AGENTS.name
    text = rooftop("plan", "--nodes", "17", "--launcher", "local", "--metrics", "rpc,bw").stdout
    assert "launch mode agents" in text and "agents launch, once" in text and ", 34 launches" in text


@pytest.mark.parametrize("pairs", ["serial", "rounds"])
def test_counted_pairs_equal_the_listed_plan(pairs):
    """Beyond LIST_ROWS the pair strategy's counts stand for the listed
    client ceiling: both give the same figures."""
    for n in (3, 4, 9):
        cfg, topo = resolve_planned(
            None, {"launcher.nodes": n, "launcher.type": "local", "collect.pairs": pairs}, groups=2
        )
        listed, counted = forecast(cfg, topo), forecast(cfg, topo, list_rows=0)
        assert listed.listed and not counted.listed
        assert {**listed.as_dict(), "listed": None} == {**counted.as_dict(), "listed": None}, n


def test_a_topology_file_gives_the_nodes_and_their_topology(tmp_path):
    """--topology reads the file as collect.topology = file does (the
    topology package's reader): a Topology of the planned nodes, recorded in
    the config as a run records it."""
    conf = tmp_path / "topology.conf"
    conf.write_text(
        "# two leaves under a spine\nSwitchName=s0 Nodes=n[0-4]\nSwitchName=s1 Nodes=n[5-7]  # last\n"
        "SwitchName=spine Switches=s[0-1]\n"
    )
    cfg, topo = resolve_planned(None, {"launcher.type": "local"}, topology=str(conf))
    assert [nd["host"] for nd in cfg["nodes"]] == [f"n{i}" for i in range(8)]
    assert isinstance(topo, Topology) and topo.source == "file"
    assert topo.switch == ["s0"] * 5 + ["s1"] * 3 and cfg["topology"] == topo.to_dict()
    assert forecast(cfg, topo).phases["collect"].pairs.by_class == {"same switch": 13, "across groups": 15}
    # Switches under groups: a class per level.
    columns = tmp_path / "hosts.txt"
    columns.write_text("n[0-1] a g0\nn[2-3] b g0\nn[4-5] c g1\n")
    cfg, topo = resolve_planned(None, {"launcher.type": "local"}, topology=str(columns))
    assert forecast(cfg).phases["collect"].pairs.by_class == {"same switch": 3, "same group": 4, "across groups": 8}


def test_sample_on_1000_nodes_in_50_groups_plans_far_fewer_pairs_and_an_interval():
    """--pairs sample: its first batch, far fewer than every pair, and the
    interval width each class would reach; the text says both."""
    args = (
        "plan",
        "--nodes",
        "1000",
        "--launcher",
        "local",
        "--groups",
        "50",
        "--set",
        "collect.pairs=sample",
        "--metrics",
        "rpc",
    )
    x = json.loads(rooftop(*args, "--json").stdout)
    p = x["phases"]["collect"]["pairs"]
    every = 1000 * 999 // 2
    assert p["strategy"] == "sample" and 1000 * 3 // 2 <= p["pairs"] < every // 100 and p["rounds"] < 100
    assert set(p["by_class"]) == {"same switch", "across groups"} and sum(p["by_class"].values()) == p["pairs"]
    assert p["interval"] == 0.05 and p["spread"] == 0.05
    assert set(p["widths"]) == set(p["by_class"]) and all(0 < w < p["interval"] for w in p["widths"].values())
    peak = x["phases"]["collect"]["stages"]["client_peak"]
    assert peak["rows"] == p["pairs"] * 5 and peak["rounds"] == p["rounds"]
    text = rooftop(*args).stdout
    line = next(li for li in text.splitlines() if "client peak pairs (sample)" in li)
    assert f"first batch {p['pairs']} pairs in {p['rounds']} rounds" in line
    assert "wider than +-5 %" in line and "same switch +-" in line and "across groups +-" in line
    # Suspects are re-measured before they are named: the plan counts that follow-up.
    assert p["follow_up"] == {"node": sample.CONFIRM_NODE_PAIRS, "link": sample.CONFIRM_LINK_PAIRS}
    assert "an expected 3 pairs per slow node, 4 pairs per slow link" in line


def test_bad_input_exits_2_naming_it(tmp_path):
    bad = tmp_path / "bad.conf"
    bad.write_text("SwitchName=s0 Nodes=n[0-3]\nLinks n0 n1\n")
    cases = [
        (["--nodes", "1"], "--nodes 1: a campaign needs at least 2 nodes"),
        ([], "--nodes N: how many nodes to plan for"),
        (
            ["--nodes", "4", "--topology", str(tmp_path / "none.conf")],
            f"--topology: cannot read {tmp_path / 'none.conf'}: No such file",
        ),
        (["--topology", str(bad)], f"--topology: {bad}:2: 'Links n0 n1' is not 'SwitchName=NAME Nodes=HOSTS'"),
        (["--nodes", "4", "--launcher", "local", "--groups", "5"], "--groups 5: must be 1..4"),
        (["--nodes", "4"], "--nodes 4: more nodes than this machine's"),
        (
            ["--nodes", "4", "--launcher", "srun", "--cores-per-node", "0"],
            "--cores-per-node 0: a node needs at least 1 core",
        ),
    ]
    for args, message in cases:
        p = rooftop("plan", *args, check=False)
        assert p.returncode == 2 and p.stderr.startswith(f"rooftop plan: {message}"), (args, p.stderr)
        assert p.stdout == ""


def test_the_docs_plan_table_is_what_plan_prints():
    """docs/measurement.md's table for 17, 128 and 1,000 nodes, as
    scripts/plan_table.py makes it from `rooftop plan --json` now."""
    root = Path(__file__).resolve().parents[2]
    table = docs_table("plan_table")
    assert "| 1,000 | rounds (50 groups) | 499,500 in 999 |" in table
    assert table in (root / "docs" / "measurement.md").read_text(), "run scripts/plan_table.py into docs/measurement.md"


def test_the_17_node_suite_plans_pairs_sharing_cores_at_once_one_window_each():
    """benchmarks/suite.py's settings (issue 31): 17 emulated nodes sharing
    2 cores (as 'cluster up --cores-per-node 2' gives them), every process
    blocking. collect.pairs_share_cores lets a round hold pairs whose nodes
    share cores (without it, one pair a round), and collect.pair_windows =
    1 measures each pair for one window; the key is refused unless every
    process blocks."""
    from rooftop.stages.pairs import sample

    over = {"launcher.nodes": 17, "launcher.type": "netns", "metrics": ["rpc"], "collect.pairs": "sample"}
    over |= {"engine.server_progress": "block", "engine.client_progress": "block"}
    cfg, topo = resolve_planned(None, over, groups=3)
    for n in cfg["nodes"]:
        n["cores"] = [0, 1]
    alone = sample.expected(cfg, topo)
    assert (alone.pairs, alone.rounds, alone.most_at_once) == (26, 26, 1)
    cfg["collect"] |= {"pairs_share_cores": True, "pair_windows": 1}
    shared = sample.expected(cfg, topo)
    # Across groups, one pair per group link at a time: 10 rounds of up to 7 pairs.
    assert (shared.pairs, shared.rounds) == (26, 10) and shared.most_at_once > 2
    placements = sample.plan(cfg)
    assert len(placements) == 10 and sum(len(p.measurements) for p in placements) == 10
    assert sum(len(m.pairs or ()) for p in placements for m in p.measurements) == 26
    assert {m.windows for p in placements for m in p.measurements} == {range(1)}  # a window each
    bad = rooftop("plan", "--nodes", "4", "--launcher", "local", "--set", "collect.pairs_share_cores=true", check=False)
    assert bad.returncode == 2 and "collect.pairs_share_cores: needs engine.server_progress = block" in bad.stderr


def test_the_default_validation_grid_doubles_past_16_client_nodes():
    """validate.client_nodes' default: 1..16 as Carns et al., then doubling
    up to every node left, so 1,000 nodes plan 22 client counts per server
    count, not 996; up to 17 nodes the grid is 1..N-servers as before."""
    from rooftop.stages.validate import default_client_nodes

    assert default_client_nodes(16) == list(range(1, 17)) and default_client_nodes(3) == [1, 2, 3]
    assert default_client_nodes(999) == [*range(1, 17), 32, 64, 128, 256, 512, 999]
    assert default_client_nodes(64) == [*range(1, 17), 32, 64]
    x = json.loads(rooftop("plan", "--nodes", "1000", "--launcher", "local", "--metrics", "rpc", "--json").stdout)
    assert x["phases"]["validate"]["rounds"] == 4 * 22
    x = json.loads(rooftop("plan", "--nodes", "17", "--launcher", "local", "--metrics", "rpc", "--json").stdout)
    assert x["phases"]["validate"]["rounds"] == 16 + 15 + 14 + 13


def _lines_run(fn) -> int:
    """Lines of rooftop's own code executed by fn() (every loop iteration
    is one more): the plan's work, counted, not timed."""
    import sys
    from pathlib import Path

    import rooftop

    ours = str(Path(rooftop.__file__).parent)
    count = 0

    def local(frame, event, arg):
        nonlocal count
        count += event == "line"
        return local

    def call(frame, event, arg):
        return local if frame.f_code.co_filename.startswith(ours) else None

    before = sys.gettrace()
    sys.settrace(call)
    try:
        fn()
    finally:
        sys.settrace(before)
    return count


def test_the_plans_work_grows_with_the_nodes_not_their_square():
    """Issue 42: `plan` took 80 s at 10,000 nodes and grew as N squared (the
    sample's first batch listed every node for every pair it drew, and each
    pair looked at every round before its own). Doubling the nodes now
    about doubles the lines the plan runs; as N squared they were 3.3 times
    as many (400 -> 800 nodes), and 100,000 nodes plan in seconds."""
    from rooftop.stages.pairs import sample

    def work(n: int) -> int:
        cfg, topo = resolve_planned(
            None,
            {"launcher.nodes": n, "launcher.type": "local", "collect.pairs": "sample", "metrics": ["rpc"]},
            groups=8,
        )
        sample._first_draw_of.cache_clear()
        return _lines_run(lambda: forecast(cfg, topo))

    small, large = work(400), work(800)
    assert large < 2.4 * small, (small, large)


def test_the_plan_names_where_each_constant_was_measured_and_a_launcher_it_was_not():
    """Issue 43: a plan's fixed costs say where they come from (launcher,
    machine, date), and a plan for a launcher they were not measured with
    says so; more nodes than this machine holds, with no launcher named,
    is refused with the flag to add."""
    text = rooftop("plan", "--nodes", "1000", "--launcher", "srun", "--cores-per-node", "64", "--metrics", "rpc").stdout
    for c in AGENTS.constants():
        assert f"  {c.name} {c.value:g}: {c.measured}" in text
    assert "note: these constants were measured with the local and netns launcher(s)" in text
    assert "on a 2-core VM, not with srun" in text
    x = json.loads(rooftop("plan", "--nodes", "1000", "--launcher", "srun", "--metrics", "rpc", "--json").stdout)
    assert x["constants_measured"] == {c.name: c.measured for c in AGENTS.constants()}
    assert x["constants_launchers"] == ["local", "netns"]
    local = rooftop("plan", "--nodes", "2", "--metrics", "rpc").stdout
    assert "note: these constants" not in local
    p = rooftop("plan", "--nodes", "1000", "--metrics", "rpc", check=False)
    assert p.returncode == 2 and not p.stdout
    assert "--nodes 1000: more nodes than this machine's" in p.stderr and "--launcher srun" in p.stderr


def test_plan_from_a_run_prices_with_that_runs_own_fixed_costs(tmp_path):
    """Issue 43: `plan --from RUN` scales every constant by what the run
    measured outside its windows over what the constants gave for it, and
    names that run as their source; an interrupted run is refused."""
    import synthetic
    from rooftop.campaign.forecast import calibration, forecast
    from rooftop.store.db import Store

    store, run = synthetic.uniform_run(tmp_path)
    cfg = store.get_run(run).config
    own = forecast(cfg)
    phases = [own.phases[p] for p in cfg.get("stages") or ["collect"]]
    fixed = sum(e.overhead_s for e in phases)
    rest = sum(e.total_s - e.overhead_s for e in phases)
    store.db.execute("UPDATE runs SET wall_s = ? WHERE id = ?", (rest + 3 * fixed, run))  # thrice the constants'
    store.db.commit()
    mode = calibration(store.get_run(run))
    base = AGENTS.constants()
    assert [c.value for c in mode.constants()] == pytest.approx([3 * c.value for c in base])
    assert all(f"calibrated on run {run} (local, 4 nodes" in c.measured for c in mode.constants())
    args = ("plan", "--nodes", "1000", "--launcher", "srun", "--metrics", "rpc", "--results", str(tmp_path / "res"))
    plain = json.loads(rooftop(*args, "--json").stdout)
    fit = json.loads(rooftop(*args, "--from", "latest", "--json").stdout)
    assert fit["constants"] == {k: pytest.approx(3 * v) for k, v in plain["constants"].items()}
    assert fit["total_s"] > plain["total_s"] and fit["constants_launchers"] == ["local"]
    text = rooftop(*args, "--from", run).stdout
    assert f"calibrated on run {run}" in text and "measured with the local launcher(s), not with srun" in text
    store.db.execute("UPDATE runs SET status = 'interrupted' WHERE id = ?", (run,))
    store.db.commit()
    Store(tmp_path / "res", create=False)  # still readable
    p = rooftop(*args, "--from", run, check=False)
    assert p.returncode == 2 and f"--from {run}: the run is interrupted" in p.stderr
