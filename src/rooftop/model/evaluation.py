"""A roofline against measured samples: each placement's check and the model
error with and without the client-node ceiling (rooftop.model)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from rooftop import stages
from rooftop.model.ceilings import Ceiling
from rooftop.model.classes import placement_class
from rooftop.model.drift import Drift, platform_drift
from rooftop.model.exclude import exclusions, row_key
from rooftop.model.roofline import Roofline, finite_pair
from rooftop.store.records import stands_for


@dataclass
class Check:
    """One validation sample against the model."""

    x: float
    measured: float
    predicted: float
    predicted_lo: float
    predicted_hi: float
    binding: str
    server_nodes: int = 0
    client_nodes: int = 0
    #: Where the run knows its topology: the farthest class between the
    #: placement's server and client nodes (classes.placement_class) ...
    klass: str | None = None
    #: ... and the rate the roofline gives with that class's client ceiling.
    class_predicted: float | None = None
    #: False: the ceilings' own placement measured again (as many server and
    #: client nodes and processes as a ceiling sample): repeatability, not a
    #: test of the model (rooftop.model.answer).
    tests_model: bool = True

    @property
    def error_pct(self) -> float:
        return (self.measured - self.predicted) / self.predicted * 100.0

    @property
    def class_error_pct(self) -> float | None:
        if not self.class_predicted:
            return None
        return (self.measured - self.class_predicted) / self.class_predicted * 100.0

    @property
    def efficiency(self) -> float:
        return self.measured / self.predicted

    @property
    def above_roofline(self) -> bool:
        return self.measured > self.predicted_hi * 1.05


@dataclass
class Evaluation:
    roofline: Roofline
    checks: list[Check] = field(default_factory=list)
    #: The same samples against the roofline without the client-node ceiling.
    without_node: Evaluation | None = None
    #: Validation samples exclusion() names: (check, why); no error, shown marked.
    excluded: list = field(default_factory=list)
    #: Placements measured for the ceilings and again in validation that read
    #: clearly differently (rooftop.model.drift): the machine changed.
    drift: list[Drift] = field(default_factory=list)

    def median_abs_error(self, binding: str | None = None) -> float | None:
        errs = [abs(c.error_pct) for c in self.checks if binding is None or c.binding == binding]
        return statistics.median(errs) if errs else None

    def class_errors(self) -> dict[str, tuple[float, int]]:
        """Against each placement's own topology class: class -> (median
        |error| %, placements), and "all"; empty without a topology."""
        by: dict[str, list[float]] = {}
        for c in self.checks:
            e = c.class_error_pct
            if e is not None and c.klass:
                by.setdefault(c.klass, []).append(abs(e))
                by.setdefault("all", []).append(abs(e))
        return {k: (statistics.median(v), len(v)) for k, v in by.items()}

    def to_dict(self) -> dict:
        """The ceilings and the validation; the verdict, the ridge and the
        accuracy are the answer's (rooftop.model.answer.Answer.to_dict)."""
        r = self.roofline
        return {
            "metric": r.metric,
            "unit": r.unit,
            "source": r.source,
            "client": _ceiling_dict(r.client),
            "server": _ceiling_dict(r.server),
            "client_node": (dict(_ceiling_dict(r.client_node), binds=r.node_binds) if r.client_node else None),
            "client_node_rejected": r.client_node_rejected or None,
            "measured_once": r.measured_once,
            "core_shared": {
                "excluded": [{"stage": st, "key": k, "why": why} for st, k, why in r.core_shared],
                "only": r.core_shared_only,
            },
            "validation": [
                {
                    "x": c.x,
                    "server_nodes": c.server_nodes,
                    "client_nodes": c.client_nodes,
                    "measured": c.measured,
                    "predicted": c.predicted,
                    "predicted_range": [c.predicted_lo, c.predicted_hi],
                    "error_pct": c.error_pct,
                    "binding": c.binding,
                    "efficiency": c.efficiency,
                    "above_roofline": c.above_roofline,
                    "class": c.klass,
                    "class_predicted": c.class_predicted,
                    "class_error_pct": c.class_error_pct,
                    "tests_model": c.tests_model,
                }
                for c in self.checks
            ],
            "median_abs_error_pct_by_own_class": (
                {k: {"median_abs_error_pct": m, "samples": n} for k, (m, n) in self.class_errors().items()} or None
            ),
            "platform_drift": [d.to_dict() for d in self.drift],
            "validation_excluded": [{"x": c.x, "measured": c.measured, "why": why} for c, why in self.excluded],
            "median_abs_error_pct": {
                "server_bound": self.median_abs_error("server"),
                "client_bound": self.median_abs_error("client"),
                "all": self.median_abs_error(),
            },
            "median_abs_error_pct_without_client_node": (
                {
                    "server_bound": self.without_node.median_abs_error("server"),
                    "client_bound": self.without_node.median_abs_error("client"),
                    "all": self.without_node.median_abs_error(),
                }
                if self.without_node
                else None
            ),
        }


def _ceiling_dict(c: Ceiling) -> dict:
    """min, median, max; ci95: the interval the verdict uses (None: one
    sample); samples: how many (0: a published range)."""
    return {"min": c.lo, "median": c.centre, "max": c.hi, "ci95": finite_pair(c.interval), "samples": c.n}


def evaluate(
    roofline: Roofline, samples: list[dict], nodes=None, run_samples=None, topology=None, classes=()
) -> Evaluation:
    """Validation samples (store rows of stage 'validate') against the model
    (and, when it has a client-node ceiling, against the model without it).
    Samples exclusion() names give no error: they are kept apart
    (Evaluation.excluded, shown marked in figures). nodes: the run's nodes.
    run_samples: every sample of the run, to find the platform's drift
    between its ceilings and its validation (Evaluation.drift). topology
    and classes (the run's client ceiling per class,
    classes.class_ceilings): each check also gets its placement's class and
    the rate the roofline gives with that class's client ceiling."""
    per_class = {c.klass: c.ceiling.centre for c in classes or ()}
    ev = Evaluation(roofline)
    if run_samples:
        ev.drift = platform_drift(run_samples, roofline.metric, nodes)
    if roofline.client_node is not None:
        ev.without_node = evaluate(roofline.without_client_node(), samples, nodes, run_samples)
    own = ceiling_placements(run_samples or [], roofline.metric) if roofline.origin == "measured" else set()
    mine = [s for s in samples if s.get("metric") == roofline.metric and s.get("status") == "ok"]
    why = exclusions(mine, nodes)
    for s in mine:
        x = s["x"]
        c = Check(
            x,
            s["per_client"],
            roofline.rate(x),
            roofline.rate(x, "lo"),
            roofline.rate(x, "hi"),
            roofline.binding(x),
            len(s.get("server_nodes") or []),
            len(s.get("client_nodes") or []),
        )
        c.tests_model = placement(s) not in own
        if topology is not None and per_class:
            k = placement_class(s.get("server_nodes") or [], s.get("client_nodes") or [], topology)
            if k in per_class:
                c.klass, c.class_predicted = k, min(per_class[k], x * roofline.server.centre)
        if why[row_key(s)]:
            ev.excluded.append((c, why[row_key(s)]))
        else:
            ev.checks.append(c)
    ev.checks.sort(key=lambda c: (c.x, c.measured))
    return ev


#: The stages whose samples are the ceilings (those playing the server,
#: client and node roles).
CEILING_STAGES = tuple(stages.of_role(role).name for role in ("server", "client", "node"))


def placement(s: dict) -> tuple[int, int, int, int]:
    """A sample's placement as the model sees it: server and client nodes
    and processes (which nodes does not matter to r(x))."""
    return (
        len(s.get("server_nodes") or []),
        len(s.get("client_nodes") or []),
        int(s.get("server_procs") or 0),
        int(s.get("client_procs") or 0),
    )


def ceiling_placements(samples: list[dict], metric: str) -> set[tuple[int, int, int, int]]:
    """The placements the ceilings of `metric` were measured at: a validation
    sample at one of them repeats a ceiling, it does not test the model."""
    return {placement(s) for s in samples if s.get("metric") == metric and set(stands_for(s)) & set(CEILING_STAGES)}
