"""Fuzz the config loader and the parameters-file loader (issue 11, finding
7): random JSON and TOML values, seeded. Each case ends in a valid config
(every number finite and sensible) or in one error naming a key; never a
traceback, never NaN, infinity or 1e400 let through."""

from __future__ import annotations

import json
import math
import random

import pytest

from rooftop import model
from rooftop.config.catalog import KEY_BY_PATH, KEYS
from rooftop.config.resolve import build
from rooftop.keys import ConfigError
from rooftop.model.answer import answer
from rooftop.model.ceilings import ModelError

CASES = 1500
SECTIONS = sorted({k.path.split(".")[0] for k in KEYS})


def scalar(rnd: random.Random):
    return rnd.choice(
        [
            lambda: rnd.randint(-3, 12),
            lambda: rnd.choice([0, -1, 10 ** rnd.randint(3, 40), -(10 ** rnd.randint(3, 40))]),
            lambda: rnd.uniform(-10, 100),
            lambda: rnd.choice([math.nan, math.inf, -math.inf, 1e308, -0.0, 5e-324]),
            lambda: rnd.choice([True, False]),
            lambda: rnd.choice(
                [
                    "",
                    "4MiB",
                    "-1KiB",
                    "1e400",
                    "nan",
                    "inf",
                    "rpc",
                    "bw",
                    "core",
                    "busy",
                    "spindown:5",
                    "ofi+tcp",
                    "0",
                    "x" * rnd.randint(1, 200),
                    "\u00e9\u00e8\u2603",
                    "99999999999999999999TiB",
                ]
            ),
        ]
    )()


def value(rnd: random.Random, depth: int = 0):
    kind = rnd.random()
    if kind < 0.7 or depth > 1:
        return scalar(rnd)
    if kind < 0.9:
        return [value(rnd, depth + 1) for _ in range(rnd.randint(0, 4))]
    return {rnd.choice(["a", "duration", "samples"]): value(rnd, depth + 1) for _ in range(2)}


def case(rnd: random.Random) -> dict:
    """A config of 1-3 keys with random values (sometimes an unknown key)."""
    data: dict = {}
    for _ in range(rnd.randint(1, 3)):
        path = rnd.choice([k.path for k in KEYS] + ["collect.bogus", "nodes"])
        if path == "launcher.type":  # no real cluster launcher here: keep it local
            continue
        node = data
        parts = path.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = value(rnd)
    return data


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return "{" + ", ".join(f"{k} = {toml_value(x)}" for k, x in v.items()) + "}"


def to_toml(data: dict) -> str:
    top = [f"{k} = {toml_value(v)}" for k, v in data.items() if not isinstance(v, dict)]
    tables = [
        f"[{k}]\n" + "\n".join(f"{kk} = {toml_value(vv)}" for kk, vv in v.items())
        for k, v in data.items()
        if isinstance(v, dict)
    ]
    return "\n".join(top + tables) + "\n"


def check_config(cfg: dict) -> None:
    for k in KEYS:
        v = cfg
        for part in k.path.split("."):
            v = v[part]
        for x in v if isinstance(v, list) else [v]:
            if isinstance(x, float):
                assert math.isfinite(x), k.path
            if isinstance(x, (int, float)) and k.maximum is not None:
                assert x <= k.maximum, k.path
    for stage in ("collect", "validate"):
        assert cfg[stage]["duration"] > 0 and cfg[stage]["windows"] >= 1


def names_a_key(message: str) -> bool:
    head = message.split(":", 1)[0].split("[", 1)[0]
    return head in KEY_BY_PATH or head in SECTIONS or head in ("collect.bogus", "nodes")


@pytest.mark.parametrize("fmt", ["json", "toml"])
def test_config_loader_fuzz(fmt, tmp_path):
    rnd = random.Random(11 if fmt == "json" else 12)
    outcomes = {"valid": 0, "error": 0}
    f = tmp_path / f"c.{fmt}"
    for i in range(CASES):
        data = case(rnd)
        f.write_text(json.dumps(data) if fmt == "json" else to_toml(data))
        try:
            cfg = build(str(f))
        except ConfigError as e:
            assert names_a_key(str(e)) or str(f) in str(e), f"case {i} {data}: {e}"
            assert len(str(e)) < 400, f"case {i}: {e}"
            outcomes["error"] += 1
            continue
        check_config(cfg)
        outcomes["valid"] += 1
    assert outcomes["valid"] > 20 and outcomes["error"] > CASES // 2, outcomes


def test_config_rejects_numbers_that_are_not_numbers(tmp_path):
    f = tmp_path / "c.json"
    for text, key in [
        ('{"collect": {"duration": NaN}}', "collect.duration"),
        ('{"collect": {"duration": Infinity}}', "collect.duration"),
        ('{"validate": {"duration": 1e400}}', "validate.duration"),
        ('{"collect": {"duration": -5}}', "collect.duration"),
        ('{"collect": {"windows": 0}}', "collect.windows"),
        ('{"collect": {"windows": 10000, "duration": 86400}}', "collect.windows"),
        ('{"engine": {"timeout": 1e400}}', "engine.timeout"),
    ]:
        f.write_text(text)
        with pytest.raises(ConfigError) as e:
            build(str(f))
        assert str(e.value).startswith(key + ":"), (text, str(e.value))
    toml = tmp_path / "c.toml"
    toml.write_text("[collect]\nduration = nan\n")
    with pytest.raises(ConfigError, match="^collect.duration: expected a finite number"):
        build(str(toml))


def params_case(rnd: random.Random) -> dict:
    metrics = {}
    for m in rnd.sample(["rpc", "bw", "iops"], rnd.randint(1, 2)):
        entry = {
            "unit": rnd.choice(["K ops/s", "ops/s", "GiB/s", "MB/s", "furlongs", 3]),
            "client": value(rnd),
            "server": value(rnd),
        }
        if rnd.random() < 0.5:
            entry["client_node"] = value(rnd)
        if rnd.random() < 0.7:  # often a plausible ceiling, so some cases get through
            entry[rnd.choice(["client", "server"])] = [rnd.uniform(0.1, 1e4), rnd.uniform(0.1, 1e4)]
            entry["client"] = rnd.choice([entry["client"], rnd.uniform(0.1, 1e6)])
            entry["server"] = rnd.choice([entry["server"], rnd.uniform(0.1, 1e6)])
        metrics[m] = entry
    return {"name": scalar(rnd), "metrics": metrics}


def numbers(v) -> list[float]:
    """Every number inside nested dicts and lists."""
    if isinstance(v, dict):
        return [x for item in v.values() for x in numbers(item)]
    if isinstance(v, (list, tuple)):
        return [x for item in v for x in numbers(item)]
    return [float(v)] if isinstance(v, (int, float)) and not isinstance(v, bool) else []


def test_params_loader_fuzz(tmp_path):
    rnd = random.Random(13)
    f = tmp_path / "p.json"
    outcomes = {"valid": 0, "error": 0}
    for i in range(CASES):
        data = params_case(rnd)
        f.write_text(json.dumps(data).replace("1e+308", "1e400"))
        try:
            rooflines = model.load_params(f)
        except ModelError as e:
            assert f"{f}: metrics." in str(e), f"case {i} {data}: {e}"
            outcomes["error"] += 1
            continue
        for r in rooflines.values():  # what 'rooftop model --params' computes
            ev = model.evaluate(r, [])
            d = {**ev.to_dict(), **answer(r, ev).to_dict()}
            assert all(math.isfinite(v) for v in numbers(d["ridge"])), d["ridge"]
            # A ratio only where the verdict locates the ridge (issue 43).
            assert (d["recommended"] is None) == (not d["ridge"]["located"]), d
            if d["recommended"] is not None:
                assert d["recommended"]["servers"] >= 1 and d["recommended"]["clients"] >= 1
        outcomes["valid"] += 1
    assert outcomes["valid"] > 20 and outcomes["error"] > 20, outcomes


def test_params_file_with_1e400_is_an_error_naming_the_key(tmp_path):
    f = tmp_path / "p.json"
    f.write_text('{"metrics": {"rpc": {"unit": "K ops/s", "client": [148, 1e400], "server": 500}}}')
    with pytest.raises(ModelError) as e:
        model.load_params(f)
    assert f"{f}: metrics.rpc.client:" in str(e.value) and "finite" in str(e.value)
