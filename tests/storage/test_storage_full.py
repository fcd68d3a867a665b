"""A storage metric on a file system that fills up mid-run (issue 27): the
failed sample names the full disk (ENOSPC) and the file, not only the
storage_error its clients were answered."""

from __future__ import annotations

import sys
from pathlib import Path

from mounts import tmpfs_mount

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "campaign"))
from campaign_util import rooftop, samples  # noqa: E402


def test_a_full_disk_is_named_in_the_sample(tmp_path):
    # 20 MiB: room for the preflight's one 16 MiB data file, not for the two servers'.
    with tmpfs_mount(20) as mnt:
        d = mnt / "d"
        d.mkdir()
        res = tmp_path / "res"
        p = rooftop(
            "collect",
            "--metrics",
            "sbw",
            "--duration",
            "0.3",
            "--warmup",
            "0.2",
            "--windows",
            "1",
            "--binding",
            "none",
            "--set",
            "collect.servers_per_node=2",
            "--set",
            "collect.clients_per_node=2",
            "--set",
            "collect.client_peak=false",
            "--set",
            "collect.client_node=false",
            "--set",
            f"sbw.dir={d}",
            "--set",
            "sbw.allocation=wrap",
            "--set",
            "sbw.file_size=16MiB",
            "--set",
            "sbw.io_mode=buffered",
            "--results",
            str(res),
            check=False,
        )
    assert p.returncode == 1, p.stderr
    run = p.stdout.split()[-1]
    failed = [s for s in samples(res, run) if s["status"] == "failed"]
    assert failed and all("ENOSPC" in s["error"] and str(d) in s["error"] for s in failed), failed
