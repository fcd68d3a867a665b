"""Figures that read right at any scale (issue 13, item 2), read as
matplotlib objects: every ceiling and point inside the frame, units on
axes and legends, single values printed once, the latency axis on the
data with its tail marked, boxes only on outlier pairs; and `plot`'s
folders and titles. Synthetic runs (tests/synthetic.py) at 2, 4 and 17
nodes stand for campaigns."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest

import rooftop.plots.run as run_mod
import synthetic
from rooftop import model, results, stages, units
from rooftop.model.ceilings import Ceiling
from rooftop.model.roofline import Roofline
from rooftop.plots import compare, latency, pairs, roofline
from rooftop.plots.run import plot_run
from rooftop.results import Latency, PairMatrix

ROOT = Path(__file__).resolve().parents[2]
AURORA = ROOT / "examples" / "aurora-table2.json"


def _inside(ax, values) -> bool:
    lo, hi = ax.get_ylim()
    return all(lo <= v <= hi for v in values)


def _texts(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


def _points(ax) -> list[float]:
    return [y for c in ax.collections if (c.get_gid() or "").startswith("validation-") for _, y in c.get_offsets()]


# --- the roofline's y axis ------------------------------------------------------
def _aurora_eval():
    r = model.load_params(AURORA)["rpc"]
    samples = [
        {
            "stage": "validate",
            "metric": "rpc",
            "status": "ok",
            "x": x,
            "per_client": v,
            "server_nodes": [0],
            "client_nodes": [9],
        }
        for x, v in ((1 / 16, 30e3), (1, 160e3))
    ]
    return r, model.evaluate(r, samples)


def test_default_roofline_is_log_and_holds_every_ceiling_and_point():
    r, ev = _aurora_eval()
    fig = roofline.figure(ev, "t")
    ax = fig.axes[0]
    assert ax.get_yscale() == "log" and "log scale" in ax.get_ylabel() and "K ops/s" in ax.get_ylabel()
    xl = ax.get_xlim()
    # Both client ceiling ends, the server band from the left edge to 3 x
    # the client ceiling (well past the ridge), every point.
    must = [v / 1e3 for v in (r.client.lo, r.client.hi, xl[0] * r.server.lo, 3 * r.client.hi)]
    assert _inside(ax, must + _points(ax))
    assert ax.get_ylim()[1] < 10 * r.client.hi / 1e3  # not decades of nothing above
    # Tick labels are numbers, not 10^k.
    assert not any("10^" in t.get_text() or "$" in t.get_text() for t in ax.get_yticklabels())
    plt.close(fig)


def test_linear_roofline_is_the_papers_style():
    r, ev = _aurora_eval()
    fig = roofline.figure(ev, "t", yscale="linear")
    ax = fig.axes[0]
    assert ax.get_yscale() == "linear" and ax.get_ylim()[0] == 0 and "log" not in ax.get_ylabel()
    assert _inside(ax, [r.client.hi / 1e3] + _points(ax))
    plt.close(fig)


def test_auto_is_linear_only_when_linear_keeps_everything_in():
    from rooftop.plots.style import pick_yscale

    assert pick_yscale([50, 60, 100], 100) == "linear"
    assert pick_yscale([5, 60, 100], 100) == "log"  # a point on the floor
    assert pick_yscale([50, 60, 400], 100) == "log"  # a ceiling above the frame
    assert pick_yscale([5, 400], 100, "linear") == "linear"


def test_legends_carry_units_and_print_a_single_value_once():
    r = Roofline("rpc", "ops/s", Ceiling(1.04e6, 1.04e6, 1.04e6), Ceiling(500e3, 520e3, 510e3))
    fig = roofline.figure(model.evaluate(r, []), "t")
    labels = _texts(fig.axes[0])
    # In the axis' scale (M ops/s from 1 M up), never '1,040 K ops/s' (issue 43).
    assert any(t == "client ceiling 1.04 M ops/s" for t in labels), labels
    assert any(t == "x · server ceiling 0.500–0.520 M ops/s" for t in labels), labels
    assert not any("e+" in t for t in labels)
    plt.close(fig)


# --- compare ----------------------------------------------------------------------
def _tcp_shm():
    tcp = Roofline("rpc", "ops/s", Ceiling(48e3, 52e3, 50e3), Ceiling(90e3, 95e3, 92e3))
    shm = Roofline("rpc", "ops/s", Ceiling(0.95e6, 1.05e6, 1e6), Ceiling(1.6e6, 1.7e6, 1.65e6))
    return [("tcp", tcp), ("shm", shm)]


def test_compare_tcp_and_shm_on_a_log_axis_says_so():
    fig = compare.figure(_tcp_shm(), "rpc")
    ax = fig.axes[0]
    assert ax.get_yscale() == "log" and "log scale" in ax.get_ylabel()
    # Both plateaus inside the frame and more than a tenth of the frame apart (not on the floor).
    lo, hi = (v for v in ax.get_ylim())
    import math

    for _, r in _tcp_shm():
        assert lo < r.client.lo / 1e6 < r.client.hi / 1e6 < hi
        assert (math.log(r.client.centre / 1e6) - math.log(lo)) / (math.log(hi) - math.log(lo)) > 0.1
    (view,) = [t for t in ax.texts if t.get_gid() == "view"]
    assert "log y axis" in view.get_text()
    assert "M ops/s" in ax.get_ylabel()
    # Each legend in the axis' scale, or in its own where the axis' would read below 0.1.
    assert "client 48.0–52.0 K ops/s" in _texts(ax)[0] and "client 0.950–1.05 M ops/s" in _texts(ax)[1]
    plt.close(fig)


def test_compare_normalised_puts_every_plateau_at_one():
    fig = compare.figure(_tcp_shm(), "rpc", normalise=True)
    ax = fig.axes[0]
    roofs = [l for l in ax.lines if l.get_gid() == "roofline"]
    assert [l.get_ydata()[-1] for l in roofs] == pytest.approx([1, 1])
    assert "client ceiling" in ax.get_ylabel() and ax.get_yscale() == "linear"
    (view,) = [t for t in ax.texts if t.get_gid() == "view"]
    assert view.get_text().startswith("normalised")
    # The legends still give each source's real ceilings with units.
    assert "client 48.0–52.0 K ops/s" in _texts(ax)[0] and "client 0.950–1.05 M ops/s" in _texts(ax)[1]
    plt.close(fig)


# --- latency ----------------------------------------------------------------------
def test_latency_axis_spans_the_data_and_marks_the_tail():
    bins = [(20.0, 21.0, 500), (21.0, 22.0, 400), (40.0, 42.0, 99), (29000.0, 30000.0, 1)]
    fig = latency.figure([Latency("client_peak", "rpc", bins, 1, placements=((1, 1),))], "rpc", "t")
    ax = fig.axes[0]
    lo, hi = ax.get_xlim()
    assert lo <= 20 and 42 <= hi < 200  # not 3 x 10^4 for data under 50 µs
    assert [l.get_gid() for l in ax.lines if (l.get_gid() or "").startswith("tail-")] == ["tail-client_peak"]
    (text,) = _texts(ax)
    assert "tail to 30 ms (0.10 %) beyond the axis" in text
    plt.close(fig)


def test_a_lone_pair_is_not_called_saturated():
    lone = Latency("server_peak", "rpc", [(20.0, 21.0, 10)], 1, placements=((1, 1),))
    busy = Latency("server_peak", "bw", [(20.0, 21.0, 10)], 3, placements=((2, 6),))
    fig = latency.figure([lone], "rpc", "t")
    (text,) = _texts(fig.axes[0])
    assert "saturated" not in text.replace("not saturated", "") and "not saturated: 1 server, 1 client" in text
    plt.close(fig)
    fig = latency.figure([busy], "bw", "t")
    assert _texts(fig.axes[0])[0].startswith("server peak (saturated)")
    plt.close(fig)
    assert all(not st.saturates or "saturated" not in st.legend for st in stages.STAGES.values())


# --- pair matrix ------------------------------------------------------------------
def _boxes(ax) -> set[tuple[int, int]]:
    return {(int(p.get_y() + 0.5), int(p.get_x() + 0.5)) for p in ax.patches if p.get_gid() == "slow-pair"}


@pytest.mark.parametrize("n", [3, 4, 17])
def test_a_uniform_pair_matrix_boxes_nothing(n):
    rates = {(a, b): 40e3 * (1 + 0.01 * ((a * 7 + b) % 5)) for a in range(n) for b in range(a + 1, n)}
    fig = pairs.figure(PairMatrix("rpc", "ops/s", list(range(n)), rates), "t")
    ax = fig.axes[0]
    assert not _boxes(ax) and "no outlier pair" in ax.get_title() and "K ops/s" in ax.get_title()
    plt.close(fig)


def test_only_an_outlier_pair_is_boxed():
    rates = {(a, b): 40e3 for a in range(4) for b in range(a + 1, 4)}
    rates[(1, 3)] = 25e3
    fig = pairs.figure(PairMatrix("rpc", "ops/s", [0, 1, 2, 3], rates), "t")
    ax = fig.axes[0]
    assert _boxes(ax) == {(1, 3), (3, 1)} and "n1–n3 25 K ops/s" in ax.get_title()
    plt.close(fig)


# --- whole runs at 2, 4 and 17 nodes ----------------------------------------------------
@pytest.mark.parametrize(
    "nodes,kw",
    [(2, {}), (4, {"slow_pair": (1, 3)}), (17, {"cores": 2, "slow_node": 5})],
    ids=["2-nodes", "4-nodes", "17-nodes"],
)
def test_every_figure_of_a_run_reads(tmp_path, monkeypatch, nodes, kw):
    st, run_id = synthetic.realistic_run(tmp_path, nodes=nodes, **kw)
    res = results.load(st, run_id)
    figs = {}
    monkeypatch.setattr(run_mod, "save", lambda fig, out, name, formats: figs.setdefault(name, fig) and [])
    plot_run(res, tmp_path / "figures", formats=("png",))
    for metric, ev in res.evaluations.items():
        ax = figs[f"roofline-{metric}"].axes[0]
        unit = ax.get_ylabel().split("(")[1].split(",")[0]  # 'rate per client process (GiB/s, log scale)'
        div = units.parse(unit)[1]
        must = [c.measured / div for c in ev.checks] + roofline.frame_values(ev.roofline, ax.get_xlim(), div)
        assert _inside(ax, must), (metric, ax.get_ylim(), min(must), max(must))
        assert all(unit in t for t in _texts(ax) if "ceiling" in t)
        assert run_id in ax.get_title()
        if nodes == 2:  # one pair: no matrix, a sentence says why (rooftop.plots.run.left_out)
            assert f"pairs-{metric}" not in figs and "one node pair, n0-n1" in run_mod.left_out(res)[f"pairs-{metric}"]
        else:
            boxed = {frozenset(p) for p in _boxes(figs[f"pairs-{metric}"].axes[0])}
            if "slow_node" in kw:
                assert boxed == {frozenset((kw["slow_node"], b)) for b in range(nodes) if b != kw["slow_node"]}
            elif "slow_pair" in kw:
                assert boxed == {frozenset(kw["slow_pair"])}
            else:
                assert not boxed
        lax = figs[f"latency-{metric}"].axes[0]
        assert lax.get_xlim()[1] < 1000 * min(lat.quantile(0.5) for lat in res.latency if lat.metric == metric)
        assert lax.get_ylabel() == "% of operations per bin (bins 4.4 % wide)"
        # Shares in % per 1/16 octave (a nominal bin: its share): over the bins' widths they add up to 100 %.
        for p in lax.patches:
            if (p.get_gid() or "").startswith("latency-"):
                v, e = p.get_data().values, p.get_data().edges
                assert sum(v * np.log2(e[1:] / e[:-1]) * 16) == pytest.approx(100)
        # The measured span: solid over it, dashed beyond, marked on the x axis.
        rax = figs[f"roofline-{metric}"].axes[0]
        gids = {a.get_gid() for a in [*rax.lines, *rax.patches]}
        assert {"roofline", "roofline-extrapolated", "measured-x"} <= gids
        assert any(t.startswith("measured: x = ") for t in _texts(rax))
    # Labels readable at the report's 100 px per inch (rooftop.report.render): 8 pt and up.
    for name, fig in figs.items():
        small = [
            (t.get_text(), t.get_fontsize()) for t in fig.findobj(plt.Text) if t.get_text() and t.get_fontsize() < 8
        ]
        assert not small, (name, small[:3])
    for fig in figs.values():
        plt.close(fig)


# --- rooftop plot: folders and titles --------------------------------------------
def _cli(*args, cwd=None):
    p = subprocess.run([sys.executable, "-m", "rooftop", *args], capture_output=True, text=True, timeout=300, cwd=cwd)
    assert p.returncode == 0, p.stderr
    return p


def test_plot_params_with_a_run_does_not_overwrite_plot_params(tmp_path):
    st, run_id = synthetic.realistic_run(tmp_path, nodes=3)
    res = str(tmp_path / "res")
    alone = json.loads(_cli("plot", "--params", str(AURORA), "--json", "--format", "svg", cwd=tmp_path).stdout)
    mine = json.loads(
        _cli(
            "plot", run_id, "--params", str(AURORA), "--results", res, "--json", "--format", "svg", cwd=tmp_path
        ).stdout
    )
    a, b = tmp_path / alone["roofline-rpc"][0], Path(mine["roofline-rpc"][0])  # a: relative to cwd
    assert a.parent == tmp_path / "rooftop-plots" / "aurora-table2"
    assert b.parent == st.run_dir(run_id) / "figures" / "params-aurora-table2"
    assert a.is_file() and b.is_file() and a.read_bytes() != b.read_bytes()
    assert f"validation samples of run {run_id}" in b.read_text() and run_id not in a.read_text()
    log = _cli("plot", run_id, "--results", res, "--yscale", "linear", "--json", cwd=tmp_path).stdout
    assert Path(json.loads(log)["roofline-rpc"][0]).parent == st.run_dir(run_id) / "figures"
