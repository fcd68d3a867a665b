"""Issue 42: every file a command writes for its user goes through one
writer (rooftop.files.write): never through a link (one planted at the
file is replaced, a folder leading out of the run's folder is refused),
whole or not at all (a kill or a full disk keeps the previous file and
leaves no temporary one); CSV text cells a spreadsheet would run are made
text; stored strings are text in report.md, never markup."""

from __future__ import annotations

import csv
import errno
import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import synthetic
from rooftop import export, files, results
from rooftop.report.summary import markdown
from rooftop.service import importing
from rooftop.service import points as service_points

#: Runs `rooftop ARGS` and SIGKILLs it at its first write to a file under
#: KILL_UNDER: a write(2) through os.write (after half the bytes) or
#: through a file object opened for writing there (open(..., "w")).
KILLER = r"""
import builtins, io, os, runpy, signal, sys
under = os.environ["KILL_UNDER"]
real_open, real_write = io.open, os.write
def die():
    os.kill(os.getpid(), signal.SIGKILL)
def there(fd):
    try:
        return os.readlink(f"/proc/self/fd/{fd}").startswith(under)
    except OSError:
        return False
def write(fd, data):
    if there(fd):
        real_write(fd, bytes(data)[: len(data) // 2])
        die()
    return real_write(fd, data)
class Dying:
    def __init__(self, f):
        self.f = f
    def write(self, data):
        self.f.write(data[: len(data) // 2])
        self.f.flush()
        die()
    def __getattr__(self, name):
        return getattr(self.f, name)
    def __enter__(self):
        return self
    def __exit__(self, *a):
        return self.f.__exit__(*a)
def opened(file, mode="r", *a, **k):
    f = real_open(file, mode, *a, **k)
    return Dying(f) if any(c in mode for c in "wax+") and there(f.fileno()) else f
os.write, io.open, builtins.open = write, opened, opened
sys.argv = ["rooftop", *sys.argv[1:]]
runpy.run_module("rooftop", run_name="__main__")
"""


def rooftop(*args, check=True):
    p = subprocess.run([sys.executable, "-m", "rooftop", *args], capture_output=True, text=True, timeout=300)
    if check and p.returncode != 0:
        raise AssertionError(f"rooftop {' '.join(args)} -> {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def small_run(tmp_path: Path):
    """A synthetic rpc run on 2 nodes: (store, run id)."""
    cfg = synthetic.config_for(nodes=2)
    cfg["metrics"] = ["rpc"]
    return synthetic.uniform_run(tmp_path, cfg)


def temporaries(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_report_replaces_links_at_its_files_and_refuses_a_report_folder_leading_out_of_the_run(tmp_path):
    st, run = small_run(tmp_path)
    victim = tmp_path / "victim"
    victim.write_text("root's own\n")
    victim.chmod(0o600)
    report = st.run_dir(run) / "report"
    (report / "figures").mkdir(parents=True)
    for name in ("report.md", "report.html", "figures/roofline-rpc.png"):
        (report / name).symlink_to(victim)
    out = rooftop("report", run, "--results", str(st.dir))
    assert victim.read_text() == "root's own\n" and (victim.stat().st_mode & 0o777) == 0o600
    for name in ("report.md", "report.html", "figures/roofline-rpc.png"):
        assert not (report / name).is_symlink() and (report / name).stat().st_size > 0, name
    assert out.stdout.strip() == str(report / "report.html") and not temporaries(report)

    outside = tmp_path / "outside"
    outside.mkdir()
    os.rename(report, tmp_path / "old-report")
    report.symlink_to(outside)
    p = rooftop("report", run, "--results", str(st.dir), check=False)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert "leads outside" in p.stderr and str(outside) in p.stderr, p.stderr
    assert list(outside.iterdir()) == []


def test_a_kill_at_the_first_write_of_export_keeps_the_previous_file(tmp_path):
    st, run = small_run(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    target = out / "run.csv"
    target.write_text("the previous export\n")
    p = subprocess.run(
        [sys.executable, "-c", KILLER, "export", run, "--results", str(st.dir), "-o", str(target)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "KILL_UNDER": str(out)},
    )
    assert p.returncode == -signal.SIGKILL, (p.returncode, p.stderr)
    assert target.read_text() == "the previous export\n"


def test_a_full_disk_keeps_the_previous_export_and_says_so(tmp_path):
    from mounts import tmpfs_mount

    st, run = small_run(tmp_path)
    st.db.execute("UPDATE samples SET error = ? WHERE id = ?", ("x" * 20000, st.samples(run)[0]["id"]))
    st.db.commit()  # an export of several pages: more than truncating the old file would free
    with tmpfs_mount(1) as mnt:
        target = mnt / "run.csv"
        target.write_text("the previous export\n")
        fd = os.open(mnt / "filler", os.O_WRONLY | os.O_CREAT)
        try:  # every block taken
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError as e:
            assert e.errno == errno.ENOSPC
        finally:
            os.close(fd)
        p = rooftop("export", run, "--results", str(st.dir), "-o", str(target), check=False)
        assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
        assert f"cannot write {target}: the file system is full" in p.stderr and len(p.stderr.splitlines()) == 1
        assert target.read_text() == "the previous export\n" and not temporaries(mnt)


def test_the_writer_on_a_failed_write_keeps_the_old_file_and_names_the_target(tmp_path, monkeypatch):
    target = tmp_path / "report.md"
    target.write_text("old")
    real = os.write

    def half_then_full(fd, data):
        real(fd, bytes(data)[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(OSError) as e:
        files.write(target, "new text, longer than the old")
    monkeypatch.undo()
    assert e.value.errno == errno.ENOSPC and e.value.filename == str(target)
    assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["report.md"]


def test_the_writer_replaces_a_link_and_refuses_folders_out_of_its_base_or_of_another_user(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep")
    run = tmp_path / "run"
    run.mkdir()
    (run / "out.csv").symlink_to(victim)
    files.write(run / "out.csv", "new")  # a file the user named: the link is replaced, not followed
    assert victim.read_text() == "keep" and not (run / "out.csv").is_symlink()
    assert (run / "out.csv").read_text() == "new"
    (run / "figures").symlink_to(tmp_path)
    with files.confined(run), pytest.raises(files.OutputError, match="leads outside"):
        files.write(run / "figures" / "a.png", b"x")
    (run / "inner").mkdir()
    (run / "report").symlink_to(run / "inner")  # a link that stays in the run's folder is followed
    with files.confined(run):
        files.write(run / "report" / "report.md", "ok")
    assert (run / "inner" / "report.md").read_text() == "ok"
    if os.geteuid() == 0:
        planted = run / "planted"
        planted.mkdir()
        os.chown(planted, 65534, 65534)  # another user's folder inside root's run
        with files.confined(run), pytest.raises(files.OutputError, match="belongs to uid 65534"):
            files.write(planted / "report.md", "x")
        assert list(planted.iterdir()) == []
    (run / "dir.md").mkdir()
    with pytest.raises(files.OutputError, match="a folder has that name"):
        files.write(run / "dir.md", "x")
    assert not temporaries(run)


def test_csv_text_cells_a_spreadsheet_would_run_are_made_text_and_numbers_stay_numbers(tmp_path):
    st, run = small_run(tmp_path)
    payloads = ['=HYPERLINK("http://x")', "-2+3+cmd|' /C calc'!A0", "+1+1", "@SUM(A1)", "\tx", "\rx", "'=1"]
    ids = [s["id"] for s in st.samples(run)][: len(payloads)]
    for sid, text in zip(ids, payloads):
        st.db.execute("UPDATE samples SET error = ? WHERE id = ?", (text, sid))
    st.db.commit()
    rows = {r["id"]: r for r in csv.DictReader(io.StringIO(export.csv_text(st, run)))}
    for sid, text in zip(ids, payloads):
        assert rows[str(sid)]["error"] == "'" + text, rows[str(sid)]["error"]
    assert all(not v.startswith("'") for r in rows.values() for k, v in r.items() if k != "error")
    assert float(rows[str(ids[0])]["per_client"]) > 0
    assert files.csv_cell(-5) == -5 and files.csv_cell("-5") == "-5" and files.csv_cell("-1.5e3") == "-1.5e3"
    assert files.csv_cell("-inf") == "'-inf"
    assert files.csv_cell("plain") == "plain" and files.csv_cell("'plain") == "'plain"
    for text in payloads + ["'plain", "''=x", "-5"]:
        assert files.csv_value(files.csv_cell(text)) == text
    # The services CSV reads back as it was stored.
    src = tmp_path / "points.csv"
    src.write_text("server_procs,client_procs,per_client,unit,status,error\n1,1,,ops/s,failed,=1+2\n")
    importing.import_csv(st, run, src, "kv")
    text = export.services_text(st, run, "csv")
    assert next(csv.DictReader(io.StringIO(text)))["error"] == "'=1+2"
    back = tmp_path / "back.csv"
    back.write_text(text)
    assert [p.error for p in importing.read_csv(back, metric="rpc")] == ["=1+2"]
    assert [p.error for p in service_points.load(st, run)] == ["=1+2"]


def test_stored_strings_are_text_in_report_md_never_markup(tmp_path):
    st, run = small_run(tmp_path)
    host = 'vm\n* * * * * root touch /tmp/owned\n# <img src=x onerror="alert(1)"> [x](javascript:1)'
    st.db.execute("UPDATE runs SET environment = ? WHERE id = ?", (json.dumps({"host": host}), run))
    sid = st.samples(run)[0]["id"]
    st.db.execute("UPDATE samples SET status = 'failed', error = ? WHERE id = ?", ("<script>x</script>\n# no", sid))
    st.db.commit()
    md = markdown(results.load(st, run), {}, tmp_path)
    lines = md.splitlines()
    assert not any(line.startswith(("* * *", "#  <", "# <", "<")) for line in lines), md
    (line,) = [x for x in lines if "touch /tmp/owned" in x]
    assert line.startswith("vm \\* \\* \\* \\* \\* root touch /tmp/owned # \\<img"), line
    assert "\\[x\\](javascript:1)" in line
    assert "\\<script>x\\</script> # no" in md  # a failed sample's error, among the warnings
    assert "<img" not in md.replace("\\<img", "") and "<script" not in md.replace("\\<script", "")
