"""The dataset `rooftop learn` reads from the results store.

One row per validation sample of one metric in the runs named that the
model may use (rooftop.model.exclusion with the run's nodes: not failed,
invalid, concurrent-marked or on nodes sharing cores; see _samples):
its features are every resolved parameter (the `sample_params` view: its
run's `run_params` plus its placement) that varies across those samples,
except the keys NOT_FEATURES names (how the campaign measured, not what it
measured); its target is the per-client-process rate (`quantities`). Each
row also carries its run's roofline rate r(x) (rooftop.model.from_run on
that run's ceiling samples), its configuration (the tuple of its feature
values: repeats of one configuration share it) and its footprint (server
plus client processes).

Values are read as stored, never from the JSON config: sizes become
log2(1 + bytes) (an unset size, the minimal message, is 0), x becomes
log2(x), booleans 0/1, other numbers as they are; anything else is a
category (one-hot encoded by Encoder).
"""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass, field

import numpy as np

from rooftop import metrics, model
from rooftop.config.catalog import KEY_BY_PATH
from rooftop.learn import LearnError
from rooftop.units import parse_size

#: Parameters that describe how a campaign measured (or where it wrote),
#: not the service measured: never features, even when they vary.
NOT_FEATURES = (
    ("collect.*", "how the ceilings were measured"),
    ("validate.*", "how validation was measured (the placement is the sample's own)"),
    ("results", "where results go"),
    ("stages", "which stages ran"),
    ("metrics", "which metrics ran"),
    ("fail_fast", "campaign control"),
    ("tune.*", "how a tune ran (its budget, windows, seed)"),
    ("loads.*", "the knobs of interfere's loads (also in the isolated run, where no load ran)"),
    ("engine.path", "where the engine is"),
    ("engine.timeout", "campaign control"),
    ("engine.lease", "campaign control"),
    ("engine.barrier_timeout", "campaign control"),
    ("engine.retries", "campaign control"),
    ("engine.min_overlap", "sample acceptance"),
    ("engine.slices", "measurement resolution"),
    ("engine.settle", "measurement start"),
    ("engine.start", "measurement start"),
    ("engine.start_lead", "measurement start"),
    ("launcher.command", "launcher executable"),
    ("launcher.extra_args", "launcher arguments"),
    ("launcher.hostfile", "where hosts are listed"),
    ("launcher.flavor", "MPI flavour"),
    ("sample.stage", "one stage is learned"),
    ("sample.metric", "one metric is learned"),
    ("storage_fs.*.free_bytes", "free space when the run started, not a setting"),
    ("*.dir", "where a storage metric wrote (its file system is storage_fs.*)"),
)
#: The placement: always features (the query of `rooftop predict` sets them).
PLACEMENT = ("sample.server_nodes", "sample.client_nodes", "sample.server_procs", "sample.client_procs", "sample.x")
#: The stage whose samples are learned (the ceilings' stages make the roofline).
STAGE = "validate"


def excluded(key: str, metric: str) -> bool:
    """Not a feature: a campaign parameter, or another metric's own key."""
    head = key.split(".", 1)[0]
    if head in metrics.METRICS and head != metric:
        return True
    return any(fnmatch.fnmatchcase(key, pattern) for pattern, _ in NOT_FEATURES)


def encode_value(key: str, value):
    """A stored parameter value as a feature value: a float, or a string
    (a category)."""
    k = KEY_BY_PATH.get(key)
    if k is not None and k.kind == "size":
        return 0.0 if value is None else math.log2(1 + parse_size(value, key))
    if key == "sample.x":
        return math.log2(value)
    if isinstance(value, (bool, int, float)):
        return float(value)
    return "(unset)" if value is None else str(value)


@dataclass
class Encoder:
    """Features -> a numeric matrix: numbers as they are, categories one-hot."""

    features: list[str]
    categories: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def fit(cls, features: list[str], rows: list[dict]) -> Encoder:
        cats = {f: sorted({str(r[f]) for r in rows}) for f in features if any(isinstance(r[f], str) for r in rows)}
        return cls(list(features), cats)

    def columns(self) -> list[tuple[str, str | None]]:
        """(feature, category or None) of each matrix column."""
        return [(f, c) for f in self.features for c in (self.categories.get(f) or [None])]

    def matrix(self, rows: list[dict]) -> np.ndarray:
        cols = self.columns()
        out = np.zeros((len(rows), len(cols)))
        for i, r in enumerate(rows):
            for j, (f, c) in enumerate(cols):
                out[i, j] = (str(r[f]) == c) if c is not None else float(r[f])
        return out


@dataclass
class Dataset:
    metric: str
    unit: str
    runs: list[str]
    features: list[str]
    #: Per sample: feature -> value (encode_value), and its run.
    rows: list[dict]
    y: np.ndarray
    #: The roofline rate r(x) of each sample's run.
    roof: np.ndarray
    #: Configuration index of each sample (repeats share one).
    groups: np.ndarray
    #: Server plus client processes of each sample.
    footprint: np.ndarray
    #: Parameters that do not vary: key -> encoded value (what a query must match).
    constants: dict
    rooflines: dict[str, model.Roofline]
    #: Each row's sample key (with rows[i]["_run"], the sample).
    keys: list[str] = field(default_factory=list)
    #: Validation samples the model's rule leaves out: (run, key, why).
    left_out: list[tuple[str, str, str]] = field(default_factory=list)
    encoder: Encoder = None

    def __post_init__(self):
        self.encoder = Encoder.fit(self.features, self.rows)

    @property
    def configurations(self) -> int:
        return len(set(self.groups.tolist()))

    def X(self, idx=None) -> np.ndarray:
        """The design matrix, the roofline rate as its last column."""
        idx = np.arange(len(self.rows)) if idx is None else idx
        m = self.encoder.matrix([self.rows[i] for i in idx])
        return np.hstack([m, self.roof[idx, None]])

    def knobs(self, run_id: str) -> dict:
        """The run-level feature values of a run (not its placements)."""
        r = next(r for r in self.rows if r["_run"] == run_id)
        return {f: r[f] for f in self.features if not f.startswith("sample.")}


def _samples(store, run_ids: list[str], metric: str) -> tuple[list, list[tuple[str, str, str]]]:
    """(id, run, per-client rate, key) of the validation samples the model
    may use, and (run, key, why) of those it may not: rooftop.model.exclusion with
    each run's nodes, the rule that keeps samples out of ceilings (failed,
    invalid, --allow-concurrent, nodes sharing cores with what ran at the
    same time) keeps them out of the dataset too."""
    marks = ",".join("?" * len(run_ids))
    rows = store.db.execute(
        f"SELECT s.id, s.run_id, q.value, s.key FROM samples s JOIN quantities q ON q.sample_id = s.id "
        f"AND q.quantity = 'per_client' WHERE s.run_id IN ({marks}) AND s.metric = ? AND "
        f"s.status = 'ok' AND s.stage = ? ORDER BY s.id",
        (*run_ids, metric, STAGE),
    ).fetchall()
    keep, left = set(), []
    for run_id in run_ids:
        mine = store.samples(run_id, STAGE, metric)
        why = model.exclusions(mine, store.get_run(run_id).config.get("nodes"))
        keep |= {s["id"] for s in mine if not why[s["key"]]}
        left += [(run_id, s["key"], why[s["key"]]) for s in mine if why[s["key"]]]
    return [r for r in rows if r[0] in keep], left


def _params(store, ids: list[int]) -> dict[int, dict]:
    """sample id -> {key: value}; node lists as their length (counts)."""
    out: dict[int, dict] = {i: {} for i in ids}
    for chunk in range(0, len(ids), 500):
        part = ids[chunk : chunk + 500]
        rows = store.db.execute(
            "SELECT sample_id, key, CASE WHEN key IN ('sample.server_nodes', 'sample.client_nodes') "
            "THEN json_array_length(value) ELSE value END FROM sample_params WHERE sample_id IN "
            f"({','.join('?' * len(part))})",
            part,
        )
        for sid, key, value in rows:
            out[sid][key] = value
    return out


def _rooflines(store, run_ids: list[str], metric: str) -> dict[str, model.Roofline]:
    out = {}
    for run_id in run_ids:
        run = store.get_run(run_id)
        try:
            out[run_id] = model.from_run(store.samples(run_id), metric, run_id, nodes=run.config.get("nodes"))
        except model.ModelError as e:
            raise LearnError(f"run {run_id}: no roofline to learn against ({e})") from None
    return out


def load(store, run_ids: list[str], metric: str) -> Dataset:
    """The dataset of one metric over runs (StoreError: a run not found)."""
    run_ids = [store.get_run(r).id for r in run_ids]
    if metric not in metrics.METRICS:
        raise LearnError(f"unknown metric {metric!r} ({', '.join(metrics.METRICS)})")
    rows, left = _samples(store, run_ids, metric)
    if not rows:
        why = (
            f": the model's rule leaves out all {len(left)}, e.g. run {left[0][0]} {left[0][1]}: {left[0][2]}"
            if left
            else ""
        )
        raise LearnError(
            f"{metric}: no successful validation samples in run(s) {', '.join(run_ids)} "
            f"(rooftop validate {run_ids[0]}){why}"
        )
    params = _params(store, [r[0] for r in rows])
    raw = [{k: encode_value(k, v) for k, v in params[sid].items() if not excluded(k, metric)} for sid, *_ in rows]
    keys = sorted(set().union(*raw))
    for r in raw:  # a key some runs lack (an older rooftop's) is unset there
        for k in keys:
            r.setdefault(k, "(unset)")
    varying = [k for k in keys if k in PLACEMENT or len({str(r.get(k)) for r in raw}) > 1]
    constants = {k: raw[0].get(k) for k in keys if k not in varying}
    for r, (_, run_id, *_) in zip(raw, rows):
        r["_run"] = run_id
    rooflines = _rooflines(store, run_ids, metric)
    x = np.array([params[sid]["sample.x"] for sid, *_ in rows], dtype=float)
    roof = np.array([rooflines[run].rate(xi) for (_, run, *_), xi in zip(rows, x)])
    configs: dict[tuple, int] = {}
    groups = np.array([configs.setdefault(tuple(str(r[k]) for k in varying), len(configs)) for r in raw])
    foot = np.array(
        [params[sid]["sample.server_procs"] + params[sid]["sample.client_procs"] for sid, *_ in rows], dtype=float
    )
    return Dataset(
        metric,
        metrics.get(metric).unit,
        run_ids,
        varying,
        raw,
        np.array([v for _, _, v, _ in rows], dtype=float),
        roof,
        groups,
        foot,
        constants,
        rooflines,
        [key for *_, key in rows],
        left,
    )
