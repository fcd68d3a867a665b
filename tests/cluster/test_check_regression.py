"""The regression gate on the emulated cluster (issue 32's ground truth):
two short bw runs with every link shaped at R, then a third after the
cluster is rebuilt at R/2. `rooftop check` on the third exits 1 and names
the bandwidth ceilings with a fall of about 50 %; between the first two it
exits 0 (noise is not a regression)."""

from __future__ import annotations

import json

from cluster_util import cluster, needs_root, rooftop

pytestmark = needs_root


def _collect(res) -> str:
    p = rooftop(
        "collect",
        "--launcher",
        "netns",
        "--metrics",
        "bw",
        "--duration",
        "1",
        "--warmup",
        "0.3",
        "--samples",
        "2",
        "--results",
        str(res),
    )
    return p.stdout.strip().splitlines()[-1]


def test_a_halved_link_fails_the_check_and_noise_does_not(cluster3, tmp_path):
    res = tmp_path / "res"
    first, second = _collect(res), _collect(res)
    p = rooftop("check", second, "--against", first, "--results", str(res), "--json", check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    cluster("down")
    cluster("up", "--nodes", "3", "--link-rate", "100mbit")  # the fixture's teardown takes it down
    third = _collect(res)
    p = rooftop("check", third, "--against", first, "--results", str(res), "--json", check=False)
    assert p.returncode == 1, p.stdout + p.stderr
    doc = json.loads(p.stdout)
    fell = {c["ceiling"]: c["change"] for m in doc["metrics"] for c in m["changes"] if c["beyond_noise"]}
    assert "server" in fell and all(-0.6 < v < -0.4 for v in fell.values()), doc
    assert all(c["direction"] == "fell" for m in doc["metrics"] for c in m["changes"] if c["beyond_noise"])
    p = rooftop("check", "latest", "--against", "history", "--results", str(res), check=False)
    assert p.returncode == 1 and "bw server ceiling fell" in p.stdout, p.stdout + p.stderr
