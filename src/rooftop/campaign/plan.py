"""The plan of a campaign: its placements (server processes started once,
then every sample that uses them), shared stages measured once, placements
split by server group, and the client rounds of a placement."""

from __future__ import annotations

from dataclasses import dataclass

from rooftop import stages
from rooftop.campaign.groups import server_groups
from rooftop.stages import Placement, SampleSpec, sample_key
from rooftop.stages.pairs.rounds import round_robin


def _where(placement: Placement, spec: SampleSpec) -> tuple | None:
    """What a sample runs, as far as the measurement goes: (metric, index,
    server nodes, servers per node, client nodes, clients per node, duration,
    warmup); None for pair rounds of several pairs (no other stage runs them)."""
    if spec.pairs is not None and len(spec.pairs) != 1:
        return None
    return (
        spec.metric,
        spec.index,
        tuple(placement.server_nodes),
        placement.servers_per_node,
        tuple(spec.client_nodes),
        spec.clients_per_node,
        spec.duration,
        spec.warmup,
    )


def measure_once(placements: list[Placement]) -> list[Placement]:
    """Shared stages (Stage.shared) that would run the identical placement
    (2 nodes: one server and one client process for all three) are measured
    once: the first planned spec stands for the others (SampleSpec.also,
    named in its keys), the others are dropped, and so are placements left
    empty."""
    first: dict[tuple, SampleSpec] = {}
    for pl in placements:
        keep = []
        for spec in pl.samples:
            where = _where(pl, spec) if stages.get(spec.stage).shared else None
            if where is None or where not in first:
                if where is not None:
                    first[where] = spec
                keep.append(spec)
                continue
            kept = first[where]
            kept.also += (spec.stage,)
            _, i, snodes, spn, cnodes, cpn, _, _ = where
            kept.key = sample_key(kept.label, kept.metric, list(snodes), spn, list(cnodes), cpn, i)
        pl.samples = keep
    return [pl for pl in placements if pl.samples]


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
    group (tagged with its metrics), each measuring its metrics' samples."""
    out = []
    for pl in placements:
        groups = server_groups(cfg, pl.metrics)
        if len(groups) == 1:
            out.append(pl)
            continue
        for g in groups:
            out.append(
                Placement(
                    pl.server_nodes, pl.servers_per_node, [s for s in pl.samples if s.metric in g], tag="+".join(g)
                )
            )
    return out


@dataclass
class ClientRound:
    """One set of client processes measuring consecutive windows (engine
    --windows) after one warmup: one window per spec, one stored sample per
    window (and pair)."""

    specs: list[SampleSpec]

    @property
    def first(self) -> SampleSpec:
        return self.specs[0]

    @property
    def folder(self) -> str:
        """Its folder under RESULTS/<run>/raw/: the measurement's key."""
        return self.first.key.rsplit("/", 1)[0].replace("/", "_")

    def row_keys(self) -> list[list[str]]:
        """Window by window, the keys of its rows (round.json; rooftop doctor)."""
        return [sp.row_keys() for sp in self.specs]


def _pair_schedule(cfg: dict, placements: list[Placement]) -> list[str]:
    """The dry run's account of pair rounds: how many, and the pairs kept
    apart because their nodes share cores (stages.pairs.rounds.pair_rounds)."""
    rounds = [sp.pairs for pl in placements for sp in pl.samples[:1] if sp.pairs]
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


def client_rounds(specs: list[SampleSpec]) -> list[ClientRound]:
    """Consecutive samples of one measurement share a client round."""
    out: list[ClientRound] = []
    same = lambda sp: (sp.stage, sp.metric, tuple(sp.client_nodes), sp.clients_per_node, sp.duration, sp.warmup)
    for sp in specs:
        if out and same(out[-1].first) == same(sp):
            out[-1].specs.append(sp)
        else:
            out.append(ClientRound([sp]))
    return out
