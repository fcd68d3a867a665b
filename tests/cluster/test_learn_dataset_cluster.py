"""The learning dataset's --cluster command (benchmarks/learn_dataset.py,
which made tests/data/learn-cluster) regenerates a small one on an
emulated cluster it brings up and takes down itself, and `rooftop learn`
learns from it: server x client nodes as the footprint, the knob varied
between runs as a feature. On 3 nodes over 2 cores (n0 and n2 share core
0) most of validate's placements put more processes on core 0 than it
holds: where their round kept the cores busy (rpc, a spinning server), the
model's one rule (rooftop.model.exclusion) leaves them out of the
ceilings, and no dataset row may come from one of them either; where the
cores stayed mostly idle (bw over the shaped links, blocking clients:
cores_busy at most SHARED_BUSY_MAX) they are kept."""

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
            "2",
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
    assert bw["configurations"] >= 2 and Path(bw["model_file"]).is_file()

    from rooftop import model
    from rooftop.learn import dataset
    from rooftop.model.exclude import SHARED_BUSY_MAX
    from rooftop.store.db import Store

    store = Store(out, create=False)
    for metric in ("bw", "rpc"):
        rejected, accepted = set(), set()
        for run in runs:
            validation = store.samples(run, dataset.STAGE, metric)
            nodes = store.get_run(run).config.get("nodes")
            why = model.exclusions(validation, nodes)
            rejected |= {(run, s["key"]) for s in validation if why[s["key"]]}
            accepted |= {(run, s["key"]) for s in validation if not why[s["key"]]}
            for s in validation:  # a kept sample on shared cores kept them mostly idle (bw)
                if not why[s["key"]] and model.core_sharing({**s, "cores_busy": None}, nodes):
                    assert s["cores_busy"] is not None and s["cores_busy"] <= SHARED_BUSY_MAX, s
        assert accepted and (rejected or metric == "bw"), (metric, rejected, accepted)  # rpc: both kinds
        ds = dataset.load(store, runs, metric)
        rows = set(zip((r["_run"] for r in ds.rows), ds.keys))
        assert not rows & rejected, sorted(rows & rejected)[:3]  # no row from a sample the rule leaves out
        assert rows == accepted and {(r, k) for r, k, _ in ds.left_out} == rejected
        if metric == "bw":  # and `learn` says which it left out
            assert {(s["run"], s["key"]) for s in bw["left_out"]} == rejected
