"""rooftop plot / report / compare on a real run: files, the HTML parsed
and rendered by headless Chromium, the Markdown summary, warnings."""

from __future__ import annotations

import base64
import html
import json
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
AURORA = ROOT / "examples" / "aurora-table2.json"


def cli(*args, check=True, timeout=300, cwd=None):
    p = subprocess.run(
        [sys.executable, "-m", "rooftop", *args], capture_output=True, text=True, timeout=timeout, cwd=cwd
    )
    if check and p.returncode != 0:
        raise AssertionError(f"rooftop {' '.join(args)} -> {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A small real campaign: rpc and bw ceilings (with the client-node
    stage) and validation, collected as a user would, with --results
    relative to the directory it ran in (the tests read it from elsewhere)."""
    where = tmp_path_factory.mktemp("report")
    quick = ["--duration", "0.4", "--warmup", "0.1", "--windows", "2", "--results", "res"]
    run_id = cli("collect", "--metrics", "rpc,bw", *quick, cwd=where).stdout.strip().splitlines()[-1]
    cli("validate", run_id, *quick, cwd=where)
    return where / "res", run_id


def _copy_of(run, tmp_path):
    """(run id, results folder, open database) of a copy of the run to edit."""
    import sqlite3

    res, run_id = run
    copy = tmp_path / "res"
    shutil.copytree(res, copy)
    return run_id, copy, sqlite3.connect(copy / "rooftop.db")


class Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.imgs, self.links, self.scripts, self.text = [], [], [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img":
            self.imgs.append(a.get("src", ""))
        if tag in ("link", "script") or (tag == "a" and a.get("href", "").startswith("http")):
            self.links.append((tag, a))

    def handle_data(self, data):
        self.text.append(data)


def test_plot_writes_every_figure_of_the_run(run):
    res, run_id = run
    p = cli("plot", run_id, "--results", str(res), "--json")
    files = json.loads(p.stdout)
    # 2 logical nodes: a one-point sweep and a one-pair matrix carry no
    # information: not drawn, and stderr says why.
    assert sorted(files) == sorted(f"{k}-{m}" for k in ("roofline", "latency") for m in ("bw", "rpc"))
    for m in ("bw", "rpc"):
        assert f"sweep-{m}: not drawn: one point: 1 server process" in p.stderr
        assert f"pairs-{m}: not drawn: one node pair, n0-n1" in p.stderr
    for paths in files.values():
        assert [Path(p).suffix for p in paths] == [".png", ".svg"]
        assert all(Path(p).stat().st_size > 5000 for p in paths)
        assert Path(paths[0]).parent == res / run_id / "figures"
    # --params with the run: published ceilings, the run's samples on them.
    out = cli(
        "plot", run_id, "--params", str(AURORA), "--results", str(res), "--out-dir", str(res / "p"), "--format", "svg"
    ).stdout.split()
    assert sorted(Path(p).name for p in out) == ["roofline-bw.svg", "roofline-rpc.svg"]


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_copied_folder_reports_the_same_from_anywhere(run, tmp_path):
    """Issue 30, item 2: the results folder copied elsewhere, and the
    original moved away, gives the same report and figures, byte for byte,
    opened from another directory (the database stores its paths relative
    to the folder); both latency figures are there."""
    res, run_id = run
    first = tmp_path / "first" / "res"
    shutil.copytree(res, first)
    ref = tmp_path / "ref"
    cli("report", run_id, "--results", str(first), "--out-dir", str(ref))
    cli("plot", run_id, "--results", str(first), "--out-dir", str(ref / "plot"), "--format", "png,svg,pdf")
    assert cli("doctor", "--results", str(first)).stdout.strip().endswith("no problem found")
    # Copied, then the original moved away; read with relative paths from a third directory.
    carried = tmp_path / "elsewhere" / "deeper" / "carried"
    shutil.copytree(first, carried)
    first.rename(tmp_path / "first" / "moved")
    here = tmp_path / "third"
    here.mkdir()
    rel = Path("..") / "elsewhere" / "deeper" / "carried"
    cli("report", run_id, "--results", str(rel), "--out-dir", "out", cwd=here)
    cli("plot", run_id, "--results", str(rel), "--out-dir", "out/plot", "--format", "png,svg,pdf", cwd=here)
    a, b = _files(ref), _files(here / "out")
    assert sorted(a) == sorted(b)
    assert {f"figures/latency-{m}.{x}" for m in ("rpc", "bw") for x in ("png", "svg")} <= set(a)
    assert {f"plot/latency-{m}.pdf" for m in ("rpc", "bw")} <= set(a)
    assert [f for f in a if a[f] != b[f]] == []
    assert b"tIME" not in a["figures/latency-rpc.png"]  # no time stamp in a PNG
    assert cli("doctor", "--results", str(rel), cwd=here).stdout.strip().endswith("no problem found")
    # A round's documents gone: doctor names the run, its samples and the path, exit 1.
    raw = carried / run_id / "raw"
    gone = next(d for d in sorted(raw.iterdir()) if d.name.startswith("validate_rpc"))
    shutil.rmtree(gone)
    p = cli("doctor", "--results", str(carried), check=False)
    assert p.returncode == 1, p.stdout
    assert f"run {run_id}:" in p.stdout and f"{run_id}/raw/{gone.name}" in p.stdout, p.stdout
    assert "sample validate/rpc/" in p.stdout and "does not resolve" in p.stdout
    assert "--rebuild" not in p.stdout  # a rebuild would not bring the documents back


@pytest.fixture(scope="module")
def page(run, tmp_path_factory):
    """The run's report, built once for the module: (report.html, the command's stderr)."""
    res, run_id = run
    p = cli("report", run_id, "--results", str(res))
    return Path(p.stdout.strip()), p.stderr


def test_report_is_self_contained_and_says_each_verdict_once(run, page):
    res, run_id = run
    page, stderr = page
    assert page == res / run_id / "report" / "report.html"
    md = page.with_name("report.md")
    assert f"markdown summary: {md}" in stderr
    doc = Page()
    doc.feed(page.read_text())
    # The figures that carry information are embedded as PNGs (roofline and
    # latency x 2 metrics), nothing fetched; the one-point sweep and the
    # one-pair matrix are sentences.
    assert len(doc.imgs) == 4 and not doc.links
    for src in doc.imgs:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    text = " ".join(doc.text)
    for needle in (
        "rooftop report",
        "ridge not located: the client and server ceilings are one measurement",  # the answer: no ridge here
        "client ceiling",
        "server ceiling",
        "Warnings",
        "Validation",
        "Environment",
        "Resolved config",
        '"provider": "ofi+tcp"',
        run_id,
        "sweep-rpc: not drawn: one point",
        "pairs-bw: not drawn: one node pair, n0-n1",
    ):
        assert needle in text, needle
    # The client-node ceiling is shown, or why it is not used (server-bound on 2 nodes).
    assert "node full:" in text or "node-full client ceiling not used" in text
    # 2 logical nodes: one measurement stood for server peak, client peak and
    # client node. Each metric's card says so once, with each ceiling's
    # interval and no bold ratio; what to do is said once for both metrics.
    assert text.count("not distinguishable") == 2
    assert text.count("one measurement (the same placement), which cannot locate the ridge") == 2
    assert text.count("collect on 3 or more nodes") == 1 and "To do (bw, rpc): collect on 3 or more nodes" in text
    assert "per process (95 % interval" in text
    big = re.findall(r'<div class="big">([^<]*)</div>', page.read_text())
    assert big == ["not distinguishable", "not distinguishable"], big
    # The Markdown summary: the same, in the same order, figures by relative path.
    m = md.read_text()
    assert "## rpc" in m and "## bw" in m and m.count("- ridge not located: the client and server ceilings") == 2
    assert m.count("- verdict: not distinguishable: the client and server ceilings are one measurement") == 2
    assert m.count("collect on 3 or more nodes") == 1 and m.count("not distinguishable") == 2
    assert "![roofline-rpc](figures/roofline-rpc.png)" in m and "*sweep-rpc: not drawn: one point" in m
    assert (page.parent / "figures" / "roofline-rpc.png").is_file()
    assert not (page.parent / "figures" / "sweep-rpc.png").exists()


def test_report_warns_about_a_wide_client_ceiling(run, tmp_path):
    run_id, copy, db = _copy_of(run, tmp_path)
    # One pair's client peak made 40 % slower than the others.
    # (On 2 nodes the client peak rows are the one measurement of every stage.)
    rid = db.execute(
        "SELECT id FROM samples WHERE run_id=? AND ceilings LIKE '%\"client_peak\"%' "
        "AND metric='rpc' ORDER BY per_client LIMIT 1",
        (run_id,),
    ).fetchone()[0]
    db.execute("UPDATE samples SET per_client = per_client * 0.6, aggregate = aggregate * 0.6 WHERE id=?", (rid,))
    db.commit()
    db.close()
    p = cli("report", run_id, "--results", str(copy), "--out-dir", str(tmp_path / "rep"))
    assert "look at the pair matrix" in p.stderr and "spread is between samples of n0-n1" in p.stderr
    assert "look at the pair matrix" in (tmp_path / "rep" / "report.html").read_text()


def test_compare_runs_and_params_on_one_figure(run, tmp_path):
    res, run_id = run
    p = cli(
        "compare",
        run_id,
        str(AURORA),
        "--results",
        str(res),
        "--out-dir",
        str(tmp_path),
        "--label",
        "this machine",
        "--label",
        "Aurora",
        "--json",
    )
    files = json.loads(p.stdout)
    assert sorted(files) == ["compare-bw", "compare-rpc"]
    assert all(Path(f).stat().st_size > 5000 for fs in files.values() for f in fs)
    # The table says where each ceiling comes from, per process: Aurora's bw
    # client ceiling is the node-full one the file derived, beside the
    # paper's own (Table 2) for a lone client.
    table = re.sub(
        r"[\s│]+", " ", cli("compare", run_id, str(AURORA), "--results", str(res), "--out-dir", str(tmp_path)).stdout
    )
    assert "client ceiling per" in table and "server ceiling per" in table  # ... process (headers wrap)
    # (cells wrap: "1.62 GiB/s (node full, derived; alone 20.2–20.5 GiB/s, published)")
    for part in ("1.62 GiB/s (node", "full, derived;", "alone 20.2–20.5", "GiB/s, published)", "(published)"):
        assert part in table, (part, table)
    assert "1.70–1.80 GiB/s" in table and "(measured)" in table
    bad = cli("compare", "nosuchrun", "--results", str(res), check=False)
    assert bad.returncode == 2 and "nosuchrun: neither a parameters file nor a run" in bad.stderr
    bad = cli("compare", run_id, "--label", "x", "--label", "y", "--results", str(res), check=False)
    assert bad.returncode == 2 and "2 --label for 1 sources" in bad.stderr


def test_model_shows_the_client_node_ceiling_and_errors_both_ways(run):
    res, run_id = run
    out = re.sub(r"[\s│]+", " ", cli("model", run_id, "--results", str(res)).stdout)
    assert "client ceiling, node full" in out
    # Either the third ceiling is used (errors both ways) or the run says why not.
    assert (
        "with the client-node ceiling" in out and "without it" in out
    ) or "not used: the client-node stage was server-bound" in out


def test_plot_and_report_errors_are_clear(tmp_path):
    p = cli("report", "nope", "--results", str(tmp_path), check=False)
    assert p.returncode == 2 and f"no results in {tmp_path} (no rooftop.db)" in p.stderr
    assert not (tmp_path / "rooftop.db").exists()  # asking creates nothing
    p = cli("plot", "--results", str(tmp_path), check=False)
    assert p.returncode == 2 and "give a RUN, a --params FILE, or both" in p.stderr
    p = cli("plot", "--params", str(AURORA), "--format", "gif", check=False)
    assert p.returncode == 2 and "formats are png, svg, pdf" in p.stderr


def test_a_lower_client_node_ceiling_is_used_and_drawn(run, tmp_path):
    """The run's client-node rows rewritten as if 8 servers per client had
    been available and each client got 40 % of a lone client's rate. (On 2
    nodes the client-node stage is the one measurement of every stage: the
    copy gets client-node rows of its own.)"""
    run_id, copy, db = _copy_of(run, tmp_path)
    lone = db.execute(
        "SELECT MIN(per_client) FROM samples WHERE run_id=? AND ceilings LIKE '%\"client_peak\"%' AND metric='rpc'",
        (run_id,),
    ).fetchone()[0]
    cur = db.execute(
        "SELECT * FROM samples WHERE run_id=? AND ceilings LIKE '%\"client_node\"%' AND metric='rpc'", (run_id,)
    )
    names = [d[0] for d in cur.description]
    for row in cur.fetchall():
        new = dict(zip(names, row))
        new.pop("id")
        new.update(
            stage="client_node",
            key=new["key"].replace("server_peak+client_peak+client_node", "client_node"),
            ceilings='["client_node"]',
            x=8,
            per_client=0.4 * lone,
        )
        db.execute(f"INSERT INTO samples ({', '.join(new)}) VALUES ({', '.join('?' for _ in new)})", list(new.values()))
    db.execute(
        'UPDATE samples SET ceilings = \'["server_peak", "client_peak"]\' WHERE run_id=? '
        "AND stage='server_peak' AND metric='rpc'",
        (run_id,),
    )
    db.commit()
    db.close()
    out = cli("model", run_id, "--results", str(copy)).stdout
    out = re.sub(r"[\s│]+", " ", out)  # table cells may wrap
    assert "lower, the model uses it" in out
    # Its validation repeats the ceilings' own placement: no accuracy, with or without the node ceiling.
    assert "accuracy: not tested" in out and "without it" not in out
    doc = json.loads(cli("model", run_id, "--results", str(copy), "--json").stdout)
    rpc = next(m for m in doc["metrics"] if m["metric"] == "rpc")
    assert rpc["client_node"]["binds"] and rpc["client_node"]["median"] == pytest.approx(0.4 * lone)
    # The client and server ceilings are still one measurement: no ridge is located.
    assert rpc["ridge"]["located"] is False and rpc["ridge"]["median"] is None
    p = cli("report", run_id, "--results", str(copy), "--out-dir", str(tmp_path / "rep"))
    assert "the model uses this node-saturated ceiling" in p.stderr
    page = Page()
    page.feed((tmp_path / "rep" / "report.html").read_text())
    assert "node full:" in " ".join(page.text)


# --- the report at a desktop and a phone width (issue 13, item 6; issue 30, item 4) ----
MEASURE = """<!doctype html><html><body style="margin:0">
<iframe id="r" src="{src}" style="border:0;width:{width}px;height:3000px"></iframe><pre id="m"></pre>
<script>document.getElementById("r").addEventListener("load", function () {{
  var w = this.contentWindow, d = w.document, top = function (el) {{ return el.getBoundingClientRect().top; }};
  var all = function (q) {{ return Array.from(d.querySelectorAll(q)); }};
  var fig = d.querySelector("figure"), v = d.getElementById("verdict"), t = d.getElementById("todo");
  var wide = function () {{ return all("body *").filter(function (e) {{
      var boxed = e.parentElement.closest("table, pre, .frame");  /* scrolls inside its own box */
      return !boxed && e.getBoundingClientRect().right > w.innerWidth + 1; }}).map(function (e) {{
      return e.tagName + "." + e.className; }}).slice(0, 5); }};
  var m = {{
    scrollWidth: d.documentElement.scrollWidth, width: w.innerWidth, wide: wide(),
    verdictBottom: v.getBoundingClientRect().bottom, todo: top(t), figure: fig ? top(fig) : null,
    text: d.body.innerText, todoText: t.innerText,
    says: all(".card .verdict").map(function (e) {{ return e.innerText; }}),
    figures: all("figure").map(function (f) {{ var i = f.querySelector("img");
      return {{id: f.id, natural: i ? i.naturalWidth : 0, shown: i ? i.getBoundingClientRect().width : 0,
               own: i ? +i.getAttribute("width") : 0}}; }}),
    nofig: all(".nofig").map(function (p) {{ return p.id; }})}};
  all(".zoom").forEach(function (c) {{ c.click(); }});  /* a tap on every figure */
  m.zoomed = all("figure img").map(function (i) {{ return i.getBoundingClientRect().width; }});
  m.zoomedScrollWidth = d.documentElement.scrollWidth; m.zoomedWide = wide();
  document.getElementById("m").textContent = JSON.stringify(m);
}});</script></body></html>"""


def _in_chromium(page: Path, width: int, tmp_path: Path, shot: bool = True) -> tuple[dict, Path | None]:
    """The report laid out in a frame `width` px wide (Chromium's headless
    window is at least 500 px wide, a frame is not): measurements taken in
    the page (then again with every figure tapped), and a screenshot."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        pytest.skip("chromium is not installed (scripts/setup.sh --test installs it)")
    wrapper = tmp_path / f"at-{width}.html"
    wrapper.write_text(MEASURE.format(src=page.as_uri(), width=width))
    base = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--allow-file-access-from-files",
        f"--user-data-dir={tmp_path / 'prof'}",
        f"--window-size={max(width, 500)},3000",
        "--virtual-time-budget=10000",
    ]
    dom = subprocess.run(base + ["--dump-dom", wrapper.as_uri()], capture_output=True, text=True, timeout=120).stdout
    found = re.search(r'<pre id="m">([^<]+)</pre>', dom)
    assert found, dom[-2000:]
    measured = json.loads(html.unescape(found.group(1)))
    if not shot:
        return measured, None
    png = tmp_path / f"report-{width}.png"
    subprocess.run(base + [f"--screenshot={png}", wrapper.as_uri()], capture_output=True, timeout=120)
    assert png.is_file()
    return measured, png


@pytest.mark.parametrize("width", [1280, 400])
def test_report_in_chromium_says_each_verdict_once_and_fits_a_phone(page, tmp_path, width):
    """Screenshotted at 1280 px and a phone's 400 px: nothing wider than the
    screen (wide tables and tapped figures scroll in their own box), the
    verdict and what to do before the first figure, each verdict said once,
    what to do for both metrics once, every figure with information (the
    one-point sweep and the one-pair matrix are sentences), and a tap shows
    a figure at its own size (100 px per inch: an 8 pt label is 11 px)."""
    m, shot = _in_chromium(page[0], width, tmp_path)
    assert m["width"] == width
    assert m["scrollWidth"] <= width and not m["wide"], m["wide"]
    assert m["verdictBottom"] <= m["todo"] < m["figure"], m
    text = m["text"]
    for says in set(m["says"]):
        # nowhere but in its card (one metric's verdict may be the start of the other's:
        # "... cannot locate the ridge" and "... cannot locate the ridge (any ratio ...)")
        assert text.count(says) == sum(s.count(says) for s in m["says"]), says
    assert m["says"] and text.count("not distinguishable") == len(m["says"]) == 2
    assert text.count("collect on 3 or more nodes") == 1
    for part in ("Pair matrix", "Measure again"):
        assert part in m["todoText"]
    # Figures: each has an image; the ones without information are sentences.
    assert sorted(f["id"] for f in m["figures"]) == sorted(
        f"{k}-{x}" for k in ("roofline", "latency") for x in ("bw", "rpc")
    )
    assert all(f["natural"] > 0 and 0 < f["shown"] <= width for f in m["figures"]), m["figures"]
    assert sorted(m["nofig"]) == sorted(f"{k}-{x}" for k in ("sweep", "pairs") for x in ("bw", "rpc"))
    # Tapped: each at its own size, scrolling inside its frame, never the page.
    assert all(z >= f["own"] - 1 for z, f in zip(m["zoomed"], m["figures"])), (m["zoomed"], m["figures"])
    assert m["zoomedScrollWidth"] <= width and not m["zoomedWide"], m["zoomedWide"]
    import matplotlib.image as mpimg

    gray = mpimg.imread(shot)[..., :3].mean(axis=2)[:, :width]
    assert (abs(gray - gray.mean()) > 0.1).mean() > 0.02  # not blank


def test_a_17_node_report_fits_a_phone_and_points_at_the_slow_node(tmp_path):
    import synthetic
    from rooftop import report, results

    st, run_id = synthetic.realistic_run(tmp_path, nodes=17, cores=2, slow_node=5)
    page, md = report.write(results.load(st, run_id), tmp_path / "rep")
    m, _ = _in_chromium(page, 400, tmp_path, shot=False)
    assert m["scrollWidth"] <= 400 and not m["wide"], m
    assert m["verdictBottom"] <= m["todo"] < m["figure"]
    assert "the pair matrix points at node n5" in m["todoText"]
    assert "pairs-rpc" in [f["id"] for f in m["figures"]]
    text = md.read_text()
    assert text.index("## What to do") < text.index("## Figures") < text.index("## Warnings")
