"""No aggregate through one link exceeds it (issue 10): 4 emulated nodes,
one capped to 20 % CPU, every link shaped to R; bulk reads by 3 clients
(nodes 1-3) out of one server node (node 0) must add up to R -- within
[0.85 R, 1.03 R] -- at two rates and two transfer sizes."""

from __future__ import annotations

import pytest
from campaign_util import samples
from cluster_util import cluster_up, needs_root, rooftop

pytestmark = needs_root


@pytest.mark.parametrize("rate_bits", [80_000_000, 200_000_000])
def test_bulk_aggregates_through_one_link_stay_at_its_rate(rate_bits, tmp_path):
    R = rate_bits / 8
    with cluster_up("--nodes", "4", "--link-rate", f"{rate_bits // 1_000_000}mbit", "--node", "3:cpu=20%"):
        for size in ("1MiB", "4MiB"):
            res = tmp_path / f"res-{size}"
            p = rooftop(
                "collect",
                "--launcher",
                "netns",
                "--metrics",
                "bw",
                "--set",
                f"bw.size={size}",
                "--set",
                "collect.client_peak=false",
                "--set",
                "collect.client_node=false",
                "--duration",
                "1.5",
                "--warmup",
                "0.5",
                "--windows",
                "2",
                "--results",
                str(res),
            )
            run = p.stdout.strip().splitlines()[-1]
            rows = samples(res, run)
            assert len(rows) == 2 and all(r["client_procs"] == 3 for r in rows), rows
            seen = [(r["status"], round(r["aggregate"] / R, 3), r["error"]) for r in rows]
            assert all(r["status"] == "ok" for r in rows), (size, seen)
            assert all(0.85 * R <= r["aggregate"] <= 1.03 * R for r in rows), (size, seen)
