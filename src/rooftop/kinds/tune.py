"""Runs of `rooftop tune`: the adaptive loop's steps (rooftop.learn.tune)."""

from pathlib import Path

from rooftop import metrics
from rooftop.kinds.base import RunKind
from rooftop.learn import tune_report


def _outcome(store, run) -> dict:
    from rooftop.learn.tune_run import load, outcome_of

    out = load(store, run.id)
    return out if out is not None else outcome_of(store, run)  # interrupted: the stored steps


def _report(store, run, out_dir: Path):
    out = _outcome(store, run)
    return tune_report.write(out, metrics.get(out["metric"]).unit, run.id, out_dir)


KIND = RunKind(
    name="tune", command="rooftop tune", recognises=lambda store, run: bool(store.tune_steps(run.id)), report=_report
)
