"""ReFrame references from a baseline (`rooftop check --against NAME
--write-references FILE`): the file the ReFrame check
(rooftop.integrations.reframe, its `references_file` or `baseline`
variable) reads, so a site does not copy numbers by hand.

The format is the check's references file: a ReFrame system ("*": every
system) mapping performance variables to ReFrame's reference tuple
[value, lower, upper, unit]. Per metric of the baseline, the server and
client ceilings' medians (`<metric>_server_median`, `<metric>_client_median`,
as the check names its variables), lower = -threshold (the rule's
threshold of that metric, check.threshold / check.METRIC.threshold: ReFrame
fails the check when the ceiling falls more than that below the
baseline's), upper unbounded (null), and the unit `rooftop model --json`
gives the metric (ops/s, bytes/s), which the check compares with its own.
"""

from __future__ import annotations

from pathlib import Path

from rooftop import files
from rooftop.history.keys import Rule
from rooftop.history.series import RunCeilings
from rooftop.numbers import json_text

#: The ceilings written, by the check's side names (the client-node
#: ceiling is not one of the check's performance variables).
SIDES = ("server", "client")
#: The statistic of each side written: the baseline's median.
STAT = "median"


def variable(metric: str, side: str) -> str:
    """The ReFrame check's performance variable of a ceiling."""
    return f"{metric}_{side}_{STAT}"


def references(ceilings: dict[str, RunCeilings], rule: Rule, system: str = "*") -> dict:
    """{system: {variable: [value, lower, upper, unit]}} of a baseline's ceilings."""
    out = {}
    for metric, rc in sorted(ceilings.items()):
        for side in SIDES:
            p = rc.ceilings.get(side)
            if p is not None:
                out[variable(metric, side)] = [p.median, -rule.of(metric), None, rc.unit]
    return {system: out}


def write(path: str | Path, ceilings: dict[str, RunCeilings], rule: Rule) -> dict:
    """Writes the references file (JSON); returns what it wrote."""
    doc = references(ceilings, rule)
    systems = [
        f"{json_text(system)}: {{\n" + ",\n".join(f"  {json_text(k)}: {json_text(v)}" for k, v in refs.items()) + "\n}"
        for system, refs in doc.items()
    ]
    files.write(path, "{" + ",\n".join(systems) + "}\n")  # one variable per line; whole, never through a link
    return doc
