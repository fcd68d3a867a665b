"""Slurm host lists: "nid[0001-0003,0007],login1" -> a list of host names.

Follows Slurm's own expansion (src/common/hostlist.c):

* tokens are separated by commas, spaces or tabs outside brackets; empty
  tokens are skipped; order and duplicates are kept;
* a bracket holds comma-separated numbers and lo-hi ranges; a number is
  printed zero-padded to the width of the range's lower bound as written
  ("[0001-0003]" -> 0001 0002 0003, "[8-10]" -> 8 9 10, "[01-100]" -> 01
  ... 99 100);
* several bracket groups in one name form a cartesian product with the
  first group outermost, as Slurm orders it: "a[1-2]b[3-4]" -> a1b3 a1b4
  a2b3 a2b4; text after the last group is kept ("n[1-2]-ib"), which
  Slurm 22.05's 'scontrol show hostnames' refuses ("Invalid hostlist").

The srun launcher asks scontrol first; this parser is its fallback where
scontrol cannot run (tests/cluster/test_slurm_mpiexec.py compares the two).

Malformed input (unbalanced or nested brackets, empty groups, non-numbers,
negative or descending ranges, absurdly large expansions) raises
HostlistError naming the offending text -- Slurm itself sometimes passes such
names through verbatim, which would only fail later and less clearly.
"""

from __future__ import annotations

import itertools
import re

from rooftop.launchers.base import LauncherError

#: Largest number of host names one expression may expand to.
MAX_HOSTS = 1 << 20

_SEPARATORS = ",\t "
_RANGE = re.compile(r"([0-9]+)(?:-([0-9]+))?")


class HostlistError(LauncherError, ValueError):
    """A host list expression is malformed."""


def _tokens(text: str) -> list[str]:
    """Splits at separators outside brackets; checks bracket balance."""
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for i, c in enumerate(text):
        if c == "[":
            if depth:
                raise HostlistError(f"host list '{text}': nested '[' at position {i}")
            depth = 1
        elif c == "]":
            if not depth:
                raise HostlistError(f"host list '{text}': ']' without '[' at position {i}")
            depth = 0
        elif c in _SEPARATORS and not depth:
            if cur:
                out.append("".join(cur))
            cur = []
            continue
        cur.append(c)
    if depth:
        raise HostlistError(f"host list '{text}': '[' is never closed")
    if cur:
        out.append("".join(cur))
    return out


def _numbers(group: str, token: str) -> list[str]:
    """The numbers one bracket group stands for, formatted as Slurm does."""
    if not group.strip():
        raise HostlistError(f"host list entry '{token}': empty brackets")
    out: list[str] = []
    for part in group.split(","):
        part = part.strip()
        m = _RANGE.fullmatch(part)
        if not m:
            raise HostlistError(
                f"host list entry '{token}': '{part}' is not a number or a lo-hi range of non-negative integers"
            )
        lo_text, hi_text = m.group(1), m.group(2)
        lo = int(lo_text)
        hi = int(hi_text) if hi_text is not None else lo
        if hi < lo:
            raise HostlistError(f"host list entry '{token}': range '{part}' descends")
        if hi - lo + 1 > MAX_HOSTS:
            raise HostlistError(f"host list entry '{token}': range '{part}' is too large")
        width = len(lo_text)
        out.extend(f"{n:0{width}d}" for n in range(lo, hi + 1))
    return out


def _expand_token(token: str) -> list[str]:
    # Split into literal text and bracket groups: lit0 [g0] lit1 [g1] ... litN
    pieces = re.split(r"\[([^\]]*)\]", token)
    literals, groups = pieces[0::2], pieces[1::2]
    if not groups:
        return [token]
    choices = [_numbers(g, token) for g in groups]
    total = 1
    for c in choices:
        total *= len(c)
    if total > MAX_HOSTS:
        raise HostlistError(f"host list entry '{token}' expands to {total} hosts (more than {MAX_HOSTS})")
    out = []
    for combo in itertools.product(*choices):  # first group outermost
        parts = [literals[0]]
        for num, lit in zip(combo, literals[1:]):
            parts += [num, lit]
        out.append("".join(parts))
    return out


def expand(text: str) -> list[str]:
    """Expands a Slurm host list expression into host names, in order."""
    if not isinstance(text, str):
        raise HostlistError(f"host list must be a string, not {type(text).__name__}")
    hosts: list[str] = []
    for token in _tokens(text.strip()):
        hosts.extend(_expand_token(token))
        if len(hosts) > MAX_HOSTS:
            raise HostlistError(f"host list '{text}' expands to more than {MAX_HOSTS} hosts")
    return hosts


def expand_counts(text: str) -> list[int]:
    """Expands a Slurm per-node count list: "64(x2),32" -> [64, 64, 32].

    This is the form of SLURM_JOB_CPUS_PER_NODE and SLURM_TASKS_PER_NODE.
    """
    out: list[int] = []
    for part in text.strip().split(","):
        m = re.fullmatch(r"\s*([0-9]+)(?:\(x([0-9]+)\))?\s*", part)
        if not m:
            raise HostlistError(f"count list '{text}': '{part}' is not N or N(xM)")
        repeat = int(m.group(2)) if m.group(2) else 1
        if repeat > MAX_HOSTS or len(out) + repeat > MAX_HOSTS:
            raise HostlistError(f"count list '{text}' is too long")
        out.extend([int(m.group(1))] * repeat)
    return out
