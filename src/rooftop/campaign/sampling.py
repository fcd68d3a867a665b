"""collect --pairs sample as a campaign runs it (the strategy:
rooftop.stages.pairs.sample). Before the run exists, prepare() finds the
topology (rooftop.topology.discover: Slurm's tree, a file, the emulated
cluster's groups, or a latency probe) and draws the first batch, both
recorded in the run's config ("topology", "pair_sample"), so every later
reading of the run -- the plan, resume, doctor, the model -- sees the same
pairs and classes. After each measured batch, extend() reads the run's
client peak rows through the one exclusion rule (rooftop.model.exclude),
leaves out pairs of nodes and links named slow (rooftop.model.suspects:
their pairs are not the class's ceiling), and asks the strategy for more; the new batch is recorded in the
run's config before it is measured. A batch that leaves a suspect (a node
or link named slow, or a link that cannot be told from its nodes) is
followed by a confirmation batch before anything else: fresh partners
chosen to separate the suspect's hypotheses (the node or its switch, one
link or another), recorded as "confirm" beside the batches; the model then
says which suspects the follow-up confirmed."""

from __future__ import annotations

from rooftop import model, topology
from rooftop.keys import ConfigError
from rooftop.model import suspects
from rooftop.results import pair_matrix
from rooftop.stages.pairs import sample
from rooftop.stages.pairs.base import shares_cores
from rooftop.units import fmt_pct

#: Batches at most (a guard: each batch at least one pair, a budget or the classes end them first).
MAX_BATCHES = 100


def adaptive(cfg: dict) -> bool:
    """The run samples its pairs as it goes (collect.pairs = sample, client peak on)."""
    return cfg["collect"]["pairs"] == "sample" and bool(cfg["collect"]["client_peak"])


def usable(cfg: dict):
    """pair -> whether the exclusion rule would let a lone pair's samples
    feed the ceilings (one server process, one client process): a pair the
    rule leaves out (two nodes sharing one core) is never drawn. Under
    collect.pairs_share_cores (pairs.base.shares_cores) the rule decides
    from what the pair's cores did while it ran: every pair may be drawn."""
    nodes = cfg["nodes"]

    def ok(a: int, b: int) -> bool:
        if shares_cores(cfg):
            return True
        one = {"server_nodes": [a], "client_nodes": [b], "server_procs": 1, "client_procs": 1, "status": "ok"}
        return not model.core_sharing(one, nodes)

    return ok


def prepare(cfg: dict, launcher=None) -> list[str]:
    """Finds the topology and draws the first batch into cfg (launcher:
    the probe's; None: a dry run, which starts nothing). Returns what to
    say (the dry run prints it)."""
    if not adaptive(cfg) or cfg.get("pair_sample"):
        return []
    topo = topology.discover(cfg, launcher)
    cfg["topology"] = topo.to_dict()
    c = cfg["collect"]
    first = sample.first_draw(topo, c["sample_min_pairs"], usable(cfg))
    alone = sorted(set(range(topo.n)) - {x for p in first for x in p})
    if alone and topo.n > 1:  # the rule leaves out every pair of these nodes: drawn all the same, and said
        first = sample.first_draw(topo, c["sample_min_pairs"])
    if c["sample_budget"] is not None and c["sample_budget"] < len(first):
        raise ConfigError(
            f"collect.sample_budget: {c['sample_budget']} pairs cannot put each of the {topo.n} nodes into "
            f"{c['sample_min_pairs']} pairs (collect.sample_min_pairs) across {len(topo.sizes())} class(es): "
            f"{len(first)} are needed"
        )
    cfg["pair_sample"] = {"pairs": [list(p) for p in first], "batches": [len(first)], "stop": ""}
    said = [
        f"every pair of node(s) {', '.join(f'n{i}' for i in alone)} shares cores (the exclusion rule leaves "
        f"them out of the ceilings): pairs drawn without that rule, for the model to say so"
    ]
    return describe(cfg) + (said if alone and topo.n > 1 else [])


def describe(cfg: dict) -> list[str]:
    """The topology and the pairs drawn so far, per class."""
    topo = topology.of_config(cfg)
    rec = cfg.get("pair_sample")
    if topo is None or not rec:
        return []
    sizes = topo.sizes()
    drawn = dict.fromkeys(sizes, 0)
    for a, b in rec["pairs"]:
        drawn[topo.klass(a, b)] += 1
    c = cfg["collect"]
    return [
        f"topology: {topo.describe()}",
        f"pair sample: {len(rec['pairs'])} of {topo.n * (topo.n - 1) // 2} pairs in {len(rec['batches'])} batch(es) ("
        + ", ".join(f"{topology.CLASSES[k]} {drawn[k]} of {sizes[k]}" for k in sizes)
        + f"); each node in at least {c['sample_min_pairs']}; more while a class's {fmt_pct(c['sample_confidence'])} "
        f"interval is wider than +-{fmt_pct(c['sample_width'])}"
        + (f" (budget {c['sample_budget']} pairs)" if c["sample_budget"] else ""),
    ]


def measured(cfg: dict, samples: list[dict]) -> tuple[dict, dict[int, int], dict]:
    """usable_rates of the run's stored samples: each metric's usable pairs
    (rooftop.model.exclusions) at their median rates."""
    why = model.exclusions(samples, cfg["nodes"])
    got: dict[str, dict] = {}
    for metric in cfg["metrics"]:
        pm = pair_matrix(samples, metric, len(cfg["nodes"]), why)
        got[metric] = {(min(p), max(p)): r for p, r in (pm.rates if pm else {}).items()}
    return usable_rates(got, topology.of_config(cfg))


def usable_rates(got: dict[str, dict], topo) -> tuple[dict, dict[int, int], dict]:
    """From the pairs' rates (metric -> usable pair -> its rate; topo: the
    run's topology, None: one class): (metric -> usable pair -> its rate,
    without pairs of nodes named slow or through a link named slow
    (rooftop.model.suspects): they are not their class's ceiling; node ->
    its pairs usable in every metric; the suspects in any metric: label ->
    node index or Link, named or a link that cannot be told from its
    nodes). Pure: the simulator (rooftop.campaign.simulate) calls it as a
    campaign does."""
    rates: dict[str, dict] = {}
    found: dict = {}
    usable_in: list[set] = []
    for metric, by_pair in got.items():
        named = suspects.name(by_pair, topo)
        slow = set(named.nodes)
        found.update({f"n{n}": n for n in named.nodes})
        found.update({lk.label: lk for lk in named.links + [x for x in named.link_scores if x.unsure]})
        rates[metric] = {p: r for p, r in by_pair.items() if not slow & set(p) and not named.through_named(topo, *p)}
        usable_in.append(set(by_pair))
    both = set.intersection(*usable_in) if usable_in else set()
    count: dict[int, int] = {}
    for p in both:
        for x in p:
            count[x] = count.get(x, 0) + 1
    return rates, count, found


def confirm(cfg: dict, topo, chosen: list, found: dict, usable=None) -> list:
    """The follow-up batch for suspects not re-measured yet (found: as
    usable_rates returns them): fresh partners that separate each suspect's
    hypotheses (rooftop.stages.pairs.sample.follow_up), recorded in the
    run's config ("pair_sample" "confirm": each follow-up batch, its
    suspects and pairs); [] when none is new or no fresh pair is left.
    collect.sample_budget bounds it as any batch. usable: as next_batch."""
    rec = cfg["pair_sample"]
    done = {s for c in rec.get("confirm", []) for s in c["suspects"]}
    new = {label: x for label, x in found.items() if label not in done}
    if not new:
        return []
    nodes = sorted(x for x in new.values() if isinstance(x, int))
    links = [(x.kind, x.nodes) for x in new.values() if not isinstance(x, int)]
    adds = sample.follow_up(topo, chosen, nodes, links, usable, batch=len(rec["batches"]))
    budget = cfg["collect"]["sample_budget"]
    if budget is not None:
        adds = adds[: max(0, budget - len(chosen))]
    if adds:
        rec.setdefault("confirm", []).append(
            {"batch": len(rec["batches"]), "suspects": sorted(new), "pairs": len(adds)}
        )
    return adds


def next_batch(cfg: dict, topo, rates: dict, count: dict[int, int], found: dict, usable=None) -> tuple[list, str]:
    """The batch after the ones cfg["pair_sample"] records, from the usable
    rates so far (usable_rates) and why it is empty when it is. Suspects not
    re-measured yet come first: the next batch is their follow-up (confirm),
    the classes' the one after. Pure (the simulator calls it as extend()
    does). usable: usable(cfg), or None where no two nodes share a core."""
    rec = cfg["pair_sample"]
    if len(rec["batches"]) >= MAX_BATCHES:
        return [], f"{MAX_BATCHES} batches drawn"
    chosen = [(a, b) for a, b in rec["pairs"]]
    adds = confirm(cfg, topo, chosen, found, usable)
    if adds:
        return adds, ""
    return sample.more(topo, chosen, rates, count, cfg, usable, batch=len(rec["batches"]))


def record(cfg: dict, adds: list, why: str) -> None:
    """The batch drawn (or why none) into cfg["pair_sample"]."""
    rec = cfg["pair_sample"]
    if adds:
        rec["pairs"] += [list(p) for p in adds]
        rec["batches"].append(len(adds))
        rec["stop"] = ""
    else:
        rec["stop"] = why


def extend(cfg: dict, store, run_id: str) -> tuple[list, str]:
    """After a measured batch: the next one, recorded in cfg and the run's
    stored config ([] and why none: every class narrow enough, the budget
    spent, no pair left; suspects' follow-up first: next_batch)."""
    adds: list[tuple[int, int]] = []
    why = f"{MAX_BATCHES} batches drawn"
    if len(cfg["pair_sample"]["batches"]) < MAX_BATCHES:
        topo = topology.of_config(cfg) or topology.Topology.flat(len(cfg["nodes"]))
        rates, count, found = measured(cfg, store.samples(run_id))
        adds, why = next_batch(cfg, topo, rates, count, found, usable(cfg))
    record(cfg, adds, why)
    store.update_config(run_id, cfg)
    return adds, why
