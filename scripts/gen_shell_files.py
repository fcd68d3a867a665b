"""Writes rooftop's shell completion (bash, zsh) and man pages from its
command-line parser, so they cannot drift from it:

  share/bash-completion/completions/rooftop   (shtab)
  share/zsh/site-functions/_rooftop           (shtab)
  share/man/man1/rooftop.1                    (argparse-manpage; the command list)
  share/man/man1/rooftop-COMMAND.1            (one page per command: man rooftop-collect)

The files are committed (a checkout has them without these tools) and
installed with the package into the venv's share/ (engine/CMakeLists.txt):
man finds share/man next to a bin/ on PATH, bash-completion finds
share/bash-completion next to the command. Run it after changing a flag or
a help text; `--check` writes nothing and exits 1 naming the files that
differ (tests/release/test_shell_files.py runs it).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_reference  # noqa: E402  (the parser of this tree's code, help at a fixed width)

ROOT = gen_reference.ROOT
SHARE = ROOT / "share"


def _release_date() -> str:
    """The date of the newest release in CHANGELOG.md (the pages' date: the
    same text whenever and wherever they are regenerated)."""
    m = re.search(r"^## \[\d+\.\d+\.\d+\] - (\d{4}-\d{2}-\d{2})", (ROOT / "CHANGELOG.md").read_text(), re.M)
    return m.group(1) if m else "unreleased"


def _roff(text: str) -> str:
    """Text as roff, kept as written (.nf): a raw-formatted help's tables and examples."""
    from argparse_manpage.manpage import _markup

    lines = [("\\&" + line if line.startswith((".", "'")) else line) for line in _markup(text).splitlines()]
    return "\n".join([".nf", *lines, ".fi", ""])


def _sections(epilog: str) -> list[tuple[str, str]]:
    """An epilog's blocks as (heading, text): a block whose first line is a
    heading ("examples:") is that section, any other one is NOTES."""
    out = []
    for block in re.split(r"\n\s*\n", epilog.strip("\n")):
        first, _, rest = block.partition("\n")
        if re.fullmatch(r"[a-z][a-z ]{1,30}:", first.strip()) and rest:
            out.append((first.strip().rstrip(":"), rest))
        else:
            out.append(("notes", block))
    return out


def _manpage(parser: argparse.ArgumentParser, prog: str, summary: str, version: str, date: str) -> str:
    """One page: NAME (prog - summary), SYNOPSIS, DESCRIPTION, OPTIONS, and
    the epilog's sections; raw-formatted help (RawDescriptionHelpFormatter)
    kept as written."""
    from argparse_manpage.manpage import Manpage

    parser.prog = prog
    raw = issubclass(parser.formatter_class, argparse.RawDescriptionHelpFormatter)
    description, epilog = parser.description, parser.epilog
    if raw:
        parser.description = parser.epilog = None
    page = Manpage(parser)
    page.prog = prog.replace(" ", "-")  # the page's name: rooftop-collect(1)
    page.date, page.source, page.manual = date, f"rooftop {version}", "rooftop manual"
    page.description = summary
    if raw and description:
        page.add_section("description", "=", _roff(description))
    if raw and epilog:
        for heading, text in _sections(epilog):
            page.add_section(heading, ">", _roff(text))
    return str(page)


def _completable(cli_main) -> argparse.ArgumentParser:
    """The parser, its command list shown (`rooftop --help` lists the
    commands in groups of its own and hides argparse's list, which shtab
    would then skip)."""
    parser = cli_main.build_parser()
    _show_commands(parser)
    return parser


def _show_commands(parser: argparse.ArgumentParser) -> None:
    """Every subcommand, at every depth, listed with its parser (shtab
    completes the options of the listed ones only)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            action.help = action.help if action.help != argparse.SUPPRESS else "the command"
            listed = {a.dest for a in action._choices_actions}
            for name, sub in action.choices.items():
                if name not in listed:
                    action._choices_actions.append(action._ChoicesPseudoAction(name, (), sub.description or ""))
                _show_commands(sub)


def files() -> dict[Path, str]:
    """{path: text} of every generated file."""
    import shtab

    cli_main = gen_reference._rooftop()
    from rooftop import __version__
    from rooftop.cli.common import CommandParser

    date = _release_date()
    out = {
        SHARE / "bash-completion" / "completions" / "rooftop": shtab.complete(_completable(cli_main), "bash"),
        SHARE / "zsh" / "site-functions" / "_rooftop": shtab.complete(_completable(cli_main), "zsh"),
    }
    man = SHARE / "man" / "man1"
    out[man / "rooftop.1"] = _manpage(
        cli_main.build_parser(), "rooftop", "empirical rooflines for distributed data services", __version__, date
    )
    # Each command's parser with its one line of help (the top page's list).
    top = argparse.ArgumentParser(prog="rooftop")
    listed = cli_main._Listed(top.add_subparsers(parser_class=CommandParser))
    for _, add in cli_main.COMMANDS:
        add(listed)
    for name, sub in listed.sub.choices.items():
        summary = listed.help[name].replace("%%", "%")
        out[man / f"rooftop-{name}.1"] = _manpage(sub, f"rooftop {name}", summary, __version__, date)
    return out


def main(argv: list[str]) -> int:
    check = "--check" in argv
    want = files()
    stale = [p for p, text in want.items() if not p.is_file() or p.read_text() != text]
    extra = [p for d in {p.parent for p in want} if d.is_dir() for p in d.iterdir() if p not in want]
    if check:
        for p in stale + extra:
            print(f"{p.relative_to(ROOT)}: {'not what the parser gives' if p in stale else 'no such command'}")
        if stale or extra:
            print("regenerate: python scripts/gen_shell_files.py", file=sys.stderr)
        return 1 if stale or extra else 0
    for p in extra:
        p.unlink()
    for p in stale:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(want[p])
        print(p.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
