"""docs/extending.md is true: a metric, a launcher and a service preset
added the way it says, touching only the files it names, in a copy of the
package, are picked up everywhere (config keys and checks, --help, the
dry run's command lines, the service unit table, the preset's install
hint). Nothing is measured."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import rooftop

#: The toys' files, as the guide's sections say to write them.
TOY_METRIC = '''"""toy: a test's metric (sequential 4 KiB reads, in bytes/s)."""

from rooftop.keys import Key
from rooftop.metrics.base import Metric

METRIC = Metric(
    name="toy",
    help="a test's metric",
    unit="bytes/s",
    work="bytes",
    title=lambda cfg: "toy rate",
    op=lambda cfg: "read",
    keys=(Key("toy.size", "size", "4KiB", "bytes per toy read"),),
    client_args=lambda cfg: ["--op", "read", "--size", str(cfg["toy"]["size"])],
    default=False,
)
'''
TOY_LAUNCHER = '''"""toy: a test's launcher: this machine's first core as every node."""

import os

from rooftop.launchers.base import Launch, Launcher, LauncherSpec, Node, pinned_argvs


class ToyLauncher(Launcher):
    name = "toy"

    def __init__(self, cfg: dict):
        self.n = cfg.get("nodes") or 2

    def nodes(self) -> list[Node]:
        core = min(os.sched_getaffinity(0))
        return [Node(i, "localhost", (core,)) for i in range(self.n)]

    def launches(self, node, engine_argv, nprocs, binding, first_rank):
        return [Launch(a, node, [r]) for r, a in pinned_argvs(node, engine_argv, nprocs, binding, first_rank, True)]


SPEC = LauncherSpec("toy", "a test's launcher", ToyLauncher, default_nodes="two toy nodes", keys=("nodes",))
'''
TOY_PRESET = '''"""toy: a test's preset against the toy metric."""

from rooftop.service.presets.base import Preset

DATA = {
    "name": "toy",
    "metric": "toy",
    "operation": "4KiB",
    "server": {"command": "toy-server-not-installed --port {port}", "base_port": 30000},
    "ready": {"tcp": True},
    "client": {"command": "toy-client-not-installed {server_address}:{server_port}"},
    "rate": {"regex": "rate (?P<rate>[0-9.]+)", "unit": "MiB/s"},
}
PRESETS = (Preset("toy", "a test's preset", ("toy-server-not-installed",), "toy: pip install toy-service", DATA),)
'''


#: Each toy: its folder, its file, and its table in the folder's __init__.py
#: (a tuple the toy's entry joins).
TOYS = (
    ("metrics", TOY_METRIC, r"\((?:\w+\.METRIC, )+\w+\.METRIC\)", "toy.METRIC"),
    ("launchers", TOY_LAUNCHER, r"\((?:\w+\.SPEC, )+\w+\.SPEC\)", "toy.SPEC"),
    ("service/presets", TOY_PRESET, r"in \((?:\w+, )+\w+\)", "toy"),
)


def _add(init: Path, folder: str, table: str, entry: str) -> None:
    """The guide's table step: the toy module added to the line importing
    the table's modules, its entry to the table's tuple."""
    text = init.read_text()
    imports = "from rooftop." + folder.replace("/", ".") + " import"
    text, n = re.subn(rf"^({re.escape(imports)} [\w, ]+)$", r"\1, toy", text, count=1, flags=re.M)
    assert n == 1, f"{init}: no line '{imports} ...'"
    text, n = re.subn(table, lambda m: m.group(0)[:-1] + f", {entry})", text, count=1)
    assert n == 1, f"{init}: no table {table}"
    init.write_text(text)


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    """A copy of the package with the toy metric, launcher and preset added
    as docs/extending.md says: one new file each and its table line."""
    root = tmp_path_factory.mktemp("ext")
    pkg = root / "rooftop"
    shutil.copytree(Path(rooftop.__file__).parent, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    before = {p.relative_to(pkg): p.read_bytes() for p in pkg.rglob("*") if p.is_file()}
    for folder, text, table, entry in TOYS:
        (pkg / folder / "toy.py").write_text(text)
        _add(pkg / folder / "__init__.py", folder, table, entry)
    after = {p.relative_to(pkg): p.read_bytes() for p in pkg.rglob("*") if p.is_file()}
    touched = {str(p) for p in after if before.get(p) != after[p]}
    assert touched == {f"{folder}/{name}" for folder, *_ in TOYS for name in ("toy.py", "__init__.py")}
    return root


def _run(copy: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(copy)}
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, cwd=cwd or copy, timeout=120
    )


def _rooftop(copy: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return _run(copy, "-m", "rooftop", *args, cwd=cwd)


def test_the_toys_reach_the_tables(copy):
    p = _run(
        copy,
        "-c",
        "import json, rooftop\n"
        "from rooftop import launchers, metrics\n"
        "from rooftop.config.catalog import KEY_BY_PATH\n"
        "from rooftop.service import presets\n"
        "print(json.dumps({'pkg': rooftop.__file__, 'metrics': list(metrics.METRICS),\n"
        " 'launchers': list(launchers.LAUNCHERS), 'type': list(KEY_BY_PATH['launcher.type'].choices),\n"
        " 'metric_choices': list(KEY_BY_PATH['metrics'].choices), 'presets': presets.names(),\n"
        " 'unit': presets.spec('toy').unit}))",
    )
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    assert got["pkg"].startswith(str(copy))
    assert "toy" in got["metrics"] and "toy" in got["metric_choices"]
    assert "toy" in got["launchers"] and "toy" in got["type"]
    assert "toy" in got["presets"]
    assert got["unit"] == "bytes/s"  # the service unit table is the metric's


def test_the_commands_know_the_toys(copy, tmp_path):
    keys = _rooftop(copy, "config", "keys")
    assert keys.returncode == 0, keys.stderr
    assert re.search(r"^launcher\.type +choice \([\w|]*\btoy\b", keys.stdout, re.M)
    assert re.search(r"^toy\.size +size, default \"4KiB\"", keys.stdout, re.M)
    assert re.search(r"^metrics +list\[choice\] \([\w|]*\btoy\b", keys.stdout, re.M)
    show = _rooftop(copy, "config", "show", "--launcher", "toy", "--metrics", "toy", "--set", "toy.size=8KiB")
    assert show.returncode == 0, show.stderr
    cfg = json.loads(show.stdout)
    assert cfg["launcher"]["type"] == "toy" and len(cfg["nodes"]) == 2 and cfg["toy"]["size"] == "8KiB"
    wrong = _rooftop(copy, "config", "show", "--set", "launcher.type=toys")
    assert wrong.returncode != 0 and "toy" in wrong.stderr and "Traceback" not in wrong.stderr
    dry = _rooftop(
        copy, "collect", "--dry-run", "--launcher", "toy", "--metrics", "toy", "--set", "toy.size=8KiB",
        "--results", str(tmp_path),
    )  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    assert "--op read --size 8KiB" in dry.stdout
    assert "(toy launcher)" in dry.stderr + dry.stdout
    assert "toy" in _rooftop(copy, "service", "--help").stdout


def test_a_missing_preset_program_names_its_install_hint(copy, tmp_path):
    import synthetic
    from rooftop.store.db import Store

    run_id = Store(tmp_path / "res").new_run(synthetic.config_for(3), {"host": "h"})
    p = _rooftop(copy, "service", run_id, "--preset", "toy", "--results", str(tmp_path / "res"), cwd=tmp_path)
    assert p.returncode != 0 and "Traceback" not in p.stderr, p.stderr
    assert "toy-server-not-installed not found on PATH (toy: pip install toy-service)" in p.stderr


def test_what_a_launcher_is_asked_comes_from_its_entry(monkeypatch, tmp_path):
    """A launcher with local's entry under another name is treated as local
    everywhere that used to test the name "local" or "netns"."""
    from rooftop import emulation, launchers
    from rooftop.campaign import forecast, separable
    from rooftop.nics import policy

    twin = dataclasses.replace(launchers.LAUNCHERS["local"], name="twin")
    monkeypatch.setitem(launchers.LAUNCHERS, "twin", twin)
    cfg = {"launcher": {"type": "twin"}, "nodes": [{"cores": [0]}, {"cores": [1]}]}
    assert separable.split(cfg).startswith("2 logical nodes of 1 core each")
    assert forecast.default_cores("twin", 1) == forecast.default_cores("local", 1)
    assert emulation.physical_cores(cfg)
    cfg |= {"nic": {"policy": "all:rank"}, "fabric": {}, "engine": {"launch": "per-placement"}}
    assert policy.engine_args(cfg, tmp_path, 0)[-2:] == ["--local-rank", "{local_rank}"]
    assert launchers.spec("gone").on_this_machine is False  # a run stored by a launcher since removed
