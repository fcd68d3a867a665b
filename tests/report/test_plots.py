"""Figures inspected as matplotlib objects: axis scales, ticks, points and
their colours, ceilings, files written."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.colors import to_hex

from rooftop import model, units
from rooftop.model.ceilings import Ceiling
from rooftop.model.roofline import Roofline
from rooftop.plots import compare, latency, pairs, roofline, save, style, sweep
from rooftop.results import Latency, PairMatrix

ROOT = Path(__file__).resolve().parents[2]
AURORA = ROOT / "examples" / "aurora-table2.json"
TICKS = ["1/16", "1/8", "1/4", "1/2", "1", "2", "4", "8", "16"]


def _sample(x, per_client, server_nodes):
    return {
        "stage": "validate",
        "metric": "rpc",
        "status": "ok",
        "x": x,
        "per_client": per_client,
        "server_nodes": list(range(server_nodes)),
        "client_nodes": [9],
    }


def test_roofline_figure_axes_points_colours_and_ridge():
    r = model.load_params(AURORA)["rpc"]
    samples = [
        _sample(1 / 8, 60e3, 1),
        _sample(1 / 4, 120e3, 1),
        _sample(1 / 2, 150e3, 2),
        _sample(1, 160e3, 2),
        _sample(2, 158e3, 4),
    ]
    fig = roofline.figure(model.evaluate(r, samples), "rpc: Aurora, tcp, 2026-11-21")
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    assert [t.get_text() for t in ax.get_xticklabels()] == TICKS
    assert ax.get_xticks()[0] == pytest.approx(1 / 16) and ax.get_xticks()[-1] == 16
    assert "K ops/s" in ax.get_ylabel() and ax.get_title() == "rpc: Aurora, tcp, 2026-11-21"
    # One scatter per server-node count, semi-transparent, distinct colours.
    pts = {c.get_gid(): c for c in ax.collections if (c.get_gid() or "").startswith("validation-")}
    assert set(pts) == {"validation-1", "validation-2", "validation-4"}
    assert [len(pts[f"validation-{n}"].get_offsets()) for n in (1, 2, 4)] == [2, 2, 1]
    colours = {n: to_hex(pts[f"validation-{n}"].get_facecolors()[0], keep_alpha=False) for n in (1, 2, 4)}
    assert len(set(colours.values())) == 3
    assert all(0 < pts[g].get_alpha() < 1 for g in pts)
    # Points sit at their measured rate in K ops/s.
    assert pts["validation-4"].get_offsets()[0].tolist() == pytest.approx([2, 158])
    # The ridge is drawn at x* and the roofline is flat at the client ceiling beyond it.
    (ridge,) = [l for l in ax.lines if l.get_gid() == "ridge"]
    assert ridge.get_xdata()[0] == pytest.approx(r.ridge.centre)
    (roof,) = [l for l in ax.lines if l.get_gid() == "roofline"]
    xs, ys = roof.get_data()
    assert ys[-1] == pytest.approx(r.client.centre / 1e3)
    assert ys[0] == pytest.approx(xs[0] * r.server.centre / 1e3)
    # Legend names both ceilings with their ranges.
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("client ceiling 148–173" in t for t in labels)
    assert any("server ceiling 524–530" in t for t in labels)
    assert any("2 server nodes (2)" in t for t in labels)
    plt.close(fig)


def test_roofline_axis_widens_for_points_beyond_16_and_draws_the_node_ceiling():
    r = Roofline(
        "bw",
        "bytes/s",
        Ceiling(20 * 2**30, 21 * 2**30, 20.5 * 2**30),
        Ceiling(0.15 * 2**30, 0.2 * 2**30, 0.175 * 2**30),
        client_node=Ceiling(6 * 2**30, 7 * 2**30, 6.5 * 2**30),
    )
    fig = roofline.figure(model.evaluate(r, []), "bw")
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels[0] == "1/16" and labels[-1] == "64"  # ridge 6/0.2–7/0.15 needs up to 64
    assert "GiB/s" in ax.get_ylabel()
    assert any("node full 6.00–7.00 GiB/s" in t.get_text() for t in ax.get_legend().get_texts())
    plt.close(fig)


def test_sweep_pairs_latency_and_compare_figures(tmp_path):
    rows = [
        {"stage": "sweep_servers", "metric": "rpc", "status": "ok", "server_procs": s, "aggregate": a, "unit": "ops/s"}
        for s, a in ((1, 100e3), (1, 110e3), (2, 190e3), (4, 300e3))
    ]
    fig = sweep.figure(rows, "rpc", "t")
    ax = fig.axes[0]
    (line,) = [l for l in ax.lines if l.get_gid() == "linear"]
    assert list(line.get_xdata()) == [1, 2, 4] and line.get_ydata()[-1] == pytest.approx(420)
    assert list(ax.get_xticks()) == [1, 2, 4]
    files = save(fig, tmp_path, "sweep")
    assert [p.name for p in files] == ["sweep.png", "sweep.svg"]
    assert files[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and b"<svg" in files[1].read_bytes()

    pm = PairMatrix(
        "rpc",
        "ops/s",
        [0, 1, 2, 3],
        {(0, 1): 100e3, (0, 2): 101e3, (0, 3): 60e3, (1, 2): 99e3, (1, 3): 61e3, (2, 3): 59e3},
    )
    fig = pairs.figure(pm, "pairs", slowest=3, flagged=[3])
    ax = fig.axes[0]
    img = ax.get_images()[0].get_array()
    assert img.shape == (4, 4) and np.ma.is_masked(img[0, 0]) and img[0, 3] == img[3, 0] == pytest.approx(60)
    boxes = [p for p in ax.patches if p.get_gid() == "slow-pair"]
    assert len(boxes) == 6  # 3 slowest pairs, both halves of the symmetric matrix
    assert {(int(b.get_x() + 0.5), int(b.get_y() + 0.5)) for b in boxes} >= {(3, 0), (0, 3), (3, 2)}
    assert "n2–n3 59" in ax.get_title()
    assert ax.get_xticklabels()[3].get_text() == "n3 !"
    plt.close(fig)

    lat = [
        Latency("client_peak", "rpc", [(10.0, 10.5, 50), (10.5, 11.0, 40), (20.0, 21.0, 10)], 1),
        Latency("server_peak", "rpc", [(30.0, 31.0, 100)], 2),
    ]
    fig = latency.figure(lat, "rpc", "lat")
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    assert sorted(a.get_gid() for a in ax.patches) == ["latency-client_peak", "latency-server_peak"]
    assert any("p50 10.5 µs" in t.get_text() for t in ax.get_legend().get_texts())
    plt.close(fig)

    aurora = model.load_params(AURORA)["rpc"]
    mine = Roofline("rpc", "ops/s", Ceiling(30e3, 40e3, 35e3), Ceiling(29e3, 37e3, 33e3))
    fig = compare.figure([("Aurora", aurora), ("here", mine)], "rpc")
    ax = fig.axes[0]
    roofs = [l for l in ax.lines if l.get_gid() == "roofline"]
    assert len(roofs) == 2 and roofs[0].get_color() != roofs[1].get_color()
    assert [t.get_text().split(":")[0] for t in ax.get_legend().get_texts()] == ["Aurora", "here"]
    assert [t.get_text() for t in ax.get_xticklabels()] == TICKS
    plt.close(fig)


def test_units_and_ratio_labels():
    assert units.rate_scale("ops/s", 500) == (1.0, "ops/s")
    assert units.rate_scale("ops/s", 173e3) == (1e3, "K ops/s")
    assert units.rate_scale("ops/s", 5e6) == (1e6, "M ops/s")
    assert units.rate_scale("bytes/s", 20 * 2**30) == (2**30, "GiB/s")
    assert units.rate_scale("bytes/s", 100 * 2**20) == (2**20, "MiB/s")
    assert [style.ratio_label(x) for x in (1 / 16, 0.25, 1, 4)] == ["1/16", "1/4", "1", "4"]
