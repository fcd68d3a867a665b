"""Each run's ceilings per metric, from the model `rooftop model` uses
(rooftop.model.from_run with the run's nodes: the same exclusion rule),
and the runs of a results folder grouped by comparability, in time order."""

from __future__ import annotations

from dataclasses import dataclass, field

from rooftop import model
from rooftop.history.comparable import group_key, machine_differences, signature
from rooftop.model.answer import answer
from rooftop.model.drift import VALIDATION
from rooftop.store.damage import DAMAGED, is_damaged

#: The ceilings a run is checked on: the server ceiling, the client ceiling
#: (isolated) and, when measured and used, the node-full client ceiling.
CEILINGS = ("server", "client", "client_node")


@dataclass
class Point:
    """One ceiling of one run: its median and its 95 % interval (None: one sample)."""

    median: float
    interval: tuple[float, float] | None
    samples: int

    def to_dict(self) -> dict:
        return {"median": self.median, "ci95": list(self.interval) if self.interval else None, "samples": self.samples}

    @classmethod
    def from_dict(cls, d: dict) -> Point:
        return cls(d["median"], tuple(d["ci95"]) if d.get("ci95") else None, d.get("samples", 0))


@dataclass
class RunCeilings:
    """A run's ceilings of one metric, with what it is comparable by."""

    run: str
    created: str
    metric: str
    unit: str
    signature: dict
    ceilings: dict[str, Point]
    #: The recommended ratio (servers, clients) from the ceilings' medians.
    ratio: tuple[int, int] | None
    #: The validation samples' median absolute error, % (None: no validation).
    validation_error: float | None = None
    notes: list[str] = field(default_factory=list)
    #: Ceilings left out as read because they are damaged in the database
    #: (a stored baseline's: rooftop.history.baselines): name -> why.
    damaged: dict[str, str] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return group_key(self.signature)

    def to_dict(self) -> dict:
        return {
            "run": self.run,
            "created": self.created,
            "metric": self.metric,
            "unit": self.unit,
            "signature": self.signature,
            "ceilings": {k: p.to_dict() for k, p in self.ceilings.items()},
            "ratio": list(self.ratio) if self.ratio else None,
            "validation_error_pct": self.validation_error,
        }

    @classmethod
    def from_dict(cls, d: dict) -> RunCeilings:
        return cls(
            d["run"],
            d["created"],
            d["metric"],
            d["unit"],
            d["signature"],
            {k: Point.from_dict(p) for k, p in d["ceilings"].items()},
            tuple(d["ratio"]) if d.get("ratio") else None,
            d.get("validation_error_pct"),
        )


def _point(c: model.Ceiling) -> Point:
    return Point(c.centre, c.interval, c.n)


def of_run(store, run_id: str, damaged: dict[str, str] | None = None) -> dict[str, RunCeilings]:
    """Per metric, the run's ceilings (metrics whose roofline cannot be
    built, e.g. a stage missing, are left out). damaged: filled with
    {metric: why} for the metrics left out whose samples include rows
    damaged in the database (rooftop.store.damage): it could have been built."""
    run = store.get_run(run_id)
    samples = store.samples(run_id)
    nodes = run.config.get("nodes")
    out = {}
    for metric in sorted({s["metric"] for s in samples}):
        try:
            r = model.from_run(samples, metric, f"run {run_id}", nodes=nodes)
        except model.ModelError as e:
            bad = [s for s in samples if s["metric"] == metric and is_damaged(s)]
            if bad and damaged is not None:
                damaged[metric] = f"{e} ({len(bad)} of its samples {DAMAGED}, e.g. {bad[0]['key']})"
            continue
        pts = {"server": _point(r.server), "client": _point(r.client)}
        if r.client_node is not None:
            pts["client_node"] = _point(r.client_node)
        a = answer(r, model.evaluate(r, [s for s in samples if s["stage"] == VALIDATION], nodes, samples))
        out[metric] = RunCeilings(
            run_id,
            run.created,
            metric,
            r.unit,
            signature(run.config, metric, run.environment),
            pts,
            a.ratio,  # None where the verdict locates no ridge
            a.accuracy.error_pct,  # over the placements that test the model
        )
    return out


def history(store) -> dict[str, list[RunCeilings]]:
    """Comparable groups (group_key -> runs in time order) of the folder's
    complete runs."""
    groups: dict[str, list[RunCeilings]] = {}
    for run in store.runs():
        if run.status != "complete":
            continue
        for rc in of_run(store, run.id).values():
            groups.setdefault(rc.key, []).append(rc)
    return groups


def before(store, target: RunCeilings) -> list[RunCeilings]:
    """The complete runs comparable with target created before it, oldest first."""
    runs = history(store).get(target.key, [])
    return [r for r in runs if (r.created, r.run) < (target.created, target.run)]


def machine_changes(runs: list[RunCeilings]) -> list[tuple[RunCeilings, RunCeilings, list[str]]]:
    """(the run before, the run, what differs) wherever a run of a series
    was measured on another machine than the run before it (both recorded
    theirs: rooftop.history.comparable.NAMED)."""
    out = []
    for prev, r in zip(runs, runs[1:]):
        diff = machine_differences(r.signature, prev.signature)
        if diff:
            out.append((prev, r, diff))
    return out
