"""The release as a user gets it: `python -m build --sdist`, then `pip
install rooftop-VERSION.tar.gz` into a new venv, which builds the engine
against this machine's libfabric and gives a working `rooftop` and
`rooftop-engine`. Offline: the new venv sees the packages the README's
setup installed (scikit-build-core, the runtime dependencies) behind its
own, and pip is told not to reach an index. Minutes (a full engine build):
built once."""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import sysconfig
import tarfile
from pathlib import Path

import pytest

import rooftop

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def _run(cmd, env=None, timeout=600):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env, timeout=timeout)
    assert p.returncode == 0, f"{' '.join(map(str, cmd))} -> {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    return p


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(the sdist, the new venv's bin/, an environment without this
    checkout's PYTHONPATH or engine)."""
    tmp = tmp_path_factory.mktemp("sdist")
    _run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", tmp / "dist", ROOT])
    (sdist,) = (tmp / "dist").glob("*.tar.gz")
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", venv])
    purelib = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
    # What setup installed, after the new venv's own packages (a .pth file
    # appends): pip installs rooftop into the new venv, not into this one.
    (purelib / "setup-venv.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ROOFTOP_ENGINE", "VIRTUAL_ENV")}
    env["PIP_NO_INDEX"] = "1"
    _run(
        [venv / "bin" / "python", "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", sdist],
        env=dict(env, CMAKE_BUILD_PARALLEL_LEVEL=str(os.cpu_count() or 1)),
        timeout=1800,
    )
    return sdist, venv / "bin", env


def test_the_sdist_holds_what_a_build_needs(installed):
    sdist, _, _ = installed
    assert sdist.name == f"rooftop-{rooftop.__version__}.tar.gz"
    names = {n.split("/", 1)[1] for n in tarfile.open(sdist).getnames() if "/" in n}
    for needed in ("pyproject.toml", "engine/CMakeLists.txt", "src/rooftop/__init__.py", "CHANGELOG.md", "LICENSE"):
        assert needed in names, needed
    assert not any(n.startswith(("build/", ".venv/")) for n in names)


def test_the_wheel_is_tagged_for_what_it_holds_and_brings_man_pages_and_completion(installed):
    """pip built a wheel from the sdist: any Python 3 (no extension module),
    this platform (the engine); the man pages and completion land in the
    venv's share/, where man and bash-completion look."""
    _, bin_dir, _ = installed
    venv = bin_dir.parent
    (wheel,) = venv.glob(f"lib/python*/site-packages/rooftop-{rooftop.__version__}.dist-info/WHEEL")
    tags = [line.split(": ", 1)[1] for line in wheel.read_text().splitlines() if line.startswith("Tag: ")]
    assert tags and all(t.startswith("py3-none-") and not t.endswith("-any") for t in tags), tags
    assert (venv / "share" / "man" / "man1" / "rooftop-collect.1").is_file()
    assert (venv / "share" / "bash-completion" / "completions" / "rooftop").is_file()
    assert (venv / "share" / "zsh" / "site-functions" / "_rooftop").is_file()


def test_the_installed_rooftop_says_its_versions_and_measures(installed, tmp_path):
    _, bin_dir, env = installed
    line = _run([bin_dir / "rooftop", "--version"], env=env).stdout.strip()
    v = rooftop.__version__
    assert line.startswith(f"rooftop {v} (engine {v}, libfabric "), line  # the engine built, next to rooftop
    assert _run([bin_dir / "rooftop-engine", "version"], env=env).stdout.startswith(f"rooftop-engine {v} ")
    where = _run([bin_dir / "python", "-c", "import rooftop; print(rooftop.__file__)"], env=env).stdout
    assert where.startswith(str(bin_dir.parent)), where  # the new venv's rooftop, not this checkout's
    collect = [
        bin_dir / "rooftop", "collect", "--quiet", "--metrics", "rpc", "--windows", "1", "--duration", "0.4",
        "--warmup", "0.2", "--results", tmp_path / "results", "--allow-concurrent",
        # A packaging test: a busy machine's rounds count all the same.
        "--set", "engine.foreign_cpu_gate=100000", "--set", "engine.retries=0",
    ]  # fmt: skip
    run_id = _run(collect, env=env).stdout.strip()
    out = _run([bin_dir / "rooftop", "export", run_id, "--format", "json", "--results", tmp_path / "results"], env=env)
    doc = json.loads(out.stdout)
    assert doc["environment"]["rooftop"] == doc["environment"]["engine_version"] == v
    assert doc["environment"]["libfabric"] and any(s["status"] == "ok" for s in doc["samples"])
