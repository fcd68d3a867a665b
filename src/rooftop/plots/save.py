"""Writing figures to files."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt

FORMATS = ("png", "svg")


def save(fig, out_dir: Path, name: str, formats=FORMATS, dpi: int = 150) -> list[Path]:
    """Writes fig as out_dir/name.<fmt> for each format, closes it, and
    returns the paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in formats:
        p = out_dir / f"{name}.{fmt}"
        fig.savefig(p, dpi=dpi, bbox_inches="tight", metadata={"Date": None} if fmt == "svg" else None)
        paths.append(p)
    plt.close(fig)
    return paths
