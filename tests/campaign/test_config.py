"""Config errors name the key and say why; the resolved config is complete."""

from __future__ import annotations

import json

import pytest
from campaign_util import rooftop

from rooftop.config.catalog import KEYS
from rooftop.config.files import merge, parse_override
from rooftop.config.resolve import build, resolve
from rooftop.keys import RENAMED, ConfigError


def err(data=None, **overrides):
    with pytest.raises(ConfigError) as e:
        resolve(merge(data, overrides))
    return str(e.value)


def test_errors_name_the_key():
    assert "collect.duraton: unknown key" in err({"collect": {"duraton": 5}})
    assert "did you mean collect.duration" in err({"collect": {"duraton": 5}})
    assert err({"bogus": 1}).startswith("bogus: unknown key")
    with pytest.raises(ConfigError, match=r"collect\.windwos: unknown key \(did you mean collect\.windows\? see"):
        parse_override("collect.windwos=3")  # --set, as a config file
    assert "collect.windows: expected an integer" in err({"collect": {"windows": "five"}})
    assert "collect.duration: must be > 0" in err({"collect": {"duration": 0}})
    assert "binding: 'socket' is not one of core, 2cores, none" in err({"binding": "socket"})
    assert "bw.size: 'huge' is not a size" in err({"bw": {"size": "huge"}})
    assert "metrics[0]: 'tput' is not one of rpc, bw" in err({"metrics": ["tput"]})
    assert "engine.server_progress" in err({"engine": {"server_progress": "spin"}})
    assert "bw.stream_size" in err({"bw": {"size": "2GiB", "stream_size": "1GiB"}})


def test_impossible_values_for_this_machine():
    n = len(build()["nodes"][0]["cores"])
    assert "collect.servers_per_node" in err({"collect": {"servers_per_node": n + 1}})
    assert "do not fit" in err({"collect": {"servers_per_node": n + 1}})
    assert "launcher: launcher.nodes = 99" in err({"launcher": {"nodes": 99}})
    assert "validate.server_nodes" in err({"validate": {"server_nodes": [5]}})
    assert "bw.stream_size" in err({"bw": {"stream_size": "64TiB"}})
    assert "launcher.nodes: a campaign needs at least 2 nodes" in err({"launcher": {"nodes": 1}})
    assert "fabric.domain" in err({"launcher": {"type": "mpiexec", "hosts": ["n1", "n2"]}})


def test_resolved_config_has_every_default(tmp_path):
    cfg = build()
    for k in KEYS:
        node = cfg
        for part in k.path.split("."):
            assert part in node, k.path
            node = node[part]
    assert cfg["nodes"] and cfg["validate"]["server_nodes"]
    assert cfg["collect"]["servers_per_node"] >= 1


def test_file_json_and_toml_and_cli(tmp_path):
    j = tmp_path / "c.json"
    j.write_text(json.dumps({"metrics": ["rpc"], "collect": {"windows": 2}}))
    t = tmp_path / "c.toml"
    t.write_text('metrics = ["bw"]\n[collect]\nwindows = 4\n[bw]\nsize = "1MiB"\n')
    assert build(str(j))["collect"]["windows"] == 2
    cfg = build(str(t))
    assert cfg["metrics"] == ["bw"] and cfg["bw"]["size"] == "1MiB"
    out = rooftop("config", "show", "--config", str(j), "--set", "collect.duration=2.5", "--metrics", "rpc,bw").stdout
    shown = json.loads(out)
    assert shown["collect"]["duration"] == 2.5 and shown["collect"]["windows"] == 2
    assert shown["metrics"] == ["rpc", "bw"]
    bad = tmp_path / "bad.json"
    bad.write_text('{"collect": {"windows": 2,}}')
    p = rooftop("collect", "--config", str(bad), check=False)
    assert p.returncode == 2 and str(bad) in p.stderr and "line 1" in p.stderr
    p = rooftop("collect", "--set", "collect.windows=-1", check=False)
    assert p.returncode == 2 and "collect.windows: must be > 0" in p.stderr
    assert "collect.duration" in rooftop("config", "keys").stdout


@pytest.mark.parametrize("was,now", sorted(RENAMED.items()))
def test_a_key_renamed_before_the_first_release_is_refused_naming_the_new(was, now):
    """Issue 28 renamed collect.samples/validate.samples (engine windows per
    measurement) to *.windows and sample/sample_interval (the time series)
    to series/series_interval, before 0.1.0 was released: in a config file
    or --set the old spelling is an unknown key, whose error names the new
    one (a run stored before the rename is still read: store migration 15)."""
    *parents, leaf = was.split(".")
    nested: dict = {leaf: 2}
    for p in reversed(parents):
        nested = {p: nested}
    assert err(nested) == f"{was}: unknown key (did you mean {now}?)"
    with pytest.raises(ConfigError, match=rf"^{was}: unknown key \(did you mean {now}\? see"):
        parse_override(f"{was}=2")


def test_an_old_key_or_flag_spelling_is_refused_on_the_command_line(tmp_path):
    p = rooftop("config", "show", "--set", "validate.samples=3", check=False)
    assert p.returncode == 2 and "validate.samples: unknown key (did you mean validate.windows?" in p.stderr
    assert "deprecated" not in p.stderr and "Traceback" not in p.stderr
    p = rooftop("collect", "--dry-run", "--samples", "2", "--results", str(tmp_path), check=False)
    assert p.returncode == 2 and "unrecognized arguments: --samples 2" in p.stderr, p.stderr
