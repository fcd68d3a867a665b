"""How an audit row turns repeats into a verdict (no engine): overlapping
repeats are 'indistinguishable here', apart they name the winner and the
factor, one repeat says it has no noise estimate, a refused setting makes
its comparisons 'not measurable here' with the reason."""

from __future__ import annotations

import pytest

from rooftop import audit
from rooftop.audit.base import INDISTINGUISHABLE, Measured, compare, summarize


def stats(name: str, rates: list[float], error: str = "") -> dict:
    return Measured(name, rates, error).stats()


def test_overlapping_repeats_are_indistinguishable():
    c = compare(stats("a", [100, 120, 110]), stats("b", [115, 130, 125]))
    assert c["verdict"] == INDISTINGUISHABLE and c["winner"] is None and c["ratio"] == pytest.approx(110 / 125)


def test_separate_repeats_name_the_winner_and_the_factor():
    c = compare(stats("busy", [300, 310]), stats("block", [100, 105]))
    assert c["winner"] == "busy" and c["verdict"] == "busy 2.98x block"  # 305 / 102.5
    c = compare(stats("direct", [10, 11]), stats("buffered", [1000, 1100]))
    assert c["winner"] == "buffered" and c["verdict"].startswith("buffered 100.00x direct")


def test_one_repeat_says_there_is_no_noise_estimate():
    c = compare(stats("a", [2.0]), stats("b", [1.0]))
    assert c["winner"] == "a" and "no noise estimate" in c["verdict"]


def test_a_refused_setting_is_not_measurable_with_its_reason():
    why = "--io-mode direct: tmpfs at /t does not honour O_DIRECT"
    c = compare(stats("direct", [], why), stats("buffered", [5.0, 6.0]))
    assert not c["measurable"] and c["verdict"] == f"not measurable here: {why}"
    p = audit.PITFALLS["cache"]
    row = summarize(
        p,
        {
            s.name: Measured(s.name, [] if "direct" in s.name else [1.0, 2.0], why if "direct" in s.name else "")
            for s in p.settings
        },
    )
    assert row["meaning"].startswith("not measurable here: --io-mode direct")


def test_only_selects_pitfalls_and_refuses_unknown_names():
    assert [p.name for p in audit.select("cache, buffer")] == ["cache", "buffer"]
    assert [p.name for p in audit.select(None)] == list(audit.PITFALLS)
    with pytest.raises(ValueError, match="unknown pitfall.*nope"):
        audit.select("nope")


def test_every_pitfall_is_described_with_every_parameter():
    for p in audit.PITFALLS.values():
        d = p.describe()
        assert d["rationale"] and d["settings"] and d["op"]
        names = {s.name for s in p.settings}
        assert all(a in names and b in names for a, b in p.comparisons)


def test_an_audit_row_keeps_the_latency_of_the_document_it_measured(tmp_path):
    """The latency quantities of an audit row come from the client document
    the audit holds (audit.run._sample), not from reading back the file it
    wrote: its folder here holds none."""
    from rooftop.audit import PITFALLS
    from rooftop.audit.run import _sample
    from rooftop.store.db import Store
    from synthetic import config_for

    store = Store(tmp_path / "res")
    run_id = store.new_run(config_for(2), {"host": "h"})
    p = next(p for p in PITFALLS.values() if p.target == "network")
    doc = {"result": {p.field: 1000.0, "elapsed_s": 0.2, "latency_us": {"bins": [[1.0, 2.0, 90], [8.0, 16.0, 10]]}}}
    raw = tmp_path / "raw"
    raw.mkdir()
    store.add_sample(**_sample(run_id, p, p.settings[0], 0, raw, {"duration": 0.2}, doc, ""))
    (sample_id,) = store.db.execute("SELECT id FROM samples WHERE run_id = ?", (run_id,)).fetchone()
    got = store.sample_quantities(sample_id)
    assert {"latency_p50", "latency_p99"} <= got.keys() and got["latency_p99"][0] > got["latency_p50"][0]
