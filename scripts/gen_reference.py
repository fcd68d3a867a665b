"""Writes the documentation's reference pages from the code, so they cannot
drift from it: docs/reference/config-keys.md (what `rooftop config keys`
prints, one section per key group) and docs/reference/commands.md (every
`rooftop` command's and subcommand's --help).

Run it before `mkdocs build` (scripts/test.sh does), or let MkDocs run it:
mkdocs.yml names this file as a hook (on_pre_build). It documents the code of
this tree (src/ first on the path), not an installed copy. The pages are
build output (.gitignore), never edited by hand.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "reference"
#: Help is wrapped at this width whatever the terminal, so pages do not
#: depend on who built them.
WIDTH = "100"


def _rooftop():
    src = str(ROOT / "src")
    if sys.path[0] != src:
        sys.path.insert(0, src)
    os.environ["COLUMNS"] = WIDTH
    return importlib.import_module("rooftop.cli.main")


def config_keys_text() -> str:
    """Exactly what `rooftop config keys` prints."""
    cli_main = _rooftop()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = cli_main.main(["config", "keys"])
    if rc not in (0, None):
        raise SystemExit(f"gen_reference: `rooftop config keys` exited {rc}")
    return out.getvalue()


def config_keys_page() -> str:
    """The keys grouped by their first part (fabric, engine, collect, ...),
    each group in the order `rooftop config keys` gives."""
    groups: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in config_keys_text().splitlines():
        if line and not line[0].isspace():
            current = groups.setdefault(line.split(".", 1)[0].split()[0], [])
        if current is None:
            raise SystemExit(f"gen_reference: `rooftop config keys` output starts with a continuation: {line!r}")
        current.append(line)
    parts = [
        "# Config keys\n",
        "Every key rooftop reads, with its type, default and meaning, generated from",
        "the code (`rooftop config keys` prints the same). Set them in a config file",
        "(`--config FILE`, JSON or TOML), with `--set KEY=VALUE`, or with the flag of",
        "the same name; keys marked *only* are read by that command alone. Unknown",
        "keys, wrong types and impossible values are errors that name the key. How",
        "they are used: [Measure a cluster](../measure-a-cluster.md#options-and-config-files).\n",
    ]
    for name, lines in groups.items():
        parts += [f"## {name}\n", "```text", *lines, "```\n"]
    return "\n".join(parts)


def _commands(parser: argparse.ArgumentParser, prog: str):
    """(command line, parser) for the parser and each subcommand, depth first."""
    yield prog, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, f"{prog} {name}")


def commands_page() -> str:
    cli_main = _rooftop()
    parts = [
        "# Commands\n",
        "Every `rooftop` command's `--help`, generated from the code. `rooftop engine`",
        "passes its arguments to `rooftop-engine`, whose commands are described in",
        "[The engine](../engine.md) (`rooftop-engine --help`).\n",
    ]
    for prog, parser in _commands(cli_main.build_parser(), "rooftop"):
        parser.prog = prog
        parts += [f"## `{prog}`\n", "```text", parser.format_help().rstrip(), "```\n"]
    return "\n".join(parts)


def write() -> list[Path]:
    OUT.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in (("config-keys.md", config_keys_page()), ("commands.md", commands_page())):
        path = OUT / name
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
        written.append(path)
    return written


def on_pre_build(config, **kwargs) -> None:
    """MkDocs hook: the pages exist, and are current, before the build reads docs/."""
    write()


if __name__ == "__main__":
    for p in write():
        print(p.relative_to(ROOT))
