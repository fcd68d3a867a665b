"""The layout table (docs/layout.md) matches the tree, one line per folder: every
folder of src/rooftop has its row, every top-level module is named in the
row of the shared modules, and every path the table lists exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def layout() -> str:
    return (ROOT / "docs" / "layout.md").read_text()


def rows() -> dict[str, str]:
    out = {}
    for line in layout().splitlines():
        m = re.match(r"^\| ([^|]+) \| (.+) \|$", line)
        if m and m.group(1) != "path" and not m.group(1).startswith("-"):
            for path in re.findall(r"`([^`]+)`", m.group(1)):
                out[path] = m.group(2)
    return out


def test_every_folder_has_its_row_and_every_module_is_named():
    table = rows()
    pkg = ROOT / "src" / "rooftop"
    folders = sorted(p.name for p in pkg.iterdir() if p.is_dir() and (p / "__init__.py").exists())
    missing = [f for f in folders if f"src/rooftop/{f}/" not in table]
    assert not missing, f"docs/layout.md has no row for: {missing}"
    shared = table["src/rooftop/*.py"]
    modules = sorted(p.stem for p in pkg.glob("*.py") if not p.name.startswith("__"))
    unnamed = [m for m in modules if f"`{m}`" not in shared]
    assert not unnamed, f"docs/layout.md does not name the module(s): {unnamed}"


def test_every_listed_path_exists():
    for path in rows():
        if "*" in path:
            assert list(ROOT.glob(path)), path
        else:
            assert (ROOT / path).exists(), path
