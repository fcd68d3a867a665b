"""The plan of a campaign: its placements (server processes started once,
then every measurement made against them, each its windows), shared stages
measured once, placements split by server group, and the client rounds
left of a placement (a measurement's windows not yet stored)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from rooftop import stages
from rooftop.campaign.groups import server_groups
from rooftop.stages import Measurement, Placement, measurement_key
from rooftop.stages.pairs.rounds import round_robin


def _where(placement: Placement, m: Measurement) -> tuple | None:
    """What a measurement runs, as far as its windows go: (metric, server
    nodes, servers per node, client nodes, clients per node, duration,
    warmup); None for pair rounds of several pairs (no other stage runs them)."""
    if m.pairs is not None and len(m.pairs) != 1:
        return None
    return (
        m.metric,
        tuple(placement.server_nodes),
        placement.servers_per_node,
        tuple(m.client_nodes),
        m.clients_per_node,
        m.duration,
        m.warmup,
    )


def _minus(windows: range, both: range) -> list[range]:
    """windows but both (a range inside it): what is before it, and after."""
    return [r for r in (range(windows.start, both.start), range(both.stop, windows.stop)) if r]


def measure_once(placements: list[Placement]) -> list[Placement]:
    """Shared stages (Stage.shared) that would run the identical placement
    (2 nodes: one server and one client process for all three) are measured
    once: the first planned measurement stands for the others in the windows
    both measure (Measurement.also, named in its keys); the others keep
    only the windows it does not measure (none: dropped), and so do
    placements left empty. A measurement that stands for another in only
    some of its windows is split there, each part its own client round
    (collect.pair_windows other than collect.windows)."""
    first: dict[tuple, list[Measurement]] = {}  # where -> the measurements kept, in window order
    home: dict[int, list[Measurement]] = {}  # id(kept) -> the measurements of its placement

    def split(lst: list[Measurement], kept: Measurement, parts: list[Measurement]) -> None:
        """kept, in lst, becomes kept and parts, in window order."""
        at = next(i for i, x in enumerate(lst) if x is kept)
        lst[at : at + 1] = sorted([kept, *parts], key=lambda x: x.windows.start)

    for pl in placements:
        keep: list[Measurement] = []
        for m in pl.measurements:
            where = _where(pl, m) if stages.get(m.stage).shared else None
            left, same = [m.windows], first.get(where, []) if where is not None else []
            for kept in list(same):  # (the parts split off below share no window with m)
                for piece in list(left):
                    both = range(max(piece.start, kept.windows.start), min(piece.stop, kept.windows.stop))
                    if not both:
                        continue
                    left.remove(piece)
                    left += _minus(piece, both)
                    if both != kept.windows:  # it stands for m in some of its windows only
                        parts = [replace(kept, windows=r) for r in _minus(kept.windows, both)]
                        kept.windows = both
                        split(home[id(kept)], kept, parts)
                        split(same, kept, parts)
                        home.update((id(p), home[id(kept)]) for p in parts)
                    kept.also += (m.stage,)
                    kept.key = measurement_key(
                        kept.label, m.metric, pl.server_nodes, pl.servers_per_node, m.client_nodes, m.clients_per_node
                    )
            for piece in sorted(left, key=lambda r: r.start):
                part = m if piece == m.windows else replace(m, windows=piece)
                keep.append(part)
                home[id(part)] = keep
                if where is not None:
                    first.setdefault(where, []).append(part)
        pl.measurements = keep
    return [pl for pl in placements if pl.measurements]


def plan(cfg: dict, phase: str) -> list[Placement]:
    """Every placement of one command's stages, in table order."""
    return [pl for st in stages.of_phase(phase) if st.enabled(cfg) for pl in st.plan(cfg)]


def plan_collect(cfg: dict) -> list[Placement]:
    return split_by_servers(cfg, measure_once(plan(cfg, "collect")))


def plan_validate(cfg: dict) -> list[Placement]:
    return split_by_servers(cfg, plan(cfg, "validate"))


def split_by_servers(cfg: dict, placements: list[Placement]) -> list[Placement]:
    """A placement whose metrics need servers started differently (two
    storage directories, two I/O modes) becomes one placement per server
    group (tagged with its metrics), each making its metrics' measurements."""
    out = []
    for pl in placements:
        groups = server_groups(cfg, pl.metrics)
        if len(groups) == 1:
            out.append(pl)
            continue
        for g in groups:
            out.append(
                Placement(
                    pl.server_nodes, pl.servers_per_node, [m for m in pl.measurements if m.metric in g], tag="+".join(g)
                )
            )
    return out


@dataclass
class ClientRound:
    """One set of client processes measuring consecutive windows (engine
    --windows) after one warmup: the windows of one measurement still to
    measure, one stored sample per window (and pair). Engine window j is
    the measurement's window windows[j]."""

    measurement: Measurement
    #: The measurement's windows it measures, in order (default: all of them).
    windows: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.windows:
            self.windows = list(self.measurement.windows)

    @property
    def folder(self) -> str:
        """Its folder under RESULTS/<run>/raw/: the measurement's key."""
        return self.measurement.folder

    def row_keys(self) -> list[list[str]]:
        """Window by window, the keys of its rows (round.json; rooftop doctor)."""
        return [self.measurement.row_keys(w) for w in self.windows]

    def keys(self) -> list[str]:
        """The keys of its rows."""
        return [k for w in self.windows for k in self.measurement.row_keys(w)]


def _pair_schedule(cfg: dict, placements: list[Placement]) -> list[str]:
    """The dry run's account of pair rounds: how many, and the pairs kept
    apart because their nodes share cores (stages.pairs.rounds.pair_rounds)."""
    rounds = [m.pairs for pl in placements for m in pl.measurements[:1] if m.pairs]
    if not rounds or cfg["collect"]["pairs"] != "rounds":  # (sample: rooftop.campaign.sampling says its own)
        return []

    alone = [r[0] for r in rounds if len(r) == 1]
    planned = len(round_robin(len(cfg["nodes"])))
    line = f"# pair rounds: {len(rounds)} round(s) of disjoint pairs (a round-robin needs {planned})"
    if len(rounds) > planned:
        line += (
            "; pairs whose nodes share cores never run at once: "
            f"{len(alone)} pair(s) run alone ("
            + ", ".join(f"n{a}-n{b}" for a, b in alone[:6])
            + (", ..." if len(alone) > 6 else "")
            + ")"
        )
    return [line]


def client_rounds(measurements: list[Measurement], done: set[str] | frozenset = frozenset()) -> list[ClientRound]:
    """A client round per measurement with something left: its windows
    whose rows are not all in done (stored already), in order."""
    out = []
    for m in measurements:
        left = [w for w in m.windows if not all(k in done for k in m.row_keys(w))]
        if left:
            out.append(ClientRound(m, left))
    return out
