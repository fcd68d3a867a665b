"""`rooftop export RUN --format openmetrics`: what a facility's dashboards
(a node exporter's textfile collector, a push gateway) read: every ceiling
named with its unit, parsed by the Prometheus client library's own
parsers (OpenMetrics and the Prometheus text format), the same text for the
same run, and the check's outcome once the run has a history."""

from __future__ import annotations

import subprocess
import sys

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics_families
from prometheus_client.parser import text_string_to_metric_families as prometheus_families

from rooftop import export, metrics
from synthetic import scaled_run


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """Two runs of one results folder a week apart, the second's servers at half speed."""
    d = tmp_path_factory.mktemp("openmetrics")
    st, first = scaled_run(d, created="2026-01-01T00:00:00+00:00")
    st, second = scaled_run(d, server=0.5, created="2026-01-08T00:00:00+00:00")
    return st, first, second


def _samples(text: str) -> dict:
    """{(family, unit): {frozenset(labels): value}}, read by the OpenMetrics parser."""
    return {
        (f.name, f.unit): {frozenset(s.labels.items()): s.value for s in f.samples} for f in openmetrics_families(text)
    }


def test_every_ceiling_is_named_with_its_unit_and_parses(history):
    st, first, second = history
    text = export.openmetrics_text(st, first)
    fams = _samples(text)
    assert {f.name for f in prometheus_families(text)} == {name for name, _ in fams}  # Prometheus text too
    ceilings = [f for f in export.figures_of_merit(st, first) if f[0].split(".")[1] in export.CEILING_SIDES]
    assert ceilings
    for name, value, unit, _ in ceilings:
        metric, side, stat = name.split(".")
        prom = export.PROMETHEUS_UNITS[unit]
        family = fams[(f"rooftop_ceiling_{prom}", prom)]  # the unit in the name and in # UNIT
        assert family[frozenset({"metric": metric, "ceiling": side, "stat": stat}.items())] == value
    info = next(iter(fams[("rooftop_run_info", "")]))
    assert dict(info)["run"] == first
    # The first run has no history to be checked against: no outcome, not a made-up one.
    assert not any(name.startswith("rooftop_check") for name, _ in fams)


def test_the_check_outcome_is_there_once_the_run_has_a_history(history):
    st, first, second = history
    fams = _samples(export.openmetrics_text(st, second))
    fell = fams[("rooftop_check_fell", "")]
    assert fell == {frozenset({"metric": m}.items()): 1.0 for m in ("rpc", "bw")}  # the servers fell
    change = fams[("rooftop_check_change_ratio", "ratio")]
    assert change[frozenset({"metric": "rpc", "ceiling": "server"}.items())] < -0.1


def test_the_same_run_gives_the_same_text(history):
    st, first, second = history
    once = export.openmetrics_text(st, second)
    p = subprocess.run(
        [sys.executable, "-m", "rooftop", "export", second, "--format", "openmetrics", "--results", str(st.dir)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout == once == export.openmetrics_text(st, second)
    assert once.endswith("# EOF\n")


def test_every_metric_unit_has_a_prometheus_name():
    assert {m.unit for m in metrics.METRICS.values()} <= set(export.PROMETHEUS_UNITS)
