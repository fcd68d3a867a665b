"""Issue 42: what a campaign's processes need of the machine (memory,
processes and threads) is checked for every metric and binding before any
process starts; only bw's client buffers were checked."""

from __future__ import annotations

import pytest
from campaign_util import rooftop

from rooftop.config import resources
from rooftop.config.resolve import build
from rooftop.keys import ConfigError


def test_rpc_clients_beyond_the_machines_memory_are_refused_before_anything_runs(tmp_path):
    res = tmp_path / "r"
    for command in (["collect", "--dry-run"], ["collect"]):
        p = rooftop(
            *command,
            *("--binding", "none", "--metrics", "rpc", "--set", "collect.clients_per_node=100000"),
            *("--results", str(res)),
            check=False,
        )
        assert p.returncode == 2 and "Traceback" not in p.stderr, (p.returncode, p.stderr)
        assert "collect.clients_per_node: the engine processes need at least" in p.stderr, p.stderr
        assert "100000 clients per node, binding none" in p.stderr and "available" in p.stderr, p.stderr
        assert not res.exists()


def test_processes_beyond_a_task_limit_are_refused_naming_it(monkeypatch):
    monkeypatch.setattr(resources, "task_room", lambda: [("ulimit -u = 100 (50 tasks of this user)", 50)])
    over = {"binding": "none", "metrics": ["rpc"], "collect.clients_per_node": 40}
    with pytest.raises(ConfigError, match=r"collect.clients_per_node: .* exceed ulimit -u = 100 .* room for 50"):
        build(overrides=over)
    build(overrides={**over, "collect.clients_per_node": 2})  # fits


def test_server_buffers_follow_the_metrics_server_arguments():
    assert resources.server_memory([]) == (16 << 20) * 4 + 148 * (64 << 10)
    assert resources.server_memory(["--max-size", "4KiB", "--max-msg", "1MiB"]) == 4 * 4096 + 148 * (1 << 20)
