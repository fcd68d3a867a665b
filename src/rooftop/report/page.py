"""The report's HTML page: one self-contained file (figures inline, no
network needed), rendered from the templates of rooftop/report/templates
(rooftop.report.render): what it says is gathered here and in
rooftop.report.parts, how it is laid out is the templates'. Narrow screens
(phones) get one column; wide tables scroll inside their box, never the
page, and a tap enlarges a figure."""

from __future__ import annotations

from pathlib import Path

from markupsafe import Markup

from rooftop import __version__
from rooftop.engine import machine as mach
from rooftop.model.answer import answer
from rooftop.numbers import json_text
from rooftop.report.parts import (
    big_line,
    class_text,
    headline,
    interval_text,
    machine_text,
    nic_lines,
    percent_text,
    range_text,
    ridge_text,
    shown,
    stages_text,
    todo,
    todo_common,
    validation_of,
    warnings,
)
from rooftop.report.render import figure, render
from rooftop.results import RunResults
from rooftop.results.sections import WHERE
from rooftop.units import fmt_pct, fmt_rate

NO_WARNING = "none: ceilings are tight, no sample above the roofline, low overhead"


def _pairs_text(res: RunResults) -> str:
    """collect.pairs, and for sampled pairs how many of all and where the
    topology came from."""
    cfg = res.run.config
    text = str(cfg["collect"]["pairs"])
    sample, topo = cfg.get("pair_sample"), res.topology
    if sample and topo is not None:
        text += f": {len(sample['pairs'])} of {topo.n * (topo.n - 1) // 2} pairs, topology: {topo.describe()}" + (
            f"; stopped: {sample['stop']}" if sample.get("stop") else ""
        )
    return text


def card(h: dict, common: bool) -> dict:
    """The headline card of one metric (common: what its verdict asks is
    said once for every metric, below the cards)."""
    u = h["unit"]
    lines = [f"measured once: {stages_text(st)} (the same placement)" for st in h["measured_once"]]
    lines.append(h["ridge_text"])
    lines.append(f"client ceiling {range_text(h['client'], u)} per process{interval_text(h['client_ci'], u)}")
    if h["client_classes"]:  # a run that recorded its topology
        lines.append(f"per topology class: {class_text(h)}")
    if h["client_node"]:
        lines.append(f"node full: {range_text(h['client_node'], u)}" + (" (binds)" if h["client_node_binds"] else ""))
    lines.append(f"server ceiling {range_text(h['server'], u)} per process{interval_text(h['server_ci'], u)}")
    if h["validation"]:
        err = f"validation: {h['accuracy']}"
        if h["error_all_without_client_node"] is not None:
            err += f" ({percent_text(h['error_all_without_client_node'])} without the node ceiling)"
        lines.append(err)
    lines += [f"warning: {d}" for d in h["drift"]]
    return {
        "metric": h["metric"],
        "big": big_line(h["verdict"]),
        "says": h["says"],
        "todo": "" if common else h["todo"],
        "lines": lines,
    }


def sections_at(res: RunResults, where: str, figures: dict[str, list[Path]]) -> Markup:
    """The report sections shown at `where` (rooftop.results.sections), each
    its template with what its context gives; a section whose context is None
    is left out."""
    out = []
    for s, data in res.sections:
        if s.where != where:
            continue
        ctx = s.context(res, data, figures)
        if ctx is not None:
            out.append(render(s.template, **ctx))
    return Markup("").join(out)


def figures_of(res: RunResults, figures: dict[str, list[Path]]) -> list[dict]:
    """The Figures: each a figure (render.figure), or a sentence in place of
    one that would carry no information ({id, text})."""
    return [
        figure(png, name, name, caption) if png is not None else {"id": name, "text": caption}
        for name, png, caption in shown(res, figures)
    ]


def nodes_of(res: RunResults) -> dict | None:
    """The outlier nodes (3 or more nodes), None without."""
    counted = {m: pm for m, pm in sorted(res.pairs.items()) if len(pm.nodes) >= 3}
    if not counted:
        return None
    metrics = []
    for metric, scores in sorted(res.scores.items()):
        u = res.pairs[metric].unit
        rows = [
            {
                "node": f"n{sc.node}",
                "median": fmt_rate(sc.median, u),
                "score": f"{sc.z:+.1f}",
                "flag": sc.flagged or "",
                "slowest": ", ".join(f"n{a}-n{b} {fmt_rate(v, u)}" for (a, b), v in sc.pairs[:3]),
            }
            for sc in scores
        ]
        w = res.without_flagged.get(metric)
        without = (
            f"without n{', n'.join(map(str, res.flagged(metric)))}: client ceiling "
            f"{range_text([w.client.lo, w.client.hi], w.unit)}, {ridge_text(answer(w).ridge)}"
            if w
            else ""
        )
        metrics.append({"metric": metric, "rows": rows, "without": without})
    return {
        "lines": [f"{metric}: {line}" for metric, pm in counted.items() for line in pm.outlier_lines()],
        "head": ["node", "median of its pairs", "score", "flag", "slowest pairs"],
        "metrics": metrics,
    }


def environment_of(res: RunResults) -> list[list[str]]:
    run = res.run
    ov = run.overhead
    return [
        [
            "run time",
            f"{run.wall_s:.0f} s, measuring {run.measured_s:.0f} s"
            + (f" (overhead {fmt_pct(ov)})" if ov is not None else ""),
        ],
        ["host", str(run.environment.get("host", "?"))],
        ["machine", machine_text(run.environment)],
        ["launcher", f"{run.config['launcher']['type']}, {len(run.config.get('nodes') or [])} nodes"],
        ["fabric", f"{res.provider}, domain {run.config['fabric']['domain'] or 'default'}"],
        ["binding", str(run.config["binding"])],
        ["client pairs", _pairs_text(res)],
        ["engine", str(run.environment.get("engine", "?"))],
        ["rooftop", str(run.environment.get("rooftop", __version__)) + _git(run.environment)],
        ["command", " ".join(run.environment.get("argv") or [])],
    ]


def _git(env: dict) -> str:
    """', git REV' when the run recorded the revision rooftop ran from."""
    return f", git {env['git']}" if env.get("git") else ""


def machine_table(env: dict) -> dict | None:
    """The report's machine table (a row per group of nodes alike), None
    when the run recorded no machine."""
    m = env.get(mach.KEY)
    if not isinstance(m, dict) or not m.get("nodes"):
        return None
    return {"head": mach.HEAD, "rows": mach.rows(m)}


def html_page(res: RunResults, figures: dict[str, list[Path]], mixes=(), nic=None) -> str:
    """The page, in reading order: the verdict (one card per metric, what
    it asks), what else to do, the figures, then warnings and the details."""
    run = res.run
    heads = headline(res)
    common = todo_common(heads)
    mix_parts = []
    for comb in mixes:
        head, *rest = comb.lines()
        mix_parts.append({"name": comb.mix.name, "head": head, "rest": [x.strip() for x in rest]})
    nic_part = None
    if nic is not None:
        said = nic_lines(nic)
        nic_part = {"head": said[0], "rest": said[1:]}
    return render(
        "page.html",
        run={"id": run.id, "host": res.host, "provider": res.provider, "created": run.created, "status": run.status},
        cards=[card(h, common is not None) for h in heads],
        common_todo={"metrics": common[0], "text": common[1]} if common else None,
        sections={w: sections_at(res, w, figures) for w in WHERE},
        todo=todo(res),
        mixes=mix_parts,
        nic=nic_part,
        figures=figures_of(res, figures),
        warnings=warnings(res),
        no_warning=NO_WARNING,
        validation=validation_of(res),
        nodes=nodes_of(res),
        environment=environment_of(res),
        machine=machine_table(run.environment),
        config_json=json_text(run.config, indent=2),
    )
