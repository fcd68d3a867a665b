"""Every figure of a run (or of a parameters file), written to a folder."""

from __future__ import annotations

from pathlib import Path

from rooftop import model, stages
from rooftop.plots import compare, latency, pairs, roofline, sweep
from rooftop.plots import mix as mix_plot
from rooftop.plots.save import FORMATS, save
from rooftop.results import RunResults

#: The run's own figures, per metric, in the report's order (not run kinds:
#: rooftop.kinds.KINDS).
FIGURES = ("roofline", "sweep", "pairs", "latency")


def left_out(res: RunResults) -> dict[str, str]:
    """The run's figures that would carry no information (a one-point
    sweep, a one-pair matrix, a latency figure without histograms): name ->
    why, a sentence the report shows in their place. plot_run draws none of them."""
    out = {}
    for metric in res.metrics:
        why = {
            "sweep": sweep.why_not(res.samples, metric),
            "pairs": pairs.why_not(res.pairs[metric]) if metric in res.pairs else "",
            "latency": latency.why_not(res.latency, metric),
        }
        out.update({f"{kind}-{metric}": text for kind, text in why.items() if text})
    return out


def measured_x(res: RunResults, metric: str) -> tuple[float, float] | None:
    """The span of x = server / client processes the run measured for a
    metric (every ok sample, ceilings and validation): the roofline is drawn
    solid over it, dashed where it extrapolates."""
    xs = [
        s["server_procs"] / s["client_procs"]
        for s in res.samples
        if s["metric"] == metric and s["status"] == "ok" and s.get("server_procs") and s.get("client_procs")
    ]
    return (min(xs), max(xs)) if xs else None


def plot_run(res: RunResults, out_dir: Path, formats=FORMATS, yscale: str = "auto") -> dict[str, list[Path]]:
    """Writes roofline-<metric>, sweep-<metric>, pairs-<metric> and
    latency-<metric> (when the run has their data and they carry
    information: left_out), then the figures of the report sections in
    res.sections (a service's own: rooftop.service.report); returns name -> files. yscale: the rooflines' y axis
    (auto, log, linear)."""
    out: dict[str, list[Path]] = {}
    skip = left_out(res)
    for metric in res.metrics:
        title = res.title(metric)
        ev = res.evaluations.get(metric)
        if ev is not None:
            services = [s for s in res.services if s.metric == metric and s.placements]
            span = measured_x(res, metric)
            out[f"roofline-{metric}"] = save(
                roofline.figure(ev, title, yscale, res.loaded.get(metric, ()), services, span=span),
                out_dir,
                f"roofline-{metric}",
                formats,
            )
        if f"sweep-{metric}" not in skip:
            out[f"sweep-{metric}"] = save(
                sweep.figure(res.samples, metric, title, res.run.config.get("nodes")),
                out_dir,
                f"sweep-{metric}",
                formats,
            )
        pm = res.pairs.get(metric)
        if pm is not None and f"pairs-{metric}" not in skip:
            out[f"pairs-{metric}"] = save(
                pairs.figure(pm, f"client pair matrix, {title}", flagged=res.flagged(metric)),
                out_dir,
                f"pairs-{metric}",
                formats,
            )
        if f"latency-{metric}" not in skip:
            out[f"latency-{metric}"] = save(
                latency.figure(res.latency, metric, f"latency, {title}"), out_dir, f"latency-{metric}", formats
            )
    for section, data in res.sections:  # the studies' figures (rooftop.results.sections)
        for name, fig in section.figures(res, data).items():
            out[name] = save(fig, out_dir, name, formats)
    return out


def plot_mixes(mixes, out_dir: Path, run: str | None = None, formats=FORMATS) -> dict[str, list[Path]]:
    """mix-<name> per combined roofline (rooftop.model.mix.Combined)."""
    out = {}
    for comb in mixes:
        name = "mix-" + "".join(ch if ch.isalnum() else "_" for ch in comb.mix.name)
        title = f"combined roofline: {comb.mix.name}" + (f", run {run}" if run else "")
        out[name] = save(mix_plot.figure(comb, title), out_dir, name, formats)
    return out


def plot_params(
    rooflines: dict[str, model.Roofline],
    out_dir: Path,
    formats=FORMATS,
    samples: list[dict] | None = None,
    run: str | None = None,
    yscale: str = "auto",
    nodes=None,
) -> dict[str, list[Path]]:
    """The roofline of each metric of a parameters file, with a run's
    validation samples when given (run: its id, named in the titles;
    nodes: its nodes, for rooftop.model.exclusion)."""
    out = {}
    validation = stages.of_role("validation").name
    for metric, r in sorted(rooflines.items()):
        ev = model.evaluate(r, [s for s in samples or [] if s["stage"] == validation], nodes)
        title = f"{metric}: {r.source}" + (f", validation samples of run {run}" if run else "")
        out[f"roofline-{metric}"] = save(roofline.figure(ev, title, yscale), out_dir, f"roofline-{metric}", formats)
    return out


def plot_compare(
    sources: list[tuple[str, dict[str, model.Roofline]]],
    out_dir: Path,
    formats=FORMATS,
    yscale: str = "auto",
    normalise: bool = False,
) -> dict[str, list[Path]]:
    """One figure per metric with every source's roofline that has it (y:
    compare.figure's yscale and normalise)."""
    out = {}
    metrics = sorted({m for _, rs in sources for m in rs})
    for metric in metrics:
        items = [(label, rs[metric]) for label, rs in sources if metric in rs]
        names = ", ".join(label for label, _ in items)
        fig = compare.figure(items, f"{metric} rooflines: {names}", yscale, normalise)
        out[f"compare-{metric}"] = save(fig, out_dir, f"compare-{metric}", formats)
    return out
