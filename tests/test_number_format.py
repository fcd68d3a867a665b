"""Issue 43, item 4: numbers written one way. Every command's text output
on a few runs (a uniform one in KiB/s, a realistic 4-node one with an
imported service, the README main job's kind of 2-node run, four runs of a
history, and the Aurora parameters file at 1,000 clients) and the
figures' texts: a rate reads in
the scale its value reaches (148–173 M ops/s, never 148,000.0 K ops/s), a
range has an en dash and its unit once (never '..' or '-'), a ratio reads
S:C, a percentage '55 %' (an efficiency too, never 0.90). The exports'
numbers stay raw (base units); their text fields follow the convention."""

from __future__ import annotations

import contextlib
import io
import json
import random
import re
from pathlib import Path

import pytest

import synthetic
from rooftop import units
from rooftop.cli.main import main
from rooftop.config.resolve import resolve_grid

AURORA = Path(__file__).parent.parent / "examples" / "aurora-table2.json"

#: A number and the rate unit after it: the number as written, the unit.
RATE = re.compile(r"(?<![\w.,])(\d[\d,]*(?:\.\d+)?) ((?:[KMGT] )?ops/s|bytes/s|[KMGT]iB/s)")
#: The largest scale of each unit: only there may a value read 1,000 or more.
TOP = {"T ops/s", "TiB/s"}
BAD = {
    "a range written with '..'": re.compile(r"(\d|/s|\d %)\s*\.\.\s*[-+\d]"),
    "a range of rates written with '-'": re.compile(r"\d-\d[\d.,]* ?(?:(?:[KMGT] )?ops/s|bytes/s|[KMGT]iB/s)"),
    "a range of ratios written with '-'": re.compile(r"\d:\d+-\d+:\d"),
    "a range of numbers written with '-'": re.compile(r"(?<![\w-])\d+\.\d+-\d"),
    "a percentage without its space": re.compile(r"\d%"),
    "a ratio in words": re.compile(r"\d+ server process(?:es|\(es\))? per \d+ client"),
    "a bare efficiency": re.compile(r"\befficiency:? \d\.\d+\b(?! ?%)"),
}


def problems(text: str) -> list[str]:
    """What in text is not written the one way, each with its context."""
    out = []
    for m in RATE.finditer(text):
        whole = m.group(1).replace(",", "").split(".")[0]
        if int(whole) >= 1000 and m.group(2) not in TOP:
            out.append(f"unscaled rate: {m.group(0)!r}")
    for what, pat in BAD.items():
        out += [f"{what}: {text[max(0, m.start() - 30) : m.end() + 10]!r}" for m in pat.finditer(text)]
    return out


def validation_cells(text: str) -> list[str]:
    """The efficiency cell (the last) of each validation row in a rich or
    Markdown table: a row that says what it tests."""
    cells = []
    for line in text.splitlines():
        row = [c.strip() for c in re.split(r"[│|]", line) if c.strip()]
        if line.lstrip().startswith(("│", "|")) and {"repeatability", "the model"} & set(row):
            cells.append(row[-1])
    return cells


def strings(doc) -> list[str]:
    """Every string in a JSON document (its text fields)."""
    if isinstance(doc, dict):
        return [s for v in doc.values() for s in strings(v)]
    if isinstance(doc, list):
        return [s for v in doc for s in strings(v)]
    return [doc] if isinstance(doc, str) else []


def _run(*args: str, ok=(0,)) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(list(args))
    assert rc in ok, (args, rc, buf.getvalue())
    return buf.getvalue()


def _main_job(tmp: Path) -> tuple[Path, str]:
    """The README main job's kind of run: 2 logical nodes of 1 core, both
    ceilings one measurement at 1:1, validation at the same placement."""
    cfg = synthetic.config_for(2, 1)
    cfg["collect"].update(servers_per_node=1, clients_per_node=1, windows=6, sweep_servers=False)
    cfg["validate"].update(servers_per_node=1, clients_per_node=1, windows=6)
    rnd = random.Random(2)

    def rate(stage, metric, snodes, cnodes, ns, nc, i):
        return min(ns, nc) * (60e3 if metric == "rpc" else 2e9) * (1 + rnd.uniform(-0.05, 0.05))

    _, run = synthetic._store(tmp, resolve_grid(cfg), rate, lambda *a: [[10, 11, 5]])
    return tmp / "res", run


@pytest.fixture(scope="module")
def outputs(tmp_path_factory, request):
    """command -> its text output (and JSON text fields, and each figure's
    texts), over every run."""
    import matplotlib.text

    from rooftop.plots import run as plots_run

    tmp = tmp_path_factory.mktemp("numbers")
    runs = {
        "uniform": (tmp / "u" / "res", synthetic.uniform_run(tmp / "u")[1]),
        "realistic": (tmp / "r" / "res", synthetic.realistic_run(tmp / "r")[1]),
        "main job": _main_job(tmp / "m"),
    }
    hist = [
        synthetic.scaled_run(tmp / "h", s, 1.0, created=f"2026-01-0{i + 1}T00:00:00+00:00")[1]
        for i, s in enumerate((1.0, 1.02, 1.01, 0.7))
    ]
    out: dict[str, str] = {}
    figures: dict[str, list[str]] = {}
    # A service imported into the realistic run: its table, report section, figure and size --service.
    svc = tmp / "kv.csv"
    svc.write_text(
        "server_procs,client_procs,per_client,unit\n1,4,9.5,K ops/s\n1,4,10.1,K ops/s\n2,4,19,K ops/s\n8,4,24,K ops/s\n"
    )
    res, run = runs["realistic"]
    out["service --import"] = _run(
        "service", run, "--import", str(svc), "--name", "kv", "--metrics", "rpc", "--results", str(res)
    )
    out["size --service"] = _run("size", run, "--service", "kv", "--clients", "1000", "--results", str(res))
    save = plots_run.save

    def saving(fig, out_dir, name, *a, **k):  # each figure's texts, then the figure as drawn
        figures[name + f" ({len(figures)})"] = [t.get_text() for t in fig.findobj(matplotlib.text.Text)]
        return save(fig, out_dir, name, *a, **k)

    mp = pytest.MonkeyPatch()
    request.addfinalizer(mp.undo)
    mp.setattr(plots_run, "save", saving)
    for name, (res, run) in runs.items():
        r = ("--results", str(res))
        out[f"model {name}"] = _run("model", run, *r)
        out[f"model --json {name}"] = "\n".join(strings(json.loads(_run("model", run, *r, "--json"))))
        for metric, target in (("rpc", "300 K ops/s"), ("bw", "10 GiB/s")):
            for c in ("10", "1000"):
                out[f"size {name} {metric} {c}"] = _run("size", run, *r, "--metrics", metric, "--clients", c)
            out[f"size {name} {metric} --target"] = _run(
                "size", run, *r, "--metrics", metric, "--clients", "10", "--target", target
            )
            doc = json.loads(_run("size", run, *r, "--metrics", metric, "--clients", "1000", "--json"))
            out[f"size --json {name} {metric}"] = "\n".join(strings(doc))
        if name != "uniform":  # a report draws every figure: two runs are enough
            _run("report", run, *r, "--out-dir", str(tmp / f"report-{name}"))
            out[f"report.md {name}"] = (tmp / f"report-{name}" / "report.md").read_text()
            html = (tmp / f"report-{name}" / "report.html").read_text()
            html = re.sub(r"<(style|script)\b.*?</\1>|<img[^>]*>|<[^>]+>", " ", html, flags=re.S)
            out[f"report.html {name}"] = html
        out[f"history {name}"] = _run("history", *r)
        out[f"runs {name}"] = _run("runs", *r)
        out[f"export fom {name}"] = _run("export", run, *r, "--format", "fom")
        out[f"export json {name}"] = "\n".join(strings(json.loads(_run("export", run, *r, "--format", "json"))))
    h = ("--results", str(tmp / "h" / "res"))
    out["check --save-baseline"] = _run("check", hist[0], *h, "--save-baseline", "before")
    out["check against a baseline"] = _run("check", "latest", *h, "--against", "before", ok=(0, 1))
    out["check against the history"] = _run("check", "latest", *h, "--against", "history", ok=(0, 1))
    doc = json.loads(_run("check", "latest", *h, "--against", "history", "--json", ok=(0, 1)))
    out["check --json"] = "\n".join(strings(doc))
    out["history of 4 runs"] = _run("history", *h)
    out["history --json"] = "\n".join(strings(json.loads(_run("history", *h, "--json"))))
    out["compare"] = _run(
        "compare", hist[0], hist[-1], str(AURORA), *h, "--out-dir", str(tmp / "compare"), "--format", "png"
    )
    out["size aurora"] = _run("size", str(AURORA), "--clients", "1000")
    out["size aurora --target"] = _run("size", str(AURORA), "--clients", "1000", "--target", "150 M ops/s")
    out.update({f"figure {k}": "\n".join(v) for k, v in figures.items()})
    return out


def test_every_command_writes_numbers_one_way(outputs):
    found = {name: p for name, text in outputs.items() if "export fom" not in name and (p := problems(text))}
    assert not found, json.dumps(found, indent=1, ensure_ascii=False)


def test_the_outputs_cover_every_command_and_figure(outputs):
    """The forms above are looked for where they would appear: rates in each
    scale, ranges, percentages, ratios, efficiencies, figures."""
    every = "\n".join(outputs.values())
    for unit in ("ops/s", "K ops/s", "M ops/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s"):
        assert re.search(rf"\d {re.escape(unit)}", every), unit
    assert "–" in outputs["model realistic"] and " %" in outputs["model realistic"]
    assert "1:1 (servers:clients)" in outputs["model realistic"] and "ratio 1:1" in outputs["history of 4 runs"]
    assert "% of the RPC roofline" in outputs["report.md realistic"]  # the service section
    for kind in ("roofline", "pairs", "sweep", "latency", "compare", "service"):
        assert any(k.startswith(f"figure {kind}-") for k in outputs), kind


def test_the_issue_s_aurora_sizing_reads_in_m_ops(outputs):
    """'148,000.0-173,000.0 K ops/s' before (issue 43)."""
    text = outputs["size aurora"]
    assert "there they reach 148–173 M ops/s and more servers add nothing" in text
    assert "148–173 M ops/s (median 160 M ops/s), clients bind" in text
    assert "reach 150 M ops/s" in outputs["size aurora --target"]


def test_bytes_read_in_binary_scales_up_to_tib(outputs):
    """1,024 clients at 2.5 GiB/s each: 2.42–2.51 TiB/s, not 2,482.51-2,571.09 GiB/s."""
    assert "there they reach 2.42–2.51 TiB/s" in outputs["report.md realistic"]
    assert re.search(r"\d\.\d\d–\d\.\d\d TiB/s", outputs["size realistic bw 1000"])


def test_efficiency_is_a_percentage_in_every_validation_table(outputs):
    for name in ("model realistic", "model main job", "report.md realistic", "report.md main job"):
        cells = validation_cells(outputs[name])
        assert cells and all(re.fullmatch(r"\d+ %( \(above roofline\))?", c) for c in cells), (name, cells)
    assert "158 % (above roofline)" in outputs["model realistic"]
    # A service's efficiency, in its table and where it sizes.
    assert re.search(r"│\s+61 % │ server", outputs["model realistic"]) and "x = 0.25: 61 %" in outputs["size --service"]


def test_exports_keep_raw_numbers_in_base_units(outputs):
    """The figures of merit are for parsers: raw values in base units (no
    scale), a percentage's sign after a space."""
    for name in ("uniform", "realistic", "main job"):
        for line in outputs[f"export fom {name}"].splitlines():
            fom, rest = line.split(": ", 1)
            value, unit = rest.split(" ")[:2]
            float(value)
            assert unit in ("ops/s", "bytes/s", "%", "servers/client", "samples", "placements", "s"), line


def test_the_forms_the_issue_saw_are_caught():
    """problems() is the test: it fails on each form the issue names."""
    for bad in (
        "148,000.0-173,000.0 K ops/s",
        "1,864.03 GiB/s",
        "ridge x* 0.906 .. 1.1",
        "1.2 GiB/s .. 1.3 GiB/s",
        "2482.51-2571.09 GiB/s",
        "not distinguishable (1:2-2:1)",
        "ridge 0.45-0.5",
        "error +32%",
        "2 server process(es) per 1 client process(es)",
        "efficiency 0.90",
        "1000 K ops/s",
    ):
        assert problems(bad), bad
    for good in ("148–173 M ops/s", "1.82 TiB/s", "0.654–0.68", "1:4 (servers:clients)", "+32 %", "run 2026-01-02"):
        assert not problems(good), good


def test_units_pick_the_scale_for_the_value():
    assert units.fmt_rate(148e6, "ops/s") == "148 M ops/s"
    assert units.fmt_rate(999.6e3, "ops/s") == "1.00 M ops/s"  # never '1,000 K ops/s'
    assert units.fmt_rate(1000 * 2**10, "bytes/s") == "0.977 MiB/s"  # never '1,000 KiB/s'
    assert units.fmt_rate(1864.03 * 2**30, "bytes/s") == "1.82 TiB/s"
    assert units.fmt_rate(512, "bytes/s") == "512 bytes/s"
    assert units.fmt_rate(2.5e9, "ops/s") == "2.50 G ops/s"
    assert units.fmt_range(148e6, 173e6, "ops/s") == "148–173 M ops/s"
    assert units.fmt_range(500e3, 2e6, "ops/s") == "0.500–2.00 M ops/s"
    assert units.fmt_span(0.654, 0.68) == "0.654–0.68"
    assert units.fmt_pct(0.55) == "55 %" and units.fmt_pct(0.32, sign=True) == "+32 %"
    assert units.fmt_pct(None) == "-" and units.fmt_pct(0.123, 1) == "12.3 %"
    assert units.fmt_ratio(1, 4) == "1:4"
    assert units.rate_scale("ops/s", 1.5e6) == (1e6, "M ops/s")  # an axis to 1,500 K ops/s reads M
    assert units.rate_scale("bytes/s", 3 * 2**40) == (2**40, "TiB/s")
    assert units.parse("TiB/s") == ("bytes/s", 2.0**40) and units.parse("G ops/s") == ("ops/s", 1e9)
