"""Issue 42: nothing is created or opened through a link planted in a
results folder (rooftop.db, .lock): a clear refusal naming it (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest
from campaign_util import rooftop

from rooftop.config.resolve import build
from rooftop.store.db import Store
from rooftop.store.records import StoreError


def refused(*args) -> str:
    p = rooftop(*args, check=False)
    assert p.returncode == 2 and "Traceback" not in p.stderr, (p.returncode, p.stdout, p.stderr)
    return p.stderr


def stored_run(res: Path) -> str:
    store = Store(res)
    run = store.new_run(build(overrides={"results": str(res), "launcher.nodes": 2}), {})
    store.close()
    return run


def test_a_dangling_database_link_is_refused_and_creates_nothing(tmp_path):
    res, target = tmp_path / "res", tmp_path / "elsewhere.db"
    res.mkdir()
    (res / "rooftop.db").symlink_to(target)
    with pytest.raises(StoreError, match="is a symbolic link"):
        Store(res)
    assert not target.exists()
    err = refused("collect", "--results", str(res), "--duration", "0.1", "--windows", "1", "--metrics", "rpc")
    assert f"results database {res / 'rooftop.db'} is a symbolic link (to {target})" in err
    assert not target.exists()
    folder = tmp_path / "folder-link"  # a results folder that is a dangling link: not created either
    folder.symlink_to(tmp_path / "no-folder")
    with pytest.raises(StoreError, match="which does not exist"):
        Store(folder)
    assert not (tmp_path / "no-folder").exists()


def test_a_lock_file_that_is_a_link_is_a_clear_error(tmp_path):
    res = tmp_path / "res"
    run = stored_run(res)
    (res / ".lock").symlink_to(tmp_path / "nowhere")
    err = refused("validate", run, "--results", str(res), "--server-nodes", "1", "--client-nodes", "1")
    assert f"lock file {res / '.lock'} is a symbolic link (to {tmp_path / 'nowhere'})" in err
    assert not (tmp_path / "nowhere").exists()
