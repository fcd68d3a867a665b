"""The engine binary and what its processes share: where it is, its environment
variables and exit codes, EngineError, private files (the shutdown token)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from rooftop import files
from rooftop.exits import Unreachable

ENGINE_ENV = "ROOFTOP_ENGINE"
#: The engine also takes its shutdown token from this variable (never argv).
TOKEN_ENV = "ROOFTOP_TOKEN"
#: A group directory's token file (read by the servers and by shutdown).
TOKEN_FILE = "token"

#: A group directory's lease file (Leases; the engines' --lease).
LEASE_FILE = "lease"
#: Seconds an engine runs on after its lease was last renewed (engine.lease).
DEFAULT_LEASE = 10.0
#: The libfabric provider when none is given (fabric.provider's default,
#: an engine group's): the one every machine has.
DEFAULT_FABRIC = "ofi+tcp"

#: Engine exit codes (see ``rooftop-engine --help``).
EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_UNREACHABLE = 0, 1, 2, 3


class EngineError(RuntimeError):
    """An engine command failed; carries its exit code and JSON document."""

    def __init__(self, message: str, returncode: int | None = None, doc: dict | None = None, stderr: str = ""):
        super().__init__(message)
        self.returncode = returncode
        self.doc = doc
        self.stderr = stderr


class EngineUnreachable(EngineError, Unreachable):
    """The engine binary is not found, or a server did not answer in time
    (rooftop exits 3, as the engine does when a server is unreachable)."""


def engine_path() -> str:
    """Path of the rooftop-engine executable.

    Order: $ROOFTOP_ENGINE, next to this Python (a venv's bin/), then PATH.
    """
    env = os.environ.get(ENGINE_ENV)
    if env:
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            raise EngineError(f"${ENGINE_ENV}={env} is not an executable file")
        return env
    sibling = Path(sys.executable).parent / "rooftop-engine"
    if sibling.is_file() and os.access(sibling, os.X_OK):
        return str(sibling)
    found = shutil.which("rooftop-engine")
    if found:
        return found
    raise EngineUnreachable(
        f"rooftop-engine not found: install the package (pip install .), put it on PATH, or set ${ENGINE_ENV}"
    )


def open_private_dir(path: Path) -> int:
    """Creates path (and parents) if need be, checks it is a folder of this
    user (not a link, not another user's) and makes it 0700: its files
    (addresses, token, documents) are then out of other users' reach even
    on a shared file system. Returns a descriptor of it (O_DIRECTORY, to
    close). EngineError: it is a link, not a folder or another user's."""
    path.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        raise EngineError(f"{path} is not a folder of this user's own (a link?): {e.strerror}") from None
    owner = os.fstat(fd).st_uid
    if owner != os.geteuid():
        os.close(fd)
        raise EngineError(
            f"{path} belongs to uid {owner}, not to this user (uid {os.geteuid()}): it cannot be made private"
        )
    os.fchmod(fd, 0o700)
    return fd


def private_dir(path: Path) -> Path:
    """open_private_dir(path), closed: path, a private folder of this user."""
    os.close(open_private_dir(path))
    return path


def write_private(path: Path, text: str) -> Path:
    """Writes text to path with mode 0600 (also if the file existed), whole
    or not at all and never through a link (rooftop.files.write)."""
    return files.write(path, text, mode=0o600)


def write_token(directory: Path, token: str) -> Path:
    """The group's token file (0600), to pass as --token-file."""
    return write_private(Path(directory) / TOKEN_FILE, token + "\n")
