"""What rooftop hands to other tools: a run's samples as CSV or JSON, its
figures of merit one per line, and the model (model_of: what `rooftop
model` shows) as JSON -- each JSON document
versioned and described by a JSON Schema shipped in the package
(`rooftop/schemas/`).

Compatibility rule for `schema_version` ("MAJOR.MINOR"): a MINOR release
only adds (fields, values of a free-text field); a consumer that ignores
what it does not know keeps working. Anything else -- a field removed,
renamed or retyped, a unit changed -- raises MAJOR. The schemas allow
additional properties for that reason.

Typed columns, and no JSON in a CSV cell: `server_nodes`/`client_nodes`
are lists of node indices (JSON lists; the CSV has their counts,
`server_node_count`/`client_node_count`, and the lists themselves in a long
table of their own, `--sample-nodes`: one row per sample, side and node).
`ceilings` is the list of collect stages a sample stands for (CSV: the
names separated by spaces; a stage name has none). `emulation` is what the
emulated cluster enforced on the sample's nodes during its window
(rooftop.emulation; null off the emulated cluster; JSON only). `created`
is ISO-8601 in UTC with its zone ("2026-11-26T09:28:57+00:00"), as the
store records it. `raw_dir` is the folder of the sample's engine documents
relative to the results folder ("RUN/raw/...", "" when none is left),
wherever `collect` ran. A text cell a spreadsheet would read as a formula
(starting with = + - @, a tab or a carriage return, and not a number: an
error text, a source name) is written with a single quote before it
(rooftop.files.csv_cell); numbers, negative ones too, are written as numbers.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from dataclasses import dataclass
from datetime import datetime
from importlib import resources

from rooftop import kinds, model, results
from rooftop.files import csv_cell
from rooftop.history import gate
from rooftop.history.keys import rule
from rooftop.interference.run import read_summary
from rooftop.model import mix, outliers
from rooftop.model.answer import answer, answer_of
from rooftop.model.drift import VALIDATION
from rooftop.numbers import json_text
from rooftop.service import points as service_points
from rooftop.service import sizing
from rooftop.store.db import Store
from rooftop.store.records import stands_for, utc_stamp
from rooftop.store.schema import SAMPLE_COLUMNS

#: The version of every JSON document below (see the compatibility rule).
#: 1.1 added the interference impact factors (export, model) and each
#: metric's ceilings under load (model); 1.2 each sample's emulation (export);
#: 1.3 a run's service points (export) and each service's efficiency (model);
#: 1.4 times (`created`) with their time zone; 1.5 each metric's client
#: ceiling per topology class and the run's topology (model); 2.0 renamed
#: two fields, one word per meaning (issue 28): a sample's `sample` (its
#: window's index in its measurement) is `window`, a series point's
#: `sampler` is `source`; 2.1 the machine a run was measured on (its
#: environment's `machine`: rooftop.engine.machine); 3.0 each metric's one
#: answer (a ridge the verdict does not locate has null numbers); 4.0
#: renamed, one word per meaning (issue 44): a service point's `sample`
#: (its window's index at its placement) is `window` and its `source`
#: (measured, imported) `origin`, and so are a service placement's
#: `source` and left-out point's `sample` and a service answer's `source`
#: (model); 4.1 the versions a run's environment records: the engine's,
#: libfabric's and the git revision (`engine_version`, `libfabric`, `git`).
#: 4.2 each metric's slow links named beside its nodes and each
#: suspect's standing after the follow-up batches (model: `links`,
#: `suspects`, issue 45); 4.3 how likely a sampled search was to miss a
#: slow node or link, at the run's own noise (model: `search_power`).
SCHEMA_VERSION = "4.3"
#: Sample columns as exported (JSON), in order.
COLUMNS = ["id", *SAMPLE_COLUMNS, "server_node_count", "client_node_count"]
#: The CSV's: no list or object in a cell (the node lists: NODE_COLUMNS).
CSV_COLUMNS = [c for c in COLUMNS if c not in ("server_nodes", "client_nodes", "emulation")]
#: `rooftop export RUN --sample-nodes`: the samples' nodes, one row per sample, side and node.
NODE_COLUMNS = ["sample_id", "side", "node"]
#: Export formats: name -> one line of help.
FORMATS = {
    "csv": "one row per sample, typed columns (below)",
    "json": "the run (config, environment, timing) and its samples; schema rooftop/schemas/export.schema.json",
    "fom": "one figure of merit per line: 'NAME: VALUE UNIT', then ' (higher|lower is better)' where one is",
    "openmetrics": "the ceilings, ridge, validation error and check outcome as OpenMetrics (Prometheus) text",
}


def schema(name: str) -> dict:
    """A shipped JSON Schema: 'export' or 'model'."""
    return json.loads(resources.files("rooftop").joinpath("schemas", f"{name}.schema.json").read_text())


def iso_time(stamp: str | None) -> str | None:
    """A stored time as exported: UTC, ISO-8601 with its zone, as the store
    records it since schema version 14 (records.utc_stamp)."""
    return utc_stamp(stamp) if stamp else stamp


def sample_rows(store: Store, run_id: str) -> list[dict]:
    """The run's samples as exported (typed, raw_dir relative to the results folder)."""
    out = []
    for s in store.samples(run_id):
        docs = store.docs_dir(s)
        out.append(
            dict(
                s,
                ceilings=stands_for(s),
                created=iso_time(s["created"]),
                emulation=json.loads(s["emulation"]) if s["emulation"] else None,
                server_node_count=len(s["server_nodes"]),
                client_node_count=len(s["client_nodes"]),
                raw_dir=os.path.relpath(docs, store.dir) if docs else "",
            )
        )
    return out


def json_doc(store: Store, run_id: str) -> dict:
    from rooftop.interference import report as interference_report

    run = store.get_run(run_id)
    return {
        "schema_version": SCHEMA_VERSION,
        "run": run.id,
        "status": run.status,
        "created": iso_time(run.created),
        "config": run.config,
        "environment": run.environment,
        "wall_s": run.wall_s,
        "measured_s": run.measured_s,
        "overhead": run.overhead,
        "samples": sample_rows(store, run.id),
        "interference": interference_report.interference_json(read_summary(store.run_dir(run.id))),
        "service_points": [service_points.as_dict(p) for p in service_points.load(store, run.id)],
        **answers_json(store, run.id),
    }


def answers_json(store: Store, run_id: str) -> dict:
    """answers: per metric the run's one answer (rooftop.model.answer: the
    verdict, the ridge or why none, the recommended ratio, the accuracy) and
    how many servers for the report's client counts, as `rooftop size RUN
    --clients C --json` gives them: the same numbers, digit for digit;
    service_answers: per service its answer (rooftop.service.answer, as
    `model --json` gives it) and how many servers for the report's line, as
    `rooftop size RUN --clients C --service NAME --json` gives it."""
    from rooftop.service import report as service_report

    res = results.load(store, run_id, [service_report.SECTION])
    c = service_report.REPORT_CLIENTS
    return {
        "answers": [
            {
                "metric": m,
                "unit": a.unit,
                **a.to_dict(),
                "how_many_servers": [sizing.size(a.roofline, n).to_dict() for n in c],
            }
            for m, a in sorted(res.answers.items())
        ],
        "service_answers": [
            dict(s.to_dict(), how_many_servers=[service_report.service_sizing(s, c[0]).to_dict()]) for s in res.services
        ],
    }


def csv_text(store: Store, run_id: str) -> str:
    """One row per sample (CSV_COLUMNS): numbers and text only."""
    run = store.get_run(run_id)
    return _csv(CSV_COLUMNS, (dict(s, ceilings=" ".join(s["ceilings"])) for s in sample_rows(store, run.id)))


def _csv(columns: list[str], rows) -> str:
    """Every CSV of rooftop's: the columns given (a row's other keys left
    out), a text cell a spreadsheet would read as a formula made text
    (rooftop.files.csv_cell: a quote before it; numbers are kept). Python's
    csv quotes a cell holding the line terminator ("\\n") but not a
    carriage return: a row with one has every cell quoted, so it stays one row."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    quoted = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore", lineterminator="\n", quoting=csv.QUOTE_ALL)
    w.writeheader()
    for row in rows:
        cells = {k: csv_cell(v) for k, v in row.items()}
        (quoted if any(isinstance(v, str) and "\r" in v for v in cells.values()) else w).writerow(cells)
    return buf.getvalue()


def nodes_text(store: Store, run_id: str, fmt: str) -> str:
    """`rooftop export RUN --sample-nodes`: which nodes each sample ran on, one row
    per sample, side (server, client) and node index (CSV: joins the
    samples' `id` on `sample_id`), or a list (JSON)."""
    run = store.get_run(run_id)
    rows = [
        {"sample_id": s["id"], "side": side, "node": n}
        for s in store.samples(run.id)
        for side in ("server", "client")
        for n in s[f"{side}_nodes"]
    ]
    if fmt == "json":
        return json_text({"schema_version": SCHEMA_VERSION, "run": run.id, "nodes": rows}, indent=1)
    return _csv(NODE_COLUMNS, rows)


#: `rooftop export RUN --services` CSV columns: read back by `rooftop service --import`.
SERVICE_COLUMNS = [
    "service", "metric", "server_procs", "client_procs", "window", "per_client", "unit",
    "status", "aggregate", "x", "origin", "key", "error",
]  # fmt: skip


def services_text(store: Store, run_id: str, fmt: str) -> str:
    """`rooftop export RUN --services`: the run's service points, one per
    row (CSV, whose ok rows `rooftop service --import` reads back) or a list
    (JSON)."""
    run = store.get_run(run_id)
    pts = [service_points.as_dict(p) for p in service_points.load(store, run.id)]
    if fmt == "json":
        return json_text({"schema_version": SCHEMA_VERSION, "run": run.id, "service_points": pts}, indent=1)
    return _csv(
        SERVICE_COLUMNS,
        (dict(p, key=p["key"] or f"s{p['server_procs']}-c{p['client_procs']}-{p['window']}") for p in pts),
    )


SERIES_COLUMNS = ["run_id", "round", "source", "t", "quantity", "value", "unit"]


def series_text(store: Store, run_id: str, fmt: str) -> str:
    """`rooftop export RUN --series`: the time series of the run's series
    meters (`--series cpu,power`), one point per row (CSV) or a list (JSON)."""
    run = store.get_run(run_id)
    points = store.series(run.id)
    if fmt == "json":
        return json_text({"schema_version": SCHEMA_VERSION, "run": run.id, "series": points}, indent=1)
    return _csv(SERIES_COLUMNS, points)


@dataclass
class Modelled:
    """What `rooftop model` shows (model_of): each metric's evaluation, the
    run's samples, the run's results where the rooflines are its own (its
    answers and outlier scores; None for a parameters file's), the
    services on those rooflines (services, notes) and the combined
    roofline of each mix."""

    evals: list
    samples: list[dict]
    res: object | None
    services: tuple[list, list[str]]
    mixes: list

    def doc(self, run: str | None, params: str | None) -> dict:
        """`rooftop model --json` (schema: rooftop/schemas/model.schema.json)."""
        from rooftop.service import report as service_report

        out = model_doc(run, params, self.evals, self.samples, self.res)
        out.update(service_report.model_json(*self.services))
        if self.mixes:
            out["mixes"] = [c.to_dict() for c in self.mixes]
        return out


def model_of(results_dir: str, run: str | None, params: str | None, mix_files) -> Modelled:
    """The rooflines of a run, or of a parameters file (evaluated against
    the run's validation samples when both are given), with the services
    and mixes on them: what `rooftop model` shows. A run that is not a
    campaign run (rooftop.kinds), or has no ceiling samples, raises
    ModelError."""
    from rooftop.kinds.sections import SECTIONS
    from rooftop.service import report as service_report

    samples, res, store = [], None, None
    if run:
        store = Store(results_dir, create=False)
        kind = kinds.of(store, store.get_run(run))
        if kind is not None:
            raise model.ModelError(kind.no_roofline(store.get_run(run).id))
        res = results.load(store, run, SECTIONS)
        samples = res.samples
    if params:
        rooflines = model.load_params(params)
        evals = [
            model.evaluate(
                r,
                [s for s in samples if s["stage"] == VALIDATION],
                res.run.config.get("nodes") if res else None,
                samples,
            )
            for _, r in sorted(rooflines.items())
        ]
    else:
        assert res is not None  # a run or a parameters file (the command's usage)
        if not res.rooflines:
            metrics = sorted({s["metric"] for s in samples})
            if metrics:  # the model's own message names what is missing
                model.from_run(samples, metrics[0])
            raise model.ModelError(f"run {run} has no ceiling samples (rooftop collect)")
        evals = [res.evaluations[m] for m in sorted(res.rooflines)]
    mixes = mix.combine_files(mix_files, {e.roofline.metric: e.roofline for e in evals})
    if res is not None and not params:  # the run's own answers (attached once by its section)
        services = (res.services, res.service_notes)
    else:  # the run's points against a parameters file's rooflines
        services = service_report.evaluate(
            store, run, {e.roofline.metric: e.roofline for e in evals}, res and res.run.config.get("nodes")
        )
    # Outlier scores and answers: the run's own model only.
    return Modelled(evals, samples, res if res and not params else None, services, mixes)


def model_doc(run: str | None, params: str | None, evals, samples: list[dict], res) -> dict:
    """`rooftop model --json`: each evaluation, with the run's outlier scores
    (res: the run's results, or None for published parameters)."""
    from rooftop.interference import report as interference_report

    scores = res.scores if res else {}
    docs = []
    for e in evals:
        m = e.roofline.metric
        a = answer_of(e, res)
        d = {**e.to_dict(), **a.to_dict()}
        if m in scores:
            d["nodes"] = [sc.to_dict() for sc in scores[m]]
            w = res.without_flagged.get(m)
            d["without_flagged"] = (
                {
                    "nodes": res.flagged(m),
                    "client": {"min": w.client.lo, "median": w.client.centre, "max": w.client.hi},
                    "ridge": answer(w).ridge.to_dict(),
                }
                if w
                else None
            )
        pm = res.pairs.get(m) if res else None
        if pm:
            d["outlier_pairs"] = {
                "used": [list(p) for p in sorted(pm.rates)],
                "left_out": [{"pair": list(p), "median": v, "why": why} for p, (v, why) in sorted(pm.left_out.items())],
                "beside": [
                    {"pair": list(p), "beside": [list(o) for o in others]} for p, others in sorted(pm.beside.items())
                ],
                "cannot_tell": (
                    pm.named.cannot_tell if pm.named else outliers.cannot_tell(pm.rates, pm.nodes, pm.classes)
                )
                or None,
            }
            d["links"] = [lk.to_dict() for lk in pm.named.links] if pm.named else []
            d["suspects"] = [{"suspect": s, "state": st, "batch": b} for s, (st, b) in pm.states.items()]
            d["search_power"] = pm.power
        if res:
            d["under_load"] = interference_report.under_load_json(res, m)
            if res.topology is not None:
                d["client_classes"] = [c.to_dict() for c in res.classes.get(m, [])]
        docs.append(d)
    invalid = [{"key": x["key"], "error": x["error"]} for x in samples if x["status"] == "invalid"]
    return {
        "schema_version": SCHEMA_VERSION,
        "run": run,
        "params": params,
        "metrics": docs,
        "invalid": invalid,
        "interference": interference_report.interference_json(res.part("interference") if res else None),
        "topology": _topology_json(res),
    }


def _topology_json(res) -> dict | None:
    """The topology a run recorded, with how its pairs were sampled (None:
    no topology recorded)."""
    if res is None or res.topology is None:
        return None
    t = res.topology
    sample = res.run.config.get("pair_sample") or {}
    return {
        "source": t.source,
        "note": t.note,
        "switches": len(set(t.switch)),
        "groups": len(set(t.group)),
        "pairs": res.run.config["collect"]["pairs"],
        "sampled_pairs": len(sample.get("pairs") or []),
        "batches": sample.get("batches") or [],
        "stop": sample.get("stop") or None,
    }


#: The direction of a figure of merit: "higher" or "lower" is better, or None
#: (a value with no better direction: the ridge, the wall time).
Better = str | None


def figures_of_merit(store: Store, run_id: str) -> list[tuple[str, float, str, Better]]:
    """(name, value, unit, better) of a run: per metric its ceilings,
    ridge and validation error (where the run has them), then the run's own."""
    from rooftop.interference import report as interference_report
    from rooftop.service import report as service_report

    res = results.load(store, run_id, [interference_report.SECTION, service_report.SECTION])  # their figures of merit
    run = store.get_run(run_id)
    out: list[tuple[str, float, str, Better]] = []
    for metric in sorted(res.rooflines):
        e = res.evaluations[metric]
        a = res.answers[metric]
        d = {**e.to_dict(), **a.to_dict()}
        for side in ("client", "server", "client_node"):
            c = d.get(side)
            for stat in ("min", "median", "max"):
                if c and c.get(stat) is not None:
                    out.append((f"{metric}.{side}.{stat}", c[stat], d["unit"], "higher"))
        # Where the ridge lies is a property of the platform, neither good
        # nor bad; a ridge the verdict does not locate is not a figure.
        if a.located:
            out.append((f"{metric}.ridge.median", d["ridge"]["median"], "servers/client", None))
        # The accuracy counts only the placements that test the model.
        err = a.accuracy.error_pct
        if err is not None:
            out.append((f"{metric}.validation.median_abs_error", err, "%", "lower"))
    studies = interference_report.fom_rows(res.part("interference")) + service_report.fom_rows(res)
    out += [(name, value, unit, "higher" if hi else "lower") for name, value, unit, hi in studies]
    bad = sum(1 for s in res.samples if s["status"] != "ok")
    out.append(("run.samples_not_ok", bad, "samples", "lower"))
    if run.overhead is not None:
        # The wall time follows from what was asked (samples, durations): no better direction.
        out += [("run.overhead", run.overhead * 100, "%", "lower"), ("run.wall", run.wall_s, "s", None)]
    return [f for f in out if isinstance(f[1], (int, float)) and math.isfinite(f[1])]


def fom_text(store: Store, run_id: str) -> str:
    """One line per figure of merit, for regex-based parsers (Ramble, JUBE):
    NAME: VALUE UNIT, then (higher is better) or (lower is better) where
    the figure has a better direction."""
    return "".join(
        f"{name}: {value:.6g} {unit}" + (f" ({better} is better)" if better else "") + "\n"
        for name, value, unit, better in figures_of_merit(store, run_id)
    )


#: A rate's base unit (rooftop.units.UNITS) as a Prometheus metric name's
#: unit suffix (the base units' convention: seconds, bytes, ratios).
PROMETHEUS_UNITS = {"ops/s": "operations_per_second", "bytes/s": "bytes_per_second"}
#: The sides of a roofline whose ceilings a run measures (figures_of_merit's names).
CEILING_SIDES = ("client", "server", "client_node")


def _om_label(v) -> str:
    return str(v).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _om_family(name: str, unit: str, help_text: str, samples: list[tuple[dict, float]]) -> list[str]:
    """One gauge family: # TYPE, # UNIT (when it has one), # HELP, then one
    line per sample, labels in the order given, values at full precision."""
    lines = [f"# TYPE {name} gauge"] + ([f"# UNIT {name} {unit}"] if unit else []) + [f"# HELP {name} {help_text}"]
    for labels, value in samples:
        inner = ",".join(f'{k}="{_om_label(v)}"' for k, v in labels.items())
        lines.append(f"{name}{{{inner}}} {float(value)!r}" if inner else f"{name} {float(value)!r}")
    return lines


def _check_outcome(store: Store, run_id: str) -> list[tuple[str, bool, list]]:
    """(metric, whether a ceiling fell, its changes) of `rooftop check RUN
    --against history` with the default rule; [] when it cannot tell (the
    first run, nothing comparable)."""
    try:
        checks, _, _ = gate.check(store, run_id, "history", rule(None, {})[0])
    except gate.CheckError:  # CannotTell too: nothing to plot for this run
        return []
    return [(c.metric, bool(c.fell), c.changes) for c in sorted(checks, key=lambda c: c.metric)]


def openmetrics_text(store: Store, run_id: str) -> str:
    """`rooftop export RUN --format openmetrics`: the run's ceilings (one
    family per unit, `rooftop_ceiling_operations_per_second{metric,
    ceiling, stat}`), ridges, validation errors, what it ran with
    (`rooftop_run_info`) and the outcome of checking it against the
    history, as OpenMetrics text (also read as Prometheus text: # UNIT and
    # EOF are comments there), for a node exporter's textfile collector or
    a push gateway. No run id among the ceilings' labels: a dashboard
    plots one series per ceiling across runs. Same run, same text."""
    run = store.get_run(run_id)
    env = run.environment
    ceilings: dict[str, list] = {}
    ridge, error, own = [], [], {}
    for name, value, unit, _ in figures_of_merit(store, run_id):
        parts = name.split(".")
        if len(parts) == 3 and parts[1] in CEILING_SIDES:
            ceilings.setdefault(unit, []).append(({"metric": parts[0], "ceiling": parts[1], "stat": parts[2]}, value))
        elif parts[1:] == ["ridge", "median"]:
            ridge.append(({"metric": parts[0]}, value))
        elif parts[1:] == ["validation", "median_abs_error"]:
            error.append(({"metric": parts[0]}, value / 100))
        elif parts[0] == "run":
            own[parts[1]] = value
    info = {
        "run": run.id,
        "status": run.status,
        "rooftop_version": env.get("rooftop") or "",
        "engine_version": env.get("engine_version") or "",
        "libfabric_version": env.get("libfabric") or "",
        "git": env.get("git") or "",
        "fabric": run.config["fabric"]["provider"],
        "launcher": run.config["launcher"]["type"],
        "host": env.get("host") or "",
    }
    lines = _om_family("rooftop_run_info", "", "The run these values come from and what measured it.", [(info, 1)])
    created = datetime.fromisoformat(utc_stamp(run.created)).timestamp() if run.created else None
    if created is not None:
        lines += _om_family(
            "rooftop_run_start_time_seconds", "seconds", "When the run started (Unix time).", [({}, created)]
        )
    for unit in sorted(ceilings):
        prom = PROMETHEUS_UNITS[unit]
        lines += _om_family(
            f"rooftop_ceiling_{prom}",
            prom,
            f"A ceiling per process of the roofline, in {unit}: min, median, max over its windows.",
            ceilings[unit],
        )
    if ridge:
        lines += _om_family(
            "rooftop_ridge_servers_per_client", "servers_per_client", "Where the roofline's ridge lies.", ridge
        )
    if error:
        lines += _om_family(
            "rooftop_validation_error_ratio",
            "ratio",
            "Median absolute error of the model on the validation grid.",
            error,
        )
    lines += _om_family(
        "rooftop_run_samples_not_ok", "", "Samples of the run that are not ok.", [({}, own.get("samples_not_ok", 0))]
    )
    if "wall" in own:
        lines += _om_family("rooftop_run_wall_seconds", "seconds", "The run's wall time.", [({}, own["wall"])])
        lines += _om_family(
            "rooftop_run_overhead_ratio", "ratio", "The run's time not spent measuring.", [({}, own["overhead"] / 100)]
        )
    checked = _check_outcome(store, run_id)
    if checked:
        lines += _om_family(
            "rooftop_check_fell",
            "",
            "1 when a ceiling fell beyond noise against the history (rooftop check RUN --against history), else 0.",
            [({"metric": m}, int(fell)) for m, fell, _ in checked],
        )
        lines += _om_family(
            "rooftop_check_change_ratio",
            "ratio",
            "A ceiling's change against the history: (now - before) / before.",
            [({"metric": m, "ceiling": c.ceiling}, c.change) for m, _, changes in checked for c in changes],
        )
    return "\n".join([*lines, "# EOF", ""])
