"""Host names of the emulated cluster's nodes in /etc/hosts.

'cluster up' adds one line per node ("10.231.0.10 rooftop-n0"), each ending
with the marker comment below, so mpiexec, Slurm and anything else resolve
a node's name to its address. 'cluster down' removes every line carrying
the marker (found without the state file), and nothing else. The file is
rewritten in place (not renamed over), because in containers /etc/hosts is
often a bind mount that cannot be replaced.
"""

from __future__ import annotations

import os
from pathlib import Path

from rooftop.cluster.spec import ClusterError

MARKER = "# rooftop-cluster (rooftop cluster up; 'rooftop cluster down' removes it)"


def path() -> Path:
    return Path(os.environ.get("ROOFTOP_HOSTS_FILE") or "/etc/hosts")


def _read(p: Path) -> list[str]:
    try:
        return p.read_text().splitlines()
    except FileNotFoundError:
        return []
    except OSError as e:
        raise ClusterError(f"cannot read {p}: {e.strerror}") from None


def _write(p: Path, lines: list[str]) -> None:
    try:
        with open(p, "r+" if p.exists() else "w") as f:
            f.seek(0)
            f.write("".join(line + "\n" for line in lines))
            f.truncate()
    except OSError as e:
        raise ClusterError(f"cannot write {p}: {e.strerror}") from None


def entries(p: Path | None = None) -> list[tuple[str, str]]:
    """(address, name) of the marked lines."""
    out = []
    for line in _read(p or path()):
        if line.endswith(MARKER):
            addr, name = line.split()[:2]
            out.append((addr, name))
    return out


def add(names: list[tuple[str, str]], p: Path | None = None) -> None:
    """Replaces the marked lines with one per (address, name). Refuses a
    name another (unmarked) line already maps to a different address."""
    p = p or path()
    kept = [line for line in _read(p) if not line.endswith(MARKER)]
    wanted = {name: addr for addr, name in names}
    for line in kept:
        fields = line.split("#", 1)[0].split()
        for name in fields[1:]:
            if name in wanted and fields[0] != wanted[name]:
                raise ClusterError(
                    f"{p} already maps {name} to {fields[0]} (not {wanted[name]}): remove that line first"
                )
    _write(p, kept + [f"{addr} {name}  {MARKER}" for addr, name in names])


def remove(p: Path | None = None) -> list[str]:
    """Removes every marked line; returns the names removed."""
    p = p or path()
    lines = _read(p)
    gone = [line.split()[1] for line in lines if line.endswith(MARKER)]
    if gone:
        _write(p, [line for line in lines if not line.endswith(MARKER)])
    return gone
