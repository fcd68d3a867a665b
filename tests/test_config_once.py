"""The config read one way (issue 44, item 2): a stored run's config is
brought up to date once, where the store loads it (renamed keys, keys
declared since at their default), so its readers index it plainly; every
default is written once, in its Key; the results folder and the default
fabric are one constant each; fabric.provider is the fabric of audit,
probe and nics too."""

from __future__ import annotations

import ast
import importlib
import json
from pathlib import Path

import pytest

from rooftop.config.catalog import DEFAULT_RESULTS, KEY_BY_PATH, KEYS
from rooftop.config.files import defaults, get_key, up_to_date
from rooftop.engine.base import DEFAULT_FABRIC
from rooftop.store.db import Store

SRC = Path(__file__).resolve().parents[1] / "src" / "rooftop"

#: The modules that register the studies' keys (config.catalog.register).
STUDY_KEY_MODULES = (
    "rooftop.audit.keys",
    "rooftop.bursts.keys",
    "rooftop.history.keys",
    "rooftop.interference.keys",
    "rooftop.interference.loads",
    "rooftop.learn.keys",
    "rooftop.probe",
)


def _old_config() -> dict:
    """A config as a run stored it before engine.foreign_cpu_gate existed
    and while collect.windows was spelt collect.samples."""
    cfg = defaults()
    del cfg["engine"]["foreign_cpu_gate"]
    cfg["collect"]["samples"] = cfg["collect"].pop("windows") + 2  # a value of its own, kept
    cfg["nodes"] = []
    return cfg


def test_a_stored_config_loads_up_to_date_once(tmp_path):
    store = Store(tmp_path)
    run_id = store.new_run(_old_config(), {})
    cfg = store.get_run(run_id).config
    assert "samples" not in cfg["collect"] and cfg["collect"]["windows"] == KEY_BY_PATH["collect.windows"].default + 2
    assert cfg["engine"]["foreign_cpu_gate"] == KEY_BY_PATH["engine.foreign_cpu_gate"].default
    for k in KEYS:  # every key indexes plainly: no reader needs a default
        get_key(cfg, k.path)
    assert up_to_date(cfg) == cfg  # once is enough: nothing left to bring up to date
    stored = json.loads(store.db.execute("SELECT config FROM runs WHERE id = ?", (run_id,)).fetchone()[0])
    assert "foreign_cpu_gate" not in stored["engine"]  # the stored row is kept as written


def test_up_to_date_fills_a_study_section_the_run_has_and_no_other():
    importlib.import_module("rooftop.audit.keys")
    cfg = up_to_date({"audit": {"repeats": 7}})
    assert cfg["audit"]["repeats"] == 7 and cfg["audit"]["duration"] == KEY_BY_PATH["audit.duration"].default
    assert "bursts" not in cfg and "probe" not in cfg  # a study section only where the run has one


def _restated_defaults() -> list[str]:
    """Every `.get("leaf", literal)` in the package whose literal is the
    default of a key of that leaf name: a Key's default restated where it is
    read."""
    for m in STUDY_KEY_MODULES:
        importlib.import_module(m)
    by_leaf: dict[str, list] = {}
    for path, key in KEY_BY_PATH.items():
        by_leaf.setdefault(path.rsplit(".", 1)[-1], []).append(key)
    found = []
    for f in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get"
                and len(node.args) == 2
                and isinstance(node.args[0], ast.Constant)
                and node.args[0].value in by_leaf
            ):
                continue
            try:
                default = ast.literal_eval(node.args[1])
            except ValueError:
                continue
            same = [k.path for k in by_leaf[node.args[0].value] if k.default == default and default is not None]
            if same:
                found.append(f"{f.relative_to(SRC)}:{node.lineno}: {ast.unparse(node)} restates {same[0]}'s default")
    return found


def test_no_reader_restates_a_key_default():
    assert _restated_defaults() == []


def _numbers_for_keys() -> list[str]:
    """Every `.get("leaf", <number>)` in the package whose leaf names a key
    (of any section), whatever the number: a key the config resolves (those
    declared without a default, such as validate.servers_per_node, too) is
    read plainly, and a number there is a second default. A dict that is
    not a config section (an engine document, a sample row, a cluster
    state, a service spec's table) reads its own fields, whose names are no
    key's."""
    for m in STUDY_KEY_MODULES:
        importlib.import_module(m)
    leaves = {path.rsplit(".", 1)[-1] for path in KEY_BY_PATH}
    found = []
    for f in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get"
                and len(node.args) == 2
                and isinstance(node.args[0], ast.Constant)
                and node.args[0].value in leaves
                and isinstance(node.args[1], ast.Constant)
                and type(node.args[1].value) in (int, float)
            ):
                found.append(f"{f.relative_to(SRC)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_reader_gives_a_key_a_number_of_its_own():
    assert _numbers_for_keys() == []


def test_the_scan_finds_a_number_given_to_a_key(tmp_path, monkeypatch):
    bad = tmp_path / "rooftop"
    bad.mkdir()
    (bad / "reader.py").write_text(
        'def x(params, base):\n    return params.get("servers_per_node", base.get("servers_per_node", 1))\n'
    )
    monkeypatch.setattr(__import__(__name__), "SRC", bad)
    assert _numbers_for_keys() == ["reader.py:2: base.get('servers_per_node', 1)"]


def test_a_run_configs_keys_are_indexed_plainly():
    """cfg["engine"].get("lease") or cfg.get("binding"): a reader that doubts
    a key is there, where every key is (resolved, or brought up to date)."""
    for m in STUDY_KEY_MODULES:
        importlib.import_module(m)
    doubted = []
    for f in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                continue
            on, leaf = node.func.value, node.args[0].value
            path = None
            if isinstance(on, ast.Subscript) and isinstance(on.slice, ast.Constant) and _names_a_config(on.value):
                path = f"{on.slice.value}.{leaf}"
            elif _names_a_config(on):
                path = leaf
            if path in KEY_BY_PATH:
                doubted.append(f"{f.relative_to(SRC)}:{node.lineno}: {ast.unparse(node)}")
    assert doubted == []


def _names_a_config(node: ast.expr) -> bool:
    """cfg, config, run.config, self.cfg, ..."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return name in ("cfg", "config")


def test_the_scan_finds_a_restated_default(tmp_path, monkeypatch):
    bad = tmp_path / "rooftop"
    bad.mkdir()
    (bad / "reader.py").write_text('def lease(cfg):\n    return cfg["engine"].get("lease", 10.0)\n')
    monkeypatch.setattr(__import__(__name__), "SRC", bad)
    assert _restated_defaults() == ["reader.py:2: cfg['engine'].get('lease', 10.0) restates engine.lease's default"]


@pytest.mark.parametrize("literal", [DEFAULT_RESULTS, DEFAULT_FABRIC])
def test_the_results_folder_and_default_fabric_are_written_once(literal):
    where = [
        f"{f.relative_to(SRC)}:{n.lineno}"
        for f in sorted(SRC.rglob("*.py"))
        for n in ast.walk(ast.parse(f.read_text()))
        if isinstance(n, ast.Constant) and n.value in (literal, literal.removeprefix("./"))
    ]
    assert len(where) == 1, where


def _site_config(tmp_path) -> str:
    f = tmp_path / "site.toml"
    f.write_text('[fabric]\nprovider = "ofi+cxi"\n')
    return str(f)


def test_a_site_fabric_reaches_audit_probe_and_nics(tmp_path):
    from rooftop.cli import audit, nics, tools

    site = _site_config(tmp_path)
    assert audit.options(site, {})["fabric"] == "ofi+cxi"
    assert tools.probe_fabrics(site, {})[0] == ["ofi+cxi", "ofi+shm"]
    assert nics.fabric(site, {}) == "ofi+cxi"
    # --fabric (an override of fabric.provider) wins over the file, the same for each
    given = {"fabric.provider": "ofi+verbs"}
    assert audit.options(site, given)["fabric"] == "ofi+verbs"
    assert tools.probe_fabrics(site, {**given, "probe.compare": []})[0] == ["ofi+verbs"]
    assert nics.fabric(site, given) == "ofi+verbs"
    assert nics.fabric(None, {}) == DEFAULT_FABRIC


def test_the_fabric_has_one_key():
    for m in STUDY_KEY_MODULES:
        importlib.import_module(m)
    assert [
        p for p in KEY_BY_PATH if "fabric" in p and not p.startswith("fabric.")
    ] == []  # audit.fabric, probe.fabrics: gone
