"""The Spack recipe (packaging/spack/packages/rooftop/package.py) agrees
with what the build declares: every dependency of pyproject.toml (its
extras as variants), the Python it requires, the build backend, and the
CMake, libfabric and hwloc versions engine/CMakeLists.txt asks for, each
with the same lowest version; and its version is rooftop's. Read as Python
source (Spack itself is not needed), as CITATION.cff's version is."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import rooftop

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "packaging" / "spack" / "packages" / "rooftop" / "package.py"
#: PyPI name -> Spack's, where Spack's is not py-NAME.
SPACK_NAMES = {"reframe-hpc": "reframe"}


def _recipe() -> tuple[list[str], dict[str, tuple[str, str | None]]]:
    """(its versions, {package: (lowest version or '', when)}) from its
    version(...) and depends_on(...) calls."""
    versions, deps = [], {}
    for node in ast.walk(ast.parse(RECIPE.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
            first = node.args[0]
            if not isinstance(first, ast.Constant) or not isinstance(first.value, str):
                continue
            if node.func.id == "version":
                versions.append(first.value)
            elif node.func.id == "depends_on":
                name, _, ver = first.value.partition("@")
                when = next((k.value.value for k in node.keywords if k.arg == "when"), None)
                deps[name] = (ver.rstrip(":"), when)
    return versions, deps


def _requirement(text: str) -> tuple[str, str, str | None]:
    """(Spack's name, lowest version, the python it is for) of a PEP 508 line."""
    m = re.fullmatch(r"([A-Za-z0-9_.-]+)(?:\[[^]]*\])?\s*(?:>=\s*([0-9.]+))?[^;]*(?:;\s*(.*))?", text.strip())
    assert m, text
    name = m.group(1).lower().replace("_", "-")
    return SPACK_NAMES.get(name, f"py-{name}"), m.group(2) or "", m.group(3)


def test_the_recipe_declares_what_the_build_declares():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    versions, deps = _recipe()
    assert versions[0] == rooftop.__version__

    want: dict[str, tuple[str, str | None]] = {}
    for line in meta["project"]["dependencies"]:
        name, low, marker = _requirement(line)
        want[name] = (low, "^python@:3.10" if marker else None)
    for extra in ("learn", "reframe"):
        for line in meta["project"]["optional-dependencies"][extra]:
            name, low, _ = _requirement(line)
            want[name] = (low, f"+{extra}")
    want["python"] = (meta["project"]["requires-python"].removeprefix(">="), None)
    (backend,) = meta["build-system"]["requires"]
    want[_requirement(backend)[0]] = (_requirement(backend)[1], None)

    cmake = (ROOT / "engine" / "CMakeLists.txt").read_text()
    want["cmake"] = (re.search(r"cmake_minimum_required\(VERSION ([0-9.]+)\)", cmake).group(1), None)
    for lib in ("libfabric", "hwloc"):
        want[lib] = (
            re.search(rf"pkg_check_modules\(\w+ REQUIRED IMPORTED_TARGET {lib}>=([0-9.]+)\)", cmake).group(1),
            None,
        )

    for name, expected in want.items():
        assert deps.get(name) == expected, f"{name}: recipe {deps.get(name)}, the build {expected}"


def test_every_written_version_is_rooftops():
    """__version__ is the one source (pyproject and the engine's CMake read
    it); CITATION.cff cannot read it, so it is checked."""
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["dynamic"] == ["version"] and "version" not in meta["project"]
    cff = re.search(r"^version: (\S+)$", (ROOT / "CITATION.cff").read_text(), re.M)
    assert cff and cff.group(1) == rooftop.__version__
