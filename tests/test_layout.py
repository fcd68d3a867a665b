"""The layout table (docs/layout.md) matches the tree, one line per folder: every
folder of src/rooftop has its row, every top-level module is named in the
row of the shared modules, and every path the table lists exists. Each
package's own docstring names its modules, and every dotted rooftop.x.y
name written in the code, the docs and the benchmarks still exists."""

from __future__ import annotations

import ast
import dataclasses
import importlib
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


#: A dotted name that starts with rooftop.
DOTTED = re.compile(r"(?<![\w./-])rooftop(?:\.[A-Za-z_]\w*)+")
#: A file of the package named by its path.
PATH = re.compile(r"(?<![\w/])(?:src/)?rooftop/[\w/]+\.py\b")
#: Dotted names that are not Python names, and where they may be written:
#: the results database's file name, the JUnit class name of a metric's
#: ceilings (rooftop.METRIC), the old module in docs/cli.md's renamed names.
NOT_PYTHON = {"rooftop.db": "*", "rooftop.METRIC": "*", "rooftop.samplers": "docs/cli.md"}


def resolves(ref: str) -> bool:
    """Whether ref is a module of rooftop, or an attribute (a class's
    field included) reached from the longest module it starts with."""
    parts = ref.split(".")
    if parts[1] == "__main__":
        return (ROOT / "src" / "rooftop" / "__main__.py").exists()  # importing it runs rooftop
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        for name in parts[i:]:
            fields = obj.__dataclass_fields__ if dataclasses.is_dataclass(obj) else {}
            if hasattr(obj, name):
                obj = getattr(obj, name)
            elif name in fields or (isinstance(obj, type) and name in getattr(obj, "__annotations__", {})):
                return True
            else:
                return False
        return True
    return False


def test_every_dotted_rooftop_name_written_exists():
    """Docstrings, comments and docs that name rooftop.x.y (or a file,
    rooftop/x/y.py) name a module, attribute or file that exists: a rename
    leaves no name behind."""
    files = [ROOT / "README.md"]
    for folder in ("src", "benchmarks", "scripts", "docs"):
        files += sorted(p for p in (ROOT / folder).rglob("*") if p.suffix in (".py", ".md") and p.is_file())
    stale = []
    for f in files:
        rel = str(f.relative_to(ROOT))
        for n, line in enumerate(f.read_text().splitlines(), 1):
            for ref in DOTTED.findall(line):
                names = [k for k, where in NOT_PYTHON.items() if ref == k or ref.startswith(k + ".")]
                if names and NOT_PYTHON[names[0]] in ("*", rel):
                    continue
                if not resolves(ref):
                    stale.append(f"{rel}:{n}: {ref}")
            for path in PATH.findall(line):
                if not (ROOT / "src" / path.removeprefix("src/")).exists():
                    stale.append(f"{rel}:{n}: {path}")
    assert not stale, "names that no longer exist:\n" + "\n".join(stale)


def test_the_cli_renders_no_verdict():
    """Verdict text is the report's (rooftop.report.parts): no command module
    reads a verdict's kind to say it in its own words."""
    cli = ROOT / "src" / "rooftop" / "cli"
    own = [
        f"{p.name}:{n}"
        for p in sorted(cli.glob("*.py"))
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if re.search(r"""\[["']kind["']\]""", line)
    ]
    assert not own, f"the CLI renders a verdict itself (use rooftop.report.parts): {own}"


def test_only_main_imports_the_command_modules():
    """The command modules of rooftop.cli do not import each other: what two
    share is a parsing helper in cli/common.py or belongs to the study or
    product package below; only cli/main.py (and the package's __init__)
    imports the command modules, none excepted (service's --import is in
    cli/service.py, its work in rooftop.service.importing)."""
    cli = ROOT / "src" / "rooftop" / "cli"
    commands = {p.stem for p in cli.glob("*.py")} - {"__init__", "common"}
    crossing = []
    for p in sorted(cli.glob("*.py")):
        if p.stem in ("__init__", "main"):
            continue
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "rooftop.cli":
                names = {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rooftop.cli."):
                names = {node.module.removeprefix("rooftop.cli.")}
            elif isinstance(node, ast.Import):
                names = {a.name.removeprefix("rooftop.cli.") for a in node.names if a.name.startswith("rooftop.cli.")}
            else:
                continue
            crossing += [f"{p.name}:{node.lineno}: {n}" for n in names & commands]
    assert not crossing, (
        f"a command module imports another (share through cli/common.py or the package below): {crossing}"
    )


MAX_STATEMENTS = 40


def statements(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """A function's statements as issue 44 counts them: every statement of
    its body, those nested in its blocks (if, for, while, with, try and its
    handlers, match) and in the functions and classes it defines included."""
    n, todo = 0, list(fn.body)
    while todo:
        s = todo.pop()
        n += 1
        todo += [*getattr(s, "body", ()), *getattr(s, "orelse", ()), *getattr(s, "finalbody", ())]
        todo += [b for h in getattr(s, "handlers", ()) for b in h.body]
        todo += [b for c in getattr(s, "cases", ()) for b in c.body]
    return n


def test_statements_are_counted_nested():
    fn = ast.parse(
        "def f(x):\n"
        "    y = 1\n"
        "    if x:\n"
        "        for i in x:\n"
        "            y += i\n"
        "    else:\n"
        "        y = 0\n"
        "    try:\n"
        "        pass\n"
        "    except ValueError:\n"
        "        raise\n"
        "    finally:\n"
        "        y = 2\n"
        "    def g():\n"
        "        return y\n"
        "    return y\n"
    ).body[0]
    assert isinstance(fn, ast.FunctionDef) and statements(fn) == 12


def test_a_long_function_says_why():
    """Issue 44: no function of the package has more than 40 statements,
    counted nested (statements(): ruff's PLR0915, pyproject.toml, counts
    fewer); the few that must say why in their docstring ("Long: ..."), as
    must any carrying PLR0915's noqa. A command's handler parses, calls its
    study and prints: the work lives in the study's package
    (service.run.measure, export.model_of, history.check.history)."""
    unexplained = []
    for p in sorted((ROOT / "src" / "rooftop").rglob("*.py")):
        text = p.read_text()
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            n = statements(node)
            if (n > MAX_STATEMENTS or "noqa: PLR0915" in lines[node.lineno - 1]) and "Long: " not in (
                ast.get_docstring(node) or ""
            ):
                unexplained.append(f"{p.relative_to(ROOT)}:{node.lineno} {node.name} ({n} statements)")
    assert not unexplained, (
        f"functions of more than {MAX_STATEMENTS} statements that do not say why (a 'Long: ...' in the "
        f"docstring; or split them by meaning): {unexplained}"
    )
    config = (ROOT / "pyproject.toml").read_text()
    assert '"PLR0915"' in config and "max-statements = 40" in config
