"""What a run kind is (RunKind): one entry of the table in rooftop.kinds.

Most runs are campaigns (`collect`, `validate`, `interfere`'s runs): they
have ceilings, and `model`, `plot` and `report` draw their roofline. Other
commands store runs of their own kind, with their own report and figure
and no roofline. Each such kind is an entry here, so `report`, `plot` and
`model` never name one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


def _no_plot(store, run, out_dir: Path, fmt: str) -> dict:
    return {}


@dataclass(frozen=True)
class RunKind:
    #: As the messages name it: "audit".
    name: str
    #: The command that makes runs of this kind: "rooftop audit".
    command: str
    #: Whether a stored run (rooftop.store.records.Run) is of this kind.
    recognises: Callable[[object, object], bool]
    #: Writes its report under out_dir; returns (html page, markdown).
    report: Callable[[object, object, Path], tuple[Path, Path]]
    #: Writes its figures under out_dir in a format (png, svg, pdf);
    #: returns {name: [files]} (empty: the kind has no figure of its own).
    plot: Callable[[object, object, Path, str], dict] = _no_plot

    def no_roofline(self, run_id: str) -> str:
        """What `rooftop model` says about a run of this kind."""
        return (
            f"run {run_id} is a {self.command} run: it measures no roofline "
            f"(rooftop report {run_id} shows what it measured)"
        )
