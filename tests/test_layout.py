"""The layout table (docs/layout.md) matches the tree, one line per folder: every
folder of src/rooftop has its row, every top-level module is named in the
row of the shared modules, and every path the table lists exists. Each
package's own docstring names its modules."""

from __future__ import annotations

import ast
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


def test_every_package_docstring_names_its_modules():
    """Each package's __init__ docstring names every module and subfolder
    of the package by its bare name (not only inside a dotted path), so a
    reader of the package learns what each file is for. The top-level
    package is docs/layout.md's, checked above."""
    pkg = ROOT / "src" / "rooftop"
    unnamed = {}
    for init in sorted(pkg.rglob("__init__.py")):
        folder = init.parent
        if folder == pkg:
            continue
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        names = {p.stem for p in folder.glob("*.py") if p.name != "__init__.py"}
        names |= {p.name for p in folder.iterdir() if p.is_dir() and p.name != "__pycache__"}
        missing = sorted(n for n in names if not re.search(rf"(?<![\w.]){re.escape(n)}(?!\w)", doc))
        if missing:
            unnamed[str(folder.relative_to(pkg))] = missing
    assert not unnamed, f"package docstrings that do not name these modules: {unnamed}"
