"""rooftop without scikit-learn (the `learn` extra, issue 30 item 7): learn,
predict and tune say how to install it and exit 2; report (with a saved
learned model), model and export work; no module but the learned models'
own imports scikit-learn. Each command runs in a subprocess whose import
system refuses `sklearn` (a meta-path finder inserted before rooftop loads),
as a plain `pip install rooftop` would have it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import rooftop
from rooftop.cli import main

FIXTURE = Path(__file__).resolve().parent.parent / "data" / "learn-dataset"
RUN = "20261123-022747-5d61"
SRC = str(Path(rooftop.__file__).resolve().parents[1])

#: Makes `import sklearn` fail, then runs the code that follows it.
BLOCK = """\
import sys
class NoSklearn:
    def find_spec(self, name, path=None, target=None):
        if name == "sklearn" or name.startswith("sklearn."):
            raise ImportError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, NoSklearn())
"""
#: rooftop's command line under BLOCK.
CLI = BLOCK + "from rooftop.cli import main\nsys.exit(main(sys.argv[1:]))\n"
#: Imports every rooftop module under BLOCK; prints those that needed sklearn.
IMPORT_ALL = (
    BLOCK
    + """\
import importlib, json, pkgutil, rooftop
failed = []
for m in pkgutil.walk_packages(rooftop.__path__, "rooftop."):
    if m.name == "rooftop.__main__":
        continue
    try:
        importlib.import_module(m.name)
    except ImportError as e:
        if (e.name or "").startswith("sklearn"):
            failed.append(m.name)
        elif not (e.name or "").startswith("reframe"):  # the ReFrame check needs ReFrame
            raise
print(json.dumps(sorted(failed)))
"""
)
#: The modules that import scikit-learn themselves (the models and their evaluation).
NEED_SKLEARN = ["rooftop.learn.evaluate", "rooftop.learn.roofline_models", "rooftop.learn.run", "rooftop.learn.zoo"]


def without_sklearn(code: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")]))
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120, cwd=cwd, env=env
    )


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """A copy of the learn fixture with a model learned (with scikit-learn,
    in this process) and saved beside RUN."""
    out = tmp_path_factory.mktemp("nosk") / "results"
    shutil.copytree(FIXTURE, out)
    assert main(["learn", RUN, "--metrics", "bw", "--folds", "2", "--results", str(out), "--json"]) == 0
    assert (out / RUN / "learned" / "bw.model.json").is_file()
    return out


@pytest.mark.parametrize(
    "args",
    [
        ["learn", RUN, "--metrics", "bw"],
        ["predict", RUN, "--servers", "1", "--clients", "2"],
        ["tune", "--budget", "2"],
    ],
    ids=["learn", "predict", "tune"],
)
def test_learning_commands_say_how_to_install_it(results, args):
    before = sorted(p.name for p in results.iterdir())
    p = without_sklearn(CLI, *args, "--results", str(results), cwd=results.parent)
    assert p.returncode == 2, p.stderr
    assert f"rooftop {args[0]}: needs scikit-learn" in p.stderr
    assert "pip install 'rooftop[learn]'" in p.stderr
    assert "Traceback" not in p.stderr
    assert sorted(q.name for q in results.iterdir()) == before  # no run created


def test_report_model_and_export_work_without_it(results):
    p = without_sklearn(CLI, "report", RUN, "--results", str(results), cwd=results.parent)
    assert p.returncode == 0, p.stderr
    page = Path(p.stdout.strip().splitlines()[-1]).read_text()
    assert "predicted against measured" in page  # the saved comparison's section and figure
    p = without_sklearn(CLI, "model", RUN, "--json", "--results", str(results), cwd=results.parent)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)
    csv = results.parent / "export.csv"
    p = without_sklearn(CLI, "export", RUN, "--output", str(csv), "--results", str(results), cwd=results.parent)
    assert p.returncode == 0, p.stderr
    assert csv.stat().st_size > 0


def test_only_the_models_import_it(tmp_path):
    p = without_sklearn(IMPORT_ALL, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == NEED_SKLEARN
