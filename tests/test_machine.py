"""The machine named in every run (issue 43, item 5): `rooftop-engine
machine` describes this node (every key there, typed; a NIC without a
device, lo, has nulls, not missing keys); a machine's identity hashes what
makes two machines the same, not their host names nor their node count;
and `history`, `check` and `compare` say when two runs were measured on
different machines, which a run edited from another's shows (two machines
are not at hand here), while runs still compare: a libfabric upgrade is
what a check is for."""

from __future__ import annotations

import copy
import json
import re

import pytest

import synthetic
from rooftop.cli.main import main
from rooftop.engine import machine
from rooftop.engine.commands import run_engine
from rooftop.history import series
from rooftop.store.records import now_iso


@pytest.fixture(scope="module")
def doc():
    return run_engine(["machine", "--fabric", "ofi+tcp"], timeout=60)


def test_the_engine_describes_this_node(doc, validate):
    validate(doc)
    r = doc["result"]
    assert doc["role"] == "machine" and doc["complete"] and not doc["errors"]
    cpu = r["cpu"]
    assert isinstance(cpu["model"], str) and cpu["model"], cpu
    assert all(isinstance(cpu[k], int) and cpu[k] >= 1 for k in ("sockets", "cores", "pus", "threads_per_core")), cpu
    assert cpu["pus"] == cpu["cores"] * cpu["threads_per_core"]
    assert isinstance(r["memory_bytes"], int) and r["memory_bytes"] > 2**20
    assert isinstance(r["numa_nodes"], int) and r["numa_nodes"] >= 1
    assert r["kernel"] == doc["environment"]["kernel"] and r["host"] == doc["environment"]["host"]
    assert r["hwloc"]["version"] and "core" in r["hwloc"]["summary"]
    lf = r["libfabric"]
    assert lf["version"] == doc["engine"]["libfabric_version"] and lf["provider"].startswith("tcp")
    assert re.fullmatch(r"\d+\.\d+", lf["provider_version"]) and lf["error"] is None, lf
    keys = {"name", "driver", "model", "pci", "firmware", "speed_mbps", "numa_node"}
    assert r["nics"] and all(set(n) == keys for n in r["nics"]), r["nics"]
    # One NIC asked for: that one. lo has no device: its keys are there, null.
    lo = run_engine(["machine", "--fabric", "ofi+tcp", "--domain", "lo"], timeout=60)["result"]["nics"]
    assert [n["name"] for n in lo] == ["lo"] and lo[0]["pci"] is None and lo[0]["model"] is None, lo


def test_the_identity_is_the_machine_not_its_host_names(doc):
    one = machine.node_record(0, "a", doc)
    assert one["node"] == 0 and "error" not in one
    elsewhere = dict(copy.deepcopy(one), host="another-host", kernel="Linux 9.9 x86_64")
    many = [dict(one, node=i) for i in range(3)]
    m = machine.machine([one], now_iso())
    assert re.fullmatch("[0-9a-f]{12}", m["identity"])
    assert machine.machine([elsewhere], now_iso())["identity"] == m["identity"]  # hosts, kernel: not compared
    assert machine.machine(many, now_iso())["identity"] == m["identity"]  # 1 node or 3 alike: one machine
    upgraded = copy.deepcopy(one)
    upgraded["libfabric"]["version"] = "9.99"
    other = machine.machine([upgraded], now_iso())
    assert other["identity"] != m["identity"]
    assert machine.differences(m["summary"], other["summary"]) == [f"libfabric: {one['libfabric']['version']} vs 9.99"]
    # A node that could not be read is named, and leaves the identity to the others.
    lost = machine.node_record(3, "b", None, "no document (exit code 1)")
    assert lost == {"node": 3, "host": "b", "error": "no document (exit code 1)"}
    assert machine.machine([one, lost], now_iso())["identity"] == m["identity"]
    assert machine.machine([lost], now_iso())["identity"] is None
    rows = machine.rows(machine.machine([*many, lost], now_iso()))
    host = doc["result"]["host"]  # where it ran, as the engine says it
    assert [r[0] for r in rows] == [f"n0-n2 ({host})", "n3 (b)"] and rows[1][1].startswith("not read")


def cli(capsys, *argv):
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_history_check_and_compare_name_runs_on_different_machines(doc, tmp_path, capsys):
    """Four comparable runs: the first without a recorded machine (an
    older rooftop), the next two on this machine, the last on an edited
    copy of it (libfabric 9.99). All stay comparable; every command names
    the change, and says nothing where it cannot know."""
    cfg = synthetic.config_for(2)
    ids = []
    for day in range(4):
        st, run = synthetic.scaled_run(tmp_path, created=f"2025-03-{day + 1:02d}T06:00:00", cfg=cfg)
        ids.append(run)
    here = machine.machine([machine.node_record(i, f"n{i}", doc) for i in range(2)], now_iso())
    nodes = [machine.node_record(i, f"n{i}", doc) for i in range(2)]
    for rec in nodes:
        rec["libfabric"]["version"] = "9.99"
    there = machine.machine(nodes, now_iso())
    for run, m in zip(ids[1:], (here, here, there)):
        st.update_environment(run, {machine.KEY: m})
    r = ("--results", str(tmp_path / "res"))
    said = f"libfabric: 9.99 vs {doc['result']['libfabric']['version']}"

    groups = list(series.history(st).values())
    assert sorted(len(g) for g in groups) == [4, 4]  # the machine does not split a series
    rc, out, _ = cli(capsys, "check", ids[3], "--against", ids[2], *r)
    assert rc == 0 and f"note: measured on a different machine than run {ids[2]} ({here['identity']}): {said}" in out
    rc, out, _ = cli(capsys, "check", ids[2], "--against", ids[1], *r)
    assert rc == 0 and "different machine" not in out, out  # the same machine
    rc, out, _ = cli(capsys, "check", ids[1], "--against", ids[0], *r)
    assert rc == 0 and "different machine" not in out, out  # the older run recorded none: nothing to say
    rc, out, _ = cli(capsys, "check", ids[3], "--against", "history", "--json", *r)
    notes = [n for m in json.loads(out)["metrics"] for n in m["notes"]]
    window = f"2 of the 3 runs of the window ({ids[1]}, {ids[2]}) were measured on a different machine"
    assert len(notes) == 2 and all(n.startswith(window) and n.endswith(said) for n in notes), notes

    rc, out, _ = cli(capsys, "history", *r)
    assert rc == 0 and out.count(f"measured on a different machine than run {ids[2]}: {said}") == 2, out
    rc, out, _ = cli(capsys, "history", "--json", *r)
    changes = [c for g in json.loads(out)["groups"] for c in g["machine_changes"]]
    assert changes == [{"run": ids[3], "after": ids[2], "differences": [said]}] * 2, changes

    rc, out, _ = cli(capsys, "compare", ids[2], ids[3], "--out-dir", str(tmp_path / "cmp"), "--format", "png", *r)
    assert rc == 0 and f"[{here['identity']}]" in out and f"[{there['identity']}]" in out, out
    line = next(x for x in out.splitlines() if "measured on different machines:" in x)
    assert f"({ids[2]}) vs " in line and line.endswith(f"libfabric: {doc['result']['libfabric']['version']} vs 9.99")


def test_a_run_resumed_on_another_machine_says_so_and_keeps_both(doc, tmp_path, monkeypatch, capsys):
    """`collect --resume` of a run on another machine than the one an
    earlier command measured on: the new record replaces the old one as
    the run's machine, keeps the old identity in `earlier`, and says so; a
    command that could read no node leaves the earlier record as it was."""
    from rooftop.campaign import machine as reading

    st, run = synthetic.uniform_run(tmp_path)
    runner = type("R", (), {"store": st, "run_id": run, "log": staticmethod(lambda msg: None)})()
    here = [machine.node_record(0, "n0", doc)]
    there = copy.deepcopy(here)
    there[0]["cpu"]["cores"] = 4096
    for nodes in (here, there, [machine.node_record(0, "n0", None, "no document (exit code 1)")]):
        reading._read.discard(run)  # another command
        monkeypatch.setattr(reading, "read_nodes", lambda r, nodes=nodes: nodes)
        reading.record(runner)
    m = st.get_run(run).environment[machine.KEY]
    first = machine.machine(here, "")["identity"]
    assert m["summary"]["cores"] == [4096] and [e["identity"] for e in m["earlier"]] == [first]
    err = capsys.readouterr().err
    assert f"run {run} was measured on another machine before (cores: {doc['result']['cpu']['cores']} vs 4096)" in err
