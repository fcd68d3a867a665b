"""Collects the dataset `rooftop learn` is tested and benchmarked on.

Short real campaigns on this machine (local launcher, 2 logical nodes,
binding none so a node may run several processes): one `rooftop collect`
per knob setting (the roofline of that setting), then `rooftop validate`
over server processes x client processes per node (the placements the
models learn from). The knobs varied: rpc.request_size, bw.size, the
server progress mode and the provider (ofi+tcp, ofi+shm).

    ROOFTOP_CORES_LOCK=/tmp/rooftop-learn.lock \
        .venv/bin/python benchmarks/learn_dataset.py --out tests/data/learn-dataset

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
    run_id = run([rooftop(), "collect", "--results", results, "--binding", "none",
                  "--metrics", "rpc,bw", *timing, *sets])
    for spn, cpn in placements:
        run([rooftop(), "validate", "--run", run_id, "--results", results, "--servers-per-node",
             str(spn), "--clients-per-node", str(cpn), *timing])
    return run_id


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder for rooftop.db (replaced)")
    ap.add_argument("--duration", default="0.4", help="seconds per sample (default %(default)s)")
    ap.add_argument("--samples", default="3", help="samples per measurement (default %(default)s)")
    ap.add_argument("--settings", type=int, default=len(SETTINGS),
                    help="use the first N knob settings (default: all %(default)s)")
    ap.add_argument("--placements", type=int, default=len(PLACEMENTS),
                    help="validate the first N placements (default: all %(default)s)")
    args = ap.parse_args()
    os.environ.setdefault("ROOFTOP_CORES_LOCK", "/tmp/rooftop-learn.lock")
    timing = ["--duration", args.duration, "--warmup", "0.1", "--samples", args.samples]
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rooftop-learn-") as tmp:
        ids = [campaign(tmp, knobs, timing, PLACEMENTS[:args.placements])
               for knobs in SETTINGS[:args.settings]]
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
