"""Rate, CPU and power over time per progress mode (Carns et al., CUG 2025, Figure 6):
one panel per mode on a shared time axis; the client's rate per interval
(left axis, 0 in the gaps), the server's CPU in cores (right axis) and,
where RAPL is readable, package watts (a third axis); bursts shaded; a bar along the top while a neighbour job
ran. Absent
RAPL the figure says so in its title and draws CPU only."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt

from rooftop import units
from rooftop.plots import style
from rooftop.plots.save import save

RATE, CPU, WATTS = style.CLIENT, style.SERVER, "#2ca02c"


def _rate_points(line, interval: float) -> list[tuple[float, float]]:
    """The client's rate per window, and 0 at the server's interval ends outside them."""
    pts = list(line.series("client", "rate"))
    pts += [(t, 0.0) for t, _ in line.series("server", "cpu_user") if line.unmeasured(t - interval, t)]
    return sorted(pts)


def _panel(ax, line, interval: float, scale: float, rate_label: str, summary: dict) -> None:
    for start, end in line.bursts:  # light: the client starting; darker: measuring
        ax.axvspan(start, end if end is not None else start + interval, color="#000", alpha=0.04, lw=0)
    for start, end in line.measured:
        ax.axvspan(start, end, color="#000", alpha=0.06, lw=0)
    rate = _rate_points(line, interval)
    ax.plot(
        [t for t, _ in rate],
        [v / scale for _, v in rate],
        color=RATE,
        lw=1.8,
        marker=".",
        gid="rate",
        label=f"rate ({rate_label})",
    )
    ax.set_ylabel(rate_label, color=RATE)
    ax.set_ylim(bottom=0)
    cpu_ax = ax.twinx()
    cpu = line.cpu()
    cpu_ax.plot([t for t, _ in cpu], [v for _, v in cpu], color=CPU, lw=1.4, gid="cpu", label="server CPU (cores)")
    cpu_ax.set_ylabel("server CPU (cores)", color=CPU)
    cpu_ax.set_ylim(0, max([1.05] + [v * 1.05 for _, v in cpu]))
    watts = line.series("power", "power")
    if watts:
        w_ax = ax.twinx()
        w_ax.spines["right"].set_position(("axes", 1.12))
        w_ax.plot(
            [t for t, _ in watts], [v for _, v in watts], color=WATTS, lw=1.4, gid="watts", label="package power (W)"
        )
        w_ax.set_ylabel("package power (W)", color=WATTS)
        w_ax.set_ylim(bottom=0)
    ran = line.series("neighbour", "wall")
    if ran:  # when the neighbour job ran beside the server (a bar along the top)
        end, wall = ran[-1]
        ax.plot(
            [max(0.0, end - wall), end],
            [0.97, 0.97],
            transform=ax.get_xaxis_transform(),
            color="#555",
            lw=3,
            solid_capstyle="butt",
            gid="neighbour",
            label="neighbour job running",
        )
    idle = summary.get("idle_cpu")
    wanted = summary.get("idle_cpu_wanted")
    ax.set_title(
        f"{line.mode}: burst rate {units.fmt_rate(summary.get('burst_rate'), 'ops/s')}, idle CPU "
        + ("-" if idle is None else f"{idle:.3f}")
        + " cores"
        + ("" if wanted is None else f" (wanted {wanted:.3f})"),
        fontsize=10,
        loc="left",
    )


def figure(res: dict):
    """res: rooftop.bursts.run.results(); one panel per mode, in the order run."""
    p, lines = res["params"], res["lines"]
    modes = [m for m in p["progress"] if m in lines]
    if not modes:
        raise ValueError("no mode of this bursts run has a time line")
    peak = max([v for m in modes for _, v in lines[m].series("client", "rate")] + [1.0])
    scale, label = units.rate_scale("ops/s", peak)
    fig, axes = plt.subplots(len(modes), 1, figsize=(9, 2.6 * len(modes) + 0.8), sharex=True, squeeze=False)
    by_mode = {r["mode"]: r for r in res["rows"]}
    for ax, m in zip(axes[:, 0], modes):
        _panel(ax, lines[m], p["interval"], scale, label, by_mode.get(m, {}))
    seen: dict[str, object] = {}
    for a in fig.axes:
        for l in a.lines:
            seen.setdefault(l.get_label(), l)
    fig.legend(
        list(seen.values()),
        list(seen),
        loc="lower center",
        ncol=len(seen),
        fontsize=9,
        frameon=False,
        bbox_to_anchor=(0.5, -0.01),
    )
    axes[-1, 0].set_xlabel("time since the server was ready (s); shaded: bursts (lighter: the client starting)")
    power = "" if not res["power_note"] else "\npower not measured here (no readable RAPL): CPU only"
    fig.suptitle(
        f"{p['metric']} bursts, {p['clients']} client(s), {p['on']:g} s on / {p['off']:g} s off, "
        f"{p['interval']:g} s intervals — run {res['run'].id}{power}",
        fontsize=11,
    )
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig


def plot(res: dict, out_dir: Path) -> list[Path]:
    """Writes out_dir/bursts.png and .svg; returns the paths."""
    return save(figure(res), out_dir, "bursts")
