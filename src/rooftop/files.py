"""Every file a command writes for its user, written one way (write()):
whole or not at all, never through a link.

  - into a temporary file of its own folder, created new (O_CREAT|O_EXCL|
    O_NOFOLLOW; its mode from the umask, or the one asked for), written,
    fsynced, then renamed over the target: a kill or a full disk at any
    point leaves the previous file as it was (and no temporary file:
    removed on error), never a 0-byte or half file;
  - the rename replaces the target's name: a link there is replaced by the
    file, never written through (whoever planted it, wherever it leads);
  - inside confined(BASE) (the commands that write into a results folder:
    RESULTS/RUN, or the --out-dir given), the folder a file goes into must
    lead to BASE or a folder under it (a `report` or `figures` link out of
    the run's folder is refused before anything is written), and must be
    owned by the invoking user, root or BASE's owner (a folder planted by
    a third user is refused). The folder is opened once, its real place
    checked on the descriptor, and the file created through it: a folder
    swapped for a link after the check is not followed.

A path the user named (`export -o FILE`, `check --junit FILE`) is the
user's choice: its folder is not confined, but the file itself is still
written as above.

Errors are OSErrors: the file system's own (a full disk, a read-only
mount, no permission) with the target's name, as the command line words
them; OutputError (an OSError too) for a refusal or a target that cannot
be a file, with its one line.

Also here, for the CSV files rooftop writes and reads back: csv_cell(), a
text cell a spreadsheet would read as a formula made text (OWASP's rule),
and csv_value(), its inverse.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import os
import re
import secrets
from collections.abc import Iterator
from pathlib import Path

#: The folder the current command's files must stay in (confined()).
_BASE: contextvars.ContextVar[Path | None] = contextvars.ContextVar("rooftop_output_base", default=None)
#: Errors of the file system the command line words itself (rooftop.cli.main).
_SYSTEM = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM)


class OutputError(OSError):
    """A file refused (a link out of the run's folder, a folder of another
    user) or one that cannot be written (a folder in its place): one line."""

    def __init__(self, message: str, code: int = errno.EPERM) -> None:
        super().__init__(code, message)
        self.message = message

    def __str__(self) -> str:
        return self.message


@contextlib.contextmanager
def confined(base: Path | str | None) -> Iterator[None]:
    """Within it, write() keeps every file inside base (its real place;
    None: no confinement)."""
    token = _BASE.set(None if base is None else Path(base))
    try:
        yield
    finally:
        _BASE.reset(token)


def write(path: Path | str, data: str | bytes, mode: int | None = None) -> Path:
    """Writes data (text: UTF-8) to path whole, as the module says; mode:
    the file's permissions (default: 0666 less the umask). Returns path."""
    path = Path(path)
    raw = data.encode() if isinstance(data, str) else data
    base = _BASE.get()
    folder = _open_folder(path, base)
    try:
        tmp = _write_temp(folder, path, raw, mode)
        try:
            os.rename(tmp, path.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            _unlink(tmp, folder)
            raise
        with contextlib.suppress(OSError):  # the rename itself on disk (a file system may not sync folders)
            os.fsync(folder)
    except OutputError:
        raise
    except OSError as e:
        raise _error(e, path) from None
    finally:
        os.close(folder)
    return path


def _error(e: OSError, path: Path) -> OSError:
    """e named after path (not its temporary file): the file system's own
    errors as they are; others (a folder where the file should be) as one line."""
    if e.errno in _SYSTEM:
        return OSError(e.errno, e.strerror, str(path))
    if e.errno == errno.EISDIR:
        return OutputError(f"cannot write {path}: a folder has that name; remove it or choose another name", e.errno)
    return OutputError(f"cannot write {path}: {e.strerror or e}", e.errno or errno.EIO)


def _write_temp(folder: int, path: Path, raw: bytes, mode: int | None) -> str:
    """A new file of folder holding raw, synced; its name."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(100):
        tmp = f".{path.name[:200]}.{secrets.token_hex(4)}.tmp"
        try:
            fd = os.open(tmp, flags, 0o666 if mode is None else mode & 0o777, dir_fd=folder)
            break
        except FileExistsError:
            continue  # someone's file of that name: another name, never theirs
    else:
        raise OutputError(f"cannot write {path}: no free temporary name in its folder", errno.EEXIST)
    try:
        try:
            if mode is not None:
                os.fchmod(fd, mode)  # exactly, whatever the umask
            view = memoryview(raw)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        _unlink(tmp, folder)
        raise
    return tmp


def _unlink(name: str, folder: int) -> None:
    with contextlib.suppress(OSError):
        os.unlink(name, dir_fd=folder)


def _open_folder(path: Path, base: Path | None) -> int:
    """A descriptor of path's folder (created when missing); confined to
    base and checked (the module's rule) when base is given."""
    folder = path.parent
    try:
        real = folder.resolve()
        top = None if base is None else base.resolve()
    except (OSError, RuntimeError) as e:  # a link loop
        raise OutputError(f"cannot write {path}: {folder} does not lead to a folder ({e})", errno.ELOOP) from None
    if base is not None and top is not None:
        _inside(folder, real, base, top)  # before creating anything
    try:
        real.mkdir(parents=True, exist_ok=True)
        fd = os.open(real, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except (FileExistsError, NotADirectoryError):
        raise OutputError(f"cannot write {path}: {folder} is not a folder", errno.ENOTDIR) from None
    except OSError as e:
        raise _error(e, path) from None
    if base is None or top is None:
        return fd
    try:
        _inside(folder, Path(_where(fd, real)), base, top)  # where the descriptor is, not the name
        _owned(folder, fd, top)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _where(fd: int, fallback: Path) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:  # no /proc: the name as resolved
        return str(fallback)


def _inside(folder: Path, real: Path, base: Path, top: Path) -> None:
    if real != top and top not in real.parents:
        raise OutputError(
            f"{folder} leads outside {base} (to {real}): not writing there; remove the link, or give --out-dir"
        )


def _owned(folder: Path, fd: int, top: Path) -> None:
    """Refuses a folder of a user who is neither the invoking one, root nor
    the base folder's owner."""
    uid = os.fstat(fd).st_uid
    try:
        base_uid = os.stat(top).st_uid
    except OSError:
        base_uid = None
    if uid not in (os.geteuid(), 0, base_uid):
        raise OutputError(
            f"{folder} belongs to uid {uid}, neither you, root nor the owner of {top}: "
            "not writing there; remove it, or give --out-dir"
        )


#: What a spreadsheet reads as the start of a formula (OWASP, CSV injection).
_FORMULA = ("=", "+", "-", "@", "\t", "\r")


#: A number as a spreadsheet reads one ("-5", "+1.5e3"; not "-inf", "1_0").
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def _number(text: str) -> bool:
    return _NUMBER.fullmatch(text) is not None


def _quoted(text: str) -> bool:
    """Whether csv_cell() puts a quote before text."""
    if text.startswith(_FORMULA):
        return not _number(text)  # "-5" is a number in a spreadsheet too, and stays one
    return text.startswith("'") and _quoted(text[1:])  # so that csv_value() undoes exactly csv_cell()


def csv_cell(value):
    """A CSV cell as written: text that a spreadsheet would read as a
    formula (starting with = + - @, a tab or a carriage return, and not a
    number) gets a single quote before it; numbers and other text are kept."""
    return "'" + value if isinstance(value, str) and _quoted(value) else value


def csv_value(cell: str) -> str:
    """A cell as csv_cell() was given it."""
    return cell[1:] if cell.startswith("'") and _quoted(cell[1:]) else cell
