"""Combined rooflines of a workload mix (rooftop.model.mix) on synthetic
ceilings: the binding resource on each side of the mix's ridge, the
conversion of each metric's ceilings into mix operations, the mix file's
errors (naming file and key), and `rooftop model --params --mix`."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rooftop.model import mix
from rooftop.model.ceilings import Ceiling
from rooftop.model.roofline import Roofline

MIB = 1 << 20


def _roof(metric: str, unit: str, client: float, server: float) -> Roofline:
    return Roofline(metric, unit, Ceiling.span(client, client), Ceiling.span(server, server), "synthetic")


#: Per process: rpc 40 K / 100 K ops/s, iops 20 K / 5 K ops/s, sbw 2 GiB/s / 500 MiB/s.
ROOFS = {
    "rpc": _roof("rpc", "ops/s", 40e3, 100e3),
    "iops": _roof("iops", "ops/s", 20e3, 5e3),
    "sbw": _roof("sbw", "bytes/s", 2048 * MIB, 500 * MIB),
}


def _mix(tmp_path, text: str, name: str = "m.toml") -> mix.Mix:
    (tmp_path / name).write_text(text)
    return mix.load_mix(tmp_path / name)


def test_kv_put_binds_on_the_servers_storage_then_the_clients_rpc(tmp_path):
    comb = mix.combine(_mix(tmp_path, "name = 'kv put'\n[operations.put]\nrpc = 1\niops = 1\n"), ROOFS)
    # Servers: rpc allows 100 K puts, iops 5 K: iops binds. Clients: rpc 40 K, iops 20 K: iops binds.
    assert comb.roofline.server.centre == 5e3 and comb.roofline.client.centre == 20e3
    assert comb.binding(1.0) == ("iops", "server") and comb.binding(8.0) == ("iops", "client")
    assert comb.roofline.ridge.centre == pytest.approx(4.0)
    assert comb.roofline.rate(2.0) == 10e3 == min(ROOFS["rpc"].rate(2.0), ROOFS["iops"].rate(2.0))


def test_the_binding_resource_changes_at_the_ridge(tmp_path):
    # A checkpoint step: 200 RPCs and 4 MiB written. Servers: rpc 500 steps/s, sbw 125 -> sbw.
    # Clients: rpc 200 steps/s, sbw 512 -> rpc.
    comb = mix.combine(_mix(tmp_path, "[operations.step]\nrpc = 200\nsbw = '4MiB'\n"), ROOFS)
    assert comb.mix.name == "m" and comb.mix.demand == {"rpc": 200.0, "sbw": 4.0 * MIB}
    assert comb.server_metric == "sbw" and comb.client_metric == "rpc"
    assert comb.roofline.server.centre == 125 and comb.roofline.client.centre == 200
    ridge = comb.roofline.ridge.centre
    assert comb.binding(ridge / 2) == ("sbw", "server") and comb.binding(ridge * 2) == ("rpc", "client")
    text = "\n".join(comb.lines())
    assert "the servers' sbw binds" in text and "the clients' rpc binds" in text


def test_shares_weight_the_operations(tmp_path):
    m = _mix(tmp_path, "[operations.put]\nshare = 1\nrpc = 1\niops = 1\n[operations.get]\nshare = 3\nrpc = 1\n")
    assert m.demand == {"rpc": 1.0, "iops": 0.25}
    comb = mix.combine(m, ROOFS)
    assert comb.roofline.server.centre == 20e3 and comb.server_metric == "iops"  # 5 K / 0.25
    assert comb.roofline.client.centre == 40e3 and comb.client_metric == "rpc"
    # One resource after the other: 1 / (1/40 K + 0.25/20 K) at x = 16 (every client ceiling).
    assert comb.serial_rate(16) == pytest.approx(1 / (1 / 40e3 + 0.25 / 20e3))


def test_json_mix_files_are_read_too(tmp_path):
    m = _mix(tmp_path, json.dumps({"name": "ckpt", "operations": {"w": {"sbw": 1048576}}}), "c.json")
    assert m.name == "ckpt" and m.demand == {"sbw": float(MIB)}


@pytest.mark.parametrize(
    "text, says",
    [
        ("[operations.put]\nrpcs = 1\n", "operations.put.rpcs: unknown metric"),
        ("[operations.put]\nrpc = '4KiB'\n", "operations.put.rpc: rpc counts operations"),
        ("[operations.put]\nsbw = 'lots'\n", "operations.put.sbw"),
        ("[operations.put]\nrpc = -1\n", "operations.put.rpc: -1"),
        ("[operations.put]\nshare = 0\nrpc = 1\n", "operations.put.share: 0 must be a number > 0"),
        ("name = 'x'\n", "operations: give at least one operation"),
        ("weights = 1\n[operations.put]\nrpc = 1\n", "weights: unknown key"),
        ("[operations.put]\nrpc = 0\n", "no operation uses any metric"),
        ("[operations\n", "not valid TOML"),
    ],
)
def test_bad_mix_files_name_the_file_and_the_key(tmp_path, text, says):
    with pytest.raises(mix.MixError) as e:
        _mix(tmp_path, text, "bad.toml")
    assert str(e.value).startswith(str(tmp_path / "bad.toml")) and says in str(e.value), str(e.value)


def test_a_mix_needs_every_metric_it_uses(tmp_path):
    m = _mix(tmp_path, "[operations.put]\nrpc = 1\nmeta = 2\n")
    with pytest.raises(mix.MixError, match="operations use meta, which has no ceilings here"):
        mix.combine(m, ROOFS)


def test_model_params_with_a_mix_on_the_command_line(tmp_path):
    params = tmp_path / "p.json"
    params.write_text(
        json.dumps(
            {
                "name": "synthetic",
                "metrics": {
                    "rpc": {"unit": "K ops/s", "client": 40, "server": 100},
                    "iops": {"unit": "K ops/s", "client": 20, "server": 5},
                },
            }
        )
    )
    (tmp_path / "kv.toml").write_text("name = 'kv put'\n[operations.put]\nrpc = 1\niops = 1\n")
    run = lambda *a: subprocess.run(
        [sys.executable, "-m", "rooftop", "model", "--params", str(params), *a], capture_output=True, text=True
    )
    doc = json.loads(run("--mix", str(tmp_path / "kv.toml"), "--json").stdout)
    assert doc["mixes"][0]["binds"] == {"server": "iops", "client": "iops"}
    assert doc["mixes"][0]["server"] == pytest.approx(5e3) and doc["mixes"][0]["ridge"] == pytest.approx(4)
    out = run("--mix", str(tmp_path / "kv.toml")).stdout
    assert "below x = 4 (server/client processes) the servers' iops binds: 5.00 K mix ops/s" in out
    p = run("--mix", str(tmp_path / "none.toml"))
    assert p.returncode == 2 and f"{tmp_path / 'none.toml'}: No such file" in p.stderr
