"""Service specs: the presets parse, and a bad spec is refused with the key and the file named."""

from __future__ import annotations

import pytest

from rooftop.keys import ConfigError
from rooftop.service import presets
from rooftop.service.spec import load

GOOD = """
name = "echo"
metric = "rpc"
[server]
command = "sleep 30"
[ready]
file = "{dir}"
timeout = 5
[client]
command = "echo {server_address}:{server_port} rate=7"
[rate]
regex = 'rate=(\\d+)'
unit = "K ops/s"
"""


def write(tmp_path, text):
    p = tmp_path / "svc.toml"
    p.write_text(text)
    return p


def test_presets_parse_and_resolve():
    for name in presets.names():
        spec = presets.spec(name)
        d = spec.resolved()
        assert d["name"] == name and d["unit"] in ("ops/s", "bytes/s")
    assert presets.spec("redis-bw").to_metric(2.0) == 2.0 * (1 << 20)  # 2 GETs/s of 1 MiB


def test_good_spec_converts_its_unit(tmp_path):
    spec = load(write(tmp_path, GOOD))
    assert spec.to_metric(7) == 7000.0
    assert spec.resolved()["client"]["start_timeout"] == 30.0  # defaults recorded


@pytest.mark.parametrize(
    "old,new,key",
    [
        ('metric = "rpc"', 'metric = "latency"', "metric"),
        ("echo {server_address}", "echo {servr_address}", "client.command"),
        ('file = "{dir}"', "", "ready"),
        ('unit = "K ops/s"', 'unit = "MiB/s"', "rate.unit"),
        ("regex = 'rate=(\\d+)'", "regex = 'rate=\\d+'", "rate.regex"),
        ("timeout = 5", "timeout = -1", "ready.timeout"),
        ("[client]", "[client]\nretries = 3", "client.retries"),
    ],
)
def test_bad_spec_names_key_and_file(tmp_path, old, new, key):
    assert old in GOOD
    p = write(tmp_path, GOOD.replace(old, new))
    with pytest.raises(ConfigError) as e:
        load(p)
    assert str(p) in str(e.value) and f"{key}:" in str(e.value)


def test_a_template_is_split_before_its_placeholders_are_filled():
    """A value with spaces or quotes stays one argument, filled now or by the wrapper later."""
    from rooftop.service.spec import command, partly

    d = "/tmp/my results/it's"
    template = "redis-server --dir {dir} --logfile {dir}/redis.log --save '' --port {port}"
    assert command(template, {"dir": d, "port": 1}) == [
        *("redis-server", "--dir", d, "--logfile", f"{d}/redis.log", "--save", "", "--port", "1")
    ]
    assert command(partly(template, {"port": 1}), {"dir": d}) == command(template, {"dir": d, "port": 1})
