"""Issue 43, "your service in the answer": a service's one answer
(rooftop.service.answer) beside the platform's. An imported service and a
measured preset (redis-bw, its points stored as `rooftop service` stores
them) each get a verdict card, a line in "How many servers" that is the
text `rooftop size --service` prints, their section right after those, and
a figure of their own (their points over the platform's roofline, in their
own unit, under their own title, without the engine's validation samples).
On the README main job's kind of run (the ceilings one measurement) the
answer quotes no server-bound / client-bound split and no efficiency the
verdict does not stand behind; nor where the ceilings' intervals overlap
(no split) or the verdict cannot tell (no efficiency)."""

from __future__ import annotations

import contextlib
import io
import json
import re

import pytest
from markupsafe import escape

import synthetic
from rooftop import report, results
from rooftop.cli.main import main
from rooftop.kinds.sections import SECTIONS
from rooftop.model import Ceiling, Roofline
from rooftop.model.answer import answer
from rooftop.report.render import md_text
from rooftop.service import efficiency, importing, points, presets, sizing
from rooftop.service.answer import own_unit, service_answer
from rooftop.service.points import ServicePoint

CSV = """server_procs,client_procs,per_client,unit
1,4,20,K ops/s
1,4,22,K ops/s
1,2,40,K ops/s
1,1,33,K ops/s
2,1,30,K ops/s
"""
SERVICES = (("redis-get", "rpc"), ("redis-bw", "bw"))


def _run(*args) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(list(args)) == 0
    return buf.getvalue()


def _with_services(tmp, st, run_id) -> None:
    """redis-get imported from CSV; redis-bw stored as a measured preset
    (its spec reads requests/s of 1 MiB, compared with bw)."""
    f = tmp / "redis-get.csv"
    f.write_text(CSV)
    importing.import_csv(st, run_id, f, metric="rpc")
    spec = presets.spec("redis-bw")
    points.save_spec(st, run_id, spec.name, spec.metric, spec.resolved())
    for s, c, rate in ((1, 2, 30e3), (1, 1, 45e3), (2, 1, 48e3)):
        for i in range(2):
            points.add(
                st,
                run_id,
                ServicePoint(
                    "redis-bw", "bw", "bytes/s", s, c, i, "ok", rate * c, key=f"s{s}-c{c}-{i}",
                    detail={"server_nodes": [0], "client_nodes": [1]},
                ),
            )  # fmt: skip


@pytest.fixture(scope="module")
def located(tmp_path_factory):
    """A synthetic run whose ridge is located, with both services, and its report."""
    tmp = tmp_path_factory.mktemp("located")
    st, run_id = synthetic.uniform_run(tmp)
    _with_services(tmp, st, run_id)
    res = results.load(st, run_id, SECTIONS)
    report.write(res, tmp / "report")
    return st, run_id, res, tmp / "report"


@pytest.fixture(scope="module")
def main_kind(tmp_path_factory):
    """The README main job's kind of run (2 logical nodes), with both services."""
    tmp = tmp_path_factory.mktemp("main")
    st, run_id = synthetic.one_measurement_run(tmp)
    _with_services(tmp, st, run_id)
    return st, run_id, tmp


def _size(st, run_id, name, *more) -> str:
    return _run("size", run_id, "--results", str(st.dir), "--clients", "16", "--service", name, *more)


def test_each_service_has_a_card_and_a_sizing_line_that_size_prints_and_its_section_before_the_warnings(located):
    st, run_id, res, out = located
    md, html = (out / "report.md").read_text(), (out / "report.html").read_text()
    verdict = html[html.index('<section id="verdict">') :]
    verdict = verdict[: verdict.index("</section>")]
    sized = html[html.index('<section id="sizing">') :]
    for name, metric in SERVICES:
        first = _size(st, run_id, name).splitlines()[0]
        assert first.startswith(f"{name} on {metric} (run {run_id}): ")
        text = first.split("): ", 1)[1]
        assert json.loads(_size(st, run_id, name, "--json"))["text"] == text
        # How many servers: the very text `size --service` prints.
        assert f"- {md_text(f'{name} on {metric}')}: {md_text(text)}" in md
        assert f"<b>{name} on {metric}</b>: {escape(text)}</li>" in sized
        # A verdict card beside the metrics' cards, its efficiency quoted one way.
        (s,) = [s for s in res.services if s.service == name]
        card = f"## {name} (service on {metric})"
        assert card in md and f'id="card-{name}"' in verdict
        assert f"- verdict: **{md_text(s.card()['big'])}**" in md and s.card()["big"].endswith(
            f"of the {metric.upper()} roofline"
        )
        # Its section: after How many servers, before what to do, the warnings and the validation.
        assert (
            md.index("## rpc")
            < md.index(card)
            < md.index("## How many servers")
            < md.index(f"## Service: {name} ({metric})")
            < md.index("## What to do")
            < md.index("## Warnings")
            < md.index("## Validation")
        )
    # The measured preset's own unit: requests/s of 1 MiB, against bw.
    bw = next(s for s in res.services if s.service == "redis-bw")
    assert (bw.origin, bw.unit.base, bw.unit.note) == ("measured", "ops/s", "1 op = 1 MiB")
    assert bw.unit.per_metric == pytest.approx(2.0**-20)


def test_a_services_figure_is_its_own_not_the_platforms(located):
    """Its points over the platform's roofline, in its own unit, under its
    own title, without the engine's validation samples (the SVGs' element
    ids and texts)."""
    _, run_id, res, out = located
    ids = lambda t: set(re.findall(r'id="((?:service|validation)-[^"]*)"', t))  # noqa: E731
    texts = lambda t: re.findall(r"<!-- (.*?) -->", t)  # noqa: E731
    for name, metric in SERVICES:
        own = (out / "figures" / f"service-{name}.svg").read_text()
        platform = (out / "figures" / f"roofline-{metric}.svg").read_text()
        assert any(i.startswith("validation-") for i in ids(platform)) and f"service-{name}" in ids(platform)
        assert f"service-{name}" in ids(own) and not any(i.startswith("validation-") for i in ids(own))
        assert res.title(metric) in texts(platform) and res.title(metric) not in texts(own)
        (title,) = [t for t in texts(own) if f" on the {metric} roofline: " in t]
        assert title.startswith(f"{name} (") and title.endswith(f"run {run_id}")
        (label,) = [t for t in texts(own) if "rate per client process" in t]
        assert label.startswith(f"{name} rate per client process")
        assert [t for t in texts(platform) if t.startswith("rate per client process (")]
    bw = (out / "figures" / "service-redis-bw.svg").read_text()
    (label,) = [t for t in texts(bw) if "rate per client process" in t]
    assert label.startswith("redis-bw rate per client process, 1 op = 1 MiB (ops/s")  # not bytes/s


def test_on_a_main_job_run_no_service_answer_splits_by_binding(main_kind):
    st, run_id, tmp = main_kind
    r = ("--results", str(st.dir))
    doc = json.loads(_run("model", run_id, *r, "--json"))
    reason = "the client and server ceilings are one measurement (the same placement)"
    for svc in doc["services"]:
        e = svc["efficiency"]
        assert e["server_bound"] is None and e["client_bound"] is None and e["binding_known"] is False
        assert {p["binding"] for p in svc["placements"]} == {None}
        # Quoted only at the ceilings' own ratio (x = 1), where the roofline is a measured rate.
        assert [p["x"] for p in svc["placements"] if p["quoted"]] == [1.0]
        assert [p["efficiency"] is None for p in svc["placements"]] == [p["x"] != 1.0 for p in svc["placements"]]
        assert e["overall"] == pytest.approx(next(p["efficiency"] for p in svc["placements"] if p["x"] == 1.0))
        assert "bind" not in svc["headline"].split(";")[0] and reason in svc["headline"]
    exported = json.loads(_run("export", run_id, *r, "--format", "json"))["service_answers"]
    for svc, again in zip(doc["services"], exported, strict=True):
        assert again["headline"] == svc["headline"] and again["how_many_servers"][0]["kind"] == "indistinguishable"
    text = _run("model", run_id, *r)
    assert "where servers bind" not in text and "where clients bind" not in text
    report.write(results.load(st, run_id, SECTIONS), tmp / "report")
    md = (tmp / "report" / "report.md").read_text()
    assert "where servers bind" not in md and "where clients bind" not in md and "| server |" not in md
    for name, metric in SERVICES:
        first = _size(st, run_id, name).splitlines()[0]
        assert first.split("): ", 1)[1].startswith("not sized: ") and reason in first
        assert f"- {md_text(f'{name} on {metric}')}: {md_text(first.split('): ', 1)[1])}" in md


def _pt(sp, cp, per_client):
    return ServicePoint("kv", "rpc", "ops/s", sp, cp, 0, "ok", per_client * cp)


def test_overlapping_intervals_quote_no_split_and_cannot_tell_quotes_nothing():
    pts = [_pt(1, 4, 20.0), _pt(1, 1, 80.0), _pt(4, 1, 90.0)]
    # Separate measurements whose intervals overlap around x = 1: the ridge
    # is not located, r(x) is: one efficiency over every placement, no split.
    c = Ceiling(90, 110, 100, (95, 105), 5, frozenset({"c"}))
    s = Ceiling(90, 110, 100, (95, 105), 5, frozenset({"s"}))
    r = Roofline("rpc", "ops/s", c, s)
    sa = service_answer(efficiency.evaluate(r, pts), answer(r))
    assert answer(r).verdict["kind"] == "indistinguishable" and not sa.split
    assert len(sa.quoted) == 3 and sa.median("server") is None and sa.median() == pytest.approx(0.8)
    assert sa.headline().startswith("kv reaches 80 % of the RPC roofline over its 3 placement(s); which ceiling binds")
    assert {row[-1] for row in sa.rows()} == {"not known"}
    # A ceiling of one sample: the verdict cannot tell, so nothing is quoted, and size says why.
    one = Roofline("rpc", "ops/s", Ceiling(100, 100, 100, None, 1, frozenset({"c"})), s)
    sa = service_answer(efficiency.evaluate(one, pts), answer(one))
    assert answer(one).verdict["kind"] == "cannot_tell" and sa.quoted == [] and sa.median() is None
    assert sa.headline().startswith("kv: no efficiency against the RPC roofline, whose verdict cannot tell")
    assert {row[-2] for row in sa.rows()} == {"-"}
    z = sizing.size(one, 16, service=sa)
    assert z.kind == "cannot_tell" and z.servers == {} and "no efficiency" in z.text


def test_own_unit_is_the_specs_and_an_imports_is_the_metrics():
    bw = own_unit("bytes/s", presets.spec("redis-bw").resolved())
    assert (bw.base, bw.note) == ("ops/s", "1 op = 1 MiB") and bw.per_metric == pytest.approx(2.0**-20)
    # 3 requests/s of 1 MiB: the axis divisor turns bytes/s into ops/s.
    div, label = bw.axis(3 * 2**20)
    assert label == "ops/s" and 3 * 2**20 / div == pytest.approx(3)
    assert own_unit("ops/s", presets.spec("redis").resolved()) == own_unit("ops/s", None)
    assert own_unit("ops/s", None).base == "ops/s"
