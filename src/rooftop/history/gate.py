"""What `rooftop check` does with a run: find what it is compared with (a
named baseline, an earlier run, or the comparable history), apply the rule
(rooftop.history.check) per metric, and say why when nothing is
comparable or a ceiling could not be compared (CannotTell, and check's
third value: the command exits 4, rooftop.exits.CANNOT_TELL); a baseline
or run that is not there is a CheckError (exit 2)."""

from __future__ import annotations

from rooftop.history import baselines, series
from rooftop.history.check import NAMES, MetricCheck, against_history, against_run
from rooftop.history.comparable import differences
from rooftop.history.keys import Rule
from rooftop.store.records import StoreError


class CheckError(StoreError):
    """A bad argument (no such baseline or run); the message says why (exit 2)."""


class CannotTell(CheckError):
    """Nothing to compare with: no comparable run or baseline, or no
    ceilings to compare (a stage missing, rows damaged in the database);
    the message says why. `check` exits 4 (rooftop.exits.CANNOT_TELL),
    never 1, which means a ceiling fell."""


def latest(store) -> str:
    """The newest complete run of the folder."""
    done = [r for r in store.runs() if r.status == "complete"]
    if not done:
        raise CheckError(f"no complete run in {store.dir} ('latest' names the newest complete run)")
    return max(done, key=lambda r: (r.created, r.id)).id


def _why_not(rc: series.RunCeilings, others: list[series.RunCeilings]) -> str:
    same = [o for o in others if o.metric == rc.metric and o.run != rc.run]
    if not same:
        return f"{rc.metric}: no other complete run measured {rc.metric}"
    o = max(same, key=lambda o: (o.created, o.run))
    return f"{rc.metric}: no comparable run; the newest with {rc.metric}, {o.run}, differs in " + "; ".join(
        differences(rc.signature, o.signature)
    )


def against(store, name: str, damaged: dict[str, str] | None = None) -> tuple[str, dict[str, series.RunCeilings], str]:
    """(its run id, {metric: ceilings}, a label) of a named baseline or a
    run id; CheckError when it is neither. damaged: filled with {metric:
    why} for metrics whose ceilings are damaged in the database (as
    baselines.load and series.of_run fill it)."""
    saved = baselines.load(store, name, damaged)
    if saved is not None:
        return saved[0], saved[1], f"baseline {name} (run {saved[0]})"
    try:
        store.get_run(name)
    except StoreError:
        known = ", ".join(n for n, _, _ in baselines.names(store)) or "none saved"
        raise CheckError(
            f"--against {name}: no baseline of that name (baselines: {known}) and no such run; "
            f"save one with 'rooftop check --save-baseline NAME RUN'"
        ) from None
    return name, series.of_run(store, name, damaged), f"run {name}"


def check(store, run_id: str, against_what: str, rule: Rule) -> tuple[list[MetricCheck], dict[str, str], list[str]]:
    """(the checks per comparable metric, {metric: why it has none}, what it
    could not tell: the metrics and ceilings left uncompared because their
    data is damaged in the database, rooftop.store.damage); raises
    CannotTell when no metric of the run has anything to be compared with,
    CheckError for a baseline or run that is not there."""
    damaged: dict[str, str] = {}
    mine = series.of_run(store, run_id, damaged)
    if not mine:
        why = "; ".join(damaged.values()) or f"see 'rooftop model {run_id}'"
        raise CannotTell(f"run {run_id} has no metric whose ceilings can be built ({why})")
    checks: list = []
    skipped: dict = {}
    untold = [f"{metric}: run {run_id} has no ceilings: {why}" for metric, why in damaged.items()]
    skipped.update(zip(damaged, untold))
    if against_what == "history":
        _against_history(store, mine, rule, checks, skipped)
    else:
        _against_baseline(store, run_id, against_what, mine, rule, (checks, skipped, untold))
    if not checks and not (against_what == "history" and first_run(store, run_id)):
        raise CannotTell(f"run {run_id}: nothing comparable to check against ({'; '.join(skipped.values())})")
    return checks, skipped, untold


def _against_history(store, mine: dict, rule: Rule, checks: list, skipped: dict) -> None:
    """check --against history: each metric against the earlier runs of its
    series (checks), or why it has none (skipped)."""
    groups = series.history(store)
    everyone = [rc for runs in groups.values() for rc in runs]
    for metric, rc in mine.items():
        prior = [r for r in groups.get(rc.key, []) if (r.created, r.run) < (rc.created, rc.run)]
        if not prior:
            skipped[metric] = _why_not(rc, [r for r in everyone if (r.created, r.run) < (rc.created, rc.run)])
            continue
        checks.append(against_history(rc, prior, rule.of(metric), rule.k, rule.last))


def _against_baseline(store, run_id: str, against_what: str, mine: dict, rule: Rule, out: tuple) -> None:
    """check --against a baseline or run: each metric against its own there.
    out: (checks, {metric: why none}, what could not be told), added to."""
    checks, skipped, untold = out
    base_damaged: dict[str, str] = {}
    base_run, base, label = against(store, against_what, base_damaged)
    for metric, rc in mine.items():
        b = base.get(metric)
        lost = base_damaged.get(metric) or base_damaged.get("")
        if b is None and lost:
            skipped[metric] = f"{metric}: {label} has no ceilings: {lost}"
            untold.append(skipped[metric])
        elif b is None:
            skipped[metric] = f"{metric}: {label} did not measure {metric}"
        elif b.key != rc.key:
            skipped[metric] = f"{metric}: {label} is not comparable: " + "; ".join(
                differences(rc.signature, b.signature)
            )
        elif base_run == run_id:
            skipped[metric] = f"{metric}: {label} is the run itself"
        else:
            mc = against_run(rc, b, rule.of(metric), label)
            for name in rc.ceilings.keys() & b.damaged.keys():
                mc.notes.append(f"the {NAMES[name]} was not compared: {label}'s is {b.damaged[name]}")
                untold.append(f"{metric} {NAMES[name]}: {label}'s is {b.damaged[name]}")
            checks.append(mc)


def first_run(store, run_id: str) -> bool:
    """No complete run with ceilings is older than run_id: it starts the
    history (a weekly job's first run), so `check --against history` has
    nothing to fall from, which is not an error. Earlier runs that are all
    incomparable still are: the job's config changed under it."""
    mine = series.of_run(store, run_id)
    if not mine:
        return False
    rc = next(iter(mine.values()))
    return not any((r.created, r.run) < (rc.created, rc.run) for runs in series.history(store).values() for r in runs)
