"""The config key table is the one source: every key's help states the
default the code uses, the command line's choices are the table's, and
every launcher of the registry is accepted by both (issue 12: the
launcher.nodes help once said min(4, cores) where the code used min(2, ...))."""

from __future__ import annotations

import argparse
import copy
import json

import pytest

from rooftop import cli, session
from rooftop.config.catalog import KEY_BY_PATH, KEYS, VALIDATE_SERVER_NODES, _and
from rooftop.config.files import defaults, merge
from rooftop.config.resolve import build, describe_keys, resolve, resolve_grid
from rooftop.keys import ConfigError
from rooftop.launchers import BINDINGS, LAUNCHERS, LauncherError, binding_width, make_launcher
from rooftop.launchers.local import DEFAULT_NODES, usable_cores
from rooftop.launchers.mpiexec import FLAVORS


def commands() -> dict:
    return next(a for a in cli.build_parser()._actions if a.dest == "command").choices


def key_flag_actions():
    """(command, argparse action, config key) of every flag that sets a key
    (not the old spellings kept for a release: hidden, they say what to use)."""
    for name, parser in commands().items():
        mapping = parser.get_default("key_flags") or {}
        for action in parser._actions:
            if action.dest in mapping and action.help != argparse.SUPPRESS:
                yield name, action, KEY_BY_PATH[mapping[action.dest]]


def test_static_defaults_are_in_the_help_the_cli_and_config_keys_show():
    listing = describe_keys()
    for k in KEYS:
        if k.default is None:
            # Computed when the config is resolved: the help itself must say
            # how (the constants are checked against the code below).
            assert "default" in k.help, f"{k.path}: its help does not state its default"
            continue
        assert f"{k.path:30s} {k.kind}" in listing and f"default {json.dumps(k.default)}" in listing
    for command, action, k in key_flag_actions():
        if k.default is not None and k.kind != "bool":
            shown = ",".join(map(str, k.default)) if isinstance(k.default, list) else str(k.default)
            assert f"default {shown}" in action.help, (command, action.option_strings, action.help)
        assert k.path in action.help and k.help.replace("%", "%%") in action.help


def test_local_launcher_nodes_default_is_the_constant_its_help_names():
    k = KEY_BY_PATH["launcher.nodes"]
    assert f"min({DEFAULT_NODES}, cores)" in k.help
    assert "min(4" not in k.help
    cfg = build()
    assert cfg["launcher"]["type"] == "local"
    assert len(cfg["nodes"]) == cfg["launcher"]["nodes"] == min(DEFAULT_NODES, len(usable_cores()))
    # And every launcher's default is named in it.
    for spec in LAUNCHERS.values():
        assert f"{spec.name}: {spec.default_nodes}" in k.help


@pytest.mark.parametrize("n", [2, 3, 5, 6, 9])
def test_validation_grid_default_is_the_constant_its_help_names(n):
    k = KEY_BY_PATH["validate.server_nodes"]
    assert f"min({VALIDATE_SERVER_NODES}, N-1)" in k.help
    cfg = copy.deepcopy(build())
    cfg["nodes"] = [dict(cfg["nodes"][0], index=i) for i in range(n)]
    cfg["validate"]["server_nodes"] = None
    grid = resolve_grid(cfg)["validate"]["server_nodes"]
    assert grid == list(range(1, min(VALIDATE_SERVER_NODES, n - 1) + 1))
    validate_help = commands()["validate"].description
    assert f"min({VALIDATE_SERVER_NODES}, N-1)" in validate_help


@pytest.mark.parametrize("binding", BINDINGS)
def test_processes_per_node_default_is_one_per_usable_core_under_the_binding(binding):
    # Nodes of 5 cores on hosts that are not this one (nothing is started),
    # so that every binding fits whatever this machine has.
    cfg = resolve(
        merge(
            None,
            {
                "binding": binding,
                "launcher.type": "mpiexec",
                "launcher.hosts": ["n1", "n2"],
                "launcher.cores_per_node": 5,
                "fabric.domain": "eth0",
                "metrics": ["rpc"],
            },
        )
    )
    cores = min(len(n["cores"]) for n in cfg["nodes"])
    assert cores == 5
    for path in (
        "collect.servers_per_node",
        "collect.clients_per_node",
        "validate.servers_per_node",
        "validate.clients_per_node",
    ):
        assert "one per usable core under the binding" in KEY_BY_PATH[path].help, path
        stage, name = path.split(".")
        assert cfg[stage][name] == max(1, cores // binding_width(binding)), path


def test_cli_choices_are_the_config_choices():
    seen = set()
    for command, action, k in key_flag_actions():
        if k.kind == "choice":
            assert tuple(action.choices) == k.choices, (command, action.option_strings)
            seen.add(k.path)
        else:
            assert action.choices is None, (command, action.option_strings)
    assert {"launcher.type", "binding", "collect.pairs"} <= seen
    assert KEY_BY_PATH["binding"].choices == BINDINGS
    assert KEY_BY_PATH["launcher.flavor"].choices == FLAVORS


@pytest.mark.parametrize("name", list(LAUNCHERS))
def test_every_registered_launcher_is_accepted_by_config_and_cli(name):
    spec = LAUNCHERS[name]
    assert merge(None, {"launcher.type": name})["launcher"]["type"] == name
    args = cli.build_parser().parse_args(["collect", "--launcher", name])
    assert session.overrides(args)["launcher.type"] == name
    assert spec.name in KEY_BY_PATH["launcher.type"].help and spec.help in KEY_BY_PATH["launcher.type"].help
    assert set(spec.bindings) <= set(BINDINGS)
    for key in spec.keys:
        assert f"launcher.{key}" in KEY_BY_PATH, (name, key)
    # make_launcher reaches this launcher's own class: built, or refused by
    # it for what this machine lacks (no allocation, no emulated cluster).
    section = dict(
        defaults()["launcher"], type=name, hosts=["localhost", "localhost"] if "hosts" in spec.keys else None
    )
    try:
        assert make_launcher(section).name == name
    except LauncherError as e:
        assert name in str(e) or "cluster" in str(e) or "Slurm" in str(e), e


def test_every_launcher_key_is_read_by_a_launcher():
    read = {k for spec in LAUNCHERS.values() for k in spec.keys}
    for k in KEYS:
        if k.path.startswith("launcher.") and k.path != "launcher.type":
            assert k.path.split(".", 1)[1] in read, k.path
    # ... and its help names the launchers that read it.
    for k in ("hosts", "hostfile", "cores_per_node", "command", "flavor", "extra_args"):
        users = [s.name for s in LAUNCHERS.values() if k in s.keys]
        assert KEY_BY_PATH[f"launcher.{k}"].help.startswith(_and(users) + ":")
    assert _and(["a", "b", "c"]) == "a, b and c" and _and(["a"]) == "a"


def test_unknown_launcher_is_refused_naming_the_registered_ones():
    with pytest.raises(LauncherError, match="must be one of " + ", ".join(LAUNCHERS)):
        make_launcher({"type": "pbs"})
    with pytest.raises(ConfigError, match="'pbs' is not one of " + ", ".join(LAUNCHERS)):
        merge(None, {"launcher.type": "pbs"})
