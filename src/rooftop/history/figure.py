"""The history figure of one comparable series: each ceiling's median over
the runs with its 95 % interval (top), the validation error and the
recommended ratio (bottom), changes the rule found marked (step: a line;
outlier: a ring)."""

from __future__ import annotations

from pathlib import Path

from rooftop import files
from rooftop.history.check import NAMES, Event
from rooftop.history.series import RunCeilings
from rooftop.units import rate_scale


def history_figure(runs: list[RunCeilings], events: list[Event]):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, low) = plt.subplots(2, 1, figsize=(9, 6), sharex=True, gridspec_kw={"height_ratios": [2, 1]})
    xs = list(range(len(runs)))
    peak = max(p.median for r in runs for p in r.ceilings.values())
    factor, label = rate_scale(runs[0].unit, peak)
    for name in NAMES:
        pts = [(i, r.ceilings[name]) for i, r in enumerate(runs) if name in r.ceilings]
        if not pts:
            continue
        med = [p.median / factor for _, p in pts]
        lo = [(p.median - (p.interval or (p.median, p.median))[0]) / factor for _, p in pts]
        hi = [((p.interval or (p.median, p.median))[1] - p.median) / factor for _, p in pts]
        top.errorbar([i for i, _ in pts], med, yerr=[lo, hi], marker="o", capsize=3, label=NAMES[name])
    for e in events:
        if e.kind == "step":
            top.axvline(e.at - 0.5, color="red", linestyle="--", linewidth=1)
        else:
            for c in e.check.changes:
                if c.beyond_noise:
                    top.plot([e.at], [c.after / factor], marker="o", markersize=14, fillstyle="none", color="red")
    top.set_ylabel(f"per process ({label})")
    top.set_ylim(bottom=0)
    top.legend(fontsize=8)
    sig = runs[0].signature
    top.set_title(f"{sig['metric']}: ceilings over {len(runs)} comparable runs (95 % intervals; dashed: step change)")
    ratio = [r.ratio[0] / r.ratio[1] if r.ratio else float("nan") for r in runs]
    low.plot(xs, ratio, marker="s", color="black", label="recommended servers per client")
    low.set_ylabel("servers per client")
    errs = [r.validation_error for r in runs]
    if any(v is not None for v in errs):
        twin = low.twinx()
        twin.plot(xs, [float("nan") if v is None else v for v in errs], marker="^", color="tab:purple")
        twin.set_ylabel("validation error (%)", color="tab:purple")
    low.set_xticks(xs, [r.created[:10] + "\n" + r.run[-4:] for r in runs], fontsize=7)
    fig.tight_layout()
    return fig


def write_all(found: list[tuple[list[RunCeilings], list[Event]]], out_dir: Path) -> list[Path]:
    """The history figure of each series (check.history) as PNG in out_dir
    (history-METRIC-N.png), nothing written through a link out of it."""
    from rooftop.plots.save import save

    paths: list[Path] = []
    with files.confined(out_dir):
        for i, (runs, events) in enumerate(found):
            fig = history_figure(runs, events)
            paths += save(fig, out_dir, f"history-{runs[0].metric}-{i + 1}", ("png",), dpi=110)
    return paths
