"""rooftop.engine.enginedoc is the one reader of engine documents and window
logs: its window-log reader on damaged logs, and no other module spelling
the documents' names (which is where a second reader would start)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import rooftop
from rooftop.engine import enginedoc

HEAD = {"rank": 0, "windows": 3}


def _line(**ev) -> str:
    return json.dumps({**HEAD, **ev}) + "\n"


MEASURE = _line(event="measure", start_s=100.0, duration_s=0.5)
W0 = _line(event="window", window=0, end_s=100.5, elapsed_s=0.5, ops=10)
W1 = _line(event="window", window=1, end_s=101.0, elapsed_s=0.5, ops=12)


def test_a_torn_last_line_is_left_out_until_its_newline_is_written(tmp_path):
    """A line counts once its newline is written (the engine writes both at
    once and counts a short write as lost): a last line without one, even
    one that parses, is being written or was cut by a kill."""
    path = tmp_path / "windows-0.jsonl"
    path.write_text(MEASURE + W0 + W1.rstrip("\n"))
    assert [ev["event"] for ev in enginedoc.window_log(path)] == ["measure", "window"]
    log = enginedoc.WindowLog(path)
    assert [ev.get("window") for ev in log.read()] == [None, 0]
    with open(path, "a") as f:
        f.write("\n" + W1[:20])
    assert [ev["window"] for ev in log.read()] == [1]  # completed since: once
    assert log.read() == []  # a half-written line waits
    with open(path, "a") as f:
        f.write(W1[20:])
    assert [ev["window"] for ev in log.read()] == [1]
    got = enginedoc.log_result(enginedoc.window_log(path), 4096)
    assert got is not None and [w["work_ops"] for w in got["windows"]] == [10.0, 12.0]  # window 1 once


def test_a_non_finite_or_missing_number_makes_the_line_damaged(tmp_path):
    """Python's json reads NaN and Infinity: a window whose numbers are not
    finite numbers (or missing, or of the wrong kind) is a damaged line,
    left out as a garbled one is, by every reader of the log."""
    path = tmp_path / "windows-0.jsonl"
    bad = [
        W1.replace('"ops": 12', '"ops": NaN'),
        W1.replace('"elapsed_s": 0.5', '"elapsed_s": Infinity'),
        W1.replace('"end_s": 101.0', '"end_s": "101.0"'),
        W1.replace('"window": 1', '"window": 1.5'),
        W1.replace('"window": 1', '"window": -1'),
        W1.replace('"window": 1', '"window": true'),
        _line(event="window", window=1),
        _line(event="measure", start_s=float("nan")),
        "[1, 2]\n",
    ]
    path.write_text(MEASURE + W0 + "".join(bad))
    events = enginedoc.window_log(path)
    assert [(ev["event"], ev.get("window")) for ev in events] == [("measure", None), ("window", 0)]
    got = enginedoc.log_result(events, 1)
    assert got is not None and got["windows"] == [{"elapsed_s": 0.5, "work_ops": 10.0}]
    assert enginedoc.log_result([ev for ev in events if ev["event"] != "measure"], 1) is None


def test_an_empty_or_missing_window_log_has_no_events(tmp_path):
    empty = tmp_path / "windows-0.jsonl"
    empty.write_text("")
    assert enginedoc.window_log(empty) == []
    assert enginedoc.WindowLog(tmp_path / "windows-1.jsonl").read() == []  # not started yet
    assert enginedoc.log_result([], 1) is None
    assert enginedoc.log_windows_asked([]) == 0


#: The file names of engine documents and window logs, however spelled:
#: "client-{rank}.json", f"client-{r}.json", "windows-*.jsonl", "storage-0.json".
DOCUMENT_NAME = re.compile(r"(^|/)(client|server|storage|windows)-[^/]*\.jsonl?$")


def _strings(tree: ast.AST):
    """(line, text) of every string of a module but its docstrings; an
    f-string with its fields as {}."""
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    inside = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            inside.update(id(v) for v in node.values)
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
            yield node.lineno, text
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in docstrings and id(node) not in inside:
                yield node.lineno, node.value


def test_no_module_but_enginedoc_names_engine_documents_or_window_logs():
    """Every module finds, opens and names engine documents and window logs
    through rooftop.engine.enginedoc (client_document, window_logs, WindowLog,
    CLIENT_DOCUMENT for an engine's --output ...): a module spelling their
    names is reading them on its own."""
    src = Path(rooftop.__file__).parent
    own = src / "engine" / "enginedoc.py"
    checkout = Path(__file__).resolve().parents[2]  # and the benchmarks and scripts beside the package
    files = [*src.rglob("*.py"), *(checkout / "benchmarks").rglob("*.py"), *(checkout / "scripts").rglob("*.py")]
    found = [
        f"{path}:{line}: {text!r}"
        for path in sorted(files)
        if path != own
        for line, text in _strings(ast.parse(path.read_text()))
        if DOCUMENT_NAME.search(text.strip())
    ]
    assert found == [], "engine documents named outside rooftop.engine.enginedoc:\n" + "\n".join(found)


def test_an_engine_command_printing_no_document_is_a_clear_error(monkeypatch):
    """Engine output read on standard output goes through enginedoc.parse:
    `rooftop nics` names what the engine printed instead of a traceback."""
    import subprocess

    import pytest

    from rooftop.keys import ConfigError
    from rooftop.nics import policy

    printed = subprocess.CompletedProcess([], 0, stdout="not a document\n", stderr="")
    monkeypatch.setattr(policy.subprocess, "run", lambda *a, **k: printed)
    with pytest.raises(ConfigError, match="printed no engine document: 'not a document'"):
        policy.run("rooftop-engine", "ofi+tcp", None, "auto", "none", 1)
    assert enginedoc.parse("  \n") is None and enginedoc.parse('{"result": {}}\n') == {"result": {}}


def test_a_rounds_record_is_read_in_one_place(tmp_path):
    """round.json (which window measured which rows) is read by
    enginedoc.round_keys alone; a folder without a readable one has none
    (None), and every reader falls back as it did. Its one writer is the
    campaign's round (campaign/rounds.py)."""
    assert enginedoc.round_keys(tmp_path) is None
    (tmp_path / enginedoc.ROUND_DOCUMENT).write_text(json.dumps({"keys": [["a", "b"], ["c"]]}))
    assert enginedoc.round_keys(tmp_path) == [["a", "b"], ["c"]]
    for garbled in ("{", '{"keys": 3}', '{"keys": ["a"]}', "[]"):
        (tmp_path / enginedoc.ROUND_DOCUMENT).write_text(garbled)
        assert enginedoc.round_keys(tmp_path) is None, garbled
    src = Path(rooftop.__file__).parent
    allowed = {src / "engine" / "enginedoc.py"}
    found = [
        f"{path.relative_to(src)}:{line}"
        for path in sorted(src.rglob("*.py"))
        if path not in allowed
        for line, text in _strings(ast.parse(path.read_text()))
        if text == enginedoc.ROUND_DOCUMENT
    ]
    assert found == [], f"round.json read outside enginedoc.round_keys: {found}"
