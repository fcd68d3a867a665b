"""The README's layout table matches the tree: every Python module or
package of src/rooftop and every engine source file (stem) is named in it,
and every top-level folder it lists exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def layout() -> str:
    text = (ROOT / "README.md").read_text()
    return text.split("## Layout", 1)[1].split("\n## ", 1)[0]


def test_every_module_and_engine_file_is_in_the_layout_table():
    table = layout()
    names = {
        p.stem
        for p in (ROOT / "src" / "rooftop").iterdir()
        if not p.name.startswith("__") and (p.suffix == ".py" or p.is_dir())
    }
    names |= {p.stem for p in (ROOT / "engine" / "src").iterdir() if p.suffix in (".cpp", ".hpp")}
    missing = sorted(n for n in names if f"`{n}`" not in table and f"`{n}/`" not in table)
    assert not missing, f"README layout table does not name: {missing}"


def test_every_listed_folder_exists():
    for path in re.findall(r"^\| `([^`]+/)`", layout(), flags=re.M):
        assert (ROOT / path).is_dir(), path
