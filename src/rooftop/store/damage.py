"""Rows damaged in the database: a stored rate that is not one (NULL or 0
where a sample measured, negative, not finite, not a number: the rule is
rooftop.numbers.rate_problem), met where rows are read (the samples
reader, Store.samples; the service points reader,
rooftop.service.points.load; stored baselines, rooftop.history.baselines).

Such a row is never a traceback. As read, its damaged values are null and
its error begins with DAMAGED and names them; a sample that said ok reads
`invalid`, so the one exclusion rule (rooftop.model.exclusion) keeps it
out of everything derived, and every output (export, model, report) says
why. Each damaged row is noted once here by name (run, sample or point,
column, value); the command line prints the notes once, at the end of the
command, on stderr (taken)."""

from __future__ import annotations

from rooftop.numbers import rate_problem

#: How a damaged row's error begins (as read; the database is not changed).
DAMAGED = "damaged in the database"
#: The rate columns of a sample row.
SAMPLE_RATES = ("aggregate", "per_server", "per_client")

_noted: dict[str, None] = {}  # insertion-ordered, each once


def note(text: str) -> None:
    """Records one damaged row (the same text once)."""
    _noted.setdefault(text, None)


def taken() -> list[str]:
    """The damaged rows noted since the last call, in the order met; forgets them."""
    out = list(_noted)
    _noted.clear()
    return out


def is_damaged(row: dict) -> bool:
    """Whether a row as read was damaged (its error says so)."""
    return str(row.get("error") or "").startswith(DAMAGED)


def mark(row: dict, columns, where: str) -> bool:
    """Checks the rate columns of a row as read (a dict with status and
    error), and where one is not a rate: nulls it, says so in the error
    (and a row that said ok reads invalid), notes it under `where` (e.g.
    'run R sample 12 (KEY)'). True when the row was damaged."""
    measured = row.get("status") == "ok"
    bad = []
    for col in columns:
        why = rate_problem(row.get(col), measured)
        if why:
            bad.append(f"{col} = {why}")
            row[col] = None
    if not bad:
        return False
    text = ", ".join(bad)
    if measured:
        row["status"] = "invalid"
    old = row.get("error") or ""
    row["error"] = f"{DAMAGED}: {text}; left out" + (f" ({old})" if old else "")
    note(f"{where}: {text}")
    return True


def lines(notes: list[str], most: int = 10) -> list[str]:
    """The warning the command line prints for notes (taken()): a head line,
    then up to `most` rows."""
    if not notes:
        return []
    head = f"warning: {len(notes)} row(s) {DAMAGED} were left out of everything derived from them:"
    more = [f"  ... and {len(notes) - most} more"] if len(notes) > most else []
    return [head, *(f"  {n}" for n in notes[:most]), *more]
