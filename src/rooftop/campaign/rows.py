"""Stored sample rows from what clients measured, and whether each can be
used (common time, link limits)."""

from __future__ import annotations

from pathlib import Path

from rooftop import metrics
from rooftop.campaign import limits, windows
from rooftop.engine.enginedoc import merge_bins, result_bins, windows_of
from rooftop.launchers import Node
from rooftop.stages import Measurement, Placement
from rooftop.units import fmt_pct


class RunTime:
    """The run time each stored row adds to its run's measured time: a
    window several rows measured at once (the pairs of a pair round) counts
    once, at its longest. The one rule for the campaign (Runner._store) and
    for rows rebuilt from documents (rooftop.campaign.recover.store_rows)."""

    def __init__(self) -> None:
        self._counted: dict = {}

    def add(self, window, measured_s: float) -> float:
        """The seconds a row of window (any key naming one window of one
        round) measuring measured_s adds."""
        before = self._counted.get(window, 0.0)
        self._counted[window] = max(before, measured_s)
        return max(0.0, measured_s - before)


def from_window_log(ranks: list[int], w: int, results: dict) -> str:
    """What a row says when some of its clients' windows were read from
    their window logs (rooftop.engine.enginedoc.log_result): their
    documents were never written."""
    ended = sorted({str(results[r].get("end")) for r in ranks})
    return (
        f"recovered from the window log of client rank(s) {', '.join(map(str, ranks))}, whose document was "
        f"never written (ended: {', '.join(ended)}): window {w + 1} was measured in full; its rate counts "
        f"the operations completed inside it"
    )


class Rows:
    """Stored sample rows from what clients measured: the aggregate over
    the time all of a row's clients measured, and whether it can be used.
    rooftop doctor rebuilds rows from engine documents with it."""

    def __init__(self, run_id: str, cfg: dict, nodes: list[Node]):
        self.run_id, self.cfg, self.nodes = run_id, cfg, nodes

    def blank(self, m: Measurement, window: int, key: str, snodes, cnodes, ns: int, nc: int, **more) -> dict:
        """A row of a measurement's window with nothing measured yet (more:
        further or other columns)."""
        row = dict(
            run_id=self.run_id,
            key=key,
            stage=m.stage,
            metric=m.metric,
            unit=metrics.get(m.metric).unit,
            window=window,
            server_nodes=snodes,
            client_nodes=cnodes,
            server_procs=ns,
            client_procs=nc,
            measured_s=0.0,
            aggregate=None,
            per_server=None,
            per_client=None,
        )
        row.update(more)
        return row

    def failed(self, placement: Placement, m: Measurement, window: int, error: str) -> list[dict]:
        """The rows of a measurement's window whose servers did not start:
        failed, with their reason."""
        keys = m.row_keys(window)
        if m.pairs is None:
            parts = [
                (
                    keys[0],
                    placement.server_nodes,
                    m.client_nodes,
                    len(placement.server_nodes) * placement.servers_per_node,
                    m.client_procs,
                )
            ]
        else:
            parts = [(k, [a], [b], 1, 1) for (a, b), k in zip(m.pairs, keys)]
        return [
            self.blank(m, window, key, snodes, cnodes, ns, nc, x=0.0, status="failed", error=error, raw_dir="")
            for key, snodes, cnodes, ns, nc in parts
        ]

    @staticmethod
    def parts(placement: Placement, m: Measurement, window: int, nservers: int, nclients: int) -> list[tuple]:
        """(key, server nodes, client nodes, server processes, client ranks)
        of each row of a measurement's window."""
        keys = m.row_keys(window)
        if m.pairs is None:
            return [(keys[0], placement.server_nodes, m.client_nodes, nservers, list(range(nclients)))]
        # One row per pair: client rank j loaded server rank j.
        return [(k, [a], [b], 1, [j]) for j, ((a, b), k) in enumerate(zip(m.pairs, keys))]

    def row(self, m, window: int, part: tuple, w: int, results: dict, errors: dict, offs: dict, sdir: Path) -> dict:
        """The row of one part (parts()) of a measurement's window, which
        its clients measured as their engine window w (m: its stage and
        metric)."""
        rkey, snodes, cnodes, ns, ranks = part
        row = self.blank(
            m,
            window,
            rkey,
            snodes,
            cnodes,
            ns,
            len(ranks),
            raw_dir=str(sdir),
            x=ns / len(ranks),
            late_s=0.0,
            skew_s=0.0,
            overlap=0.0,
            barrier_s=0.0,
            error="",
        )
        errs = [errors[r] for r in ranks if r in errors]
        short = [r for r in ranks if r not in errors and len(windows_of(results[r])) <= w]
        if errs or short:
            row.update(
                status="failed",
                error=" | ".join(errs[:5]) or f"client rank {short[0]} reported fewer windows than asked",
            )
            return row
        agg, c = windows.aggregate(results, ranks, w, offs, m.metric)
        row.update(
            status="ok",
            aggregate=agg,
            per_server=agg / ns,
            per_client=agg / len(ranks),
            measured_s=max(0.0, c.hi - c.lo),
            skew_s=c.skew_s,
            overlap=c.overlap,
            late_s=max(float(results[r].get("measure_at_late_s") or 0.0) for r in ranks),
            barrier_s=max(float(results[r].get("barrier", {}).get("wait_s") or 0.0) for r in ranks),
            # For the store's latency quantities: the bins of the documents already loaded.
            latency_bins=merge_bins(result_bins(results[r]) for r in ranks),
        )
        row["error"] = self.invalid(m, snodes, cnodes, agg, c)
        if row["error"]:
            row["status"] = "invalid"
        logged = [r for r in ranks if results[r].get("from_window_log")]
        if logged:  # marked: what it is
            row["error"] = "; ".join(filter(None, [row["error"], from_window_log(logged, w, results)]))
        return row

    def invalid(self, m, snodes, cnodes, agg: float, c) -> str:
        """Why a measured window of a measurement (m: its metric) cannot be
        used ('' when it can)."""
        need = float(self.cfg["engine"]["min_overlap"])
        if c.overlap < need:
            return (
                f"clients measured together for {fmt_pct(c.overlap)} of the window (start skew "
                f"{c.skew_s:.3f} s); engine.min_overlap asks {fmt_pct(need)}"
            )
        if not agg > 0:  # a rate is above 0 (rooftop.numbers.rate_problem): the readers take no other
            return "no operation completed in the clients' common window (rate 0)"
        if metrics.get(m.metric).link_bound:
            return limits.above_limit(agg, limits.link_limit(self.nodes, snodes, cnodes))
        return ""
