"""A service on the roofline without a cluster: import (a good file, a bad
unit, a missing column, nothing stored on error), efficiency against
hand-computed numbers, `rooftop size` against a hand-computed answer from
the Aurora parameters (Carns et al., "Towards Empirical Roofline Modeling of
Distributed Data Services", CUG 2025, Table 2) and its indistinguishable
case, and the service in `model --json`, the report, the figure and the
exports of a synthetic run."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rooftop import export, model, results
from rooftop.keys import ConfigError
from rooftop.kinds.sections import SECTIONS
from rooftop.model import Ceiling, Roofline
from rooftop.model.answer import answer
from rooftop.service import efficiency, importing, points, sizing
from rooftop.service.answer import service_answer
from rooftop.service.points import ServicePoint
from rooftop.store.db import Store

ROOT = Path(__file__).resolve().parents[2]
AURORA = ROOT / "examples" / "aurora-table2.json"
sys.path.insert(0, str(ROOT / "tests"))
import synthetic  # noqa: E402

GOOD = """# redis GET measured on a bigger machine
server_procs,client_procs,per_client,unit
1,4,20,K ops/s
1,4,22,K ops/s
1,2,40000,ops/s
2,1,0.03,M ops/s
"""


def cli(*args):
    return subprocess.run([sys.executable, "-m", "rooftop", *args], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A synthetic run (every rate exact) with redis-get imported into it."""
    tmp = tmp_path_factory.mktemp("svc")
    st, run_id = synthetic.uniform_run(tmp)
    f = tmp / "redis-get.csv"
    f.write_text(GOOD)
    got = importing.import_csv(st, run_id, f, metric="rpc")
    assert (got.count, got.services) == (4, ["redis-get"])
    return st, run_id, points.load(st, run_id, "redis-get"), tmp


# --- import -------------------------------------------------------------------


def test_a_good_file_is_stored_in_the_metrics_unit(run):
    st, run_id, pts, _ = run
    assert [p.service for p in pts] == ["redis-get"] * 4  # the file's stem
    assert [(p.server_procs, p.client_procs, p.window) for p in pts] == [(1, 4, 0), (1, 4, 1), (1, 2, 0), (2, 1, 0)]
    assert [p.per_client for p in pts] == pytest.approx([20e3, 22e3, 40e3, 30e3])
    assert pts[0].aggregate == pytest.approx(80e3) and pts[0].unit == "ops/s"
    stored = points.load(st, run_id, "redis-get")
    assert len(stored) == 4 and {p.origin for p in stored} == {"imported"} and {p.status for p in stored} == {"ok"}
    assert stored[0].detail["line"] == 3


@pytest.mark.parametrize(
    "text, where",
    [
        (
            "server_procs,client_procs,per_client,unit\n1,2,5,furlongs/s\n",
            "line 2, column unit: 'furlongs/s' is not a unit",
        ),
        ("server_procs,client_procs,per_client,unit\n1,2,5,GiB/s\n", "line 2, column unit: GiB/s does not measure rpc"),
        ("server_procs,per_client,unit\n1,5,ops/s\n", "line 1: missing column client_procs"),
        (
            "server_procs,client_procs,per_client,unit\n1,2,5,ops/s\n1,2,fast,ops/s\n",
            "line 3, column per_client: 'fast' is not a number",
        ),
        ("server_procs,client_procs,per_client,unit\n0,2,5,ops/s\n", "line 2, column server_procs: 0 is less than 1"),
        # issue 42: rates that are not rates, after the unit too, and a column given twice
        (
            "server_procs,client_procs,per_client,unit\n1,1,1e303,M ops/s\n",
            "line 2, column per_client: '1e303' M ops/s (inf ops/s) is not a rate (a finite number above 0)",
        ),
        (
            "server_procs,client_procs,per_client,unit\n1,2,5,ops/s\n1,2,0,ops/s\n",
            "line 3, column per_client: '0' ops/s",
        ),
        ("server_procs,client_procs,per_client,unit\n1,2,-5,ops/s\n", "line 2, column per_client: '-5' ops/s is not"),
        ("server_procs,client_procs,per_client,unit\n1,2,nan,ops/s\n", "line 2, column per_client: 'nan' ops/s is not"),
        (
            "server_procs,client_procs,per_client,unit,Unit\n1,2,5,ops/s,K ops/s\n",
            "line 1: column unit given twice (each column once)",
        ),
    ],
)
def test_a_bad_file_names_line_and_column_and_stores_nothing(run, text, where):
    st, run_id, _, tmp = run
    f = tmp / "bad.csv"
    f.write_text(text)
    with pytest.raises(ConfigError, match=re.escape(where)) as e:
        importing.import_csv(st, run_id, f, name="bad", metric="rpc")
    assert str(f) in str(e.value)
    assert points.load(st, run_id, "bad") == []


def test_rooftop_service_import_stores_a_good_file_and_exits_2_on_a_bad_unit(tmp_path):
    import subprocess
    import sys

    tmp = tmp_path
    st, run_id = synthetic.uniform_run(tmp)  # a run of its own: the shared one keeps only redis-get
    good = tmp / "kv-get.csv"
    good.write_text("server_procs,client_procs,per_client,unit\n1,2,5,K ops/s\n1,2,6,K ops/s\n")
    base = [sys.executable, "-m", "rooftop", "service", run_id, "--results", str(st.dir), "--import"]
    p = subprocess.run([*base, str(good), "--json"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["imported"] == 2
    assert [pt.per_client for pt in points.load(st, run_id, "kv-get")] == [5000.0, 6000.0]
    bad = tmp / "bad-unit.csv"
    bad.write_text("server_procs,client_procs,per_client,unit\n1,2,5,parsecs\n")
    p = subprocess.run([*base, str(bad)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "line 2, column unit" in p.stderr, p.stderr
    assert points.load(st, run_id, "bad-unit") == []
    p = subprocess.run([*base, str(good), "--preset", "redis"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "--import stores points measured elsewhere" in p.stderr, p.stderr


def test_a_killed_import_leaves_nothing(tmp_path):
    """The import is one transaction: SIGKILL while it reads its file (a
    FIFO that stops after 500 lines) leaves none of its points, where a
    commit per line left a partial set no command could tell apart."""
    import os
    import signal
    import sqlite3
    import time

    st, run_id = synthetic.uniform_run(tmp_path)
    fifo = tmp_path / "slow.csv"
    os.mkfifo(fifo)
    p = subprocess.Popen(
        [sys.executable, "-m", "rooftop", "service", run_id, "--results", str(st.dir), "--import", str(fifo)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        with fifo.open("w") as w:
            w.write("server_procs,client_procs,per_client,unit,window\n")
            w.writelines(f"1,2,{5 + i % 7},K ops/s,{i}\n" for i in range(500))
            w.flush()
            deadline = time.monotonic() + 60
            while True:  # the import holds the write lock once it stores its first line
                probe = sqlite3.connect(st.path, timeout=0)
                try:
                    probe.execute("BEGIN IMMEDIATE")
                    probe.rollback()
                except sqlite3.OperationalError:
                    break
                finally:
                    probe.close()
                assert time.monotonic() < deadline and p.poll() is None, "the import never began storing"
                time.sleep(0.05)
            p.send_signal(signal.SIGKILL)
            p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate(timeout=10)
    assert points.load(Store(st.dir, create=False), run_id) == []


# --- efficiency ---------------------------------------------------------------


def _pt(sp, cp, per_client, window=0, status="ok"):
    return ServicePoint(
        "kv", "rpc", "ops/s", sp, cp, window, status, None if status != "ok" else per_client * cp, error="boom"
    )


def test_efficiency_against_hand_computed_numbers():
    # client 100, server 400 per process: ridge 0.25.
    r = Roofline("rpc", "ops/s", Ceiling(90, 110, 100), Ceiling(380, 420, 400))
    pts = [
        _pt(1, 16, 10.0),  # x 1/16: r = 25, server-bound, 40 %
        _pt(1, 8, 30.0),  # x 1/8: r = 50
        _pt(1, 8, 20.0, 1),
        _pt(1, 8, 35.0, 2),  # median 30: 60 %
        _pt(1, 1, 80.0),  # x 1: r = 100, client-bound, 80 %
        _pt(2, 1, 0.0, status="failed"),  # shown, left out
    ]
    ev = efficiency.evaluate(r, pts)
    assert [(p.x, p.samples, p.binding) for p in ev.placements] == [
        (1 / 16, 1, "server"),
        (1 / 8, 3, "server"),
        (1.0, 1, "client"),
    ]
    assert [p.efficiency for p in ev.placements] == pytest.approx([0.4, 0.6, 0.8])
    assert ev.placements[1].aggregate == pytest.approx(240.0) and ev.placements[0].predicted_lo == pytest.approx(23.75)
    # The service's answer (the platform's locates the ridge: published ranges).
    sa = service_answer(ev, answer(r))
    assert sa.split and sa.median("server") == pytest.approx(0.5) and sa.median("client") == pytest.approx(0.8)
    assert sa.headline() == "kv reaches 50 % of the RPC roofline where servers bind and 80 % where clients bind"
    assert len(ev.left_out) == 1 and ev.left_out[0][1].startswith("failed: boom")
    assert {k: sa.to_dict()["efficiency"][k] for k in ("server_bound", "client_bound")} == {
        "server_bound": pytest.approx(0.5),
        "client_bound": pytest.approx(0.8),
    }
    one = service_answer(efficiency.evaluate(r, pts[:1]), answer(r))
    assert one.headline() == "kv reaches 40 % of the RPC roofline where servers bind (no point where clients bind)"
    # Between measured ratios: interpolated in log x; beyond them, the end's.
    assert efficiency.nearest_efficiency(ev.placements, (1 / 16 * 1 / 8) ** 0.5) == pytest.approx(0.5)
    assert efficiency.nearest_efficiency(ev.placements, 8.0) == pytest.approx(0.8)


# --- size ---------------------------------------------------------------------


def test_size_from_the_aurora_parameters_by_hand():
    r = model.load_params(AURORA)["rpc"]  # client 148-173 K, server 524-530 K ops/s per process
    # 10 M ops/s for 100 clients: servers bind; 10e6 / 530e3 = 18.9 -> 19,
    # / 527e3 (the midpoint) = 18.98 -> 19, / 524e3 = 19.08 -> 20.
    s = sizing.size(r, 100, 10e6)
    assert s.kind == "servers" and s.servers == {"hi": 19, "centre": 19, "lo": 20}
    assert "with 19 to 20 server processes; 19 at the median" in s.text
    # The knee: 100 x 148 / 530 = 27.9 -> 28 to 100 x 173 / 524 = 33.02 -> 34; 100 x 160.5 / 527 -> 31.
    k = sizing.size(r, 100)
    assert k.kind == "knee" and k.servers == {"hi": 28, "centre": 31, "lo": 34}
    assert [row["binding"] for row in k.rows if row["servers"] in (28, 31)] == ["server", "client"]
    # 20 M ops/s: above 100 clients' 17.3 M at best.
    assert sizing.size(r, 100, 20e6).kind == "unreachable"


def test_size_says_not_distinguishable_when_the_intervals_make_it_so():
    r = model.load_params(AURORA)["rpc"]
    # 16 M ops/s: 100 clients reach 14.8 M to 17.3 M: reachable at one end only.
    s = sizing.size(r, 100, 16e6)
    assert s.kind == "indistinguishable" and s.servers["hi"] == 31 and s.servers["lo"] is None
    assert s.text.startswith("not distinguishable: whether 100 client processes reach")
    # The same through the command, from the parameters file, in its units.
    p = cli("size", str(AURORA), "--clients", "100", "--target", "16 M ops/s", "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["kind"] == "indistinguishable"
    p = cli("size", str(AURORA), "--clients", "100", "--target", "10Mops/s")
    assert "19 to 20 server processes; 19 at the median" in p.stdout
    p = cli("size", str(AURORA), "--clients", "100", "--target", "10 GiB/s")
    assert p.returncode == 2 and "does not measure rpc" in p.stderr


def test_size_with_a_service_scales_by_its_efficiency(run):
    st, run_id, _, _ = run
    p = cli("size", run_id, "--results", str(st.dir), "--clients", "8", "--service", "redis-get", "--json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    res = results.load(st, run_id, SECTIONS)
    (svc,) = res.services
    r = res.rooflines["rpc"]
    assert d["service"] == "redis-get" and all("efficiency" in row for row in d["rows"])
    one = sizing.Sizer(r, 8, svc).row(2)  # x = 1/4: the measured 1 x 4 placement
    assert one["efficiency"] == pytest.approx(svc.placements[0].efficiency)
    assert one["aggregate"] == pytest.approx(min(8 * r.client_bound.centre, 2 * r.server.centre) * one["efficiency"])
    p = cli("size", str(AURORA), "--clients", "8", "--service", "redis-get")
    assert p.returncode == 2 and "--service needs a run" in p.stderr


# --- the run's model, report, figure and exports ------------------------------


def test_model_json_and_text_carry_the_service_table(run):
    st, run_id, _, _ = run
    doc = json.loads(cli("model", run_id, "--results", str(st.dir), "--json").stdout)
    (svc,) = doc["services"]
    r = results.load(st, run_id).rooflines["rpc"]
    assert svc["service"] == "redis-get" and [p["x"] for p in svc["placements"]] == [0.25, 0.5, 2.0]
    first = svc["placements"][0]
    assert first["measured"] == pytest.approx(21e3) and first["roofline"] == pytest.approx(r.rate(0.25))
    assert first["efficiency"] == pytest.approx(21e3 / r.rate(0.25)) and first["binding"] == r.binding(0.25)
    import jsonschema

    jsonschema.validate(doc, export.schema("model"))
    text = cli("model", run_id, "--results", str(st.dir)).stdout
    assert "redis-get reaches" in text and "roofline r(x)" in text


def test_report_section_and_figure_show_the_service(run):
    import matplotlib.pyplot as plt

    from rooftop import report
    from rooftop.plots import roofline

    st, run_id, _, tmp = run
    res = results.load(st, run_id, SECTIONS)
    page, md = report.write(res, tmp / "report")
    text = md.read_text()
    assert "## Service: redis-get (rpc)" in text and "| 0.25 | 1 x 4 | 2 |" in text
    assert "## How many servers" in text and "16 client processes bind (the knee)" in text
    html = page.read_text()
    assert 'id="service-redis-get"' in html and html.count("<figure") >= 2
    fig = roofline.figure(res.evaluations["rpc"], "t", services=res.services)
    ax = fig.axes[0]
    (pts,) = [c for c in ax.collections if c.get_gid() == "service-redis-get"]
    assert pts.get_offsets()[:, 0].tolist() == [0.25, 0.5, 2.0]
    scale = [c for c in ax.collections if (c.get_gid() or "").startswith("validation-")]
    assert scale  # beside the engine's validation points
    assert any(t.get_text().startswith("redis-get (3 placements") for t in ax.get_legend().get_texts())
    plt.close(fig)


def test_exports_carry_the_service(run):
    st, run_id, pts, tmp = run
    fom = export.fom_text(st, run_id)
    assert "service.redis_get.efficiency.server_bound: " in fom
    from test_export import FOM_LINE

    assert all(FOM_LINE.match(line) for line in fom.splitlines())
    rows = list(csv.DictReader(io.StringIO(export.services_text(st, run_id, "csv"))))
    assert [r["per_client"] for r in rows] == ["20000.0", "22000.0", "40000.0", "30000.0"]
    assert len(export.json_doc(st, run_id)["service_points"]) == 4
    # The exported CSV reads back: the same points under another name.
    f = tmp / "again.csv"
    f.write_text(export.services_text(st, run_id, "csv").replace("redis-get", "redis-again"))
    importing.import_csv(st, run_id, f)
    again = points.load(st, run_id, "redis-again")
    assert [(p.server_procs, p.client_procs, p.per_client) for p in again] == [
        (p.server_procs, p.client_procs, pytest.approx(p.per_client)) for p in pts
    ]
    st2 = Store(st.dir, create=False)
    points_again = points.load(st2, run_id, "redis-again")
    assert len(points_again) == 4
    st2.db.execute("DELETE FROM service_points WHERE service = 'redis-again'")
    st2.db.commit()


def test_the_reports_sizing_says_a_cannot_tell_once_per_metric():
    from rooftop.service.report import _said_once

    same = "cannot tell: a server ceiling's interval reaches 0"
    sz = [sizing.Sizing("rpc", "ops/s", "run", c, None, "cannot_tell", same) for c in (16, 128, 1024)]
    sz.append(sizing.Sizing("bw", "bytes/s", "run", 16, None, "knee", "16 client processes bind at 2 servers"))
    assert _said_once(sz) == [("rpc", same), ("bw", "16 client processes bind at 2 servers")]
