"""The documentation's reference pages (scripts/gen_reference.py, run before
`mkdocs build --strict` in scripts/test.sh) cover the code: every config key
`--set` accepts, and every command and subcommand of `rooftop`."""

from __future__ import annotations

import argparse
import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def gen_reference():
    spec = importlib.util.spec_from_file_location("gen_reference", ROOT / "scripts" / "gen_reference.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_reference_pages_name_every_key_and_every_command():
    gen = gen_reference()
    keys_page, commands_page = gen.config_keys_page(), gen.commands_page()
    from rooftop.cli.main import build_parser
    from rooftop.config.catalog import KEY_BY_PATH

    listed = set(re.findall(r"^(\S+)\s", keys_page, flags=re.M))
    missing = sorted(set(KEY_BY_PATH) - listed)
    assert not missing, f"docs/reference/config-keys.md lacks the key(s) {missing}"

    def commands(parser, prog):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield f"{prog} {name}"
                    yield from commands(sub, f"{prog} {name}")

    names = list(commands(build_parser(), "rooftop"))
    assert "rooftop cluster up" in names
    headed = set(re.findall(r"^## `([^`]+)`$", commands_page, flags=re.M))
    assert not sorted(set(names) - headed), sorted(set(names) - headed)
    assert "usage: rooftop collect" in commands_page
