"""The machine named in every run (issue 43, item 5), from a real collect:
read where the engines run (the local launcher's logical nodes are one
machine: read once, by node 0's agent), stored in the run's environment,
exported (schema-valid) and shown in the report's environment section."""

from __future__ import annotations

import html
import json
import re
import sqlite3

import jsonschema
import pytest
from campaign_util import QUICK, rooftop

from rooftop import export
from rooftop.engine import machine


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    res = tmp_path_factory.mktemp("machine") / "res"
    # Busy CI runners: a window shared with other work still counts here
    # (engine.foreign_cpu_gate), the report needs its ceilings.
    p = rooftop(
        "collect",
        "--metrics",
        "rpc",
        *QUICK,
        "--set",
        "engine.foreign_cpu_gate=1000",
        "--wait-lock",
        "600",
        "--results",
        str(res),
    )
    return res, p.stdout.strip().splitlines()[-1]


def test_collect_stores_the_machine_read_on_its_nodes(run, validate):
    res, run_id = run
    db = sqlite3.connect(res / "rooftop.db")
    env = json.loads(db.execute("SELECT environment FROM runs WHERE id = ?", (run_id,)).fetchone()[0])
    m = env["machine"]
    assert re.fullmatch("[0-9a-f]{12}", m["identity"]), m
    assert m["summary"] == machine.summary(m["nodes"]) and machine.identity(m["summary"]) == m["identity"]
    assert [n["node"] for n in m["nodes"]] == [0, 1] and not any("error" in n for n in m["nodes"])
    # One machine: one document, node 0's, stands for both logical nodes.
    docs = sorted(p.name for p in (res / run_id / "machine").glob("node-*.json"))
    assert docs == ["node-0.json"], docs
    doc = validate(json.loads((res / run_id / "machine" / "node-0.json").read_text()))
    assert all({**n, "node": 0} == {"node": 0, **doc["result"]} for n in m["nodes"])
    assert isinstance(doc["result"]["cpu"]["cores"], int) and doc["result"]["libfabric"]["provider"]


def test_export_and_report_carry_the_machine(run):
    res, run_id = run
    doc = json.loads(rooftop("export", run_id, "--format", "json", "--results", str(res)).stdout)
    jsonschema.validate(doc, export.schema("export"))
    m = doc["environment"]["machine"]
    assert doc["schema_version"] == export.SCHEMA_VERSION and m["nodes"][0]["cpu"]["model"]
    broken = json.loads(json.dumps(doc))
    del broken["environment"]["machine"]["nodes"][0]["nics"]  # a node neither read nor saying why
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, export.schema("export"))
    # The report's pages, without drawing its figures (what `rooftop report` writes).
    from rooftop import results
    from rooftop.report import html_page, markdown
    from rooftop.store.db import Store

    got = results.load(Store(res, create=False), run_id, ())
    text = html_page(got, {})
    section = text[text.index('id="environment"') :]
    assert f"[{m['identity']}]" in section and 'id="machine"' in section
    assert html.escape(m["nodes"][0]["cpu"]["model"]) in section and "n0, n1" in section
    assert f"- machine {m['nodes'][0]['cpu']['model']}" in markdown(got, {}, res)


def test_a_node_that_cannot_be_read_is_named_and_the_campaign_goes_on(tmp_path):
    """An engine whose `machine` command fails (an engine.path older than
    it, a node that cannot run it): the run is measured all the same, and
    its record names each node's reason instead of an identity."""
    import os
    import shlex

    from rooftop.engine.base import engine_path

    wrapper = tmp_path / "rooftop-engine"
    wrapper.write_text(f'#!/bin/sh\n[ "$1" = machine ] && exit 1\nexec {shlex.quote(engine_path())} "$@"\n')
    wrapper.chmod(0o755)
    res = tmp_path / "res"
    env = dict(os.environ, ROOFTOP_ENGINE=str(wrapper))
    args = ["--metrics", "rpc", "--duration", "0.3", "--warmup", "0.1", "--windows", "1", "--wait-lock", "600"]
    p = rooftop("collect", *args, "--set", "engine.launch=per-placement", "--results", str(res), env=env, check=False)
    run_id = p.stdout.strip().splitlines()[-1]
    db = sqlite3.connect(res / "rooftop.db")
    env_doc, status = db.execute("SELECT environment, status FROM runs WHERE id = ?", (run_id,)).fetchone()
    m = json.loads(env_doc)["machine"]
    assert status == "complete" and db.execute("SELECT COUNT(*) FROM samples").fetchone()[0] > 0, p.stderr
    assert m["identity"] is None and [n["node"] for n in m["nodes"]] == [0, 1], m
    assert all(n["error"].startswith("no document (exit code 1); see ") for n in m["nodes"]), m["nodes"]
    from rooftop.report.parts import machine_text
    from rooftop.store.db import Store

    assert machine_text({"machine": m}).startswith("not read on any node")
    jsonschema.validate(export.json_doc(Store(res, create=False), run_id), export.schema("export"))
