"""A damaged results store gives one clear message, never a traceback, and
'rooftop doctor --rebuild' rebuilds it from the engine documents (issue
11, finding 5). Read-only commands create nothing."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from campaign_util import rooftop


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    """One real, complete campaign: (results folder, run id, its samples)."""
    res = tmp_path_factory.mktemp("store") / "res"
    run = (
        rooftop(
            "collect",
            "--metrics",
            "rpc",
            "--duration",
            "0.3",
            "--warmup",
            "0.1",
            "--windows",
            "2",
            "--results",
            str(res),
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    rows = json.loads(rooftop("export", run, "--format", "json", "--results", str(res)).stdout)["samples"]
    assert len(rows) >= 2 and all(r["status"] == "ok" for r in rows)
    return res, run, rows


def copy(campaign, tmp_path):
    res, run, rows = campaign
    dst = tmp_path / "res"
    shutil.copytree(res, dst)
    return dst, run, rows


def fails_clearly(p: subprocess.CompletedProcess, *words: str) -> None:
    assert p.returncode in (1, 2), (p.returncode, p.stderr)
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    for w in words:
        assert w in p.stderr, (w, p.stderr)


def rebuilt_matches(res, run, rows) -> None:
    p = rooftop("doctor", "--results", str(res), "--rebuild")
    assert f"run {run}: {len(rows)} samples from engine documents" in p.stdout, p.stdout
    listed = json.loads(rooftop("runs", "--json", "--results", str(res)).stdout)
    assert [(r["id"], r["status"], r["samples"]) for r in listed] == [(run, "complete", len(rows))]
    new = json.loads(rooftop("export", run, "--format", "json", "--results", str(res)).stdout)["samples"]
    by_key = {r["key"]: r for r in new}
    for old in rows:
        r = by_key[old["key"]]
        for col in (
            "stage",
            "metric",
            "server_nodes",
            "client_nodes",
            "server_procs",
            "client_procs",
            "x",
            "window",
            "status",
        ):
            assert r[col] == old[col], (old["key"], col)
        assert r["raw_dir"].split("/")[-3:] == old["raw_dir"].split("/")[-3:]  # (folder copied)
        for col in ("aggregate", "per_server", "per_client", "measured_s"):
            assert r[col] == pytest.approx(old[col], rel=1e-9), (old["key"], col)
    assert rooftop("doctor", "--results", str(res)).returncode == 0


def test_truncated_database(campaign, tmp_path):
    res, run, rows = copy(campaign, tmp_path)
    db = res / "rooftop.db"
    db.write_bytes(db.read_bytes()[: db.stat().st_size // 2])
    for args in (["runs"], ["export", run], ["model", run], ["validate", run]):
        fails_clearly(rooftop(*args, "--results", str(res), check=False), str(db), "rooftop doctor")
    p = rooftop("doctor", "--results", str(res), check=False)
    assert p.returncode == 1 and "damaged" in p.stdout and "--rebuild" in p.stdout
    rebuilt_matches(res, run, rows)
    assert list(res.glob("rooftop.db.damaged-*"))  # the old one is kept


def test_corrupted_pages(campaign, tmp_path):
    res, run, rows = copy(campaign, tmp_path)
    db = res / "rooftop.db"
    data = bytearray(db.read_bytes())
    page = 4096
    data[page : len(data)] = bytes((i * 37 + 11) % 256 for i in range(len(data) - page))
    db.write_bytes(bytes(data))
    fails_clearly(rooftop("runs", "--results", str(res), check=False), str(db), "damaged")
    rebuilt_matches(res, run, rows)


def test_lost_database_is_rebuilt_from_engine_documents(campaign, tmp_path):
    res, run, rows = copy(campaign, tmp_path)
    (res / "rooftop.db").unlink()
    p = rooftop("doctor", "--results", str(res), check=False)
    assert p.returncode == 1 and "missing" in p.stdout
    rebuilt_matches(res, run, rows)


def test_results_path_is_a_file(tmp_path):
    f = tmp_path / "results"
    f.write_text("not a folder\n")
    for args in (
        ["runs"],
        ["export", "x"],
        ["collect", "--metrics", "rpc", "--windows", "1"],
        ["validate", "x"],
        ["doctor"],
    ):
        p = rooftop(*args, "--results", str(f), check=False)
        if args == ["doctor"]:
            assert p.returncode == 1 and "is a file" in p.stdout
        else:
            fails_clearly(p, str(f), "is a file")
    assert f.read_text() == "not a folder\n"


def test_read_only_results_folder(campaign, tmp_path):
    res, run, rows = copy(campaign, tmp_path)
    if subprocess.run(["chattr", "+i", str(res)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here")
    try:
        p = rooftop(
            "collect", "--metrics", "rpc", "--windows", "1", "--duration", "0.2", "--results", str(res), check=False
        )
        fails_clearly(p, str(res), "writable")
        listed = json.loads(rooftop("runs", "--json", "--results", str(res)).stdout)
        assert [r["id"] for r in listed] == [run]  # reading still works
    finally:
        subprocess.run(["chattr", "-i", str(res)], check=True)


def test_runs_and_dry_run_create_nothing(tmp_path):
    where = tmp_path / "new" / "results"
    for extra in ([], ["--json"]):  # a folder that does not exist is an error, and is not made
        fails_clearly(rooftop("runs", *extra, "--results", str(where), check=False), "no results folder")
    rooftop("collect", "--dry-run", "--metrics", "rpc", "--results", str(where))
    fails_clearly(rooftop("export", "x", "--results", str(where), check=False), "no results")
    assert not (tmp_path / "new").exists()


def test_rebuilt_from_documents_without_round_manifests(campaign, tmp_path):
    """Rounds written before round.json existed map windows by the plan."""
    res, run, rows = copy(campaign, tmp_path)
    (res / "rooftop.db").unlink()
    for f in res.glob("*/raw/*/round.json"):
        f.unlink()
    rebuilt_matches(res, run, rows)


def test_a_damaged_run_does_not_stop_the_rebuild_of_the_others(campaign, tmp_path):
    """Database lost, one run's config.json damaged: the healthy run is
    rebuilt, the damaged one named (issue 27)."""
    res, run, rows = copy(campaign, tmp_path)
    bad = "20200101-000000-dead"
    shutil.copytree(res / run, res / bad)
    (res / bad / "config.json").write_text('{"nodes": [{"host": 1}]}')
    (res / "rooftop.db").unlink()
    p = rooftop("doctor", "--results", str(res), "--rebuild", check=False)
    assert "Traceback" not in p.stderr, p.stderr
    assert f"run {run}: {len(rows)} samples from engine documents" in p.stdout, p.stdout
    assert f"run {bad}: NOT rebuilt" in p.stdout and "config.json" in p.stdout, p.stdout
    assert p.returncode == 1  # the damaged run is still a problem, said so
    listed = json.loads(rooftop("runs", "--json", "--results", str(res)).stdout)
    assert [(r["id"], r["samples"]) for r in listed] == [(run, len(rows))]


def unwritable(p: subprocess.CompletedProcess, *words: str) -> None:
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr, p.stderr
    last = p.stderr.strip().splitlines()[-1]
    for w in words:
        assert w in last, (w, p.stderr)


def test_read_only_mount(campaign):
    """EROFS: collect, validate, report and plot say so in one line (issue 27)."""
    from mounts import tmpfs_mount

    res, run, _ = campaign
    with tmpfs_mount(8) as mnt:
        dst = mnt / "res"
        shutil.copytree(res, dst)
        subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
        for args in (
            ["collect", "--metrics", "rpc", "--windows", "1", "--duration", "0.2"],
            ["validate", run, "--windows", "1", "--duration", "0.2"],
            ["report", run],
            ["plot", run],
        ):
            unwritable(rooftop(*args, "--results", str(dst), check=False), str(dst), "read-only")


def test_results_folder_the_user_cannot_write():
    """EACCES: report and plot as a user who may read but not write the
    results folder say so in one line (issue 27)."""
    import os
    import sys
    import tempfile

    if os.geteuid() != 0:
        pytest.skip("switching to user nobody needs root")
    with tempfile.TemporaryDirectory(prefix="rooftop-eacces-") as tmp:
        os.chmod(tmp, 0o755)
        dst = Path(tmp) / "res"
        run = (
            rooftop(
                "collect",
                "--metrics",
                "rpc",
                "--duration",
                "0.2",
                "--warmup",
                "0.1",
                "--windows",
                "1",
                "--results",
                str(dst),
            )
            .stdout.strip()
            .splitlines()[-1]
        )
        for d in [dst, *dst.rglob("*")]:
            os.chmod(d, 0o755 if d.is_dir() else 0o644)
        home = Path(tmp) / "home"  # the user's own files (matplotlib's cache) may be written
        home.mkdir(mode=0o777)
        home.chmod(0o777)
        env = dict(os.environ, HOME=str(home), MPLCONFIGDIR=str(home))
        for args in (["report", run], ["plot", run]):
            p = subprocess.run(
                [
                    "setpriv",
                    "--reuid",
                    "nobody",
                    "--regid",
                    "nogroup",
                    "--clear-groups",
                    sys.executable,
                    "-m",
                    "rooftop",
                    *args,
                    "--results",
                    str(dst),
                ],
                capture_output=True,
                text=True,
                timeout=300,
                env=env,
            )
            unwritable(p, str(dst), "permission denied")


def test_doctor_takes_the_results_folder_lock(campaign, tmp_path):
    """While a campaign holds RESULTS/.lock, doctor (a check, --recover,
    --rebuild) is refused naming it, and the live database stays where it
    is: a rebuild used to move it aside under a running collect, which then
    failed on a 'readonly database'."""
    import os

    from rooftop.locks import CampaignLocks

    res, run, _ = copy(campaign, tmp_path)
    with CampaignLocks(res, on_this_machine=False) as locks:
        locks.name_run(run)
        for mode in ([], ["--recover"], ["--rebuild"]):
            p = rooftop("doctor", "--results", str(res), *mode, check=False)
            fails_clearly(p, f"held by run {run} (pid {os.getpid()}", str(res / ".lock"), "a campaign is running")
            assert p.returncode == 2
        assert sorted(f.name for f in res.glob("rooftop.db*")) == ["rooftop.db"]
    assert rooftop("doctor", "--results", str(res)).returncode == 0
