"""Pictures of a run (matplotlib, PNG and SVG), in the style of the CUG 2025 roofline paper's
figures: the roofline per metric (13-14), the server-process sweep (9-10),
the client pair matrix (pairs), latency distributions, several rooflines on
one figure (compare) and a workload mix's roofline (mix).

Every figure function returns a matplotlib Figure (tests inspect them);
save() writes it in each format asked.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # files only: no display needed, none opened

from rooftop.plots.save import save  # noqa: E402

__all__ = ["save"]
