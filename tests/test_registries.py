"""Contract tests over the registries (issue 12): every stage, metric, unit
and meter carries what the rest of rooftop reads from it, and a store
holding every stage and metric goes through results, ui, every figure and
the report without a KeyError."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from matplotlib.colors import is_color_like

import synthetic
from rooftop import keys, meters, metrics, results, stages, ui, units
from rooftop.campaign import merge_server_args, plan_collect, plan_validate
from rooftop.config.catalog import KEY_BY_PATH, KEYS, STUDY_KEYS
from rooftop.config.files import defaults
from rooftop.plots.run import plot_run
from rooftop.report import html_page, markdown
from rooftop.store import schema


# --- stages -----------------------------------------------------------------
@pytest.mark.parametrize("st", stages.STAGES.values(), ids=lambda s: s.name)
def test_every_stage_has_label_colour_role_rate_and_plan(st):
    assert st.name == re.sub(r"[^a-z_]", "", st.name) and "+" not in st.name  # keys join them with '+'
    assert st.label and st.legend and st.help
    assert is_color_like(st.colour)
    assert st.role in stages.ROLES
    assert st.rate in ("per_server", "per_client", "aggregate") and st.rate in schema.SAMPLE_COLUMNS
    assert st.phase in ("collect", "validate")
    if st.switch is not None:
        assert KEY_BY_PATH[st.switch].kind == "bool"
    assert callable(st.plan)


def test_each_model_role_is_played_by_one_stage():
    for role in ("server", "client", "node", "validation"):
        assert stages.of_role(role).role == role
    assert set(stages.ROLES) >= {s.role for s in stages.STAGES.values()}


def test_plans_cover_every_enabled_stage():
    cfg = _cfg()
    planned = {m.stage for pl in plan_collect(cfg) + plan_validate(cfg) for m in pl.measurements}
    assert planned == set(stages.STAGES)


# --- metrics and units --------------------------------------------------------
@pytest.mark.parametrize("m", metrics.METRICS.values(), ids=lambda m: m.name)
def test_every_metric_has_a_known_unit_and_declared_keys(m):
    assert m.unit in units.UNITS
    assert m.work in ("ops", "bytes") and m.result_field in ("ops_per_sec", "bytes_per_sec")
    for key in m.keys:
        assert KEY_BY_PATH[key.path] is key and key.path.startswith(m.name + ".")
    cfg = defaults()
    assert m.client_args(cfg)[:2] == ["--op", m.op(cfg)]
    assert all(isinstance(a, str) for a in m.server_args(cfg))
    assert m.title(cfg)
    m.check(cfg)  # the defaults pass their own checks


def test_config_keys_list_metric_keys_after_the_metrics_key():
    paths = [k.path for k in KEYS]
    at = paths.index("metrics")
    own = [k.path for m in metrics.METRICS.values() for k in m.keys]
    assert paths[at + 1 : at + 1 + len(own)] == own
    assert KEY_BY_PATH["metrics"].choices == tuple(metrics.METRICS)
    assert KEY_BY_PATH["metrics"].default == metrics.defaults() == ["rpc", "bw"]


def test_every_config_key_is_declared_once():
    studies = [k for ks in STUDY_KEYS.values() for k in ks]  # bursts.*, tune.*, ... (register)
    assert len(KEY_BY_PATH) == len(KEYS) + len(studies)
    with pytest.raises(ValueError, match="config key collect.windows is declared twice"):
        keys.by_path([keys.Key("collect.windows", "int", 5, "first"), keys.Key("collect.windows", "int", 3, "again")])


def test_a_key_declared_twice_is_an_error_at_import():
    """A table (here the meters') declaring a key config declares too:
    importing config fails naming the key, never keeping the last one."""
    code = (
        "from rooftop import meters\n"
        "from rooftop.keys import Key\n"
        "meters.KEYS = (*meters.KEYS, Key('collect.windows', 'int', 3, 'again'))\n"
        "import rooftop.config.catalog\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode != 0
    assert "config key collect.windows is declared twice" in p.stderr


def test_units_format_as_before():
    """Each rate in the scale its value reaches, 3 significant digits; a
    range with an en dash and its unit once (issue 43)."""
    assert units.fmt_rate(None, "ops/s") == "-"
    assert units.fmt_rate(950, "ops/s") == "950 ops/s"
    assert units.fmt_rate(35_212, "ops/s") == "35.2 K ops/s"
    assert units.fmt_rate(1_234_567, "ops/s") == "1.23 M ops/s"
    assert units.fmt_rate(1.75 * 2**30, "bytes/s") == "1.75 GiB/s"
    assert units.fmt_rate(300 * 2**20, "bytes/s") == "300 MiB/s"
    assert units.fmt_rate(12 * 2**10, "bytes/s") == "12.0 KiB/s"
    assert units.fmt_range(32_600, 39_900, "ops/s") == "32.6–39.9 K ops/s"
    assert units.fmt_range(90, 39_900, "ops/s") == "90.0 ops/s – 39.9 K ops/s"  # far apart: each its own
    assert units.fmt_range(1.62 * 2**30, 1.62 * 2**30, "bytes/s") == "1.62 GiB/s"  # once (issue 13)
    assert units.fmt_span(1.04e6, 1.04e6, "K ops/s", 1e3) == "1,040 K ops/s"
    assert units.fmt_span(148e3, 173e3, "K ops/s", 1e3) == "148–173 K ops/s"
    assert units.parse("GiB/s") == ("bytes/s", 2.0**30) and units.parse("K ops/s") == ("ops/s", 1e3)


@pytest.mark.parametrize("u", units.UNITS.values(), ids=lambda u: u.name)
def test_every_display_scale_is_a_named_scale(u):
    labels = {s.label for s in u.scales}
    assert u.name in labels and u.factor(u.name) == 1.0
    assert set(u.shown) | {s.label for s in u.axis} <= labels
    assert u.shown[0] == u.name and u.axis[-1].at == 0  # every value has a display
    assert [u.factor(x) for x in u.shown] == sorted(u.factor(x) for x in u.shown)  # smallest first


CALLERS = ("campaign", "ui.py", "results", "model", "report", "plots")


def test_callers_of_the_metric_table_never_name_a_metric():
    """campaign, ui, results, model, report and plots read the table: no
    string in their code is a metric's name (docstrings may give examples)."""
    import ast
    from pathlib import Path

    src = Path(metrics.__file__).parent.parent
    files = [p for c in CALLERS for p in ((src / c).glob("*.py") if (src / c).is_dir() else [src / c])]
    named = [
        (p.name, node.lineno, node.value)
        for p in files
        for node in ast.walk(ast.parse(p.read_text()))
        if isinstance(node, ast.Constant) and node.value in metrics.METRICS
    ]
    assert len(files) > len(CALLERS) and not named, named


def test_servers_get_only_the_measured_metrics_arguments():
    """A campaign of rpc and bw never gives its servers a storage option;
    metrics whose servers differ (meta's empty data file) get a group of
    their own; iops and sbw with the same directory and knobs share one."""
    cfg = _cfg()
    for m in ("iops", "sbw", "meta"):
        cfg[m]["dir"] = "/srv/rooftop"
    cfg["metrics"] = ["rpc", "bw"]
    assert {tuple(pl.metrics) for pl in plan_collect(cfg)} == {("rpc", "bw")}
    cfg["metrics"] = list(metrics.METRICS)
    groups = {pl.tag: pl.metrics for pl in plan_collect(cfg) if pl.server_nodes == [0]}
    assert groups == {"rpc+bw+iops+sbw": ["rpc", "bw", "iops", "sbw"], "meta": ["meta"]}
    cfg["sbw"]["io_mode"] = "buffered"
    assert {pl.tag for pl in plan_collect(cfg)} == {"rpc+bw+iops", "sbw", "meta"}
    # Slot sizes merge by their maximum; any other option given two values cannot.
    assert merge_server_args([["--max-size", "4194304"], ["--max-size", "1048576", "--fill"]]) == [
        "--max-size",
        "4194304",
        "--fill",
    ]
    assert merge_server_args([["--io-mode", "direct"], ["--io-mode", "buffered"]]) is None
    # A storage flag is given either way: one metric's true is not another's false.
    assert merge_server_args([["--io-async=true"], ["--io-async=false"]]) is None
    assert merge_server_args([["--io-async=false", "--max-size", "1"], ["--io-async=false"]]) == [
        "--io-async=false",
        "--max-size",
        "1",
    ]
    cfg["sbw"]["io_mode"] = "direct+dsync"
    cfg["sbw"]["io_async"] = True
    assert {pl.tag for pl in plan_collect(cfg)} == {"rpc+bw+iops", "sbw", "meta"}


def test_an_rpc_only_server_has_one_page_bulk_slots():
    """RPCs move no bulk data: servers of rpc alone get one-page bulk slots
    (not the engine's 4 x 16 MiB made resident before they serve); with bw
    in the same placement, bw's slots win (the largest is kept)."""
    cfg = _cfg()
    rpc, bw = (metrics.get(m).server_args(cfg) for m in ("rpc", "bw"))
    assert rpc[:2] == ["--max-size", "4KiB"], rpc
    merged = merge_server_args([rpc, bw])
    assert merged is not None
    size = merged[merged.index("--max-size") + 1]
    assert size == bw[bw.index("--max-size") + 1] and int(size) >= 1 << 20, merged


# --- meters -----------------------------------------------------------------
@pytest.mark.parametrize("s", meters.METERS, ids=lambda s: s.name)
def test_every_meter_is_stored_and_has_hooks(s):
    """A column meter has its sample column; a series meter is a choice
    of the `series` key and its rows go to the series table."""
    if s.column:
        assert s.name in schema.SAMPLE_COLUMNS
    else:
        assert s.name in KEY_BY_PATH["series"].choices and s.name in meters.SERIES
    assert s.unit and s.help and callable(s.start) and callable(s.stop)


def test_meters_measure_nothing_for_engines_on_other_hosts():
    class Far:
        launcher = type("L", (), {"name": "srun"})()
        cfg = {"series": list(meters.SERIES), "series_interval": 0.1}

    running = meters.start_all(Far(), None, None)
    assert set(running) == {s.name for s in meters.METERS}
    assert meters.stop_all(running) == {s.name: None for s in meters.METERS if s.column}
    assert meters.series_rows(running) == {name: [] for name in meters.SERIES}


# --- every stage and metric through results, ui, figures, report ---------------
def _cfg() -> dict:
    cfg = synthetic.config_for(nodes=4, cores=1)
    cfg["metrics"] = list(metrics.METRICS)  # the defaults leave the storage metrics out
    return cfg


def _synthetic_run(tmp_path):
    """A store with ok rows for every planned sample of every stage and
    metric (tests/synthetic.py: uniform_run)."""
    return synthetic.uniform_run(tmp_path, _cfg())


def test_a_run_with_every_stage_and_metric_renders_everywhere(tmp_path, capsys):
    from rooftop.kinds.sections import SECTIONS

    st, run_id = _synthetic_run(tmp_path)
    res = results.load(st, run_id, SECTIONS)  # every report section, none with data for this run
    assert len({s.name for s in SECTIONS}) == len(SECTIONS) and all(
        data is None or data == [] for _, data in res.sections
    )
    assert sorted(res.rooflines) == sorted(metrics.METRICS)
    assert {(lat.stage, lat.metric) for lat in res.latency} == {
        (s.name, m) for s in stages.STAGES.values() if s.latency for m in metrics.METRICS
    }
    summary = ui.summarize(res.samples)
    assert {(r["stage"], r["metric"]) for r in summary} == {(s, m) for s in stages.STAGES for m in metrics.METRICS}
    ui.print_summary(res.run, res.samples)
    shown = capsys.readouterr().err
    assert all(s.label[:30] in shown for s in stages.STAGES.values()), shown  # narrow tables cut labels
    figures = plot_run(res, tmp_path / "figures", formats=("png",))
    assert sorted(figures) == sorted(
        f"{kind}-{m}" for kind in ("roofline", "sweep", "pairs", "latency") for m in metrics.METRICS
    )
    page = html_page(res, figures)
    md = markdown(res, figures, tmp_path)
    for m in metrics.METRICS:
        assert f"<h3>{m}</h3>" in page and f"## {m}" in md
    st.close()
