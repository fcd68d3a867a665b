"""Report sections plug in through a table (rooftop.results.sections): an
entry handed to results.load reaches the results, the report's Markdown
and HTML and the figures; the commands hand in the studies' table
(rooftop.kinds.sections), so `rooftop report` shows `rooftop interfere`'s
and `rooftop learn`'s parts of a synthetic run."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """An isolated synthetic run with what `rooftop interfere` and `rooftop
    learn` leave beside it, and the run it names as measured beside a load."""
    import synthetic

    tmp = tmp_path_factory.mktemp("sections")
    st, base = synthetic.uniform_run(tmp)
    _, loaded = synthetic.uniform_run(tmp)
    impact = {
        "stage": "client_peak",
        "metric": "rpc",
        "unit": "ops/s",
        "rate_isolated": 1e5,
        "rate_loaded": 8e4,
        "impact_rate": 1.25,
        "impact_p99": 1.4,
        "load_slowdown": 1.1,
    }
    cond = {
        "run": loaded,
        "load": "cpu",
        "copies": 1,
        "knobs": {},
        "shared": "cores",
        "resource": "cpu",
        "rate_unit": "units/s",
        "ok": True,
        "failed": 0,
        "impacts": [impact],
        "loads": [{"load": "cpu", "copy": 0, "nodes": [0], "rate_alone": 10, "rate_beside": 9, "slowdown": 1.11}],
    }
    run_dir = st.run_dir(base)
    (run_dir / "interference.json").write_text(json.dumps({"run": base, "conditions": [cond]}))
    m = {"model": "gbr", "median_ape": 5.0, "median_ape_folds": [], "mean_ape": 7.0, "mean_ape_folds": []}
    (run_dir / "learned").mkdir()
    (run_dir / "learned" / "rpc.json").write_text(
        json.dumps(
            {
                "metric": "rpc",
                "unit": "ops/s",
                "samples": 10,
                "configurations": 4,
                "runs": [base],
                "best": "gbr",
                "cross_validation": [m],
                "extrapolation": {"split": "x > 2", "models": []},
            }
        )
    )
    return st, base


def test_an_entry_reaches_results_report_and_figures_only_when_handed_in(runs, tmp_path):
    from matplotlib.figure import Figure

    from rooftop import report, results
    from rooftop.results.sections import Section

    def figures(res, data):
        fig = Figure()
        fig.add_subplot().plot([1, 2], [data["n"], data["n"]])
        return {"extra": fig}

    extra = Section(
        name="extra",
        read=lambda store, res: {"n": len(res.metrics)},
        markdown=lambda res, data, figures, base: ["## Extra part", "", f"{data['n']} metric(s)", ""],
        template="sections/history.html",  # a heading and a list: any section's template would do
        context=lambda res, data, figures: {"lines": [f"{data['n']} metric(s) <extra>"]},
        figures=figures,
        captions={"extra": "what the extra section draws"},
    )
    st, base = runs
    res = results.load(st, base, [extra])
    assert res.part("extra") == {"n": len(res.metrics)} and res.part("interference") is None
    page, md = report.write(res, tmp_path / "with")
    text = md.read_text()
    assert text.index("## Validation") < text.index("## Extra part") < text.index("## Run")
    assert "![extra](figures/extra.png)" in text and (tmp_path / "with" / "figures" / "extra.png").is_file()
    html = page.read_text()
    # Rendered from its template, its text escaped (autoescape).
    assert f"<li>{len(res.metrics)} metric(s) &lt;extra&gt;</li>" in html and "what the extra section draws" in html
    # Without the table: the campaign's own parts only.
    bare = results.load(st, base)
    assert bare.sections == [] and bare.loaded == {}
    _, md = report.write(bare, tmp_path / "without")
    assert "Extra part" not in md.read_text() and "Under load" not in md.read_text()


def test_report_shows_the_studies_sections_of_the_table(runs):
    from rooftop.kinds.sections import SECTIONS

    assert [s.name for s in SECTIONS] == ["service_cards", "sizing", "services", "interference", "learned", "history"]
    st, base = runs
    p = subprocess.run(
        [sys.executable, "-m", "rooftop", "report", base, "--results", str(st.dir)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    text = (st.run_dir(base) / "report" / "report.md").read_text()
    assert text.index("## How many servers") < text.index("## What to do")
    assert (
        text.index("## Nodes")
        < text.index("## Under load")
        < text.index("## Learned model: rpc")
        < text.index("## Run")
    )
    assert "shared resource: cores" in text and "![interference](figures/interference.png)" in text
    page = (st.run_dir(base) / "report" / "report.html").read_text()
    assert '<section id="interference">' in page and "Learned model: rpc" in page
