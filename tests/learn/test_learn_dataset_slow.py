"""The learning dataset's command (benchmarks/learn_dataset.py, which made
tests/data/learn-dataset) regenerates a small one with real campaigns, and
`rooftop learn` learns from it (about a minute)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 cores (2 logical nodes)")
def test_the_dataset_command_regenerates_a_dataset_learn_reads(tmp_path):
    out = tmp_path / "dataset"
    p = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "learn_dataset.py"),
            "--out",
            str(out),
            "--settings",
            "2",
            "--placements",
            "3",
            "--duration",
            "0.2",
            "--windows",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    runs = p.stdout.split()
    assert len(runs) == 2 and (out / "rooftop.db").is_file()
    learn = subprocess.run(
        [sys.executable, "-m", "rooftop", "learn", *runs, "--results", str(out), "--folds", "3", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert learn.returncode == 0, learn.stderr[-2000:]
    docs = {d["metric"]: d for d in json.loads(learn.stdout)}
    assert set(docs) == {"rpc", "bw"}
    assert "rpc.request_size" in docs["rpc"]["features"] and "bw.size" in docs["bw"]["features"]
    for d in docs.values():
        assert d["configurations"] >= 3 and Path(d["model_file"]).is_file()
        assert {m["model"] for m in d["cross_validation"]} >= {"roofline alone", "random forest"}
