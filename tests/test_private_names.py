"""No module reaches into another package's private names (issue 44): a
name with a leading underscore is its package's own. Within one top-level
package of rooftop (rooftop.model, rooftop.cli, ...) its modules may share
them; from another package a name is made public or the public API used."""

from __future__ import annotations

import ast
from pathlib import Path

import rooftop

SRC = Path(rooftop.__file__).resolve().parent


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _package(module: str) -> str:
    """rooftop.model.exclude -> model; rooftop.keys -> keys (a top-level
    module is a package of its own)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _module(path: Path) -> tuple[str, bool]:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    init = parts[-1] == "__init__"
    return ".".join(parts[:-1] if init else parts), init


def _imported(node: ast.ImportFrom, module: str, init: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if init else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def reaches(path: Path) -> list[str]:
    """'line: name' for each private name of another rooftop package the
    module imports (from x import _y) or uses through a module it imported
    (x._y, including a dotted rooftop.x._y)."""
    module, init = _module(path)
    tree = ast.parse(path.read_text(), str(path))
    bound: dict[str, str] = {}  # a local name -> the rooftop object it stands for
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = _imported(node, module, init)
            if source != "rooftop" and not source.startswith("rooftop."):
                continue
            for a in node.names:
                bound[a.asname or a.name] = f"{source}.{a.name}"
                if _private(a.name) and _package(source) != _package(module):
                    out.append(f"{node.lineno}: from {source} import {a.name}")
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "rooftop" or a.name.startswith("rooftop."):
                    bound[a.asname or "rooftop"] = a.name if a.asname else "rooftop"
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and _private(node.attr)):
            continue
        chain, value = [], node.value
        while isinstance(value, ast.Attribute):
            chain.append(value.attr)
            value = value.value
        if isinstance(value, ast.Name) and value.id in bound:
            owner = ".".join([bound[value.id], *reversed(chain)])
            if _package(owner) != _package(module):
                out.append(f"{node.lineno}: {owner}.{node.attr}")
    return out


def test_no_module_uses_another_packages_private_names():
    found = {str(p.relative_to(SRC.parent)): r for p in sorted(SRC.rglob("*.py")) if (r := reaches(p))}
    assert not found, found


def test_the_check_sees_both_forms(tmp_path, monkeypatch):
    """An import of a private name and an attribute reaching one are seen
    across packages and allowed within one."""
    pkg = tmp_path / "rooftop"
    (pkg / "plots").mkdir(parents=True)
    (pkg / "model").mkdir()
    monkeypatch.setattr(f"{__name__}.SRC", pkg)
    plots = pkg / "plots" / "sweep.py"
    plots.write_text(
        "from rooftop.model.exclude import _kid, usable\n"
        "from rooftop import model\n"
        "import rooftop.stencil\n"
        "from . import _own\n"
        "x = model._kid(s) + rooftop.stencil._Stop.requested + model.usable + model.__name__\n"
    )
    inside = pkg / "model" / "build.py"
    inside.write_text("from rooftop.model.exclude import _kid\nfrom .exclude import _rows\n")
    assert reaches(plots) == [
        "1: from rooftop.model.exclude import _kid",
        "5: rooftop.model._kid",
        "5: rooftop.stencil._Stop",
    ]
    assert reaches(inside) == []
