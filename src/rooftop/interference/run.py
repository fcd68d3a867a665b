"""rooftop interfere: roofline stages alone, then beside background loads.

One invocation makes one *isolated* run (the chosen stages, nothing else
running) and then one *loaded* run per load kind and ensemble size k: k
copies of the load are started on their nodes (chosen, or drawn with a
recorded seed), run alone for `warmup` seconds (their own baseline), then
the same stages are measured beside them, then they are stopped (SIGTERM,
SIGKILL after a grace period). Every run is an ordinary run of the store
(`rooftop runs`, `export`, `model`, `report` work on each); each loaded
run's config carries an `interfere` section saying what ran beside it,
and the store's `interference` and `load_runs` tables (and
RUN/interference.json of the isolated run) hold the comparison:

- per stage and metric, the service's **impact factor**: isolated mean
  rate / loaded mean rate, and for the 99th-percentile latency loaded /
  isolated (the isolated / loaded ratio of the rates 1/p99; GPCNeT's
  congestion impact factor); above 1: the load hurt the service;
- per load copy, the **load's own slowdown**: its rate alone / its rate
  beside the service while the service's clients measured (units of fixed
  work, rooftop.interference.loads.background; `measuring` reads when from the window
  logs);
  `normalized`: against one copy alone (the smallest ensemble), seed
  004's normalized slowdown against the number of concurrent jobs;
- which resource the load shared with the service (`shared`).
"""

from __future__ import annotations

import copy as copying
import json
import random
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path

from rooftop import files, stages
from rooftop.campaign import Runner, measure_once
from rooftop.engine import enginedoc
from rooftop.interference import keys as _keys  # registers the interference.* config keys
from rooftop.interference.loads import background, get
from rooftop.numbers import json_text
from rooftop.store.records import stands_for

DEFAULT_STAGES = tuple(_keys.DEFAULT_STAGES)


@dataclass
class Plan:
    """What `rooftop interfere` was asked for (all of it recorded)."""

    loads: list[str]
    knobs: dict[str, dict]
    stages: list[str]
    ensemble: list[int] = field(default_factory=lambda: [1])
    load_nodes: list[int] | None = None
    placement: str = "given"
    seed: int | None = None
    node_count: int | None = None
    warmup: float = 3.0
    grace: float = 5.0

    def record(self) -> dict:
        return {
            "loads": self.loads,
            "knobs": self.knobs,
            "stages": self.stages,
            "ensemble": self.ensemble,
            "load_nodes": self.load_nodes,
            "placement": self.placement,
            "seed": self.seed,
            "node_count": self.node_count,
            "warmup": self.warmup,
            "grace": self.grace,
        }


def plan_of(keys: dict, knobs: dict[str, dict]) -> Plan:
    """The plan of a config's `interference` section (each key already
    checked against its type and limits: rooftop.interference.keys), checked
    as a whole; a random placement without a seed gets a drawn one, and
    the ensemble is sorted, both written back into `keys` so that the runs'
    configs record what ran."""
    if not keys["loads"]:
        raise ValueError(
            "interference.loads (--loads): name at least one load to run beside the stages "
            f"(one of {', '.join(_keys.KEYS[0].choices)})"
        )
    if not keys["stages"]:
        raise ValueError("interference.stages (--stages): name at least one stage")
    if not keys["ensemble"]:
        raise ValueError("interference.ensemble (--ensemble): name at least one count of copies")
    twice = sorted({k for k in keys["loads"] if keys["loads"].count(k) > 1})
    if twice:
        raise ValueError(f"interference.loads (--loads): '{twice[0]}' is named twice")
    if keys["seed"] is None and keys["placement"] == "random":
        keys["seed"] = secrets.randbits(31)
    keys["ensemble"] = sorted(set(keys["ensemble"]))  # the runs' order
    return Plan(
        list(keys["loads"]),
        knobs,
        list(keys["stages"]),
        list(keys["ensemble"]),
        keys["load_nodes"],
        keys["placement"],
        keys["seed"],
        keys["load_node_count"],
        keys["load_warmup"],
        keys["grace"],
    )


def load_set_overrides(items: list[str], loads: list[str]) -> dict:
    """--load-set KIND.KNOB=VALUE as config overrides (loads.KIND.KNOB:
    value), each knob checked against the load's (and against --loads)."""
    given: dict[str, dict] = {k: {} for k in loads}
    for text in items:
        name, eq, value = text.partition("=")
        load, dot, knob = name.partition(".")
        if not eq or not dot:
            raise ValueError(f"--load-set '{text}': expected KIND.KNOB=VALUE (e.g. cpu.procs=1)")
        if load not in given:
            raise ValueError(f"--load-set '{text}': load '{load}' is not in interference.loads (--loads)")
        given[load][knob] = value
    out = {}
    for load, values in given.items():
        resolved = get(load).resolve(values)  # names and values checked
        out.update({f"loads.{load}.{n}": resolved[n] for n in values})
    return out


def parse_knobs(items: list[str], loads: list[str]) -> dict[str, dict]:
    """--load-set KIND.KNOB=VALUE, checked against each load's knobs; every
    asked load gets all its knobs resolved."""
    o = load_set_overrides(items, loads)
    return {
        k: get(k).resolve({p.rsplit(".", 1)[1]: v for p, v in o.items() if p.startswith(f"loads.{k}.")}) for k in loads
    }


def placements(cfg: dict, chosen: list[str]) -> list:
    """The chosen stages' placements (shared stages measured once)."""
    for name in chosen:
        stages.get(name)  # names the known stages when one is not
    return measure_once([pl for st in stages.STAGES.values() if st.name in chosen for pl in st.plan(cfg)])


def service_nodes(plans: list) -> tuple[set[int], set[int]]:
    """(server nodes, client nodes) of the planned placements."""
    servers = {n for pl in plans for n in pl.server_nodes}
    clients = {n for pl in plans for m in pl.measurements for n in m.client_nodes}
    return servers, clients


def draw_nodes(plan: Plan, load: str, nodes: list, rng: random.Random) -> list[int]:
    """A copy's nodes: the given ones, or a seeded random draw."""
    want = plan.node_count or (2 if get(load).multi_node else 1)
    if plan.placement == "random":
        if want > len(nodes):
            raise ValueError(
                f"interference.load_node_count (--load-node-count): load '{load}' wants {want} nodes; "
                f"there are {len(nodes)}"
            )
        return sorted(rng.sample(range(len(nodes)), want))
    chosen = plan.load_nodes if plan.load_nodes is not None else list(range(len(nodes)))[-want:]
    bad = [i for i in chosen if not 0 <= i < len(nodes)]
    if bad:
        raise ValueError(f"interference.load_nodes (--load-nodes) {bad[0]}: nodes are 0..{len(nodes) - 1}")
    if get(load).multi_node and len(chosen) < 2:
        raise ValueError(f"load '{load}' needs at least two nodes (interference.load_nodes, --load-nodes A,B)")
    return chosen


def conditions(plan: Plan, nodes: list) -> list[dict]:
    """Each loaded condition: the load, copies and each copy's nodes."""
    rng = random.Random(plan.seed)
    out = []
    for load in plan.loads:
        for k in plan.ensemble:
            out.append(
                {
                    "load": load,
                    "copies": k,
                    "knobs": plan.knobs[load],
                    "nodes": [draw_nodes(plan, load, nodes, rng) for _ in range(k)],
                }
            )
    return out


def _cpus_of(launch) -> set[int]:
    argv = launch.argv
    if "--cpus" not in argv:
        return set(launch.node.cores)
    text = argv[argv.index("--cpus") + 1]
    return {int(c) for c in text.split(",")}


def shared(load: str, running: list, plans: list, nodes: list) -> str:
    """Which resource the load shared with the service, in words."""
    servers, clients = service_nodes(plans)
    svc = servers | clients
    role = lambda i: "server" if i in servers else "client"
    used = {l.node.index for r in running for l in r.launches}
    on = sorted(used & svc)
    if get(load).links:
        if on:
            return "network: the links of " + ", ".join(f"n{i} (a {role(i)} node)" for i in on) + " carry the flood"
        return "network: the flood runs between nodes the service does not use (only shared switches)"
    load_cores = {c for r in running for l in r.launches for c in _cpus_of(l)}
    svc_cores = {c for i in svc for c in nodes[i].cores}
    if load_cores & svc_cores:
        where = ", ".join(f"n{i} ({role(i)})" for i in on) or "the service's nodes"
        return (
            f"{get(load).on_cores}: the load runs on cores {','.join(map(str, sorted(load_cores & svc_cores)))} "
            f"of {where}, which the service uses"
        )
    if on:
        return (
            f"{get(load).resource}: the load runs on "
            + ", ".join(f"n{i}" for i in on)
            + " but on cores the service does not use (memory, caches and I/O are shared)"
        )
    return f"{get(load).resource}: no node of the service runs the load (only machine-wide resources)"


def _rate_p99(store, run_id: str, stage: str, metric: str) -> tuple[float | None, float | None, str]:
    st = stages.get(stage)
    rows = [s for s in store.samples(run_id, metric=metric) if s["status"] == "ok" and stage in store_stands_for(s)]
    if not rows:
        return None, None, ""
    rates = [s[st.rate] for s in rows if s[st.rate] is not None]
    p99s = [q["latency_p99"][0] for q in (store.sample_quantities(s["id"]) for s in rows) if "latency_p99" in q]
    mean = lambda v: sum(v) / len(v) if v else None
    return mean(rates), mean(p99s), rows[0]["unit"]


def store_stands_for(row: dict) -> list[str]:
    return stands_for(row)


def impacts(store, base: str, loaded: str, plans: list, metrics: list[str]) -> list[dict]:
    """Per stage and metric: both runs' mean rate and p99, and the impact factors."""
    out = []
    chosen = [
        st
        for st in stages.STAGES.values()
        if any(st.name in (m.stage, *m.also) for pl in plans for m in pl.measurements)
    ]
    for st in chosen:
        for metric in metrics:
            ri, pi, unit = _rate_p99(store, base, st.name, metric)
            rl, pl_, loaded_unit = _rate_p99(store, loaded, st.name, metric)
            unit = unit or loaded_unit  # (a run with no usable window of the stage has none)
            out.append(
                {
                    "stage": st.name,
                    "metric": metric,
                    "unit": unit,
                    "rate_isolated": ri,
                    "rate_loaded": rl,
                    "impact_rate": ri / rl if ri and rl else None,
                    "p99_isolated_us": pi,
                    "p99_loaded_us": pl_,
                    "impact_p99": pl_ / pi if pi and pl_ else None,
                }
            )
    return out


def run_condition(
    cfg: dict, store, run_id: str, launcher, plans: list, cond: dict, plan: Plan, log, measure=None, groups=None
) -> dict:
    """Starts the condition's load copies, lets them run alone, measures the
    stages beside them (or calls measure() -> (ok, failed): a bursts run,
    rooftop.interference.bursts), stops them; returns what the loads did.
    groups(run_dir) -> {name: [(start, end)]}: each copy's slowdown also per
    group of rounds (a bursts run's progress modes), as copy["by"][name]."""
    runner = Runner(cfg, store, run_id, launcher, log=log)
    running: list[background.Running] = []
    try:
        return _loaded(store, run_id, runner, plans, cond, plan, running, measure, groups)
    except BaseException:
        for r in running:  # Ctrl-C or a failure: the loads stop now, not at the lease's end
            background.stop(r, plan.grace)
        raise
    finally:
        runner.leases.close()


def _loaded(store, run_id, runner, plans, cond, plan, running, measure, groups) -> dict:
    """run_condition's work; running: the load copies started, as they start."""
    nodes = runner.nodes
    try:
        for i, idxs in enumerate(cond["nodes"]):
            folder = store.run_dir(run_id) / "loads" / f"{cond['load']}-{i}"
            running.append(
                background.start(cond["load"], cond["knobs"], [nodes[j] for j in idxs], runner, folder, copy=i)
            )
        _wait_alone(running, plan.warmup)
        t_mark = time.time()
        ok, failed = measure() if measure else runner.run_placements(plans)
        t_unmark = time.time()
    finally:
        runner.procs.stop_all(plan.grace)
    during = measuring(store.run_dir(run_id)) or [(t_mark, t_unmark)]
    copies = []
    for r in running:
        done = background.stop(r, plan.grace)
        by = {
            name: background.split(done["units"], t_mark, iv)
            for name, iv in (groups(store.run_dir(run_id)) if groups else {}).items()
        }
        copies.append(
            {
                **r.describe(),
                **background.split(done["units"], t_mark, during),
                "killed": done["killed"],
                "documents": done["documents"],
                **({"by": by} if by else {}),
            }
        )
    return {
        "ok": ok,
        "failed": failed,
        "copies": copies,
        "shared": shared(cond["load"], running, plans, nodes),
        "t_mark": t_mark,
        "t_unmark": t_unmark,
    }


def measuring(run_dir: Path, pattern: str = "*") -> list[tuple[float, float]]:
    """When the run's clients measured: per round (its folder under raw/
    matching pattern), from its first client's start of measurement to the
    end of its last window (the window logs)."""
    out = []
    for folder in sorted((run_dir / "raw").glob(pattern)):
        starts, ends = [], []
        for log in enginedoc.window_logs(folder):
            for ev in enginedoc.window_log(log):  # (a line cut by an interrupted client is left out)
                if ev["event"] == "measure":
                    starts.append(ev["start_s"])
                elif ev["event"] == "window":
                    ends.append(ev["end_s"])
        if starts and ends:
            out.append((min(starts), max(ends)))
    return out


def _wait_alone(running: list, seconds: float, patience: float = 60.0) -> None:
    """The loads run alone (their baseline) for `seconds`, and until each
    copy has finished two units (a slow start is waited for up to
    `patience` more seconds); a load that dies is an error."""
    start = time.monotonic()
    while True:
        for r in running:
            dead = [p for p in r.procs if p.poll() is not None]
            if dead:
                i = r.procs.index(dead[0])
                log = r.folder / f"worker-{i}.log"
                tail = log.read_text()[-600:] if log.exists() else ""
                raise RuntimeError(
                    f"load '{r.load}' exited (code {dead[0].returncode}) before the stages started: {tail.strip()}"
                )
        waited = time.monotonic() - start
        if waited >= seconds and (waited >= seconds + patience or all(background.units_done(r) >= 2 for r in running)):
            return
        time.sleep(0.1)


def loaded_config(cfg: dict, base: str, cond: dict, plan: Plan) -> dict:
    """A loaded run's config: the isolated run's, plus what ran beside it."""
    c = copying.deepcopy(cfg)
    c["interfere"] = {
        "role": "loaded",
        "of": base,
        "load": cond["load"],
        "copies": cond["copies"],
        "knobs": cond["knobs"],
        "load_nodes": cond["nodes"],
        **{k: v for k, v in plan.record().items() if k in ("placement", "seed", "warmup")},
    }
    return c


def normalise(conds: list[dict]) -> None:
    """Each copy's normalized slowdown: its rate beside the service against
    the rate of one copy alone (the smallest ensemble of its load)."""
    ref: dict[str, float] = {}
    for c in sorted(conds, key=lambda c: c["copies"]):
        alone = [x["rate_alone"] for x in c["result"]["copies"] if x["rate_alone"]]
        if c["load"] not in ref and alone:
            ref[c["load"]] = sum(alone) / len(alone)
    for c in conds:
        for x in c["result"]["copies"]:
            r = ref.get(c["load"])
            x["normalized"] = r / x["rate_beside"] if r and x["rate_beside"] else None


def summary(base: str, plan: Plan, conds: list[dict]) -> dict:
    """The document saved as RUN/interference.json (and in the store)."""
    return {
        "run": base,
        "plan": plan.record(),
        "conditions": [
            {
                "run": c["run"],
                "load": c["load"],
                "copies": c["copies"],
                "knobs": c["knobs"],
                "nodes": c["nodes"],
                "shared": c["result"]["shared"],
                "resource": get(c["load"]).resource,
                "rate_unit": get(c["load"]).rate_unit,
                "impacts": c["impacts"],
                "loads": [{k: v for k, v in x.items() if k != "documents"} for x in c["result"]["copies"]],
                "documents": [x["documents"] for x in c["result"]["copies"]],
                "ok": c["result"]["ok"],
                "failed": c["result"]["failed"],
            }
            for c in conds
        ],
    }


def save(store, doc: dict) -> Path:
    """Stores the comparison (tables interference and load_runs) and
    writes it beside the isolated run's documents."""
    store.add_interference(doc)
    path = store.run_dir(doc["run"]) / "interference.json"
    return files.write(path, json_text(doc, indent=1))


def read_summary(run_dir: Path) -> dict | None:
    """RUN/interference.json of an isolated run, read (None: not an interfere run)."""
    path = Path(run_dir) / "interference.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None
