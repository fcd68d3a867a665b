"""rpc.request_size / rpc.response_size: noop RPCs padded as Quintain's
req_buffer_size / resp_buffer_size (the worked example of
docs/extending.md: two keys of the rpc metric, one file)."""

from __future__ import annotations

import json

from campaign_util import QUICK, rooftop, samples


def test_sizes_reach_every_engine_and_servers_hold_them(tmp_path):
    res = tmp_path / "res"
    sizes = ["--set", "rpc.request_size=1KiB", "--set", "rpc.response_size=128KiB"]
    dry = rooftop("collect", "--metrics", "rpc", *sizes, "--results", str(res), "--dry-run").stdout
    serve = [l for l in dry.splitlines() if " serve " in l]
    load = [l for l in dry.splitlines() if " load " in l]
    assert serve and all("--max-msg 131072" in l for l in serve)  # above the 64 KiB default
    assert load and all("--req-size 1024 --resp-size 131072" in l for l in load)

    run = rooftop("collect", "--metrics", "rpc", *sizes, *QUICK, "--results", str(res)).stdout.split()[-1]
    rows = samples(res, run)
    assert rows and all(r["status"] == "ok" for r in rows), [r["error"] for r in rows]
    docs = list((res / run).rglob("client-*.json"))
    assert docs
    for doc in (json.loads(p.read_text()) for p in docs):
        assert (doc["config"]["req_size"], doc["config"]["resp_size"]) == (1024, 131072)
        assert doc["result"]["ops"] > 0
    cfg = json.loads((res / run / "config.json").read_text())
    assert cfg["rpc"] == {"request_size": "1KiB", "response_size": "128KiB"}
    keys = rooftop("config", "keys").stdout
    assert "rpc.response_size" in keys and "rpc.request_size" in keys


def test_defaults_leave_the_commands_as_they_were(tmp_path):
    dry = rooftop("collect", "--metrics", "rpc", "--results", str(tmp_path), "--dry-run").stdout
    assert "--req-size" not in dry and "--resp-size" not in dry and "--max-msg" not in dry


def test_a_payload_beyond_the_limit_names_the_key(tmp_path):
    p = rooftop("collect", "--set", "rpc.response_size=32MiB", "--results", str(tmp_path), "--dry-run", check=False)
    assert p.returncode == 2 and "rpc.response_size: 32MiB is larger than 16 MiB" in p.stderr
    p = rooftop("collect", "--set", "rpc.request_size=lots", "--results", str(tmp_path), "--dry-run", check=False)
    assert p.returncode == 2 and "rpc.request_size" in p.stderr
