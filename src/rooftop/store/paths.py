"""Paths the store keeps, relative to the results folder (issue 30, item 2).

A results folder is carried whole: moved, copied, zipped or opened from
another directory, it must give the same report. So every path a row holds
that points into the folder (samples.raw_dir: a round's engine documents,
RUN/raw/ROUND) is stored relative to the folder holding rooftop.db, and
resolved against the folder the store was opened on when it is read. A
path outside the folder (none that rooftop writes) is stored absolute.

Databases written before (migration 13) held the path as the campaign
gave it: relative to the directory `collect` ran in
(`rooftop-results/RUN/raw/ROUND`) or absolute, possibly of a folder since
moved. map_old() maps those to the folder's own layout; what it cannot map
stays as it was and is recorded in the table unmapped_paths.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePath

#: Paths migration 13 could not map into the results folder.
UNMAPPED_DDL = """CREATE TABLE IF NOT EXISTS unmapped_paths (
    tbl         TEXT NOT NULL,          -- the table (samples)
    run_id      TEXT NOT NULL,
    key         TEXT NOT NULL,          -- the row's key (samples.key)
    path        TEXT NOT NULL,          -- the path as stored, left as it was
    PRIMARY KEY (tbl, run_id, key)
) WITHOUT ROWID"""


def _absolute(path: str | Path) -> str:
    return os.path.normpath(os.path.abspath(path))


def stored(folder: Path, path: str | Path) -> str:
    """The form a path given by a caller (relative to the current directory,
    or absolute) is stored in: relative to the results folder when inside
    it, else absolute; '' stays ''."""
    if not str(path):
        return ""
    p = _absolute(path)
    for base in {_absolute(folder), os.path.realpath(folder)}:
        if p == base or p.startswith(base.rstrip(os.sep) + os.sep):
            return os.path.relpath(p, base)
    real = os.path.realpath(p)  # the folder reached through a symbolic link
    base = os.path.realpath(folder)
    if real.startswith(base.rstrip(os.sep) + os.sep):
        return os.path.relpath(real, base)
    return p


def resolved(folder: Path, path: str) -> str:
    """A stored path as a path to open: a relative one joined to the folder
    the store was opened on (as given, so it equals the paths a campaign
    builds from the same store); '' and absolute ones as they are."""
    if not path or PurePath(path).is_absolute():
        return path
    return str(folder / path)


def map_old(folder: Path, run_id: str, path: str) -> str | None:
    """An old row's path (relative to wherever collect ran, or absolute) as
    stored now; None when it cannot be mapped into the folder."""
    if not path:
        return ""
    p = PurePath(path)
    if p.is_absolute():
        inside = stored(folder, path)
        if not PurePath(inside).is_absolute():
            return inside
    parts = p.parts
    if run_id in parts:  # RESULTS/RUN/...: rooftop's own layout, wherever RESULTS was
        at = len(parts) - 1 - parts[::-1].index(run_id)
        return str(PurePath(*parts[at:]))
    if "raw" in parts:  # a renamed run folder: the round under this run's raw/, if there
        at = len(parts) - 1 - parts[::-1].index("raw")
        candidate = PurePath(run_id, *parts[at:])
        if (folder / candidate).is_dir():
            return str(candidate)
    if not p.is_absolute() and (folder / p).exists():  # already relative to the folder
        return str(p)
    return None
