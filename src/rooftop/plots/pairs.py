"""The client pair matrix as a node x node heatmap (the CUG 2025 roofline paper's Polaris
lesson: slow pairs that share one node). Boxed: only the pairs that are
outliers by rooftop.model.outliers' rule (the same robust spread that flags
nodes); a uniform matrix has no box, and its title says so. Pairs through a
link named slow (rooftop.model.suspects) have a dashed box, and the title
names the link."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Rectangle

from rooftop import units
from rooftop.model import outliers
from rooftop.plots import style
from rooftop.results import PairMatrix


def why_not(pm: PairMatrix) -> str:
    """Why the matrix would carry no information ("" when it carries some):
    a single node pair (2 nodes) has nothing to be compared with."""
    pairs = {**pm.rates, **{p: v for p, (v, _) in pm.left_out.items()}}
    if len(pairs) > 1:
        return ""
    if not pairs:
        return "no node pair measured"
    (a, b), v = next(iter(pairs.items()))
    return (
        f"one node pair, n{a}-n{b}: {units.fmt_rate(v, pm.unit)} per client process; a matrix shows "
        "a slow node or link among 3 or more nodes"
    )


def figure(pm: PairMatrix, title: str, slowest: int = 3, flagged: list[int] = ()):
    """slowest: how many boxed pairs the title names; flagged: outlier
    nodes (marked '!' on the axes)."""
    n = len(pm.nodes)
    top = max([*pm.rates.values(), *(v for v, _ in pm.left_out.values())])
    scale, unit = units.rate_scale(pm.unit, top)
    m = np.full((n, n), np.nan)
    for (a, b), v in pm.rates.items():
        m[a, b] = m[b, a] = v / scale
    size = max(4.5, min(12, 1.0 + 0.55 * n))
    fig, ax = plt.subplots(figsize=(size + 1.2, size))
    cmap = plt.get_cmap("viridis").with_extremes(bad="#dddddd")
    im = ax.imshow(m, cmap=cmap, origin="upper", gid="pairs")
    fig.colorbar(im, ax=ax, shrink=0.8, label=f"client peak per process ({unit})")
    ticks = list(range(n))
    labels = [f"n{i}" + (" !" if i in flagged else "") for i in ticks]
    ax.set_xticks(ticks, labels, rotation=90 if n > 12 else 0)
    ax.set_yticks(ticks, labels)
    for i in flagged:
        for t in (ax.get_xticklabels()[i], ax.get_yticklabels()[i]):
            t.set_color(style.SERVER)
            t.set_fontweight("bold")
    ax.set_xlabel("node")
    ax.set_ylabel("node")
    if n <= 12:
        _write_values(ax, m)
    _left_out_and_beside(ax, pm, scale)
    through, notes = _slow_links(ax, pm)  # (the title's notes start with the slow links)
    slow = [(p, v) for p, v in outliers.slow_pairs(pm.rates, flagged, pm.classes) if p not in through]
    for (a, b), _rate in slow:
        for i, j in ((a, b), (b, a)):
            ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, ec=style.SERVER, lw=2.5, gid="slow-pair"))
    notes += _notes(pm)
    ax.set_title(
        f"{title}\n{_verdict(pm, slow, slowest, scale, unit, flagged)}" + ("\n" + "; ".join(notes) if notes else ""),
        fontsize=10,
    )
    fig.tight_layout()
    return fig


def _left_out_and_beside(ax, pm: PairMatrix, scale: float) -> None:
    """The cells of pairs the model may not use (hatched, their rate in
    grey) and of pairs measured beside others (a dot)."""
    n = len(pm.nodes)
    # Pairs the model may not use (rooftop.model.exclusion): grey, hatched,
    # their rate in grey; never boxed, never scored.
    for (a, b), (v, _) in pm.left_out.items():
        for i, j in ((a, b), (b, a)):
            ax.add_patch(
                Rectangle(
                    (j - 0.5, i - 0.5),
                    1,
                    1,
                    fill=True,
                    fc="#dddddd",
                    ec="grey",
                    hatch="//",
                    lw=0.5,
                    gid="left-out-pair",
                )
            )
            if n <= 12:
                ax.text(j, i, units.fmt_num(v / scale), ha="center", va="center", fontsize=7, color="dimgrey")
    # Pairs measured at the same time as other pairs (pair rounds): a dot.
    for a, b in pm.beside:
        for i, j in ((a, b), (b, a)):
            ax.plot(j + 0.32, i - 0.32, marker="o", ms=3, color="white", mec="black", mew=0.5, gid="beside-pair")


def _write_values(ax, m) -> None:
    """Each measured cell's value (m: scaled rates, NaN where none), white
    on the darker half."""
    vmid = np.nanmean(m)
    for a, b in zip(*np.nonzero(~np.isnan(m))):
        ax.text(
            b,
            a,
            units.fmt_num(m[a, b]),
            ha="center",
            va="center",
            fontsize=8,
            color="white" if m[a, b] < vmid else "black",
        )


def _notes(pm: PairMatrix) -> list[str]:
    """The title's last line: what the hatched, dotted and grey cells are,
    for those the figure has."""
    n = len(pm.nodes)
    notes = []
    if pm.left_out:
        notes.append(f"hatched: {len(pm.left_out)} pair(s) not used ({next(iter(pm.left_out.values()))[1][:70]})")
    if pm.beside:
        notes.append(f"dot: {len(pm.beside)} pair(s) measured beside other pairs")
    measured = len(pm.rates) + len(pm.left_out)
    if measured < n * (n - 1) // 2:
        notes.append(f"grey: not measured ({measured} of {n * (n - 1) // 2} pairs sampled)")
    return notes


def _slow_links(ax, pm: PairMatrix) -> tuple[set, list[str]]:
    """Pairs through a link named slow (rooftop.model.suspects): dashed
    boxes; (those pairs, the title's note naming the links)."""
    links = pm.named.links if pm.named else []
    through = {p for lk in links for p, _ in lk.pairs}
    for a, b in through:
        for i, j in ((a, b), (b, a)):
            ax.add_patch(
                Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, ec=style.SERVER, lw=1.5, ls="--", gid="slow-link-pair")
            )
    note = ["dashed: slow " + ", ".join(f"{lk.label} ({len(lk.pairs)} pairs)" for lk in links)] if links else []
    return through, note


def _verdict(pm: PairMatrix, slow, named: int, scale: float, unit: str, flagged=()) -> str:
    """The title's second line: outlier nodes with how many of their pairs
    are boxed, the other outlier pairs (slowest first), or that there are
    none and how close the pairs are."""
    parts = []
    for node in flagged:
        mine = [(p, v) for p, v in slow if node in p]
        total = sum(1 for p in pm.rates if node in p)
        if mine:
            (a, b), v = mine[0]
            parts.append(
                f"node n{node}: {len(mine)} of its {total} pairs (slowest n{a}–n{b} {units.fmt_num(v / scale)} {unit})"
            )
    rest = [(p, v) for p, v in slow if not set(p) & set(flagged)]
    if rest:
        more = f" and {len(rest) - named} more" if len(rest) > named else ""
        parts.append(
            ", ".join(f"n{a}–n{b} {units.fmt_num(v / scale)}" for (a, b), v in rest[:named]) + f" {unit}{more}"
        )
    if parts:
        return "outliers (boxed): " + "; ".join(parts)
    why = outliers.cannot_tell(pm.rates, pm.nodes, pm.classes) if len(pm.nodes) >= outliers.MIN_NODES else ""
    if why.startswith("cannot tell"):
        return why.split(":")[0] + f": {len(pm.rates)} usable pair(s)"
    if len(pm.rates) < outliers.MIN_NODES:
        return f"{len(pm.rates)} pair{'s' if len(pm.rates) != 1 else ''}: too few to tell an outlier"
    lo, hi = min(pm.rates.values()), max(pm.rates.values())
    return f"no outlier pair: every pair {units.fmt_span(lo, hi, unit, scale)}"
