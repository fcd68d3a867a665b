"""What `rooftop check` does with a run: find what it is compared with (a
named baseline, an earlier run, or the comparable history), apply the rule
(rooftop.history.check) per metric, and say why when nothing is
comparable (CheckError: the command exits 2)."""

from __future__ import annotations

from rooftop import metrics
from rooftop.history import baselines, series
from rooftop.history.check import DEFAULT_THRESHOLD, K_MAD, LAST, MetricCheck, against_history, against_run
from rooftop.history.comparable import differences
from rooftop.store.records import StoreError


class CheckError(StoreError):
    """Nothing to compare with, or a bad argument; the message says why."""


def latest(store) -> str:
    """The newest complete run of the folder."""
    done = [r for r in store.runs() if r.status == "complete"]
    if not done:
        raise CheckError(f"no complete run in {store.dir} ('latest' names the newest complete run)")
    return max(done, key=lambda r: (r.created, r.id)).id


def thresholds(items: list[str]) -> dict[str, float]:
    """--threshold METRIC=PCT, repeatable: {metric: fraction}."""
    out = {}
    for item in items:
        metric, _, pct = item.partition("=")
        if metric not in metrics.METRICS:
            raise CheckError(f"--threshold {item}: {metric!r} is not a metric ({', '.join(metrics.METRICS)})")
        try:
            v = float(pct) / 100
        except ValueError:
            v = -1.0
        if not 0 < v < 1:
            raise CheckError(f"--threshold {item}: expected METRIC=PCT with PCT between 0 and 100 (e.g. bw=15)")
        out[metric] = v
    return out


def _why_not(rc: series.RunCeilings, others: list[series.RunCeilings]) -> str:
    same = [o for o in others if o.metric == rc.metric and o.run != rc.run]
    if not same:
        return f"{rc.metric}: no other complete run measured {rc.metric}"
    o = max(same, key=lambda o: (o.created, o.run))
    return f"{rc.metric}: no comparable run; the newest with {rc.metric}, {o.run}, differs in " + "; ".join(
        differences(rc.signature, o.signature)
    )


def check(
    store, run_id: str, against: str, limits: dict[str, float], k: float = K_MAD, last: int = LAST
) -> tuple[list[MetricCheck], dict[str, str]]:
    """(the checks per comparable metric, {metric: why it has none}); raises
    CheckError when no metric of the run has anything to be compared with."""
    mine = series.of_run(store, run_id)
    if not mine:
        raise CheckError(f"run {run_id} has no metric whose ceilings can be built (see 'rooftop model {run_id}')")
    checks, skipped = [], {}
    if against == "history":
        groups = series.history(store)
        everyone = [rc for runs in groups.values() for rc in runs]
        for metric, rc in mine.items():
            prior = [r for r in groups.get(rc.key, []) if (r.created, r.run) < (rc.created, rc.run)]
            if not prior:
                skipped[metric] = _why_not(rc, [r for r in everyone if (r.created, r.run) < (rc.created, rc.run)])
                continue
            checks.append(against_history(rc, prior, limits.get(metric, DEFAULT_THRESHOLD), k, last))
    else:
        saved = baselines.load(store, against)
        if saved is not None:
            base_run, base, label = saved[0], saved[1], f"baseline {against} (run {saved[0]})"
        else:
            try:
                store.get_run(against)
            except StoreError:
                known = ", ".join(n for n, _, _ in baselines.names(store)) or "none saved"
                raise CheckError(
                    f"--against {against}: no baseline of that name (baselines: {known}) and no such run; "
                    f"save one with 'rooftop check --save-baseline NAME RUN'"
                ) from None
            base_run, base, label = against, series.of_run(store, against), f"run {against}"
        for metric, rc in mine.items():
            b = base.get(metric)
            if b is None:
                skipped[metric] = f"{metric}: {label} did not measure {metric}"
            elif b.key != rc.key:
                skipped[metric] = f"{metric}: {label} is not comparable: " + "; ".join(
                    differences(rc.signature, b.signature)
                )
            elif base_run == run_id:
                skipped[metric] = f"{metric}: {label} is the run itself"
            else:
                checks.append(against_run(rc, b, limits.get(metric, DEFAULT_THRESHOLD), label))
    if not checks:
        raise CheckError(f"run {run_id}: nothing comparable to check against ({'; '.join(skipped.values())})")
    return checks, skipped
