"""What `rooftop learn` and `rooftop predict` print (rich tables on stdout)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from rooftop.units import fmt_num, fmt_range, fmt_rate


def _console() -> Console:
    out = Console(highlight=False)
    if not out.is_terminal:
        out.width = 110
    return out


def _spread(s) -> str:
    sp = s.spread(0)
    return "-" if sp is None else f"{sp[0]:.1f}–{sp[1]:.1f}"


def _spread_mean(s) -> str:
    sp = s.spread(1)
    return "-" if sp is None else f"{sp[0]:.1f}–{sp[1]:.1f}"


def scores_table(title: str, scores, best: str | None = None) -> Table:
    """Table-5 style: median and mean absolute percentage error (and their
    spread over folds), best first."""
    n = len(scores[0].errors) if scores else 0
    t = Table(title=f"{title}, {n} held-out samples", title_justify="left")
    for c in ("model", "median %", "over folds", "mean %", "over folds "):
        t.add_column(c, justify="left" if c == "model" else "right", no_wrap=True)
    for s in scores:
        name = s.name + (" [bold]*[/]" if s.name == best else "")
        t.add_row(name, f"{s.median:.1f}", _spread(s), f"{s.mean:.1f}", _spread_mean(s))
    return t


def print_learned(o, folds: int) -> None:
    out = _console()
    ds = o.ds
    out.print(
        f"[bold]{ds.metric}[/]: {len(ds.y)} samples, {ds.configurations} configurations, "
        f"{len(ds.runs)} run(s); features: {', '.join(ds.features)}"
    )
    if ds.left_out:
        run, key, why = ds.left_out[0]
        out.print(
            f"[yellow]{ds.metric}: {len(ds.left_out)} validation sample(s) left out, as from every ceiling "
            f"(rooftop.model.exclusion), e.g. run {run} {key}: {why}[/]"
        )
    out.print(
        scores_table(
            f"{ds.metric}: {folds}-fold cross-validation grouped by configuration (per-client rate)", o.cv, o.best
        )
    )
    plain, roof = o.best_of(o.cv, "plain"), o.best_of(o.cv, "roofline")
    out.print(
        "median %, mean %: absolute percentage error of the per-client rate; * saved"
        + (f"; repeats of one configuration differ by {o.noise:.1f} % (median)" if o.noise else "")
    )
    out.print(
        f"best plain model: {plain.name} {plain.median:.1f} %; best roofline-informed: "
        f"{roof.name} {roof.median:.1f} % (median |error|)"
    )
    if o.extrapolation:
        out.print(scores_table(f"{ds.metric}: extrapolation, {o.extrapolation_text}", o.extrapolation))
        plain, roof = o.best_of(o.extrapolation, "plain"), o.best_of(o.extrapolation, "roofline")
        out.print(
            f"extrapolation: best plain {plain.name} {plain.median:.1f} %; best roofline-informed "
            f"{roof.name} {roof.median:.1f} %"
        )
    else:
        out.print(o.extrapolation_text)
    if o.importances:
        t = Table(title=f"{ds.metric}: feature importance ({o.best})", title_justify="left")
        t.add_column("feature")
        t.add_column("median |error| increase when shuffled (points)", justify="right")
        for f, v in o.importances:
            t.add_row(f, f"{v:+.1f}")
        out.print(t)
    out.print(f"saved: {o.path}")


def print_prediction(p: dict) -> None:
    out = _console()
    f = lambda v: fmt_rate(v, p["unit"])
    r = p["roofline"]
    out.print(
        f"[bold]{p['metric']}[/]: {p['servers']} server process(es) on {p['server_nodes']:g} "
        f"node(s), {p['clients']} client process(es) on {p['client_nodes']:g} node(s), "
        f"x = {fmt_num(p['x'])}"
    )
    out.print(
        f"predicted per client process: [bold]{f(p['per_client'])}[/] (90 % interval "
        f"{fmt_range(*p['interval'], p['unit'])}); aggregate {f(p['aggregate'])}"
    )
    cap = "capped at the roofline's highest ceilings" if p["capped"] else "below the roofline"
    out.print(
        f"roofline r(x) {f(r['rate'])}: the {r['binds']} ceiling binds ({f(r['ceiling'])}); "
        f"model {p['model']} gave {f(p['model_rate'])}, {cap} ({f(r['cap'])})"
    )
    if r["note"]:
        out.print(f"[yellow]note[/]: {r['note']}")
    for line in p["extrapolating"]:
        out.print(f"[yellow]extrapolating[/]: {line}")
    out.print(f"model: {p['model_file']} (cross-validated median |error| {p['cv_median_ape']:.1f} %)")
