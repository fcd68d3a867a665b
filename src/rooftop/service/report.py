"""A run's services wherever the run is shown, each one answer
(rooftop.service.answer.ServiceAnswer, computed once beside the platform's
and attached to the run's results by SECTION's read): printed by `rooftop
model`, in `model --json`, a verdict card per service beside the
platform's (CARDS), a line per service in "How many servers" (SIZING: the
very text `rooftop size RUN --service NAME --clients C` prints), a section
per service right after them (headline, table, its own figure: SECTION),
and the figures of merit of `rooftop export`. The platform's roofline
figure (rooftop.plots.roofline) draws each service's placements too; the
service's own figure (SECTION's figures) draws them over the platform's
roofline in the service's own unit, without the engine's validation
samples. CARDS, SIZING and SECTION are entries of the report sections
table (rooftop.kinds.sections; rooftop.results.sections says what an
entry is)."""

from __future__ import annotations

import re

from rooftop.model.answer import answer
from rooftop.plots import roofline as roofline_plot
from rooftop.plots.run import measured_x
from rooftop.report import render
from rooftop.results.sections import Section
from rooftop.service import efficiency, points, sizing
from rooftop.service.answer import ServiceAnswer, answers_of
from rooftop.service.efficiency import pct

#: Client process counts the report sizes each metric for (with the run's
#: largest validated one); a service, for the first.
REPORT_CLIENTS = (16, 128, 1024)


def attach(store, res) -> None:
    """res.services (each service's answer against the run's own answers,
    RunResults.answers) and res.service_notes (services whose metric has no
    roofline here); the run's nodes for the exclusion rule."""
    pts = points.load(store, res.run.id)
    if pts:
        effs, res.service_notes = efficiency.of_points(res.rooflines, pts, res.run.config.get("nodes"))
        res.services = answers_of(effs, res.answers, points.specs(store, res.run.id), pts)


def evaluate(store, run_id: str | None, rooflines: dict, nodes=None) -> tuple[list[ServiceAnswer], list[str]]:
    """(services, notes) of a run's points against other rooflines (a
    parameters file's: each service's answer against that roofline's
    answer); ([], []) without a run."""
    if not run_id:
        return [], []
    pts = points.load(store, run_id)
    effs, notes = efficiency.of_points(rooflines, pts, nodes)
    answers = {m: answer(r) for m, r in rooflines.items()}
    return answers_of(effs, answers, points.specs(store, run_id), pts), notes


# --- rooftop model --json ----------------------------------------------------


def model_json(services, notes) -> dict:
    """`model --json`'s services (added in schema 1.3)."""
    return {"services": [s.to_dict() for s in services], "service_notes": list(notes)}


# --- figures of merit ---------------------------------------------------------


def fom_rows(res) -> list[tuple[str, float, str, bool]]:
    """service.NAME.efficiency (%, the median over the placements its
    answer quotes), service.NAME.efficiency.{server_bound,client_bound} (%,
    only where the platform's ridge is located) and service.NAME.placements,
    per service with a roofline. NAME is the
    service's name in lower case with every character but a-z, 0-9 and _
    as _ (redis-get: redis_get), so every line keeps matching the figures
    of merit's one regex (rooftop.export.fom_text)."""
    out = []
    for s in res.services:
        name = fom_name(s.service)
        overall = s.median()
        if overall is not None:
            out.append((f"service.{name}.efficiency", overall * 100, "%", True))
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


def report_clients(res, metric: str) -> list[int]:
    """The client counts the report sizes a metric (and its services) for:
    REPORT_CLIENTS and the run's largest validated count; where the verdict
    locates no ridge the answer has the same shape for every count: the
    first of REPORT_CLIENTS only."""
    if not res.answers[metric].located:
        return list(REPORT_CLIENTS[:1])
    biggest = [s["client_procs"] for s in res.samples if s.get("stage") == "validate" and s.get("client_procs")]
    return sorted(set(REPORT_CLIENTS) | ({max(biggest)} if biggest else set()))


def service_sizing(s: ServiceAnswer, clients: int, target: float | None = None) -> sizing.Sizing:
    """How many servers C client processes of a service need: what `rooftop
    size RUN --service NAME --clients C` prints, and the report's line."""
    return sizing.size(s.roofline, clients, target, s)


def report_sizings(res) -> list[sizing.Sizing]:
    """How many servers for a few client counts (the knee) per metric, then
    a line per service (for the first of REPORT_CLIENTS)."""
    out = [sizing.size(r, c) for m, r in sorted(res.rooflines.items()) for c in report_clients(res, m)]
    return out + [service_sizing(s, REPORT_CLIENTS[0]) for s in res.services]


def _said_once(sz: list[sizing.Sizing]) -> list[tuple[str, str]]:
    """(what, text) of each sizing ('rpc', or 'redis-get on rpc' for a
    service), each text said once: the very answer `rooftop size RUN
    --clients C [--service NAME]` prints (rooftop.service.sizing.size), so
    a ridge the verdict does not locate gives no server count here either."""
    out: list[tuple[str, str]] = []
    for s in sz:
        if (sizing.line_name(s), s.text) not in out:
            out.append((sizing.line_name(s), s.text))
    return out


def sizing_markdown(res) -> list[str]:
    sz = report_sizings(res)
    if not sz:
        return []
    said = _said_once(sz)
    return ["## How many servers", "", *[f"- {render.md_text(m)}: {render.md_text(t)}" for m, t in said], ""]


def sizing_context(res) -> dict | None:
    """What sections/sizing.html shows; None: no roofline to size from."""
    sz = report_sizings(res)
    return {"lines": _said_once(sz)} if sz else None


def markdown(res, figures: dict, base) -> list[str]:
    """A section per service: headline, table, its own figure, left-out points."""
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


def caption(s: ServiceAnswer) -> str:
    return (
        f"{s.service}'s placements (median per client process over its usable samples) over the {s.metric} "
        f"roofline of this run, in {s.service}'s own unit ({s.unit.base}"
        + (f"; {s.unit.note}" if s.unit.note else "")
        + "); efficiency = measured / r(x). The engine's validation samples are in the roofline figure."
    )


def context(res, figures: dict) -> dict | None:
    """What sections/services.html shows: per service its headline, table,
    figure and left-out points; the notes. None: no service."""
    if not res.services and not res.service_notes:
        return None
    services = []
    for s in res.services:
        png = _png(figures, s.service)
        services.append(
            {
                "name": s.service,
                "metric": s.metric,
                "headline": s.headline(),
                "head": list(s.HEAD),
                "rows": s.rows() if s.placements else [],
                "figure": render.figure(png, f"service-{s.service}-figure", f"{s.service} on the roofline", caption(s))
                if png is not None
                else None,
                "left_out": s.left_out_lines(),
            }
        )
    return {"services": services, "notes": list(res.service_notes)}


# --- the verdict cards --------------------------------------------------------


def cards_markdown(res) -> list[str]:
    """A card per service after the metrics' (report.md)."""
    out: list[str] = []
    for s in res.services:
        c = s.card()
        out += [
            f"## {render.md_text(c['name'])} (service on {render.md_text(s.metric)})",
            "",
            f"- verdict: **{render.md_text(c['big'])}**: {render.md_text(c['says'])}",
            *[f"- {render.md_text(line)}" for line in c["lines"]],
            "",
        ]
    return out


def cards_context(res) -> dict | None:
    """What sections/service_cards.html shows; None: no service."""
    return {"cards": [s.card() for s in res.services]} if res.services else None


# --- the service's own figure -------------------------------------------------


def figure_title(res, s: ServiceAnswer) -> str:
    """'redis-get (imported from redis-get.csv) on the rpc roofline: vm (2
    logical nodes), tcp, run ID'."""
    what = f" ({s.description})" if s.description else ""
    return f"{s.service}{what} on the {s.metric} roofline: {res.host}, {res.provider}, run {res.run.id}"


def service_figure(res, s: ServiceAnswer, yscale: str = "auto"):
    """The service's own figure (module docstring)."""
    r = s.roofline
    pts = [(p.x, p.measured, pct(p.efficiency) if s.is_quoted(p) else None) for p in s.placements]
    scale, label = s.unit.axis(max([r.client.hi, *(m for _, m, _ in pts)]))
    ylabel = f"{s.service} rate per client process" + (f", {s.unit.note}" if s.unit.note else "") + f" ({label})"
    return roofline_plot.service_figure(
        r, figure_title(res, s), s.service, pts, s.legend(), (scale, label), ylabel, yscale, measured_x(res, s.metric)
    )


def service_figures(res) -> dict:
    """service-NAME per service with a placement."""
    return {f"service-{s.service}": service_figure(res, s) for s in res.services if s.placements}


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


#: A verdict card per service, beside the metrics' cards (from the
#: services SECTION's read: pass both).
CARDS = Section(
    name="service_cards",
    markdown=lambda res, data, figures, base: cards_markdown(res),
    template="sections/service_cards.html",
    context=lambda res, data, figures: cards_context(res),
    where="cards",
)

#: How many servers, beside the verdict: per metric from its roofline, per
#: service (after the services SECTION's read) scaled by its efficiency.
SIZING = Section(
    name="sizing",
    markdown=lambda res, data, figures, base: sizing_markdown(res),
    template="sections/sizing.html",
    context=lambda res, data, figures: sizing_context(res),
    where="verdict",
)

#: A section per service, right after How many servers (before the
#: warnings and the validation); its own figures (service-NAME) are shown there.
SECTION = Section(
    name="services",
    read=_read,
    markdown=lambda res, data, figures, base: markdown(res, figures, base),
    template="sections/services.html",
    context=lambda res, data, figures: context(res, figures),
    figures=lambda res, data: service_figures(res),
    where="verdict",
    own_figures="service-",
)
