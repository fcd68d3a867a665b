"""A run's services wherever the run is shown: attached to its results
(SECTION's read), printed by `rooftop model`, in `model --json`, a section
per service in the report (headline, table, figure: SECTION), the sizing
beside the verdict (SIZING), and the figures of merit of `rooftop export`.
Figures: rooftop.plots.roofline draws each service's placements. SECTION
and SIZING are entries of the report sections table
(rooftop.kinds.sections; rooftop.results.sections says what an entry is)."""

from __future__ import annotations

import re

from rooftop.report import render
from rooftop.results.sections import Section
from rooftop.service import efficiency, points, sizing

#: Client process counts the report sizes for (with the run's largest validated one).
REPORT_CLIENTS = (16, 128, 1024)


def attach(store, res) -> None:
    """res.services and res.service_notes: the run's service points against
    its own rooflines (the run's nodes for the exclusion rule)."""
    pts = points.load(store, res.run.id)
    if pts:
        res.services, res.service_notes = efficiency.of_points(res.rooflines, pts, res.run.config.get("nodes"))


def evaluate(store, run_id: str | None, rooflines: dict, nodes=None):
    """(services, notes) of a run's points against any rooflines (a
    parameters file's too); ([], []) without a run."""
    if not run_id:
        return [], []
    return efficiency.of_points(rooflines, points.load(store, run_id), nodes)


# --- rooftop model --json ----------------------------------------------------


def model_json(services, notes) -> dict:
    """`model --json`'s services (added in schema 1.3)."""
    return {"services": [s.to_dict() for s in services], "service_notes": list(notes)}


# --- figures of merit ---------------------------------------------------------


def fom_rows(res) -> list[tuple[str, float, str, bool]]:
    """service.NAME.efficiency.{server_bound,client_bound} (%) and
    service.NAME.placements, per service with a roofline. NAME is the
    service's name in lower case with every character but a-z, 0-9 and _
    as _ (redis-get: redis_get), so every line keeps matching the figures
    of merit's one regex (rooftop.export.fom_text)."""
    out = []
    for s in res.services:
        name = fom_name(s.service)
        for side in ("server", "client"):
            m = s.median(side)
            if m is not None:
                out.append((f"service.{name}.efficiency.{side}_bound", m * 100, "%", True))
        out.append((f"service.{name}.placements", len(s.placements), "placements", True))
    return out


def fom_name(service: str) -> str:
    """'redis-get' -> 'redis_get'."""
    return re.sub(r"[^a-z0-9_]", "_", service.lower())


# --- the report ---------------------------------------------------------------


def other_figures(figures: dict) -> dict:
    """The figures but the services' own (shown in their sections)."""
    return {k: v for k, v in figures.items() if not k.startswith("service-")}


def report_sizings(res) -> list[sizing.Sizing]:
    """How many servers for a few client counts, per metric (the knee)."""
    biggest = [s["client_procs"] for s in res.samples if s.get("stage") == "validate" and s.get("client_procs")]
    counts = sorted(set(REPORT_CLIENTS) | ({max(biggest)} if biggest else set()))
    # Where the verdict locates no ridge, the answer has the same shape for
    # every client count: said once, for the first of REPORT_CLIENTS.
    return [
        sizing.size(r, c)
        for m, r in sorted(res.rooflines.items())
        for c in (counts if res.answers[m].located else REPORT_CLIENTS[:1])
    ]


def _said_once(sz: list[sizing.Sizing], rooflines: dict | None = None) -> list[tuple[str, str]]:
    """(metric, text) of each sizing, each text said once: the very answer
    `rooftop size RUN --clients C` prints (rooftop.service.sizing.size),
    so a ridge the verdict does not locate gives no server count here
    either. rooflines: unused, kept for the section's callers."""
    out: list[tuple[str, str]] = []
    for s in sz:
        if (s.metric, s.text) not in out:
            out.append((s.metric, s.text))
    return out


def sizing_markdown(res) -> list[str]:
    sz = report_sizings(res)
    if not sz:
        return []
    said = _said_once(sz, res.rooflines)
    return ["## How many servers", "", *[f"- {render.md_text(m)}: {render.md_text(t)}" for m, t in said], ""]


def sizing_context(res) -> dict | None:
    """What sections/sizing.html shows; None: no roofline to size from."""
    sz = report_sizings(res)
    return {"lines": _said_once(sz, res.rooflines)} if sz else None


def markdown(res, figures: dict, base) -> list[str]:
    """A section per service: headline, table, figure, left-out points."""
    out: list[str] = []
    for s in res.services:
        out += [
            f"## Service: {render.md_text(s.service)} ({render.md_text(s.metric)})",
            "",
            f"**{render.md_text(s.headline())}**",
            "",
        ]
        if s.placements:
            out += [render.md_row(s.HEAD), "|" + "---:|" * (len(s.HEAD) - 1) + "---|"]
            out += [render.md_row(row) for row in s.rows()]
            out.append("")
        png = _png(figures, s.service)
        if png is not None:
            out += [render.md_image(s.service, _rel(png, base)), ""]
        out += [f"- {render.md_text(line)}" for line in s.left_out_lines()]
    if res.service_notes:
        out += [f"- {render.md_text(line)}" for line in res.service_notes] + [""]
    return out


def context(res, figures: dict) -> dict | None:
    """What sections/services.html shows: per service its headline, table,
    figure and left-out points; the notes. None: no service."""
    if not res.services and not res.service_notes:
        return None
    services = []
    for s in res.services:
        png = _png(figures, s.service)
        caption = (
            f"{s.service}'s placements (median per client process over usable samples) beside the engine's "
            f"validation samples on the {s.metric} roofline; efficiency = measured / r(x)."
        )
        services.append(
            {
                "name": s.service,
                "metric": s.metric,
                "headline": s.headline(),
                "head": list(s.HEAD),
                "rows": s.rows() if s.placements else [],
                "figure": render.figure(png, f"service-{s.service}-figure", f"{s.service} on the roofline", caption)
                if png is not None
                else None,
                "left_out": s.left_out_lines(),
            }
        )
    return {"services": services, "notes": list(res.service_notes)}


def _png(figures: dict, service: str):
    return next((p for p in figures.get(f"service-{service}", []) if p.suffix == ".png"), None)


def _rel(p, base) -> str:
    try:
        return str(p.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(p)


def _read(store, res) -> list | None:
    attach(store, res)
    return res.services or res.service_notes or None


#: A section per service, after the validation tables; its figures
#: (service-NAME, drawn by rooftop.plots.run.plot_run) are shown there.
SECTION = Section(
    name="services",
    read=_read,
    markdown=lambda res, data, figures, base: markdown(res, figures, base),
    template="sections/services.html",
    context=lambda res, data, figures: context(res, figures),
    where="validation",
    own_figures="service-",
)

#: How many servers, beside the verdict (from the rooflines alone).
SIZING = Section(
    name="sizing",
    markdown=lambda res, data, figures, base: sizing_markdown(res),
    template="sections/sizing.html",
    context=lambda res, data, figures: sizing_context(res),
    where="verdict",
)
