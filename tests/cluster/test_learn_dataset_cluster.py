"""The learning dataset's --cluster command (benchmarks/learn_dataset.py,
which made tests/data/learn-cluster) regenerates a small one on an
emulated cluster it brings up and takes down itself, and `rooftop learn`
learns from it: server x client nodes as the footprint, the knob varied
between runs as a feature."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from cluster_util import needs_root, status_json

ROOT = Path(__file__).resolve().parent.parent.parent


@needs_root
def test_the_cluster_dataset_command_regenerates_a_dataset_learn_reads(clean, tmp_path):
    out = tmp_path / "dataset"
    p = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "learn_dataset.py"),
            "--cluster",
            "3",
            "--out",
            str(out),
            "--settings",
            "2",
            "--duration",
            "0.3",
            "--samples",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    runs = p.stdout.split()
    assert len(runs) == 2 and (out / "rooftop.db").is_file()
    assert not status_json().get("up"), "the script brought the cluster up, so it takes it down"
    learn = subprocess.run(
        [
            sys.executable,
            "-m",
            "rooftop",
            "learn",
            *runs,
            "--results",
            str(out),
            "--folds",
            "3",
            "--metrics",
            "bw",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert learn.returncode == 0, learn.stderr[-2000:]
    (bw,) = json.loads(learn.stdout)
    assert {"sample.server_nodes", "sample.client_nodes", "bw.size"} <= set(bw["features"])
    assert bw["configurations"] >= 3 and Path(bw["model_file"]).is_file()
