"""Shell completion and man pages are generated from the parser
(scripts/gen_shell_files.py: shtab, argparse-manpage) and committed: what
is committed is what the parser gives now, and the completion completes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BASH = ROOT / "share" / "bash-completion" / "completions" / "rooftop"


def test_committed_completion_and_man_pages_match_the_parser():
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    p = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_shell_files.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert p.returncode == 0, f"{p.stdout}{p.stderr}"


def _complete(*words: str) -> list[str]:
    """What bash offers for the last word of `rooftop WORDS...`."""
    script = (
        f"source {BASH}; COMP_WORDS=(rooftop {' '.join(repr(w) for w in words)}); "
        f"COMP_CWORD={len(words)}; _shtab_rooftop; printf '%s\\n' \"${{COMPREPLY[@]}}\""
    )
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60).stdout.split()


def test_bash_completes_commands_flags_and_choices():
    assert _complete("col") == ["collect"]
    assert _complete("export", "--format", "") == ["csv", "json", "fom", "openmetrics"]
    assert "--quiet" in _complete("collect", "--q")
    assert _complete("cluster", "") == ["up", "reshape", "status", "down"]


def test_every_command_has_a_man_page():
    from rooftop.cli import build_parser

    man = ROOT / "share" / "man" / "man1"
    (sub,) = [a for a in build_parser()._actions if a.dest == "command"]
    assert {p.name for p in man.glob("*.1")} == {"rooftop.1", *(f"rooftop-{name}.1" for name in sub.choices)}
    page = (man / "rooftop-collect.1").read_text()
    assert page.startswith(".TH ROOFTOP\\-COLLECT") and "\\-\\-windows" in page
