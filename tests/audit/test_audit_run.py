"""rooftop audit end to end on the local launcher, with very short windows
(issue 15, items 4 and 5): every pitfall's row, every setting measured,
stored as a run (rooftop runs, the database, rooftop report), and on tmpfs
the O_DIRECT settings reported not measurable with the engine's message.
Mounting the ext4 image and the tmpfs needs root: skipped otherwise."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import hugepages
from rooftop import __version__ as rooftop_version
from rooftop.audit import PITFALLS
from rooftop.audit.base import INDISTINGUISHABLE

# One repeat keeps the run short on a loaded machine (the overlap rule is
# tested without the engine: test_audit_verdicts.py).
SHORT = ["--repeats", "1", "--duration", "0.2", "--warmup", "0.05"]


def rooftop(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    env = {**os.environ, "ROOFTOP_CORES_LOCK": os.environ.get("ROOFTOP_CORES_LOCK", "/tmp/rooftop-audit-tests.lock")}
    return subprocess.run(
        [sys.executable, "-m", "rooftop", *args], capture_output=True, text=True, timeout=timeout, env=env
    )


def _need_root(*tools: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting an ext4 image or a tmpfs needs root")
    for tool in ("losetup", "mount", "umount", *tools):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (Debian: e2fsprogs, mount)")


@contextlib.contextmanager
def mounted(kind: str):
    """A fresh 128 MiB ext4 image on a loop device, or a tmpfs: its mount point."""
    _need_root(*(["mkfs.ext4"] if kind == "ext4" else []))
    with tempfile.TemporaryDirectory(prefix=f"rooftop-audit-{kind}-") as tmp:
        mnt, dev = Path(tmp) / "mnt", None
        mnt.mkdir()
        try:
            if kind == "ext4":
                image = Path(tmp) / "image"
                image.write_bytes(b"")
                os.truncate(image, 128 << 20)
                subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True)
                dev = subprocess.run(
                    ["losetup", "--find", "--show", str(image)], check=True, capture_output=True, text=True
                ).stdout.strip()
                subprocess.run(["mount", "-t", "ext4", dev, str(mnt)], check=True)
            else:
                subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96m", "tmpfs", str(mnt)], check=True)
            yield mnt
        finally:
            subprocess.run(["umount", str(mnt)], check=False, capture_output=True)
            if dev:
                subprocess.run(["losetup", "-d", dev], check=False)


def test_every_pitfall_measured_stored_and_reported(tmp_path, huge_pages):
    results = tmp_path / "results"
    with mounted("ext4") as mnt:
        p = rooftop("audit", *SHORT, "--storage-dir", str(mnt), "--results", str(results), "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    rows = {r["pitfall"]: r for r in out["rows"]}
    assert list(rows) == list(PITFALLS)
    for name, row in rows.items():
        assert [s["setting"] for s in row["settings"]] == [s.name for s in PITFALLS[name].settings]
        for s in row["settings"]:
            assert s["n"] == 1 and s["median"] > 0 and not s["error"], (name, s)
        for c in row["comparisons"]:
            assert c["verdict"] == INDISTINGUISHABLE or c["winner"] in (c["a"], c["b"]), c
        assert row["meaning"] and row["rationale"]
    assert rows["cache"]["where"].startswith("ext4 at ")
    # The pages pitfall's documents say which pages each buffer really got.
    docs = [json.loads(f.read_text()) for f in results.rglob("audit-pages-*/storage-0.json")]
    got = {d["config"]["buffer_pages"]: d["result"]["buffer_page_bytes"] for d in docs}
    assert got == {"huge": hugepages.page_bytes(), "base": os.sysconf("SC_PAGE_SIZE")}, got

    from rooftop.store.db import Store

    cfg = Store(results, create=False).get_run(out["run"]).config  # the flags' keys, recorded
    assert (cfg["audit"]["repeats"], cfg["audit"]["duration"], cfg["engine"]["lease"]) == (1, 0.2, 10.0)

    runs = json.loads(rooftop("runs", "--results", str(results), "--json").stdout)
    (run,) = runs
    assert run["id"] == out["run"] and run["status"] == "complete"
    assert run["samples"] == sum(len(p.settings) for p in PITFALLS.values())
    db = sqlite3.connect(results / "rooftop.db")
    params = dict(db.execute("SELECT key, value FROM run_params WHERE run_id = ?", (run["id"],)))
    assert params["audit.repeats"] == 1 and params["audit.storage_dir"] == str(mnt)
    assert json.loads(params["audit.pitfalls.cache.settings.direct+sync.client"]) == ["--io-mode", "direct+sync"]
    keys = {k for (k,) in db.execute("SELECT key FROM samples WHERE run_id = ? AND status = 'ok'", (run["id"],))}
    assert "audit/allocation/wrap/0" in keys and "audit/completion/block/0" in keys

    rep = rooftop("report", run["id"], "--results", str(results))
    assert rep.returncode == 0, rep.stderr
    page = Path(rep.stdout.strip()).read_text()
    assert 'id="audit"' in page and "data:image/png;base64," in page
    for p in PITFALLS.values():
        assert p.title in page
    assert (Path(rep.stdout.strip()).parent / "figures" / "audit.svg").exists()

    # plot draws its figure; model says it is no roofline run (rooftop.kinds)
    plot = rooftop("plot", run["id"], "--results", str(results), "--out-dir", str(tmp_path / "fig"))
    assert plot.returncode == 0, plot.stderr
    assert (tmp_path / "fig" / "audit.png").exists()
    mod = rooftop("model", run["id"], "--results", str(results))
    assert mod.returncode != 0 and f"run {run['id']} is a rooftop audit run" in mod.stderr
    assert f"rooftop report {run['id']}" in mod.stderr


def test_o_direct_on_tmpfs_is_reported_not_measurable(tmp_path):
    results = tmp_path / "results"
    with mounted("tmpfs") as mnt:
        p = rooftop(
            "audit",
            "--only",
            "cache,allocation",
            "--repeats",
            "1",
            "--duration",
            "0.2",
            "--warmup",
            "0.05",
            "--storage-dir",
            str(mnt),
            "--results",
            str(results),
        )
    assert p.returncode == 0, p.stderr  # a refused knob is a row's answer, not the audit's failure
    cache = p.stdout.split("cache mode")[1].split("file allocation")[0]
    assert "buffered " in cache and "sync " in cache
    assert "direct: not measurable here" in cache and "direct+sync: not measurable here" in cache
    assert "verdict: direct vs buffered: not measurable here: --io-mode direct: tmpfs at" in cache
    assert "does not honour O_DIRECT" in cache
    alloc = p.stdout.split("file allocation")[1]
    assert alloc.count("not measurable here") >= 3
    run_id = p.stdout.strip().splitlines()[-1].split()[1].rstrip(";")
    db = sqlite3.connect(results / "rooftop.db")
    failed = db.execute("SELECT key, error FROM samples WHERE run_id = ? AND status = 'failed'", (run_id,)).fetchall()
    assert {k for k, _ in failed} == {
        "audit/cache/direct/0",
        "audit/cache/direct+sync/0",
        "audit/allocation/preallocate/0",
        "audit/allocation/append/0",
        "audit/allocation/wrap/0",
    }
    assert all("tmpfs" in e and "O_DIRECT" in e for _, e in failed)
    (env,) = db.execute("SELECT environment FROM runs WHERE id = ?", (run_id,)).fetchone()
    env = json.loads(env)  # an audit run records the versions as every run does
    assert env["rooftop"] == rooftop_version and env["engine_version"] == rooftop_version and env["libfabric"]
    md = (results / run_id / "report" / "report.md").read_text()
    assert "## Not measurable here" in md and "does not honour O_DIRECT" in md


def test_huge_pages_not_reserved_make_the_pages_row_not_measurable(tmp_path):
    if hugepages.free():
        pytest.skip("huge pages are reserved and free on this machine: the refusal cannot be shown")
    results = tmp_path / "results"
    with mounted("ext4") as mnt:
        p = rooftop("audit", "--only", "pages", *SHORT, "--storage-dir", str(mnt), "--results", str(results), "--json")
    assert p.returncode == 0, p.stderr  # a setting this machine cannot run is the row's answer
    (row,) = json.loads(p.stdout)["rows"]
    huge, base = row["settings"]
    assert huge["setting"] == "huge" and huge["n"] == 0 and "--buffer-pages huge" in huge["error"]
    assert "nr_hugepages" in huge["error"] and base["n"] == 1 and base["median"] > 0
    assert row["meaning"].startswith("not measurable here: ") and "nr_hugepages" in row["meaning"]
