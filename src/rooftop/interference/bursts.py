"""`rooftop interfere --bursts-run RUN`: a bursts run as the service measured
alone and beside each load (rooftop.interference.run does the rest).

The service is RUN's resolved config: its progress modes, bursts, gaps,
interval, metric and clients (rooftop.bursts), measured again alone (the
isolated run: the machine may have changed since RUN) and then beside
each load condition, each an ordinary bursts run of the store (`rooftop
report` shows its time line). RUN's neighbour job, if any, is left out:
here the loads are what runs beside the server.

Impact per progress mode (stage 'bursts/MODE'): the mean rate of every
burst window alone / beside the load, and loaded / alone for the mean
99th-percentile latency of those windows. A busy-polling server beside a
CPU load is where the modes part: it fights the load for its core, while
a blocking one gives it up.
"""

from __future__ import annotations

import copy

from rooftop.bursts import run as bursts
from rooftop.interference.run import measuring
from rooftop.stages.base import Placement
from rooftop.store.records import StoreError


def config(store, run_id: str, record: dict) -> dict:
    """RUN's config as the isolated run's (ValueError: not a bursts run)."""
    try:
        run = store.get_run(run_id)
    except StoreError as e:
        raise ValueError(f"--bursts-run: {e}") from None
    if "bursts" not in run.config or run.config.get("stages") != ["bursts"]:
        raise ValueError(f"--bursts-run {run_id}: not a bursts run (rooftop bursts makes one)")
    cfg = copy.deepcopy(run.config)
    cfg["bursts"].update(neighbour=None, neighbour_argv=None, neighbour_cores=None)
    cfg["interfere"] = {"role": "isolated", "bursts_of": run_id, **record}
    return cfg


def placements(cfg: dict) -> list[Placement]:
    """The service as one placement: the server on its node, every burst
    window of every mode (what `shared` and the status check read)."""
    p = cfg["bursts"]
    measured = [bursts.burst(p, mode, b) for mode in p["progress"] for b in range(p["bursts"])]
    return [Placement([p["server_node"]], 1, measured)]


def measure(cfg: dict, store, run_id: str, log, say=lambda m: None) -> tuple[int, int]:
    """Every mode's bursts; (windows stored ok, windows failed). say: where
    the modes' progress and failures go (stderr)."""
    failed = bursts.run_modes(cfg, store, run_id, say, log)
    stored = len(bursts.planned_keys(cfg["bursts"]) & store.stored_keys(run_id))
    return stored - failed, failed


def _rate_p99(store, run_id: str, metric: str, mode: str) -> tuple[float | None, float | None, str]:
    prefix = f"bursts/{metric}/{mode}/"
    rows = [s for s in store.samples(run_id, metric=metric) if s["status"] == "ok" and s["key"].startswith(prefix)]
    if not rows:
        return None, None, ""
    rates = [s["aggregate"] for s in rows if s["aggregate"] is not None]
    p99s = [q["latency_p99"][0] for q in (store.sample_quantities(s["id"]) for s in rows) if "latency_p99" in q]
    mean = lambda v: sum(v) / len(v) if v else None
    return mean(rates), mean(p99s), rows[0]["unit"]


def impacts(store, base: str, loaded: str, cfg: dict) -> list[dict]:
    """Per progress mode: both runs' mean window rate and p99, and the
    impact factors (as rooftop.interference.run.impacts, stage 'bursts/MODE')."""
    p, out = cfg["bursts"], []
    for mode in p["progress"]:
        ri, pi, unit = _rate_p99(store, base, p["metric"], mode)
        rl, pl, loaded_unit = _rate_p99(store, loaded, p["metric"], mode)
        out.append(
            {
                "stage": f"bursts/{mode}",
                "metric": p["metric"],
                "unit": unit or loaded_unit,  # (a run with no usable window of the mode has none)
                "rate_isolated": ri,
                "rate_loaded": rl,
                "impact_rate": ri / rl if ri and rl else None,
                "p99_isolated_us": pi,
                "p99_loaded_us": pl,
                "impact_p99": pl / pi if pi and pl else None,
            }
        )
    return out


def mode_intervals(cfg: dict):
    """groups for rooftop.interference.run.run_condition: per progress mode, when
    its bursts measured (its rounds' folders, raw/bursts_METRIC_MODE_bB)."""
    p = cfg["bursts"]
    return lambda run_dir: {mode: measuring(run_dir, f"bursts_{p['metric']}_{mode}_b*") for mode in p["progress"]}


def add_load_slowdowns(impact_rows: list[dict], copies: list[dict]) -> None:
    """Each mode's row gets the loads' own slowdown during that mode's
    bursts (mean over the copies): what each progress mode cost the job."""
    for row in impact_rows:
        mode = row["stage"].removeprefix("bursts/")
        slow = [x["by"][mode]["slowdown"] for x in copies if x.get("by", {}).get(mode, {}).get("slowdown")]
        row["load_slowdown"] = sum(slow) / len(slow) if slow else None
