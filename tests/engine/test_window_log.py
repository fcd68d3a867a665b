"""load --window-log: the measurement's events appear in the file while the
client runs (a campaign's progress per window), and agree with its document."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import jsonschema
import pytest

from rooftop.engine.servers import Group

SCHEMA = Path(__file__).resolve().parents[2] / "engine" / "schema" / "engine-output.schema.json"

WINDOWS, DURATION = 4, 0.4


def lines_of(path) -> list[dict]:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    return [json.loads(l) for l in text.splitlines() if l.endswith("}")]


def test_windows_are_logged_as_they_end(tmp_path, cores, validate):
    server_cpu, client_cpu = cores
    log = tmp_path / "windows-{rank}.jsonl"
    path = tmp_path / "windows-3.jsonl"
    seen: dict[int, float] = {}  # window -> when this test first read its line
    with Group() as g:
        g.start_server(0, cpus=server_cpu)
        out: dict = {}
        client = threading.Thread(
            target=lambda: out.update(
                doc=g.load(
                    op="noop",
                    duration=DURATION,
                    warmup=0.2,
                    cpus=client_cpu,
                    rank=3,
                    extra=["--windows", str(WINDOWS), "--window-log", str(log)],
                )
            )
        )
        client.start()
        while client.is_alive():
            for line in lines_of(path):
                if line["event"] == "window":
                    seen.setdefault(line["window"], time.time())
            time.sleep(0.02)
        client.join()
    doc = validate(out["doc"])
    r = doc["result"]
    assert doc["config"]["window_log"] == str(log)
    assert r["window_log"] == {"lines": WINDOWS + 2, "dropped": 0, "error": ""}
    lines = lines_of(path)
    line_schema = json.loads(SCHEMA.read_text())["$defs"]["window_log_line"]
    for line in lines:
        jsonschema.validate(line, line_schema)
    assert [l["event"] for l in lines] == ["measure"] + ["window"] * WINDOWS + ["end"]
    assert all(l["rank"] == 3 and l["windows"] == WINDOWS for l in lines)
    assert lines[0]["start_s"] == pytest.approx(r["measure_start_s"], abs=1e-3)
    windows = lines[1:-1]
    assert [l["window"] for l in windows] == list(range(WINDOWS))
    assert [l["ops"] for l in windows] == [s["ops"] for s in r["windows"]]
    for k, l in enumerate(windows):
        assert l["end_s"] == pytest.approx(r["measure_start_s"] + (k + 1) * DURATION, abs=1e-3)
    assert lines[-1]["end"] == "done" and lines[-1]["windows_measured"] == WINDOWS
    # Read while the client was still measuring: every window but the last
    # was seen before the last window ended.
    last_end = windows[-1]["end_s"]
    assert set(seen) >= set(range(WINDOWS - 1)), seen
    assert all(seen[k] < last_end for k in range(WINDOWS - 1)), (seen, last_end)


def test_an_unwritable_window_log_does_not_fail_the_measurement(tmp_path, cores, validate):
    server_cpu, client_cpu = cores
    with Group() as g:
        g.start_server(0, cpus=server_cpu)
        doc = validate(
            g.load(
                op="noop",
                duration=0.2,
                warmup=0.1,
                cpus=client_cpu,
                extra=["--window-log", str(tmp_path / "missing" / "w.jsonl")],
            )
        )
    assert doc["complete"] and doc["errors"] == []
    wl = doc["result"]["window_log"]
    assert wl["lines"] == 3 and wl["dropped"] == 3 and "missing/w.jsonl" in wl["error"]
