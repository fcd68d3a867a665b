"""A run's results assembled once for `model`, `plot` and `report`: the
rooflines and their validation, the client pair matrix, the latency
distributions, the warnings a practitioner needs, and the data of the
studies' report sections the caller hands in (rooftop.results.sections)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rooftop import launchers, metrics, model, stages, topology
from rooftop.engine import enginedoc
from rooftop.engine.enginedoc import Latency  # noqa: F401  (figures and tests take it from here)
from rooftop.foreign import FOREIGN_WARN, OVER_GATE
from rooftop.model import outliers, suspects
from rooftop.model.answer import Answer, answer
from rooftop.model.classes import class_ceilings, concurrency
from rooftop.results.sections import Section
from rooftop.store.damage import DAMAGED, is_damaged
from rooftop.store.db import Store
from rooftop.store.records import Run, stands_for
from rooftop.store.runs import finish_hint
from rooftop.units import fmt_num, fmt_pct, fmt_range, fmt_rate

#: A client ceiling range wider than this (max / min - 1) gets a warning.
WIDE_CLIENT_RANGE = 0.25
#: A run spending more than this share of its time outside measurement.
HIGH_OVERHEAD = 0.15
#: A client later than this share of a window to the common start.
LATE_SHARE = 0.1


@dataclass
class PairMatrix:
    """Client peak per node pair: the median over samples of the rate one
    client process on node b gets from one idle server on node a."""

    metric: str
    unit: str
    nodes: list[int]
    rates: dict[tuple[int, int], float]  # (server node, client node) -> median rate
    #: Pairs with no sample the model may use (rooftop.model.exclusion): pair
    #: -> (median rate of their samples, why). Shown marked, never scored.
    left_out: dict[tuple[int, int], tuple[float, str]] = field(default_factory=dict)
    #: Pairs measured at the same time as other pairs (pair rounds): pair ->
    #: the pairs beside it, as the rounds recorded them.
    beside: dict[tuple[int, int], list[tuple[int, int]]] = field(default_factory=dict)
    #: Where the run knows its topology: pair -> its class (rooftop.topology);
    #: outlier scores compare each pair with its class.
    classes: dict[tuple[int, int], str] = field(default_factory=dict)
    #: The slow nodes and links named from these pairs (rooftop.model.suspects.name).
    named: suspects.Named | None = None
    #: Each suspect's standing after the follow-up batches (rooftop.model.suspects.states).
    states: dict[str, tuple[str, int | None]] = field(default_factory=dict)
    #: How likely the run's --pairs sample search was to miss a slow node or
    #: link, at the run's own noise, as collect recorded it (config
    #: pair_sample "power", rooftop.campaign.simulate.record_power; None: not
    #: a sampled search, or recorded before it was).
    power: dict | None = None

    def power_line(self) -> str:
        """How the model and the report say it ('' when not recorded)."""
        if not self.power:
            return ""
        if "line" not in self.power:
            return f"search power: {self.power.get('note', '')}"
        return f"search power (this search, simulated at this run's noise): {self.power['line']}"

    def outlier_lines(self) -> list[str]:
        """The outlier section's account: how many pairs it used, which it
        left out and why, and whether it can tell an outlier at all."""
        total = len(self.rates) + len(self.left_out)
        out = [
            f"outlier scores from {len(self.rates)} of {total} node pair(s)"
            + (
                f"; left out {len(self.left_out)}: "
                + "; ".join(f"n{a}-n{b} ({why})" for (a, b), (_, why) in sorted(self.left_out.items())[:4])
                + (" ..." if len(self.left_out) > 4 else "")
                if self.left_out
                else ""
            )
        ]
        if self.beside:
            out.append(
                f"{len(self.beside)} pair(s) were measured at the same time as other pairs "
                f"(pair rounds), e.g. n{'-n'.join(map(str, next(iter(self.beside))))} beside "
                + ", ".join(f"n{a}-n{b}" for a, b in next(iter(self.beside.values())))
            )
        for lk in self.named.links if self.named else []:
            out.append(
                f"slow link: the {lk.label}, {len(lk.pairs)} pair(s) through it at a median of "
                f"{fmt_rate(statistics.median(r for _, r in lk.pairs), self.unit)} (score {lk.z:.1f}); "
                f"its nodes' other pairs are not slow"
            )
        out += [suspects.state_text(label, st) for label, st in self.states.items()]
        if self.power:
            out.append(self.power_line())
        why = self.named.cannot_tell if self.named else outliers.cannot_tell(self.rates, self.nodes, self.classes)
        if why:
            out.append(why)
        return out

    def rate(self, a: int, b: int) -> float | None:
        return self.rates.get((a, b), self.rates.get((b, a)))

    def slowest(self, k: int = 3) -> list[tuple[tuple[int, int], float]]:
        return sorted(self.rates.items(), key=lambda kv: kv[1])[:k]


@dataclass
class RunResults:
    run: Run
    samples: list[dict]
    rooflines: dict[str, model.Roofline] = field(default_factory=dict)
    evaluations: dict[str, model.Evaluation] = field(default_factory=dict)
    #: Per metric: the one answer (rooftop.model.answer): verdict, ridge or
    #: why none, what the validation tested. Every command and figure reads it.
    answers: dict[str, Answer] = field(default_factory=dict)
    pairs: dict[str, PairMatrix] = field(default_factory=dict)
    latency: list[Latency] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: Per metric: every node's outlier score (empty with fewer than 3 nodes).
    scores: dict[str, list[outliers.NodeScore]] = field(default_factory=dict)
    #: Per metric: the slow nodes and links named (rooftop.model.suspects).
    named: dict[str, suspects.Named] = field(default_factory=dict)
    #: Per metric, when nodes are flagged slow: the roofline without their pairs.
    without_flagged: dict[str, model.Roofline] = field(default_factory=dict)
    #: The topology the run recorded (rooftop.topology.Topology; None: none).
    topology: Any = None
    #: Per metric, where the run knows its topology: the client ceiling per
    #: class (rooftop.model.classes), nearest class first.
    classes: dict[str, list] = field(default_factory=dict)
    #: Per metric: (label, roofline) of the same stages measured under other
    #: conditions, drawn as lower bands on the roofline figure; a section's
    #: `read` fills it (rooftop.interference.report: each run beside a load).
    loaded: dict[str, list] = field(default_factory=dict)
    #: Each service's points against its metric's roofline
    #: (rooftop.service.efficiency.ServiceEfficiency), and lines for services
    #: whose metric has no roofline here; the services section's `read`
    #: fills them (rooftop.service.report), the roofline figure draws them.
    services: list = field(default_factory=list)
    service_notes: list[str] = field(default_factory=list)
    #: The studies' report sections (rooftop.results.sections) with the
    #: data each read for this run, in the table's order.
    sections: list[tuple[Section, Any]] = field(default_factory=list)

    def flagged(self, metric: str) -> list[int]:
        return outliers.flagged(self.scores.get(metric, []))

    def part(self, name: str) -> Any:
        """The data section `name` read for this run (None: none, or the
        section was not in the table given to load)."""
        return next((data for s, data in self.sections if s.name == name), None)

    # --- describing the run ------------------------------------------------
    @property
    def provider(self) -> str:
        return self.run.config["fabric"]["provider"]

    @property
    def host(self) -> str:
        env = self.run.environment
        nodes = self.run.config.get("nodes") or []
        hosts = sorted({n.get("host", "?") for n in nodes})
        launcher = self.run.config["launcher"]["type"]
        where = env.get("host", "?")
        if launchers.spec(launcher).logical_nodes:
            return f"{where} ({len(nodes)} logical nodes)"
        if hosts and hosts != [where]:
            shown = ", ".join(hosts[:3]) + (", ..." if len(hosts) > 3 else "")
            return f"{len(nodes)} nodes ({shown}) via {launcher}"
        return where

    def title(self, metric: str) -> str:
        what = metrics.METRICS[metric].title(self.run.config) if metric in metrics.METRICS else metric
        return f"{what}: {self.host}, {self.provider}, run {self.run.id}"

    @property
    def metrics(self) -> list[str]:
        return sorted({s["metric"] for s in self.samples})


def pair_matrix(samples: list[dict], metric: str, nodes: int, why: dict[str, str] | None = None) -> PairMatrix | None:
    """The client pair matrix from the samples the model may use (why:
    model.exclusions of the run's samples; None: all ok ones); pairs with
    none are left out, with the reason, and pairs measured beside others
    are named (model.ran_beside)."""
    per: dict[tuple[int, int], list[float]] = {}
    out: dict[tuple[int, int], tuple[list[float], str]] = {}
    client = stages.of_role("client").name
    rows = [s for s in samples if client in stands_for(s) and s["metric"] == metric and s["status"] == "ok"]
    for s in rows:
        pair = (s["server_nodes"][0], s["client_nodes"][0])
        reason = (why or {}).get(model.row_key(s), "")
        if reason:
            vals, _ = out.setdefault(pair, ([], reason))
            vals.append(s["per_client"])
        else:
            per.setdefault(pair, []).append(s["per_client"])
    if not per and not out:
        return None
    beside: dict = {}
    for kid, others in model.ran_beside(rows).items():
        s = next(r for r in rows if model.row_key(r) == kid)
        beside.setdefault(
            (s["server_nodes"][0], s["client_nodes"][0]),
            sorted({(o["server_nodes"][0], o["client_nodes"][0]) for o in others}),
        )
    return PairMatrix(
        metric,
        metrics.get(metric).unit,
        list(range(nodes)),
        {k: statistics.median(v) for k, v in per.items()},
        {k: (statistics.median(v), r) for k, (v, r) in out.items() if k not in per},
        beside,
    )


def latency_of(samples: list[dict], stage: str, metric: str) -> Latency | None:
    """Merges the latency bins of every client document of a stage (each
    round's folder once); None when the documents carry no bins."""
    found = []
    rows = [s for s in samples if s["stage"] == stage and s["metric"] == metric and s["status"] == "ok"]
    also = tuple(x for x in stands_for(rows[0]) if x != stage) if rows else ()
    for d in sorted({s["raw_dir"] for s in rows if s["raw_dir"]}):
        for f in enginedoc.client_documents(d):
            try:
                found.append(enginedoc.latency_bins(enginedoc.load(f)))
            except (OSError, ValueError, KeyError, TypeError):
                continue
    merged = enginedoc.merge_bins(found)
    if not merged:
        return None
    placements = tuple(sorted({(s["server_procs"], s["client_procs"]) for s in rows}))
    return Latency(stage, metric, merged, len(found), also, placements)


def _method_warnings(metric: str, r: model.Roofline) -> list[str]:
    """What the model cannot tell: its verdict when not one ratio, and the
    samples left out of ceilings because their nodes share cores."""
    out = []
    v = r.verdict()
    if v["kind"] != "ratio":
        out.append(f"{metric}: {v['text']}")
    if r.core_shared:
        keys = sorted({k for _, k, _ in r.core_shared})
        used = (
            " (the " + " and ".join(r.core_shared_only) + " ceiling come only from them)" if r.core_shared_only else ""
        )
        out.append(
            f"{metric}: {len(keys)} sample(s) not used for ceilings, outlier scores, learning "
            f"or validation{used}: {r.core_shared[0][2]}, e.g. {keys[0]}"
        )
    return out


def _warnings(res: RunResults) -> list[str]:
    """What a reader of the run must know, in order: slow nodes, each
    metric's ceilings, then the run's own measuring."""
    return _outlier_warnings(res) + _ceiling_warnings(res) + _run_warnings(res)


def _outlier_warnings(res: RunResults) -> list[str]:
    out = []
    for metric, scores in sorted(res.scores.items()):
        unit = res.pairs[metric].unit
        for sc in scores:
            if sc.flagged != "slow":
                continue
            w = res.without_flagged.get(metric)
            out.append(
                f"{metric}: node n{sc.node} is an outlier (score {sc.z:.1f}): its pairs reach "
                f"{fmt_rate(sc.median, unit)} (median); slowest: "
                + ", ".join(f"n{a}-n{b} {fmt_rate(v, unit)}" for (a, b), v in sc.pairs[:3])
                + (f"; without it the client ceiling is {fmt_range(w.client.lo, w.client.hi, unit)}" if w else "")
            )
            if sc.node == 0 and any(s["stage"] == stages.of_role("server").name for s in res.samples):
                out.append(
                    f"{metric}: the server ceiling was measured on node n0, which is flagged: "
                    f"re-run with another server node first (launcher.hosts order)"
                )
    return out


def _ceiling_warnings(res: RunResults) -> list[str]:
    out = []
    for metric, r in res.rooflines.items():
        c = r.client
        spread = c.hi / c.lo - 1 if c.lo > 0 else 0.0
        if spread > WIDE_CLIENT_RANGE:
            pm = res.pairs.get(metric)
            if pm and len(pm.rates) > 1:
                advice = "look at the pair matrix; slowest pairs: " + ", ".join(
                    f"n{a}-n{b} {fmt_rate(v, r.unit)}" for (a, b), v in pm.slowest(3)
                )
            else:
                advice = (
                    "look at the pair matrix: with a single node pair the spread is between "
                    "samples of n0-n1 (a noisy machine: longer or more samples)"
                )
            out.append(
                f"{metric}: the client ceiling ranges {fmt_range(c.lo, c.hi, r.unit)} "
                f"({fmt_pct(spread)} wide, more than "
                f"{fmt_pct(WIDE_CLIENT_RANGE)}): {advice}"
            )
        out += _method_warnings(metric, r)
        if r.client_node_rejected:
            out.append(f"{metric}: node-full client ceiling not used: {r.client_node_rejected}")
        if r.node_binds and (n := r.client_node) is not None:
            out.append(
                f"{metric}: with its node full, each client process gets "
                f"{fmt_rate(n.centre, r.unit)}, {fmt_pct(n.centre / c.centre)} of a lone client: the model "
                f"uses this node-saturated ceiling"
            )
        ev = res.evaluations.get(metric)
        if ev:
            above = [ch for ch in ev.checks if ch.above_roofline]
            if above:
                out.append(
                    f"{metric}: {len(above)} validation sample(s) above the roofline (x = "
                    + ", ".join(fmt_num(ch.x) for ch in above[:5])
                    + "): a ceiling was under-measured, or the samples are not comparable"
                )
    return out


def _run_warnings(res: RunResults) -> list[str]:
    out = []
    late = [
        s for s in res.samples if s["status"] == "ok" and s.get("late_s", 0) > LATE_SHARE * max(s["measured_s"], 1e-9)
    ]
    if late:
        worst = max(late, key=lambda s: s["late_s"])
        out.append(
            f"{len(late)} sample(s) had a client start measuring late (worst {worst['late_s']:.2f} s, "
            f"{worst['key']}): its clients started on the clock (engine.start = clock); use "
            f"engine.start = barrier, or raise engine.start_lead (now "
            f"{res.run.config.get('engine', {}).get('start_lead')} s)"
        )
    cfg = res.run.config
    shared = [n for n in cfg.get("nodes") or [] if (n.get("emulation") or {}).get("shared_with")]
    local = launchers.spec(cfg.get("launcher", {}).get("type", "?")).logical_nodes
    together = any(pm.beside for pm in res.pairs.values())
    if cfg.get("collect", {}).get("pairs") in ("rounds", "sample") and (shared or local) and together:
        out.append(
            "client pairs were measured in rounds on one machine whose nodes share cores (or "
            "memory): pairs measured at once interfere, so the pair matrix mixes that in (pairs "
            "beside others that share their cores are left out); --pairs serial measures one "
            "pair at a time"
        )
    out += invalid_lines(res.samples)
    out += sharing_lines(res.samples)
    failed = [s for s in res.samples if s["status"] == "failed"]
    if failed:
        out.append(f"{len(failed)} sample(s) failed, e.g. {failed[0]['key']}: {failed[0]['error'][:200]}")
    ov = res.run.overhead
    if ov is not None and ov > HIGH_OVERHEAD:
        out.append(
            f"the run spent {fmt_pct(ov)} of its time outside measurement windows (launch, "
            f"readiness, warmup): longer samples (collect.duration) amortise it"
        )
    if res.run.status != "complete":
        out.append(f"the run is {res.run.status}: {finish_hint(res.run.note, res.run.id)}")
    return out


def invalid_lines(samples: list[dict], metric: str | None = None) -> list[str]:
    """What was measured but cannot be used, counted by reason."""
    bad = [s for s in samples if s["status"] == "invalid" and metric in (None, s["metric"])]
    if not bad:
        return []
    apart = [s for s in bad if s["error"].startswith("clients measured together")]
    above = [s for s in bad if s["error"].startswith("measurement error")]
    shared = [s for s in bad if s["error"].startswith(OVER_GATE)]
    damaged = [s for s in bad if is_damaged(s)]
    other = len(bad) - len(apart) - len(above) - len(shared) - len(damaged)
    why = ", ".join(
        f"{n} {w}"
        for n, w in (
            (len(apart), "with clients that did not measure together"),
            (len(above), "above a known link rate"),
            (len(shared), "with other processes on their cores (engine.foreign_cpu_gate)"),
            (len(damaged), f"{DAMAGED} (a rate that is not one)"),
            (other, "otherwise unusable"),
        )
        if n
    )
    return [
        f"{len(bad)} invalid sample(s) are not used by any ceiling, model or validation ({why}; "
        f"each was measured {1 + max(0, bad[0].get('attempt', 1) - 1)} time(s)), e.g. "
        f"{bad[0]['key']}: {bad[0]['error'][:200]}"
    ]


def sharing_lines(samples: list[dict]) -> list[str]:
    """Samples that may not have had the machine to themselves: measured with
    --allow-concurrent, or with other processes using their cores."""
    out = []
    conc = [s for s in samples if s.get("concurrent")]
    if conc:
        out.append(
            f"{len(conc)} sample(s) were measured with --allow-concurrent: another campaign "
            f"may have shared this results folder or the machine's cores, and their rates may "
            f"be low (see foreign CPU); the model does not use them, e.g. {conc[0]['key']}"
        )
    loaded = [s for s in samples if s["status"] == "ok" and (s.get("foreign_cpu") or 0) > FOREIGN_WARN]
    if loaded:
        worst = max(loaded, key=lambda s: s["foreign_cpu"])
        out.append(
            f"{len(loaded)} sample(s) shared their cores with other processes (foreign CPU "
            f"above {fmt_pct(FOREIGN_WARN)} of a core; worst {fmt_pct(worst['foreign_cpu'])} of a core, "
            f"{worst['key']}): their rates may be low; measure again on a quiet machine"
        )
    return out


def _read_pairs(res: RunResults, metric: str, pm: PairMatrix) -> None:
    """A metric's client pair matrix into res: the slow nodes and links named
    from it, each suspect's standing, the search's power as collect recorded
    it, and, under a topology, the class ceilings without the pairs through
    a named link."""
    res.pairs[metric] = pm
    pm.named = res.named[metric] = named = suspects.name(pm.rates, res.topology)
    res.scores[metric] = named.scores
    sampled = res.run.config.get("pair_sample") or {}
    pm.states = suspects.states(named, sampled.get("confirm") or [])
    pm.power = (sampled.get("power") or {}).get(metric)
    if res.topology is not None:
        pm.classes = {p: res.topology.klass(*p) for p in [*pm.rates, *pm.left_out]}
        # A pair through a slow link is not its class's ceiling.
        ceiling = {p: r for p, r in pm.rates.items() if not named.through_named(res.topology, *p)}
        res.classes[metric] = class_ceilings(ceiling or pm.rates, res.topology)
        concurrency(res.classes[metric], pm.beside, res.topology)


def load(store: Store, run_id: str, sections: Sequence[Section] = ()) -> RunResults:
    """A run's results; sections: the studies' report sections whose data
    to read (rooftop.kinds.sections.SECTIONS; none: the campaign's own
    parts only)."""
    run = store.get_run(run_id)
    samples = store.samples(run.id)
    res = RunResults(run, samples)
    res.topology = topology.of_config(run.config)
    nodes = len(run.config.get("nodes") or [])
    validation = [s for s in samples if s["stage"] == stages.of_role("validation").name]
    why = model.exclusions(samples, run.config.get("nodes"))  # the one rule (model.exclusion)
    for metric in res.metrics:
        try:
            r = model.from_run(samples, metric, f"run {run.id}", nodes=run.config.get("nodes"))
            res.rooflines[metric] = r
        except model.ModelError:
            pass  # no roofline, but the pair matrix and latency may still be there
        pm = pair_matrix(samples, metric, nodes, why)
        if pm:
            _read_pairs(res, metric, pm)
            slow = res.flagged(metric)
            if slow:
                try:
                    res.without_flagged[metric] = model.from_run(
                        samples,
                        metric,
                        f"run {run.id} without n{', n'.join(map(str, slow))}",
                        slow,
                        nodes=run.config.get("nodes"),
                    )
                except model.ModelError:
                    pass
        if metric in res.rooflines:  # each validation placement also against its own topology class
            res.evaluations[metric] = model.evaluate(
                res.rooflines[metric],
                validation,
                run.config.get("nodes"),
                samples,
                res.topology,
                res.classes.get(metric, ()),
            )
            res.answers[metric] = answer(res.rooflines[metric], res.evaluations[metric])
        for stage in (st.name for st in stages.STAGES.values() if st.latency):
            lat = latency_of(samples, stage, metric)
            if lat:
                res.latency.append(lat)
    res.sections = [(s, s.read(store, res)) for s in sections]
    res.warnings = _warnings(res)
    return res
