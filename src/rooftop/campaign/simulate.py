"""The search's power, stated: a simulated `collect --pairs sample` on a
platform described in a few numbers, no engine, no cluster.

A platform (Platform) is a topology (nodes on switches, switches in
groups: rooftop.topology.Topology), the rate of a node, of a switch's
uplink and of a group's link (one pair at a time uses a link: schedule()
never puts two pairs of a round on one), and the noise of each pair class
(log-normal: a pair's log rate spreads by sigma around its class's), the
default rooftop plan's (PLAN_SPREAD) or fitted to a stored run
(fit_noise). A pair's rate is the least of what it crosses -- its two
nodes, and where it leaves its switch both switches' uplinks, where it
leaves its group both groups' links -- times its noise; a planted slow
node or link multiplies its own rate by its factor.

run() then does what a campaign does, with the campaign's own code: the
first batch (rooftop.stages.pairs.sample.first_draw), each batch's pairs
"measured" here, the usable rates and the next batch as
rooftop.campaign.sampling decides them after a measured batch
(usable_rates, next_batch, record), until the sampling stops; then the
naming (name(): the one call of the naming, rooftop.model.suspects). Each
batch is scheduled as the campaign schedules it (sample.schedule) and the
pairs and rounds priced by the plan's estimator (rooftop.campaign.estimate)
for the planned time.

power() repeats that over seeded runs, each with one slow node planted
(a random node at the factor) and, where the topology has groups, one with
a slow group link: the share of planted items named (the power, with its
Wilson interval) and the mean count of items named that were not planted
(false names per run). Deterministic for a seed. `rooftop plan --pairs
sample` quotes it (quote()); docs/topology.md has the table for 17, 128,
1,000 and 10,000 nodes (scripts/power_table.py).
"""

from __future__ import annotations

import functools
import math
import random
from dataclasses import dataclass, field

from rooftop import topology
from rooftop.campaign import sampling
from rooftop.campaign.costs import launch_mode
from rooftop.campaign.estimate import fmt_duration, pair_work
from rooftop.model import suspects
from rooftop.stages.pairs.base import PairsExpected, bulk
from rooftop.stages.pairs.sample import PLAN_SPREAD, first_draw, schedule
from rooftop.topology.base import CLASSES, Topology
from rooftop.units import fmt_pct

Pair = tuple[int, int]
#: A named or planted item: ("node", "3"), ("switch", "g0s1") (its uplink), ("group", "g2") (its link).
Item = tuple[str, str]

#: The factors `rooftop plan` quotes the power for: a node at 0.7 x, a group link at 0.5 x.
NODE_FACTOR = 0.7
LINK_FACTOR = 0.5
#: Runs of each planted case at most; fewer on many nodes (runs_for).
RUNS = 100
#: `rooftop plan` simulates PLAN_NODE_RUNS / nodes runs of each case (runs_for), at least PLAN_RUNS_MIN:
#: seconds, not minutes, at 10,000 nodes.
PLAN_NODE_RUNS = 20_000
PLAN_RUNS_MIN = 5
#: `rooftop plan` simulates on at most this many nodes (beyond, a run takes tens of seconds: it says so).
PLAN_MAX_NODES = 20_000


@dataclass
class Platform:
    """Nodes in a topology, the rate of a node, a switch uplink and a group
    link (any unit: only their ratios matter), and the noise of each pair
    class (sigma of its pairs' log rates; a class not given: PLAN_SPREAD)."""

    topology: Topology
    node_rate: float = 1.0
    uplink_rate: float = 1.0
    group_rate: float = 1.0
    noise: dict[str, float] = field(default_factory=dict)

    @classmethod
    def even(cls, nodes: int, groups: int = 1, switches: int = 1, **kw) -> Platform:
        """nodes in `groups` even groups of `switches` switches each (as
        `rooftop plan --groups` plans them)."""
        return cls(Topology.even(nodes, groups, switches), **kw)

    def sigma(self, klass: str) -> float:
        """The class's noise; a class not given: the one-class noise ("all",
        a run without a topology), else PLAN_SPREAD."""
        return self.noise.get(klass, self.noise.get("all", PLAN_SPREAD))

    def rate(self, a: int, b: int, slow: dict[Item, float]) -> float:
        """The pair's rate without noise: the least of what it crosses,
        each planted item at its factor."""
        t = self.topology
        f = lambda kind, name: slow.get((kind, name), 1.0) if slow else 1.0
        r = self.node_rate * min(f("node", str(a)), f("node", str(b)))
        k = t.klass(a, b)
        if k in ("group", "global"):
            r = min(r, self.uplink_rate * min(f("switch", t.switch[a]), f("switch", t.switch[b])))
        if k == "global":
            r = min(r, self.group_rate * min(f("group", t.group[a]), f("group", t.group[b])))
        return r


@dataclass
class Outcome:
    """One simulated campaign: what was planted and named, the pairs drawn
    in batches, their rounds, and its planned time (None: no config to
    price it)."""

    planted: set[Item]
    named: set[Item]
    pairs: int
    batches: int
    rounds: int
    stop: str
    planned_s: float | None = None

    @property
    def found(self) -> set[Item]:
        return self.planted & self.named

    @property
    def false(self) -> set[Item]:
        return self.named - self.planted


def name(rates: dict[Pair, float], topo: Topology) -> set[Item]:
    """What the naming names from one metric's pair rates: THE call of the
    naming (rooftop.model.suspects.name: slow links as links, slow nodes as
    nodes), the one the run's results make."""
    named = suspects.name(rates, topo)
    return {("node", str(n)) for n in named.nodes} | {(lk.kind, lk.name) for lk in named.links}


def run(
    platform: Platform, cfg: dict, slow: dict[Item, float] | None = None, seed: int | str = 0, usable=None
) -> Outcome:
    """One campaign on the platform (cfg: a resolved config whose collect
    keys the sampling reads; its nodes are the platform's), `slow` planted,
    the noise drawn from `seed`. usable: the pairs the exclusion rule lets
    be drawn, as the campaign passes them (rooftop.campaign.sampling.usable
    of an emulated cluster's config, whose nodes share cores); None: every
    pair (nodes that share no core: the same draw)."""
    topo, slow = platform.topology, slow or {}
    rng = random.Random(f"rooftop simulate {seed}")
    cfg = {**cfg, "pair_sample": None}
    first = first_draw(topo, cfg["collect"]["sample_min_pairs"], usable)
    cfg["pair_sample"] = {"pairs": [list(p) for p in first], "batches": [len(first)], "stop": ""}
    measured: dict[Pair, float] = {}
    batch: list[Pair] = first
    rounds = 0
    while True:
        for a, b in batch:
            mu = platform.rate(a, b, slow)
            measured[(a, b)] = mu * math.exp(rng.gauss(0.0, platform.sigma(topo.klass(a, b))))
        rounds += _rounds(batch, topo, batch is first and usable is None, cfg["collect"]["sample_min_pairs"])
        rates, count, found = sampling.usable_rates({"sim": measured}, topo)
        adds, why = sampling.next_batch(cfg, topo, rates, count, found, usable)
        sampling.record(cfg, adds, why)
        if not adds:
            break
        batch = adds
    rec = cfg["pair_sample"]
    return Outcome(
        set(slow),
        name(measured, topo),
        len(rec["pairs"]),
        len(rec["batches"]),
        rounds,
        rec["stop"],
        planned_s(cfg, len(rec["pairs"]), rounds),
    )


def _rounds(batch: list[Pair], topo: Topology, first: bool, k: int) -> int:
    """Rounds of a batch as the campaign schedules it (the first batch, the
    same in every run on a topology, scheduled once)."""
    if first:
        return _first_rounds(topo.source, tuple(topo.switch), tuple(topo.group), k)
    return len(schedule(batch, topo))


@functools.lru_cache(maxsize=2)
def _first_rounds(source: str, switch: tuple[str, ...], group: tuple[str, ...], k: int) -> int:
    topo = Topology(source, list(switch), list(group))
    return len(schedule(first_draw(topo, k), topo))


def planned_s(cfg: dict, pairs: int, rounds: int) -> float | None:
    """The client ceiling's planned time for these pairs in these rounds, as
    `rooftop plan` prices them (None: cfg has no launcher to price with)."""
    if "metrics" not in cfg or "engine" not in cfg:
        return None
    x = PairsExpected(pairs=pairs, rounds=rounds, placements=rounds, server_nodes=pairs)
    return pair_work(cfg, x).total_s(launch_mode(cfg))


def wilson(found: int, runs: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a share found/runs (95 % by default)."""
    if runs == 0:
        return 0.0, 1.0
    p = found / runs
    d = 1 + z * z / runs
    mid = (p + z * z / (2 * runs)) / d
    half = z * math.sqrt(p * (1 - p) / runs + z * z / (4 * runs * runs)) / d
    return max(0.0, mid - half), min(1.0, mid + half)


@dataclass
class Power:
    """power(): per planted kind ("node", "group link") its factor, runs
    and how many found it; false names over every run; the mean pairs,
    batches and planned time of a run."""

    factors: dict[str, float]
    runs: dict[str, int]
    found: dict[str, int]
    false_names: int
    #: Per planted case ("": nothing planted), the false names of its runs.
    false_by: dict[str, int]
    total_runs: int
    pairs: float
    batches: float
    planned_s: float | None
    noise: dict[str, float]
    #: The platform's rates, as line() says them.
    rates: str = ""

    def power(self, kind: str) -> float:
        return self.found[kind] / self.runs[kind] if self.runs.get(kind) else 0.0

    def interval(self, kind: str) -> tuple[float, float]:
        return wilson(self.found.get(kind, 0), self.runs.get(kind, 0))

    @property
    def false_per_run(self) -> float:
        return self.false_names / self.total_runs if self.total_runs else 0.0

    def line(self) -> str:
        """'finds a node at 0.7 x with 97 % power (95 % interval 92 % to 99 %,
        60 runs); ...; expected false names per run: 0.02 (simulated: ...)'."""
        parts = []
        for kind, f in self.factors.items():
            lo, hi = self.interval(kind)
            parts.append(
                f"finds a {kind} at {f:g} x with {fmt_pct(self.power(kind))} power (95 % interval "
                f"{fmt_pct(lo)} to {fmt_pct(hi)}, {self.runs[kind]} runs)"
            )
        out = "; ".join(parts) + f"; expected false names per run: {self.false_per_run:.2f}"
        noise = ", ".join(f"{CLASSES[c]} {fmt_pct(s, 1)}" for c, s in self.noise.items())
        out += f" (simulated: a run draws {self.pairs:,.0f} pairs in {self.batches:.2g} batch(es)"
        if self.planned_s is not None:
            out += f", planned at most {fmt_duration(self.planned_s)}"
        return out + f"; noise of log pair rates {noise}; {self.rates})"

    def as_dict(self) -> dict:
        return {
            "found": {
                k: {
                    "factor": f,
                    "runs": self.runs[k],
                    "power": round(self.power(k), 4),
                    "interval": [round(v, 4) for v in self.interval(k)],
                }
                for k, f in self.factors.items()
            },
            "false_names_per_run": round(self.false_per_run, 4),
            "false_names_per_run_by_case": {
                k or "none": round(v / (self.runs.get(k) or self.total_runs), 4) for k, v in self.false_by.items()
            },
            "runs": self.total_runs,
            "pairs": round(self.pairs, 1),
            "batches": round(self.batches, 2),
            "planned_s": None if self.planned_s is None else round(self.planned_s, 1),
            "noise": self.noise,
        }


def power(
    platform: Platform,
    cfg: dict,
    runs: int = RUNS,
    node: float | None = NODE_FACTOR,
    link: float | None = LINK_FACTOR,
    seed: int = 0,
    usable=None,
) -> Power:
    """Over `runs` seeded runs of each planted case -- one node at `node`
    x (None: no such case), one group link at `link` x where the topology
    has groups (None: none) -- the share of planted items named and the
    false names per run; with neither planted, `runs` quiet runs (false
    names only). usable: as run() takes it."""
    topo = platform.topology
    groups = sorted(set(topo.group)) if topo.source != "none" else []
    cases: list[tuple[str, float | None]] = []
    if node is not None:
        cases.append(("node", node))
    if link is not None and len(groups) > 1:
        cases.append(("group link", link))
    if not cases:
        cases = [("", None)]
    out = Power({k: f for k, f in cases if f is not None}, {}, {}, 0, {k: 0 for k, _ in cases}, 0, 0.0, 0.0, None, {})
    times: list[float] = []
    with bulk():
        for kind, f in cases:
            for i in range(runs):
                pick = random.Random(f"rooftop plant {seed} {kind} {i}")
                slow: dict[Item, float] = {}
                if kind == "node" and f is not None:
                    slow[("node", str(pick.randrange(topo.n)))] = f
                elif kind and f is not None:
                    slow[("group", pick.choice(groups))] = f
                o = run(platform, cfg, slow, f"{seed} {kind} {i}", usable)
                if kind:
                    out.runs[kind] = out.runs.get(kind, 0) + 1
                    out.found[kind] = out.found.get(kind, 0) + len(o.found)
                out.false_names += len(o.false)
                out.false_by[kind] += len(o.false)
                out.total_runs += 1
                out.pairs += o.pairs
                out.batches += o.batches
                if o.planned_s is not None:
                    times.append(o.planned_s)
    out.pairs /= out.total_runs
    out.batches /= out.total_runs
    out.planned_s = max(times) if times else None
    out.noise = {c: platform.sigma(c) for c in topo.sizes()}
    p = platform
    same = p.node_rate == p.uplink_rate == p.group_rate
    out.rates = (
        "every link as fast as a node"
        if same
        else f"rates: node {p.node_rate:g}, switch uplink {p.uplink_rate:g}, group link {p.group_rate:g}"
    )
    return out


def runs_for(nodes: int, budget: int = PLAN_NODE_RUNS) -> int:
    """Runs of each planted case `rooftop plan` simulates on this many
    nodes (a run's time grows with the nodes): budget / nodes, at least
    PLAN_RUNS_MIN, at most RUNS. Fewer runs, a wider interval: the quote
    states both."""
    return max(PLAN_RUNS_MIN, min(RUNS, budget // max(1, nodes)))


def quote(cfg: dict, topo: Topology | None, noise: dict[str, float] | None = None, usable=None) -> Power:
    """What `rooftop plan --pairs sample` quotes: power() on the plan's
    own nodes and topology (None: one class), every link as fast as a
    node, the noise given (a stored run's: fit_noise) or PLAN_SPREAD, as
    many runs as keep it to seconds (runs_for). usable: as run() takes it."""
    topo = topo or Topology.flat(len(cfg["nodes"]))
    return power(Platform(topo, noise=dict(noise or {})), cfg, runs_for(topo.n), usable=usable)


def record_power(cfg: dict, store, run_id: str) -> None:
    """When a run's --pairs sample search has ended: how likely that search
    was to miss a slow node or link, per metric -- power() on the run's own
    nodes, topology and usable pairs at the run's own noise (fit_noise),
    as many runs as `rooftop plan` simulates (runs_for) -- recorded once in
    its config (pair_sample "power": metric -> Power.as_dict() and its
    line, or a note why not), which the model, the report and the exports
    read. A metric without usable pairs has no noise to simulate at: left
    out. Recorded already (a resumed run): nothing to do."""
    rec = cfg["pair_sample"]
    if "power" in rec:
        return
    topo = topology.of_config(cfg) or Topology.flat(len(cfg["nodes"]))
    out: dict[str, dict] = {}
    for metric in cfg["metrics"]:
        noise = fit_noise(store, run_id, metric)
        if not noise:
            continue
        if topo.n > PLAN_MAX_NODES:
            out[metric] = {
                "note": f"not simulated on more than {PLAN_MAX_NODES:,} nodes (a simulated run takes tens of seconds there)"
            }
            continue
        p = quote(cfg, topo, noise, sampling.usable(cfg))
        out[metric] = {**p.as_dict(), "line": p.line()}
    rec["power"] = out
    store.update_config(run_id, cfg)


def fit_noise(store, run_id: str, metric: str | None = None) -> dict[str, float]:
    """The noise of a stored run: per pair class of its recorded topology
    (one class, "all", without one), the standard deviation of its usable
    pairs' log rates, the one exclusion rule applied and the pairs of
    nodes flagged slow left out (sampling.measured), in `metric` (default:
    the run's first). Classes of fewer than 3 pairs are left out."""
    run = store.get_run(run_id)
    cfg = run.config
    metric = metric or cfg["metrics"][0]
    rates, _, _ = sampling.measured({**cfg, "metrics": [metric]}, store.samples(run_id))
    topo = topology.of_config(cfg)
    by: dict[str, list[float]] = {}
    for (a, b), r in rates[metric].items():
        if r > 0:
            by.setdefault(topo.klass(a, b) if topo else "all", []).append(math.log(r))
    out = {}
    for klass, logs in by.items():
        if len(logs) >= 3:
            m = sum(logs) / len(logs)
            out[klass] = math.sqrt(sum((v - m) ** 2 for v in logs) / (len(logs) - 1))
    return out


__all__ = ["Outcome", "Platform", "Power", "fit_noise", "name", "power", "quote", "record_power", "run", "wilson"]
