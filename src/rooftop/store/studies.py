"""The tables of the studies beside the campaign's samples: time
series, rooftop interfere's impact factors and background loads, and the steps
of rooftop tune."""

from __future__ import annotations

import json

from rooftop.store.connection import StoreBase, guarded
from rooftop.store.records import now_iso


class StudyTables(StoreBase):
    """The studies' tables: series, interference, load runs, tune steps."""

    @guarded
    def add_series(self, run_id: str, round_name: str, rows: dict[str, list[tuple]]) -> None:
        """Stores a round's time series: source -> [(t, quantity, value, unit)].
        A round measured again (a retry) replaces its earlier series."""
        self.db.execute("DELETE FROM series WHERE run_id = ? AND round = ?", (run_id, round_name))
        self.db.executemany(
            "INSERT INTO series (run_id, round, source, t, quantity, value, unit) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(run_id, round_name, name, *row) for name, rs in rows.items() for row in rs],
        )
        self.db.commit()

    @guarded
    def series(self, run_id: str) -> list[dict]:
        """Every time-series point of a run, by round, source and time."""
        return [
            dict(r)
            for r in self.db.execute(
                "SELECT run_id, round, source, t, quantity, value, unit FROM series WHERE run_id = ? ORDER BY rowid",
                (run_id,),
            )
        ]

    @guarded
    def add_interference(self, doc: dict) -> None:
        """Stores rooftop interfere's comparison (rooftop.interference.run.summary),
        replacing what an earlier one stored for the same isolated run."""
        base = doc["run"]
        self.db.execute("DELETE FROM interference WHERE run_id = ?", (base,))
        self.db.execute("DELETE FROM load_runs WHERE run_id = ?", (base,))
        for c in doc["conditions"]:
            self.db.executemany(
                "INSERT INTO interference VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        base,
                        c["run"],
                        c["load"],
                        c["copies"],
                        i["stage"],
                        i["metric"],
                        i["unit"],
                        i["rate_isolated"],
                        i["rate_loaded"],
                        i["impact_rate"],
                        i["p99_isolated_us"],
                        i["p99_loaded_us"],
                        i["impact_p99"],
                        c["shared"],
                    )
                    for i in c["impacts"]
                ],
            )
            self.db.executemany(
                "INSERT INTO load_runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        base,
                        c["run"],
                        c["load"],
                        x["copy"],
                        c["copies"],
                        json.dumps(x["nodes"]),
                        json.dumps(x["knobs"]),
                        c["rate_unit"],
                        x["rate_alone"],
                        x["rate_beside"],
                        x["slowdown"],
                        x.get("normalized"),
                        x["units_alone"],
                        x["units_beside"],
                        json.dumps(x["processes"]),
                    )
                    for x in c["loads"]
                ],
            )
        self.db.commit()

    @guarded
    def add_tune_step(self, run_id: str, step: dict) -> None:
        """One step of a tune run (rooftop.learn.tune), committed at once."""
        self.db.execute(
            "INSERT INTO tune_steps (run_id, step, params, how, predicted, measured, best_predicted, keys, "
            "created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run_id,
                step["step"],
                json.dumps(step["params"]),
                step["how"],
                step["predicted"],
                step["measured"],
                step["best_predicted"],
                json.dumps(step["keys"]),
                now_iso(),
            ),
        )
        self.db.commit()

    @guarded
    def tune_steps(self, run_id: str) -> list[dict]:
        rows = self.db.execute("SELECT * FROM tune_steps WHERE run_id = ? ORDER BY step", (run_id,))
        return [dict(r, params=json.loads(r["params"]), keys=json.loads(r["keys"])) for r in rows]
