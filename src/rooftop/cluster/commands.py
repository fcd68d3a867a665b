"""Running system commands (ip, tc): every call has a timeout, and a failure
names the command and its stderr."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess

from rooftop.cluster.spec import ClusterError

TIMEOUT = 15.0

#: Every command run, in order, when a list is installed here (tests, -v).
trace: list[list[str]] | None = None


def run(argv: list[str], timeout: float = TIMEOUT, check: bool = True) -> subprocess.CompletedProcess:
    if trace is not None:
        trace.append(list(argv))
    if shutil.which(argv[0]) is None:
        raise ClusterError(f"'{argv[0]}' is not installed (Debian: apt-get install iproute2)")
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise ClusterError(f"'{shlex.join(argv)}' did not finish within {timeout:g} s") from None
    if check and p.returncode != 0:
        err = (p.stderr or p.stdout).strip() or "no message"
        raise ClusterError(f"'{shlex.join(argv)}' failed (exit {p.returncode}): {err}")
    return p


def run_json(argv: list[str], timeout: float = TIMEOUT):
    """Runs an iproute2 command with -j and parses its output ([] if empty)."""
    out = run(argv, timeout).stdout.strip()
    if not out:
        return []
    try:
        return json.loads(out)
    except ValueError:
        raise ClusterError(f"'{shlex.join(argv)}' printed no JSON: {out[:200]}") from None
