"""The database connection under every store table: opening (with its checks and
migrations), waiting for a database another process holds, and errors that name
the store and what to do (guarded)."""

from __future__ import annotations

import errno
import functools
import os
import sqlite3
import time
from pathlib import Path
from typing import cast

from rooftop.store.records import NewerSchema, StoreError
from rooftop.store.schema import MIGRATIONS, SCHEMA_VERSION, Migrating

#: Databases up to this size are checked (PRAGMA quick_check) on every open.
QUICK_CHECK_BYTES = 256 << 20


#: How long a store operation waits, in all, while another process holds
#: the database (a reader inside a transaction, a backup, a second
#: campaign): seconds, from the environment variable ROOFTOP_DB_WAIT
#: (default 300, at most a day). SQLite waits up to 30 s per try; between
#: tries the transaction is rolled back and tried again after a pause.
DB_WAIT_DEFAULT = 300.0
DB_WAIT_MAX = 86400.0


def db_wait() -> float:
    try:
        value = float(os.environ.get("ROOFTOP_DB_WAIT", DB_WAIT_DEFAULT))
    except ValueError:
        value = DB_WAIT_DEFAULT
    return min(max(value, 0.0), DB_WAIT_MAX) if value == value else DB_WAIT_DEFAULT


def _busy(e: Exception) -> bool:
    return isinstance(e, sqlite3.OperationalError) and any(
        w in str(e) for w in ("database is locked", "database is busy", "database table is locked")
    )


def guarded(method):
    """SQLite and file-system failures become StoreErrors naming the store.
    A database another process holds is waited for (db_wait(): every try
    rolls back what it began, so a try is repeated whole)."""

    @functools.wraps(method)
    def call(self, *args, **kwargs):
        outer = not getattr(self, "_in_call", False)
        start, pause = time.monotonic(), 0.5
        self._in_call = True
        try:
            while True:
                try:
                    return method(self, *args, **kwargs)
                except sqlite3.Error as e:
                    waited = time.monotonic() - start
                    if outer and _busy(e) and waited < self.wait_s:
                        self._rollback()
                        time.sleep(min(pause, max(0.0, self.wait_s - waited)))
                        pause = min(pause * 2, 10.0)
                        continue
                    self._rollback()
                    raise StoreError(self.explain(e, waited if _busy(e) else None)) from None
                except OSError as e:
                    raise StoreError(self.explain_os(e)) from None
        finally:
            if outer:
                self._in_call = False

    return call


class StoreBase:
    """The connection under the tables (rooftop.store.db.Store gathers them).
    create: make the folder and database if missing (collect); else a
    missing store is a StoreError and nothing is created."""

    db: sqlite3.Connection

    def __init__(self, results_dir: str | Path, create: bool = True):
        self.dir = Path(results_dir)
        self.path = self.dir / "rooftop.db"
        #: Values every sample this process stores gets (unless the row sets them).
        self.marks: dict = {}
        #: Seconds an operation waits for a database another process holds (db_wait).
        self.wait_s = db_wait()
        self._open(create)

    def _rollback(self) -> None:
        """Ends a transaction a failed operation left open (its work is undone)."""
        db = getattr(self, "db", None)
        if db is not None:
            try:
                db.rollback()
            except sqlite3.Error:
                pass

    def explain_os(self, e: OSError) -> str:
        """One message for a file-system failure in the results folder."""
        where = f" ({e.filename})" if e.filename else ""
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            return (
                f"results folder {self.dir}: its file system is full ({e.strerror}){where}; "
                f"free space there or choose another --results"
            )
        return (
            f"results folder {self.dir}: {e.strerror or e}{where}; "
            f"check its permissions and free space, or choose another --results"
        )

    def explain(self, e: Exception, waited: float | None = None) -> str:
        """One message for a database failure: the path and what to do."""
        text = str(e)
        if waited is not None:
            return (
                f"results database {self.path} is locked by another process ({text}; waited "
                f"{waited:.0f} s, ROOFTOP_DB_WAIT={self.wait_s:g}): close what holds it "
                f"(an open sqlite3 shell, a reader inside a transaction)"
            )
        if "disk is full" in text or "disk I/O error" in text:
            return (
                f"results database {self.path}: the file system of {self.dir} is full or failing "
                f"({text}); free space there or choose another --results"
            )
        if isinstance(e, sqlite3.DatabaseError) and any(
            w in text for w in ("not a database", "malformed", "corrupt", "damaged")
        ):
            return (
                f"results database {self.path} is damaged ({text}): "
                f"'rooftop doctor --results {self.dir} --rebuild' rebuilds it from the engine "
                f"documents in {self.dir}"
            )
        if "readonly" in text or "read-only" in text or "unable to open" in text:
            return (
                f"results database {self.path} cannot be written ({text}): make {self.dir} "
                f"writable or choose another --results"
            )
        return f"results database {self.path}: {text}"

    @staticmethod
    def exists(results_dir: str | Path) -> bool:
        return (Path(results_dir) / "rooftop.db").is_file()

    def _check_folder(self, create: bool) -> None:
        if self.dir.is_symlink() and not self.dir.exists():
            raise StoreError(
                f"results folder {self.dir} is a symbolic link to {os.readlink(self.dir)}, which does not exist: "
                f"rooftop creates nothing through a link; create that folder, or give --results a real folder"
            )
        if self.dir.exists() and not self.dir.is_dir():
            raise StoreError(
                f"results folder {self.dir} is a file, not a folder: give --results a folder (or move the file away)"
            )
        if self.path.is_symlink():
            # A link (dangling or not) would have SQLite create or write its
            # target, wherever it points, as whoever runs rooftop.
            raise StoreError(
                f"results database {self.path} is a symbolic link (to {os.readlink(self.path)}): rooftop opens "
                f"and creates its database only in the results folder itself, never through a link; remove the "
                f"link, or give --results the folder that holds the database"
            )
        if self.path.exists() and not self.path.is_file():
            raise StoreError(f"results database {self.path} is not a file: move it away")
        if not create and not self.path.exists():
            raise StoreError(
                f"no results in {self.dir} (no {self.path.name}): start a run with "
                f"'rooftop collect --results {self.dir}'"
            )
        self.dir.mkdir(parents=True, exist_ok=True)
        try:  # created here, following no link (a link planted since is refused: O_EXCL, O_NOFOLLOW)
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644))
        except FileExistsError:
            if self.path.is_symlink():
                raise StoreError(
                    f"results database {self.path} became a symbolic link while rooftop opened it: remove the link"
                ) from None

    @guarded
    def _open(self, create: bool) -> None:
        self._check_folder(create)
        if getattr(self, "db", None) is not None:  # an earlier try found the database busy
            self.db.close()
        self.db = sqlite3.connect(self.path, timeout=min(30.0, self.wait_s))
        self.db.row_factory = sqlite3.Row
        if self.path.stat().st_size <= QUICK_CHECK_BYTES:
            problems = [r[0] for r in self.db.execute("PRAGMA quick_check")]
            if problems != ["ok"]:
                raise sqlite3.DatabaseError("damaged: " + "; ".join(problems[:3]))
        self._bins: tuple = (None, {})  # the last round folder's latency bins (see _latency)
        self._migrate()

    def version(self) -> int:
        """The database's schema version: the last migration applied."""
        return self.db.execute("PRAGMA user_version").fetchone()[0]

    def _migrate(self) -> None:
        """Applies the migrations the database lacks, all in one transaction.
        BEGIN IMMEDIATE takes the write lock first, so a second campaign
        opening the same old database waits, then finds it migrated."""
        start = self._check_version()
        if start == SCHEMA_VERSION:
            return
        try:
            self.db.execute("BEGIN IMMEDIATE")
            start = self._check_version()  # as of holding the lock
            store = cast(Migrating, self)  # Store: its SampleTables fill the new tables
            for m in MIGRATIONS[start:]:
                m.apply(store)
                self.db.execute(f"PRAGMA user_version = {m.number}")
            self.db.commit()
        except BaseException as e:
            self.db.rollback()
            if isinstance(e, sqlite3.Error) and not _busy(e):  # busy: tried again (guarded)
                raise StoreError(
                    f"{self.explain(e)} (while upgrading its schema from version {start} to {SCHEMA_VERSION})"
                ) from None
            raise

    def _check_version(self) -> int:
        have = self.version()
        if have > SCHEMA_VERSION:
            raise NewerSchema(self.path, have, SCHEMA_VERSION)
        return have

    def close(self) -> None:
        self.db.close()

    def run_dir(self, run_id: str) -> Path:
        return self.dir / run_id
