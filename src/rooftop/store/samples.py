"""The samples table and what derives from each sample: its quantities
(latency quantiles from its engine documents) and its parameters."""

from __future__ import annotations

import json
from pathlib import Path

from rooftop.engine import enginedoc
from rooftop.store import damage, paths
from rooftop.store.connection import StoreBase, guarded
from rooftop.store.records import flatten, key_stages, now_iso, row_ranks
from rooftop.store.schema import LATENCY_QUANTILES, QUANTITIES, SAMPLE_COLUMNS, SAMPLE_DEFAULTS


class SampleTables(StoreBase):
    """The samples table, its quantities and parameters."""

    # samples
    @guarded
    def done_keys(self, run_id: str) -> set[str]:
        return {
            r["key"] for r in self.db.execute("SELECT key FROM samples WHERE run_id = ? AND status = 'ok'", (run_id,))
        }

    @guarded
    def stored_keys(self, run_id: str) -> set[str]:
        """Keys with a row, measured or failed."""
        return {r["key"] for r in self.db.execute("SELECT key FROM samples WHERE run_id = ?", (run_id,))}

    @guarded
    def add_sample(self, run_time_s: float | None = None, latency_bins: list | None = None, **s) -> None:
        """Stores one sample row. run_time_s: what it adds to the run's
        measured time (default its measured_s; rows measured at the same
        time, such as concurrent pairs, add it once). latency_bins: its
        clients' latency bins merged, from the documents the caller loaded
        (the campaign's rows carry them); None: read from its documents."""
        s.setdefault("created", now_iso())
        for name, value in self.marks.items():  # e.g. concurrent = 1 for the whole campaign
            s.setdefault(name, value)
        for name, value in SAMPLE_DEFAULTS.items():
            s.setdefault(name, value)
        s.setdefault("ceilings", json.dumps(key_stages(s["key"])))
        s["server_nodes"] = json.dumps(s["server_nodes"])
        s["client_nodes"] = json.dumps(s["client_nodes"])
        given = s["raw_dir"]  # as the caller can open it: relative to the current directory or absolute
        s["raw_dir"] = paths.stored(self.dir, given) if given else ""  # relative to the results folder
        cols = ", ".join(SAMPLE_COLUMNS)
        marks = ", ".join("?" for _ in SAMPLE_COLUMNS)
        # A failed sample retried on resume replaces its earlier attempt (and its quantities).
        self.db.execute(
            "DELETE FROM quantities WHERE sample_id IN (SELECT id FROM samples WHERE run_id = ? AND key = ?)",
            (s["run_id"], s["key"]),
        )
        cur = self.db.execute(
            f"INSERT OR REPLACE INTO samples ({cols}) VALUES ({marks})", [s[c] for c in SAMPLE_COLUMNS]
        )
        assert cur.lastrowid is not None  # an INSERT sets it
        self.put_quantities(cur.lastrowid, dict(s, raw_dir=given), latency_bins)
        self.db.execute(
            "UPDATE runs SET measured_s = measured_s + ?, updated = ? WHERE id = ?",
            (s["measured_s"] if run_time_s is None else run_time_s, now_iso(), s["run_id"]),
        )
        self.db.commit()

    @guarded
    def samples(self, run_id: str, stage: str | None = None, metric: str | None = None) -> list[dict]:
        """A run's sample rows (of a stage, a metric), as everything derived
        reads them: a row whose rates are damaged in the database reads
        invalid, its rates null and its error saying why (rooftop.store.damage)."""
        q = "SELECT * FROM samples WHERE run_id = ?"
        args: list = [run_id]
        if stage:
            q += " AND stage = ?"
            args.append(stage)
        if metric:
            q += " AND metric = ?"
            args.append(metric)
        out = []
        for r in self.db.execute(q + " ORDER BY id", args):
            d = {c: r[c] for c in ("id", *SAMPLE_COLUMNS)}  # one column order, however the table grew
            d["server_nodes"] = json.loads(d["server_nodes"])
            d["client_nodes"] = json.loads(d["client_nodes"])
            d["raw_dir"] = paths.resolved(self.dir, d["raw_dir"])  # stored relative to the results folder
            damage.mark(d, damage.SAMPLE_RATES, f"run {d['run_id']} sample {d['id']} ({d['key']})")
            out.append(d)
        return out

    # quantities and parameters (issue 12) -----------------------------------
    def put_quantities(self, sample_id: int, row: dict, latency_bins: list | None = None) -> None:
        """Writes the quantities a sample row measured (in the caller's
        transaction; latency_bins: as add_sample takes them)."""
        self.db.executemany(
            "INSERT OR REPLACE INTO quantities (sample_id, quantity, value, unit) VALUES (?, ?, ?, ?)",
            [(sample_id, *q) for q in self.quantities(row, latency_bins)],
        )

    def quantities(self, row: dict, latency_bins: list | None = None) -> list[tuple[str, float, str]]:
        """(quantity, value, unit) of everything a sample row measured:
        none when it failed; its columns that hold a value; its latency
        percentiles when its client documents carry latency bins
        (latency_bins: as add_sample takes them; None: read from them)."""
        if row["status"] == "failed":
            return []
        out = [
            (name, float(row[name]), unit or row["unit"])
            for name, (unit, _) in QUANTITIES.items()
            if name not in LATENCY_QUANTILES and row.get(name) is not None
        ]
        try:
            latency = self._latency(row, latency_bins)
        except OSError:  # documents unreadable: the sample is stored all the same
            latency = {}
        out += [(name, value, QUANTITIES[name][0]) for name, value in latency.items()]
        return out

    def docs_dir(self, row: dict) -> Path | None:
        """The folder of a sample's engine documents: its raw_dir (as read by
        samples(), relative to the results folder as stored, or as a
        database written before migration 13 held it), or the same round's
        folder in this results folder."""
        if not row.get("raw_dir"):
            return None
        where = Path(row["raw_dir"])
        if not where.is_absolute() and not where.is_dir():
            where = self.dir / where  # as stored
        if not where.is_dir():  # under raw/: the round's folder (and earlier-N in it)
            parts = where.parts
            inside = parts[len(parts) - 1 - parts[::-1].index("raw") + 1 :] if "raw" in parts else (where.name,)
            where = self.dir / row["run_id"] / "raw" / Path(*inside) if inside else where
        return where if where.is_dir() else None

    @guarded
    def moved_documents(self, run_id: str, old: Path, new: Path) -> None:
        """A round's documents moved from old to new (an earlier session's,
        kept when the round is measured again): its rows follow them."""
        self.db.execute(
            "UPDATE samples SET raw_dir = ? WHERE run_id = ? AND raw_dir = ?",
            (paths.stored(self.dir, new), run_id, paths.stored(self.dir, old)),
        )
        self.db.commit()

    def relative_paths(self) -> None:
        """Migration 13: every stored raw_dir relative to the results folder;
        the paths that cannot be mapped stay and go to unmapped_paths."""
        rows = self.db.execute("SELECT DISTINCT run_id, raw_dir FROM samples WHERE raw_dir != ''").fetchall()
        for r in rows:
            mapped = paths.map_old(self.dir, r["run_id"], r["raw_dir"])
            if mapped is None:
                self.db.execute(
                    "INSERT OR REPLACE INTO unmapped_paths (tbl, run_id, key, path) "
                    "SELECT 'samples', run_id, key, raw_dir FROM samples WHERE run_id = ? AND raw_dir = ?",
                    (r["run_id"], r["raw_dir"]),
                )
            elif mapped != r["raw_dir"]:
                self.db.execute(
                    "UPDATE samples SET raw_dir = ? WHERE run_id = ? AND raw_dir = ?",
                    (mapped, r["run_id"], r["raw_dir"]),
                )

    @guarded
    def unresolved_paths(self, run_id: str) -> list[tuple[str, str]]:
        """(sample key, path as stored) of a run's samples whose documents
        folder does not resolve in this results folder (rooftop doctor)."""
        out = []
        for r in self.db.execute(
            "SELECT key, raw_dir FROM samples WHERE run_id = ? AND raw_dir != '' ORDER BY id", (run_id,)
        ):
            if not Path(paths.resolved(self.dir, r["raw_dir"])).is_dir():
                out.append((r["key"], r["raw_dir"]))
        return out

    def _latency(self, row: dict, merged: list | None = None) -> dict[str, float]:
        """The latency quantities of a sample: its client ranks' bins merged
        (merged: as the caller loaded them; None: read from its documents)."""
        if merged is None:
            docs = self.docs_dir(row)
            if docs is None:
                return {}
            bins = self._round_bins(docs)
            ranks = row_ranks(docs, row)
            merged = enginedoc.merge_bins(bins.get(rank, []) for rank in (sorted(bins) if ranks is None else ranks))
        if not merged:
            return {}
        lat = enginedoc.Latency(row["stage"], row["metric"], merged, 0)
        return {name: lat.quantile(q) for name, q in LATENCY_QUANTILES.items()}

    def _round_bins(self, docs: Path) -> dict[int, list]:
        """Client rank -> latency bins of one round's documents (the last
        folder read is kept while its files are unchanged: a round's rows
        are stored one after another)."""
        files = enginedoc.client_documents(docs)
        key = (docs, [(f.name, f.stat().st_mtime_ns) for f in files])
        if self._bins[0] != key:
            bins = {}
            for f in files:
                try:
                    bins[enginedoc.rank_of(f)] = enginedoc.latency_bins(enginedoc.load(f))
                except (OSError, ValueError, KeyError, TypeError):
                    continue
            self._bins = (key, bins)
        return self._bins[1]

    def fill_quantities(self) -> None:
        """Writes the quantities of every stored sample (migration 7)."""
        top = self.db.execute("SELECT MAX(id) FROM samples").fetchone()[0] or 0
        for lo in range(0, top + 1, 1000):
            for r in self.db.execute(
                "SELECT * FROM samples WHERE id BETWEEN ? AND ? ORDER BY id", (lo, lo + 999)
            ).fetchall():
                self.put_quantities(r["id"], dict(r))

    def put_params(self, run_id: str, config: dict) -> None:
        """Writes a run's resolved config, flattened, as its run_params (in
        the caller's transaction)."""
        self.db.execute("DELETE FROM run_params WHERE run_id = ?", (run_id,))
        self.db.executemany(
            "INSERT INTO run_params (run_id, key, value) VALUES (?, ?, ?)", [(run_id, k, v) for k, v in flatten(config)]
        )

    def fill_params(self) -> None:
        """Writes the run_params of every stored run (migration 8)."""
        for r in self.db.execute("SELECT id, config FROM runs").fetchall():
            self.put_params(r["id"], json.loads(r["config"]))

    @guarded
    def sample_quantities(self, sample_id: int) -> dict[str, tuple[float, str]]:
        """quantity -> (value, unit) of one sample."""
        return {
            r["quantity"]: (r["value"], r["unit"])
            for r in self.db.execute("SELECT quantity, value, unit FROM quantities WHERE sample_id = ?", (sample_id,))
        }

    @guarded
    def sample_params(self, sample_id: int) -> dict[str, object]:
        """key -> value of every parameter of one sample (its run's and its placement)."""
        return {
            r["key"]: r["value"]
            for r in self.db.execute("SELECT key, value FROM sample_params WHERE sample_id = ?", (sample_id,))
        }
