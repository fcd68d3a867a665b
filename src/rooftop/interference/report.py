"""The roofline under load, for a run `rooftop interfere` measured alone
(rooftop.interference.run): each loaded run's ceilings as a second, lower band
(model text, roofline figure), the interference figure (impact factors
both ways; the ensemble's normalized slowdown against concurrent copies,
one line per load kind, as Figures 5-7 of Fuchs et al. (ISPDC 2024)) and the report's
section saying which resource each load shared: SECTION, an entry of the
report sections table (rooftop.kinds.sections; rooftop.results.sections
says what an entry is)."""

from __future__ import annotations

import matplotlib.pyplot as plt

from rooftop import model
from rooftop.interference.run import read_summary
from rooftop.plots.style import LOADED_COLOURS
from rooftop.report import render
from rooftop.results.sections import Section
from rooftop.units import fmt_rate


def read(store, res) -> dict | None:
    """The section's data: RUN/interference.json when res is an isolated
    run (None: it is not); fills res.loaded (per metric: [(label, roofline
    of the loaded run)])."""
    doc = read_summary(store.run_dir(res.run.id))
    if doc is None:
        return None
    for c in doc["conditions"]:
        try:
            samples = store.samples(c["run"])
        except Exception:  # a loaded run removed since: the rest still shows
            continue
        for metric in sorted({s["metric"] for s in samples}):
            try:
                r = model.from_run(samples, metric, f"run {c['run']}", nodes=res.run.config.get("nodes"))
            except model.ModelError:
                continue
            res.loaded.setdefault(metric, []).append((label(c), r))
    return doc


def label(c: dict) -> str:
    return f"beside {c['copies']} x {c['load']}" if c["copies"] > 1 else f"beside {c['load']}"


def model_rows(res, metric: str, f) -> list[tuple[str, str]]:
    """Rows of `rooftop model`'s table: each loaded roofline's ceilings and
    how far they came down (isolated / loaded)."""
    iso = res.rooflines.get(metric)
    rows = []
    for name, r in res.loaded.get(metric, []):
        text = f"client {f(r.client_bound.centre)}, server {f(r.server.centre)}"
        if iso is not None:
            text += (
                f" (isolated / loaded: client {iso.client_bound.centre / r.client_bound.centre:.2f}, "
                f"server {iso.server.centre / r.server.centre:.2f})"
            )
        rows.append((f"under load: {name}", text))
    return rows


def _ceiling(c) -> dict:
    return {"min": c.lo, "median": c.centre, "max": c.hi}


def under_load_json(res, metric: str) -> list[dict]:
    """`model --json`'s metric["under_load"]: each loaded run's ceilings and
    how far each came down (isolated / loaded; null without an isolated
    roofline)."""
    iso = res.rooflines.get(metric)
    out = []
    for name, r in res.loaded.get(metric, []):
        down = (
            None
            if iso is None
            else {
                "client": iso.client_bound.centre / r.client_bound.centre,
                "server": iso.server.centre / r.server.centre,
            }
        )
        out.append(
            {
                "condition": name,
                "run": r.source.removeprefix("run "),
                "client": _ceiling(r.client_bound),
                "server": _ceiling(r.server),
                "isolated_over_loaded": down,
            }
        )
    return out


#: What `model --json` and `export --format json` keep of a condition's loads.
LOAD_FIELDS = ("load", "copy", "nodes", "rate_alone", "rate_beside", "slowdown", "normalized")


def interference_json(doc: dict | None) -> dict | None:
    """The run's impact factors both ways (RUN/interference.json, trimmed
    to what a consumer reads): per condition, per stage and metric the
    isolated and loaded rates and p99 latencies with their ratios, and each
    load copy's rate alone and beside the service."""
    if doc is None:
        return None
    conds = [
        {
            "run": c["run"],
            "load": c["load"],
            "copies": c["copies"],
            "knobs": c["knobs"],
            "shared": c["shared"],
            "resource": c["resource"],
            "rate_unit": c["rate_unit"],
            "ok": c["ok"],
            "failed": c["failed"],
            "impacts": c["impacts"],
            "loads": [{k: x.get(k) for k in LOAD_FIELDS} for x in c["loads"]],
        }
        for c in doc["conditions"]
    ]
    return {"isolated_run": doc["run"], "conditions": conds}


def fom_rows(doc: dict | None) -> list[tuple[str, float, str, bool]]:
    """Figures of merit of the impact factors: per condition (load[xK]) and
    stage/metric, the mean and p99 impact (lower is better), and each
    load's mean slowdown beside the service (a bursts service: also per
    progress mode)."""
    out: list[tuple[str, float, str, bool]] = []
    for c in (doc or {}).get("conditions", []):
        cond = c["load"] + (f"x{c['copies']}" if c["copies"] > 1 else "")
        for i in c["impacts"]:
            stage = i["stage"].replace(":", "_")  # bursts/spindown:10: no ':' in a name
            for key in ("impact_rate", "impact_p99"):
                if i.get(key) is not None:
                    out.append((f"interference.{cond}.{stage}.{i['metric']}.{key}", i[key], "x", False))
            if i.get("load_slowdown"):
                out.append((f"interference.{cond}.{stage}.load_slowdown", i["load_slowdown"], "x", False))
        slow = [x["slowdown"] for x in c["loads"] if x.get("slowdown")]
        if slow:
            out.append((f"interference.{cond}.load_slowdown", sum(slow) / len(slow), "x", False))
    return out


def _num(v) -> str:
    return f"{v:.2f}" if v else "-"


def table_rows(doc: dict) -> list[list[str]]:
    """One row per condition, stage and metric."""
    rows = []
    for c in doc["conditions"]:
        own = [x["slowdown"] for x in c["loads"] if x["slowdown"]]
        norm = [x.get("normalized") for x in c["loads"] if x.get("normalized")]
        for i in c["impacts"]:
            rows.append(
                [
                    f"{c['copies']} x {c['load']}",
                    i["stage"].replace("_", " "),
                    i["metric"],
                    fmt_rate(i["rate_isolated"], i["unit"]) if i["rate_isolated"] else "-",
                    fmt_rate(i["rate_loaded"], i["unit"]) if i["rate_loaded"] else "-",
                    _num(i["impact_rate"]),
                    _num(i["impact_p99"]),
                    _num(i["load_slowdown"] if "load_slowdown" in i else sum(own) / len(own) if own else None),
                    _num(sum(norm) / len(norm) if norm else None),
                    c["shared"],
                ]
            )
    return rows


HEAD = [
    "load",
    "stage",
    "metric",
    "rate alone",
    "rate loaded",
    "impact (mean rate)",
    "impact (p99 latency)",
    "load's own slowdown",
    "normalized slowdown",
    "shared resource",
]

EXPLAIN = (
    "Impact factor: isolated / loaded mean rate, and loaded / isolated 99th-percentile latency "
    "(above 1: the load slowed the service down). The load's own slowdown: its rate alone / "
    "its rate beside the service (the same fixed units of work); normalized: against one "
    "copy alone."
)


def beside(run) -> str:
    """For a run measured beside a load: what ran beside it, in words."""
    i = run.config.get("interfere") or {}
    if i.get("role") != "loaded":
        return ""
    return (
        f"Measured beside {i['copies']} copy(ies) of the '{i['load']}' background load on nodes "
        f"{i['load_nodes']} (rooftop interfere; the same stages alone: run {i['of']}, whose report "
        f"compares them)."
    )


def context(doc: dict | None, run) -> dict | None:
    """What sections/interference.html shows (doc: RUN/interference.json):
    what ran beside a loaded run, or the comparison; None: neither."""
    if beside(run):
        return {"beside": beside(run)}
    if not doc:
        return None
    return {"beside": "", "explain": EXPLAIN, "head": HEAD, "rows": table_rows(doc), "shared": shared_lines(doc)}


def html_of(doc: dict | None, run) -> str:
    """The "Under load" section's HTML, for a page that is not a campaign
    report (a bursts run's: rooftop.kinds.bursts); "" without one."""
    ctx = context(doc, run)
    return render.render("sections/interference.html", **ctx) if ctx is not None else ""


def shared_lines(doc: dict) -> list[str]:
    """Which resource each load shared with the service, once per load."""
    seen, out = set(), []
    for c in doc["conditions"]:
        if c["load"] not in seen:
            seen.add(c["load"])
            out.append(
                f"{c['load']} (runs {', '.join(x['run'] for x in doc['conditions'] if x['load'] == c['load'])}): "
                f"shared resource: {c['shared']}"
            )
    return out


def markdown_of(doc: dict | None, run) -> list[str]:
    if beside(run):
        return ["## Under load", "", render.md_text(beside(run)), ""]
    if not doc:
        return []
    lines = ["## Under load", "", EXPLAIN, "", render.md_row(HEAD), "|" + "---|" * len(HEAD)]
    lines += [render.md_row(row) for row in table_rows(doc)]
    return lines + [""] + [f"- {render.md_text(x)}" for x in shared_lines(doc)] + [""]


def figure(doc: dict):
    """Left: impact factors per condition (mean rate and p99 latency, per
    stage and metric). Right: against the number of concurrent copies, the
    service's impact (dashed) and the load's normalized slowdown (solid),
    one colour per load kind."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
    conds = doc["conditions"]
    keys = sorted({(i["stage"], i["metric"]) for c in conds for i in c["impacts"]})
    width = 0.8 / max(1, 2 * len(keys))
    for k, (stage, metric) in enumerate(keys):
        for j, what in enumerate(("impact_rate", "impact_p99")):
            vals = [
                next((i[what] or 0 for i in c["impacts"] if (i["stage"], i["metric"]) == (stage, metric)), 0)
                for c in conds
            ]
            pos = [n + (2 * k + j) * width for n in range(len(conds))]
            left.bar(
                pos,
                vals,
                width,
                label=f"{stage.replace('_', ' ')} {metric}, {'mean rate' if j == 0 else 'p99 latency'}",
                alpha=0.9 if j == 0 else 0.5,
                gid=f"impact-{stage}-{metric}-{what}",
            )
    left.axhline(1.0, color="#222", lw=1)
    left.set_xticks(
        [n + 0.4 - width / 2 for n in range(len(conds))],
        [f"{c['copies']} x {c['load']}" for c in conds],
        rotation=20,
        fontsize=8,
    )
    left.set(ylabel="impact factor (1: no effect)", title="what each load does to the service")
    left.legend(fontsize=7)
    _ensemble(right, conds)
    fig.tight_layout()
    return fig


def _ensemble(ax, conds: list[dict]) -> None:
    for n, load in enumerate(sorted({c["load"] for c in conds})):
        colour = LOADED_COLOURS[n % len(LOADED_COLOURS)]
        cs = sorted((c for c in conds if c["load"] == load), key=lambda c: c["copies"])
        ks = [c["copies"] for c in cs]
        svc = [_mean([i["impact_rate"] for i in c["impacts"]]) for c in cs]
        own = [_mean([x.get("normalized") for x in c["loads"]]) for c in cs]
        ax.plot(ks, own, "o-", color=colour, label=f"{load}: its normalized slowdown", gid=f"ensemble-{load}")
        ax.plot(ks, svc, "s--", color=colour, label=f"{load}: the service's impact (mean rate)")
    ax.axhline(1.0, color="#222", lw=1)
    ax.set(
        xlabel="concurrent copies of the load",
        ylabel="slowdown (1: none)",
        title="ensembles: slowdown against concurrent copies",
    )
    ax.legend(fontsize=7)


def _mean(vals) -> float:
    vals = [v for v in vals if v]
    return sum(vals) / len(vals) if vals else float("nan")


CAPTION = (
    "Left: what each background load did to the service (rooftop interfere): "
    "isolated / loaded mean rate and loaded / isolated p99 latency per stage (1: no "
    "effect). Right: against the number of concurrent copies of each load, the load's "
    "own normalized slowdown (solid) and the service's impact (dashed)."
)

SECTION = Section(
    name="interference",
    read=read,
    markdown=lambda res, doc, figures, base: markdown_of(doc, res.run),
    template="sections/interference.html",
    context=lambda res, doc, figures: context(doc, res.run),
    figures=lambda res, doc: {"interference": figure(doc)} if doc else {},
    captions={"interference": CAPTION},
)
