"""Exports other tools rely on: JSON that validates against the shipped
schemas (every stage and metric), CSV whose columns keep one type whatever
the run and hold no JSON (node lists in their own long table), times with
their zone, figures of merit one per line for regex parsers (a direction
only where one is better), and the model's JSON against its schema."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from datetime import datetime, timedelta

import jsonschema
import pytest

from rooftop import export, results, stages
from test_registries import _synthetic_run

#: What Ramble's and JUBE's regex FOM parsers are given (no custom code).
FOM_LINE = re.compile(
    r"^(?P<name>[a-z_]+(?:\.[a-z_0-9]+)+): (?P<value>-?[0-9.eE+-]+) (?P<unit>\S+)"
    r"(?: \((?P<better>higher|lower) is better\))?$"
)


def cli(*args, check=True, env=None):
    return subprocess.run(
        [sys.executable, "-m", "rooftop", *args], capture_output=True, text=True, check=check, timeout=120, env=env
    )


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    return _synthetic_run(tmp_path_factory.mktemp("export"))


def test_json_of_every_stage_validates_against_the_schema(synthetic):
    st, run = synthetic
    in_chicago = dict(os.environ, TZ="CST6")  # UTC-6: the export is UTC whatever the reader's zone
    doc = json.loads(cli("export", run, "--format", "json", "--results", str(st.dir), env=in_chicago).stdout)
    jsonschema.validate(doc, export.schema("export"))
    assert doc["schema_version"] == export.SCHEMA_VERSION
    assert {s["stage"] for s in doc["samples"]} == set(stages.STAGES)
    for s in doc["samples"]:
        assert s["server_node_count"] == len(s["server_nodes"]) and isinstance(s["ceilings"], list)
    for t in [doc["created"], *(s["created"] for s in doc["samples"])]:
        assert t.endswith("+00:00") and datetime.fromisoformat(t).utcoffset() == timedelta(0), t  # UTC, its zone
    broken = dict(doc, samples=[dict(doc["samples"][0], server_nodes="0 1")])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, export.schema("export"))
    with pytest.raises(jsonschema.ValidationError):  # a time without its zone
        jsonschema.validate(dict(doc, created="2026-11-23T02:27:50"), export.schema("export"))


def test_csv_columns_keep_their_type_in_every_run(synthetic):
    st, run = synthetic
    rows = list(csv.DictReader(io.StringIO(cli("export", run, "--results", str(st.dir)).stdout)))
    assert list(rows[0]) == export.CSV_COLUMNS
    nodes = list(csv.DictReader(io.StringIO(cli("export", run, "--sample-nodes", "--results", str(st.dir)).stdout)))
    assert list(nodes[0]) == export.NODE_COLUMNS
    doc = {
        s["id"]: s
        for s in json.loads(cli("export", run, "--format", "json", "--results", str(st.dir)).stdout)["samples"]
    }
    for r in rows:
        assert not any(v.startswith(("[", "{")) for v in r.values()), r  # no JSON in a cell
        s = doc[int(r["id"])]
        for side in ("server", "client"):
            mine = [int(n["node"]) for n in nodes if n["sample_id"] == r["id"] and n["side"] == side]
            assert mine == s[f"{side}_nodes"] and int(r[f"{side}_node_count"]) == len(mine)
        assert r["ceilings"].split() == s["ceilings"] and r["ceilings"]
        assert r["created"].endswith("+00:00") and datetime.fromisoformat(r["created"]).utcoffset() == timedelta(0)
        assert not r["raw_dir"].startswith("/")


def test_raw_dir_is_relative_to_the_results_folder_wherever_collect_ran(tmp_path):
    """A real campaign run from one folder, exported from another: raw_dir
    names the documents relative to the results folder, and they are there."""
    res = tmp_path / "res"
    (tmp_path / "elsewhere").mkdir()
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "rooftop",
            "collect",
            "--metrics",
            "rpc",
            "--duration",
            "0.3",
            "--warmup",
            "0.1",
            "--windows",
            "1",
            "--results",
            "res",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    run = p.stdout.split()[-1]
    doc = json.loads(
        subprocess.run(
            [sys.executable, "-m", "rooftop", "export", run, "--format", "json", "--results", str(res)],
            cwd=tmp_path / "elsewhere",
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    jsonschema.validate(doc, export.schema("export"))
    for s in doc["samples"]:
        assert s["raw_dir"].startswith(run + "/") and list((res / s["raw_dir"]).glob("client-*.json"))


def test_fom_lines_parse_with_one_regex(synthetic):
    st, run = synthetic
    text = cli("export", run, "--format", "fom", "--results", str(st.dir)).stdout
    lines = text.splitlines()
    assert lines and all(FOM_LINE.match(l) for l in lines), [l for l in lines if not FOM_LINE.match(l)]
    foms = {m["name"]: m for m in map(FOM_LINE.match, lines)}
    res = results.load(st, run)
    for metric, r in res.rooflines.items():
        f = foms[f"{metric}.server.median"]
        assert float(f["value"]) == pytest.approx(r.server.centre, rel=1e-5)
        assert f["unit"] == r.unit and f["better"] == "higher"
        assert foms[f"{metric}.ridge.median"]["unit"] == "servers/client"
        assert foms[f"{metric}.ridge.median"]["better"] is None  # neither higher nor lower is better
    assert foms["run.samples_not_ok"]["value"] == "0" and foms["run.samples_not_ok"]["better"] == "lower"
    if "run.wall" in foms:
        assert foms["run.wall"]["better"] is None


def test_model_json_validates_for_a_run_and_for_published_parameters(synthetic):
    st, run = synthetic
    schema = export.schema("model")
    for args in ([run, "--results", str(st.dir)], ["--params", "examples/aurora-table2.json"]):
        doc = json.loads(cli("model", *args, "--json").stdout)
        jsonschema.validate(doc, schema)
        assert doc["schema_version"] == export.SCHEMA_VERSION and doc["metrics"]


def test_schemas_are_shipped_in_the_package():
    for name in ("export", "model"):
        s = export.schema(name)
        jsonschema.Draft202012Validator.check_schema(s)
