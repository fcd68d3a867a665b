"""Each sample records the emulation it ran under, read from the live
cluster (issue 27): a node's CPU capped mid-run makes the windows measured
under the cap invalid, with the reason; 'validate RUN' on a cluster
rebuilt with other rates and caps is refused; the record is exported."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
from campaign_util import samples
from cluster_util import cluster, cluster_up, needs_root, rooftop

from rooftop import export
from rooftop.cluster import cgroups, state

pytestmark = needs_root

COLLECT = ("collect", "--launcher", "netns", "--metrics", "rpc", "--warmup", "0.2", "--set", "engine.retries=0")


def cap(node: int, percent: float) -> None:
    """Caps a node's CPU behind rooftop's back, as a user writing its cgroup would."""
    st = state.load()
    layout = cgroups.Layout(st["cgroup"]["version"], Path(st["cgroup"]["cpu"]), Path(st["cgroup"]["cpuset"]))
    q = cgroups.quota_us(1, percent)
    d = layout.node_dirs(node)[0]
    if layout.version == 2:
        (d / "cpu.max").write_text(f"{q} {cgroups.PERIOD_US}")
    else:
        (d / "cpu.cfs_quota_us").write_text(str(q))


def test_cpu_capped_mid_run_marks_its_windows_and_a_rebuilt_cluster_is_refused(tmp_path):
    res = tmp_path / "res"
    with cluster_up("--nodes", "2", "--link-rate", "200mbit"):
        # A clean run first: every sample records both nodes, as built.
        run = (
            rooftop(*COLLECT, "--duration", "0.5", "--windows", "1", "--results", str(res))
            .stdout.strip()
            .splitlines()[-1]
        )
        rows = samples(res, run)
        assert rows and all(r["status"] == "ok" for r in rows), [r["error"] for r in rows]
        for r in rows:
            em = json.loads(r["emulation"])
            assert set(em) == {"0", "1"}, em
            assert all(
                n["cpu_cores"] is None
                and n["links"][0]["send_bits"] == 200_000_000
                and n["links"][0]["receive_bits"] == 200_000_000
                for n in em.values()
            ), em
        doc = json.loads(rooftop("export", run, "--format", "json", "--results", str(res)).stdout)
        jsonschema.validate(doc, export.schema("export"))
        assert all(set(s["emulation"]) == {"0", "1"} for s in doc["samples"])

        # Node 1 capped to 10 % while a run measures: no window measured
        # under the cap is stored ok, and the invalid ones say why.
        res2 = tmp_path / "res2"
        p = subprocess.Popen(
            [sys.executable, "-m", "rooftop", *COLLECT, "--duration", "1", "--windows", "4", "--results", str(res2)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 120
            while not any(f.stat().st_size for f in res2.glob("*/raw/*/windows-*.jsonl")):
                assert p.poll() is None and time.monotonic() < deadline, p.communicate()
                time.sleep(0.05)
            cap(1, 10)
            out, err = p.communicate(timeout=300)
        finally:
            if p.poll() is None:
                p.kill()
        run2 = out.strip().splitlines()[-1]
        rows = samples(res2, run2)
        assert len(rows) == 4, rows
        assert rows[-1]["status"] == "invalid", rows[-1]
        for r in rows:
            capped = json.loads(r["emulation"])["1"]["cpu_cores"] is not None
            if capped or r["status"] != "ok":
                assert r["status"] == "invalid" and "CPU cap of 0.1 cores" in r["error"], r
        assert any("another emulation than the run's" in r["error"] for r in rows[1:]) or all(
            "changed during the window" in r["error"] for r in rows[1:]
        ), [r["error"] for r in rows]
        assert "stored invalid" in err and "Traceback" not in err, err

    # The cluster rebuilt with other rates and caps: validating the first
    # run there is refused, and says what differs.
    with cluster_up("--nodes", "2", "--link-rate", "100mbit", "--node", "1:cpu=50%"):
        p = rooftop("validate", run, "--results", str(res), "--duration", "0.5", "--windows", "1", check=False)
        assert p.returncode != 0 and "Traceback" not in p.stderr, p.stderr
        assert "not the one this run was measured on" in p.stderr, p.stderr
        assert "send rate 100Mbit, the run's: 200Mbit" in p.stderr, p.stderr
        assert "node 1 (rooftop-n1): a CPU cap of 0.5 cores' worth per period, the run's: no CPU cap" in p.stderr, (
            p.stderr
        )
        assert all(r["stage"] != "validate" for r in samples(res, run))
        p = rooftop("collect", "--resume", run, "--results", str(res), check=False)
        assert p.returncode != 0 and "not the one this run was measured on" in p.stderr, p.stderr
    cluster("down")
