"""Collects the dataset `rooftop learn` is tested and benchmarked on.

Short real campaigns on this machine (local launcher, 2 logical nodes,
binding none so a node may run several processes): one `rooftop collect`
per knob setting (the roofline of that setting), then `rooftop validate`
over server processes x client processes per node (the placements the
models learn from). The knobs varied: rpc.request_size, bw.size, the
server progress mode and the provider (ofi+tcp, ofi+shm).

    ROOFTOP_CORES_LOCK=/tmp/rooftop-learn.lock \
        .venv/bin/python benchmarks/learn_dataset.py --out tests/data/learn-dataset

With --cluster N (root) the campaigns run on an emulated cluster of N nodes
instead (`rooftop cluster up --nodes N --link-rate RATE`, brought up
and down by the script unless one is already up; launcher netns, one
process per node): the validation grid is then server nodes x client nodes,
the footprints grow by whole nodes as on a real machine, and the bulk
ceilings are the shaped links' (a physical bound the roofline knows):

    .venv/bin/python benchmarks/learn_dataset.py --cluster 5 --out tests/data/learn-cluster

writes DIR/rooftop.db (the results database alone, vacuumed: what `learn`
reads) and prints the run ids. About 10 minutes on 2 idle cores; the
numbers move with whatever else runs on the machine (each sample records
foreign_cpu).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: Knob settings, one run each (both metrics measured in every run).
SETTINGS = (
    {},
    {"rpc.request_size": "4KiB", "bw.size": "256KiB"},
    {"rpc.request_size": "32KiB", "bw.size": "64KiB"},
    {"engine.server_progress": "busy"},
    {"fabric.provider": "ofi+shm"},
    {"fabric.provider": "ofi+shm", "rpc.request_size": "4KiB", "bw.size": "256KiB"},
)
#: Server and client processes per node of the validation placements.
PLACEMENTS = tuple((s, c) for s in (1, 2) for c in (1, 2, 3, 4))
#: Every run: small client buffers (several clients share a core's memory).
COMMON = {"bw.stream_size": "64MiB"}
#: --cluster: knob settings, one run each. Nodes share the 2 cores, so every
#: client waits for completions instead of spinning (a spinning client
#: would take its core from the servers of the nodes that share it).
CLUSTER_SETTINGS = (
    {},
    {"rpc.request_size": "4KiB", "bw.size": "256KiB"},
    {"engine.server_progress": "block"},
    {"rpc.request_size": "32KiB", "bw.size": "64KiB"},
)
CLUSTER_COMMON = {"bw.stream_size": "64MiB", "bw.size": "1MiB", "engine.client_progress": "block"}


def rooftop() -> str:
    here = Path(sys.executable).with_name("rooftop")
    return str(here) if here.exists() else "rooftop"


def run(argv: list[str]) -> str:
    print("+", " ".join(argv), file=sys.stderr, flush=True)
    out = subprocess.run(argv, stdout=subprocess.PIPE, text=True)
    if out.returncode not in (0, 1):  # 1: some failed samples, stored as such
        raise SystemExit(f"{argv[1]} exited {out.returncode}")
    return out.stdout.strip().splitlines()[-1]


def campaign(results: str, knobs: dict, timing: list[str], placements) -> str:
    sets = [a for k, v in {**COMMON, **knobs}.items() for a in ("--set", f"{k}={v}")]
    run_id = run(
        [rooftop(), "collect", "--results", results, "--binding", "none", "--metrics", "rpc,bw", *timing, *sets]
    )
    for spn, cpn in placements:
        run(
            [
                rooftop(),
                "validate",
                run_id,
                "--results",
                results,
                "--servers-per-node",
                str(spn),
                "--clients-per-node",
                str(cpn),
                *timing,
            ]
        )
    return run_id


def cluster_campaign(results: str, knobs: dict, timing: list[str]) -> str:
    """One knob setting on the emulated cluster: collect (client pairs in
    rounds), then validate's default grid of server x client nodes."""
    sets = [a for k, v in {**CLUSTER_COMMON, **knobs}.items() for a in ("--set", f"{k}={v}")]
    run_id = run(
        [
            rooftop(),
            "collect",
            "--results",
            results,
            "--launcher",
            "netns",
            "--pairs",
            "rounds",
            "--metrics",
            "rpc,bw",
            *timing,
            *sets,
        ]
    )
    run([rooftop(), "validate", run_id, "--results", results, *timing])
    return run_id


def cluster_up(nodes: int, rate: str) -> bool:
    """Brings up the emulated cluster unless one is up; True when this script did."""
    if subprocess.run([rooftop(), "cluster", "status"], capture_output=True).returncode == 0:
        print("learn_dataset: using the emulated cluster already up", file=sys.stderr)
        return False
    run([rooftop(), "cluster", "up", "--nodes", str(nodes), "--link-rate", rate])
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder for rooftop.db (replaced)")
    ap.add_argument("--duration", default="0.4", help="seconds per sample (default %(default)s)")
    ap.add_argument(
        "--windows", default="3", help="engine windows per measurement, a sample each (default %(default)s)"
    )
    ap.add_argument(
        "--settings",
        type=int,
        default=len(SETTINGS),
        help="use the first N knob settings (default: all: 6, with --cluster 4)",
    )
    ap.add_argument(
        "--placements",
        type=int,
        default=len(PLACEMENTS),
        help="validate the first N placements (default: all %(default)s)",
    )
    ap.add_argument(
        "--cluster",
        type=int,
        default=0,
        metavar="N",
        help="measure on an emulated cluster of N nodes (root; see above) instead of 2 logical nodes",
    )
    ap.add_argument("--link-rate", default="200mbit", help="--cluster: every node's link (default %(default)s)")
    args = ap.parse_args()
    os.environ.setdefault("ROOFTOP_CORES_LOCK", "/tmp/rooftop-learn.lock")
    timing = ["--duration", args.duration, "--warmup", "0.1", "--windows", args.windows]
    t0 = time.monotonic()
    brought_up = cluster_up(args.cluster, args.link_rate) if args.cluster else False
    with tempfile.TemporaryDirectory(prefix="rooftop-learn-") as tmp:
        try:
            if args.cluster:
                ids = [cluster_campaign(tmp, knobs, timing) for knobs in CLUSTER_SETTINGS[: args.settings]]
            else:
                ids = [
                    campaign(tmp, knobs, timing, PLACEMENTS[: args.placements]) for knobs in SETTINGS[: args.settings]
                ]
        finally:
            if brought_up:
                subprocess.run([rooftop(), "cluster", "down"], check=False, stdout=sys.stderr)
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "rooftop.db").unlink(missing_ok=True)
        shutil.copy(Path(tmp) / "rooftop.db", out / "rooftop.db")
    db = sqlite3.connect(out / "rooftop.db")
    db.execute("VACUUM")
    db.close()
    print(f"{len(ids)} runs in {time.monotonic() - t0:.0f} s: {out / 'rooftop.db'}", file=sys.stderr)
    print("\n".join(ids))
    return 0


if __name__ == "__main__":
    sys.exit(main())
