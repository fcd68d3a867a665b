"""The server-process sweep (Carns et al., CUG 2025, Figures 9-10): one server node's
aggregate rate as its server processes grow, against linear scaling."""

from __future__ import annotations

import statistics

import matplotlib.pyplot as plt

from rooftop import model, stages, units
from rooftop.plots import style


def rows_of(samples: list[dict], metric: str) -> tuple[list[dict], str]:
    """(the ok rows the figure draws, where they come from): the sweep's,
    else the server ceiling's (one point)."""
    sweep = {st.name for st in stages.STAGES.values() if st.figure == "sweep"}
    rows = [s for s in samples if s["stage"] in sweep and s["metric"] == metric and s["status"] == "ok"]
    if rows:
        return rows, "sweep"
    server = stages.of_role("server").name
    rows = [s for s in samples if s["stage"] == server and s["metric"] == metric and s["status"] == "ok"]
    return rows, "server peak only (collect --sweep-servers for the full sweep)"


def why_not(samples: list[dict], metric: str) -> str:
    """Why the figure would carry no information ("" when it carries some):
    no row, or a single server-process count (one point, no scaling)."""
    rows, source = rows_of(samples, metric)
    procs = sorted({s["server_procs"] for s in rows})
    if not procs:
        return "no sweep and no server-peak sample of this metric"
    if len(procs) > 1:
        return ""
    agg = statistics.median(s["aggregate"] for s in rows if s["server_procs"] == procs[0])
    return (
        f"one point: {procs[0]} server process{'es' if procs[0] != 1 else ''} on the server node, "
        f"{units.fmt_rate(agg, rows[0]['unit'])} in all"
        + (
            ""
            if source == "sweep"
            else "; rooftop collect --sweep-servers on a node with several cores draws how it scales"
        )
    )


def figure(samples: list[dict], metric: str, title: str, nodes=None):
    """samples: the run's rows of the stage drawing this figure (Stage.figure
    "sweep"; ok ones are used). Falls back to the server ceiling's rows (one
    point) when no sweep was run. nodes: the run's nodes; samples the model
    may not use (rooftop.model.exclusion) are drawn marked, apart from the
    medians and the linear line."""
    rows, source = rows_of(samples, metric)
    if not rows:
        raise ValueError(f"no sweep or server-peak samples for {metric}")
    kept = model.usable(rows, nodes)
    left = [s for s in rows if not any(s is k for k in kept)]
    if left:
        source += f"; x: {len(left)} sample(s) not used ({model.exclusions(left, nodes)[model.row_key(left[0])]})"
    if not kept:
        return _marked_only(left, title, source)
    rows = kept
    by: dict[int, list[float]] = {}
    for s in rows:
        by.setdefault(s["server_procs"], []).append(s["aggregate"])
    procs = sorted(by)
    med = [statistics.median(by[p]) for p in procs]
    unit = rows[0]["unit"]
    scale, label = units.rate_scale(unit, max(max(v) for v in by.values()))
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    lo = [m - min(by[p]) for p, m in zip(procs, med)]
    hi = [max(by[p]) - m for p, m in zip(procs, med)]
    ax.errorbar(
        procs,
        [m / scale for m in med],
        yerr=[[v / scale for v in lo], [v / scale for v in hi]],
        marker="o",
        color=style.SERVER,
        capsize=4,
        lw=2,
        gid="sweep",
        label="server node aggregate (median, min–max)",
    )
    per1 = med[0] / procs[0]
    ax.plot(
        procs,
        [per1 * p / scale for p in procs],
        ls="--",
        color="grey",
        gid="linear",
        label=f"linear from {procs[0]} process{'es' if procs[0] != 1 else ''}",
    )
    for p, m in zip(procs, med):
        ax.annotate(
            f"{units.fmt_num(m / p / scale)}/proc",
            (p, m / scale),
            xytext=(0, 8),
            textcoords="offset points",
            ha="center",
            fontsize=8,
        )
    if left:
        ax.scatter(
            [s["server_procs"] for s in left],
            [s["aggregate"] / scale for s in left],
            marker="x",
            color="grey",
            zorder=4,
            gid="excluded",
            label="not used (see title)",
        )
    ax.set_xticks(procs)
    ax.set_xlabel("server processes on the server node")
    ax.set_ylabel(f"aggregate rate ({label})")
    ax.set_ylim(0, max(max(v) for v in by.values()) / scale * 1.25)
    ax.set_title(f"{title}\n{source}", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


def _marked_only(rows: list[dict], title: str, source: str):
    """Only samples the model may not use: drawn marked, no line."""
    scale, label = units.rate_scale(rows[0]["unit"], max(s["aggregate"] for s in rows))
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    ax.scatter(
        [s["server_procs"] for s in rows],
        [s["aggregate"] / scale for s in rows],
        marker="x",
        color="grey",
        gid="excluded",
        label="not used (see title)",
    )
    ax.set_xlabel("server processes on the server node")
    ax.set_ylabel(f"aggregate rate ({label})")
    ax.set_title(f"{title}\n{source}", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig
