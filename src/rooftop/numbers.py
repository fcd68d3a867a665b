"""Numbers checked where they enter and where they are read: what a rate
is (rate_problem: one rule for `service --import`, the samples and
service points read from the store, and stored baselines), and JSON that
is JSON (json_text: every JSON document rooftop prints or writes).

A rate is a finite number above 0. A sample or point that measured
nothing usable (status failed or invalid) may have none (NULL) or 0, but
never a negative or non-finite one. Python's json writes NaN and
Infinity, which no strict JSON reader takes; json_text writes null for
them (the reader that met such a value states why, rooftop.store.damage)
and refuses to write them at all (allow_nan=False), so a non-finite
number can never reach an output as a bare word.
"""

from __future__ import annotations

import json
import math
from typing import Any


def rate_problem(value: Any, measured: bool = True) -> str:
    """Why value is not a rate ('' when it is): NULL, not a number,
    not finite, negative, or 0. measured: the row says it measured this
    rate (status ok); otherwise NULL and 0 are allowed (a failed or invalid
    sample's, a point measured elsewhere without a rate)."""
    if value is None:
        return "" if not measured else "NULL (no rate)"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{value!r} (not a number)"
    if not math.isfinite(value):
        return f"{value!r} (not finite)"
    if value < 0:
        return f"{value!r} (negative)"
    if value == 0 and measured:
        return "0 (a measured rate is above 0)"
    return ""


def finite(doc: Any) -> Any:
    """doc with every non-finite float (NaN, +-Infinity) replaced by None,
    in dicts, lists and tuples at any depth."""
    if isinstance(doc, float):
        return doc if math.isfinite(doc) else None
    if isinstance(doc, dict):
        return {k: finite(v) for k, v in doc.items()}
    if isinstance(doc, (list, tuple)):
        return [finite(v) for v in doc]
    return doc


def json_text(doc: Any, **kw) -> str:
    """doc as strict JSON (json.dumps keywords: indent, sort_keys, default):
    non-finite numbers as null (finite), never NaN or Infinity."""
    return json.dumps(finite(doc), allow_nan=False, **kw)
