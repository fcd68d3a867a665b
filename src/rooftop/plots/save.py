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
        if p.is_symlink():  # a figure is written anew, never through a link to elsewhere
            p.unlink()
        # The same figure gives the same bytes (a results folder moved or
        # copied reports identically): no date in SVG or PDF (PNG has none),
        # and SVG element ids from a fixed salt, not a random one per file.
        undated = {"svg": {"Date": None}, "pdf": {"CreationDate": None}}.get(fmt)
        with plt.rc_context({"svg.hashsalt": f"rooftop-{name}"}):
            fig.savefig(p, dpi=dpi, bbox_inches="tight", metadata=undated)
        paths.append(p)
    plt.close(fig)
    return paths


def inside(out_dir: Path, root: Path) -> Path:
    """out_dir, refused (ValueError) when it resolves outside root: a
    results folder's 'figures' may be a symlink to anywhere, and figures
    written by default into a run's folder must stay in it."""
    real, base = Path(out_dir).resolve(), Path(root).resolve()
    if real != base and base not in real.parents:
        raise ValueError(
            f"{out_dir} leads outside {root} (to {real}): not writing there; remove the link, or give --output"
        )
    return out_dir
