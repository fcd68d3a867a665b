"""rooftop inside the frameworks centres already run: ReFrame
(`rooftop.integrations.reframe`, needs `pip install 'rooftop[reframe]'`)."""

from __future__ import annotations

import sys
from pathlib import Path


def reframe_check_path() -> int:
    """`rooftop-reframe-check`: prints the path of the ReFrame check file,
    for `reframe -c "$(rooftop-reframe-check)"` (without importing ReFrame)."""
    print(Path(__file__).with_name("reframe.py"))
    return 0


if __name__ == "__main__":
    sys.exit(reframe_check_path())
