"""Writing figures to files (rooftop.files.write: whole or not at all,
never through a link, inside the folder the command is confined to)."""

from __future__ import annotations

import io
from pathlib import Path

import matplotlib.pyplot as plt

from rooftop import files

FORMATS = ("png", "svg")


def save(fig, out_dir: Path, name: str, formats=FORMATS, dpi: int = 150) -> list[Path]:
    """Writes fig as out_dir/name.<fmt> for each format, closes it, and
    returns the paths."""
    paths = []
    try:
        for fmt in formats:
            # The same figure gives the same bytes (a results folder moved or
            # copied reports identically): no date in SVG or PDF (PNG has none),
            # and SVG element ids from a fixed salt, not a random one per file.
            undated = {"svg": {"Date": None}, "pdf": {"CreationDate": None}}.get(fmt)
            buf = io.BytesIO()
            with plt.rc_context({"svg.hashsalt": f"rooftop-{name}"}):
                fig.savefig(buf, format=fmt, dpi=dpi, bbox_inches="tight", metadata=undated)
            paths.append(files.write(Path(out_dir) / f"{name}.{fmt}", buf.getvalue()))
    finally:
        plt.close(fig)
    return paths
