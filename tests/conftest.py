"""Shared fixtures: the engine output schema, pinned cores, reserved huge
pages; and on every test, no_leaked_processes (tests/leaks.py): a test that
leaves a process running fails, naming it, and the process is killed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import hugepages
from leaks import no_leaked_processes  # noqa: F401  (autouse: every test)

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = ROOT / "engine" / "schema" / "engine-output.schema.json"


@pytest.fixture(scope="session")
def validate():
    """Returns a function that validates an engine document against the schema."""
    import jsonschema

    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)

    def check(doc: dict) -> dict:
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
        assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)
        return doc

    return check


@pytest.fixture(scope="session")
def cores() -> tuple[str | None, str | None]:
    """(server cpu, client cpu): different cores when there are two."""
    cpus = sorted(os.sched_getaffinity(0))
    return (str(cpus[0]), str(cpus[1])) if len(cpus) >= 2 else (None, None)


@pytest.fixture
def huge_pages():
    """48 more huge pages reserved for one test, given back after; skipped,
    saying why, where they cannot be had."""
    if os.geteuid() != 0:
        pytest.skip("reserving huge pages (/proc/sys/vm/nr_hugepages) needs root")
    with hugepages.reserved(48) as got:
        if not got:
            pytest.skip("the kernel could not reserve 48 huge pages (memory too fragmented)")
        yield
