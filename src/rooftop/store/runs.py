"""The runs table: one campaign each, its config, status, owner and time."""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import time

from rooftop import files
from rooftop.config.files import up_to_date
from rooftop.locks import held_by_anyone
from rooftop.store.connection import guarded
from rooftop.store.records import Run, StoreError, now_iso, owner_elsewhere, owner_gone, process_start
from rooftop.store.samples import SampleTables

#: A claim's note that keeps the run's status from before the claim
#: (RunTables.claim(before=...)): "service running; before it: complete".
HELD_AS = "before it:"
_HELD = re.compile(rf"^.*?; {HELD_AS} (?P<status>\w+)(?: \((?P<note>.*)\))?$", re.DOTALL)


def finish_hint(note: str, run_id: str) -> str:
    """What finishes a run whose command is gone or stopped, from its note
    ("VERB running", "VERB: ...", "VERB interrupted: ..."): collect and
    validate measure the rest; another command's rows are kept, and doctor
    --recover adds its time."""
    verb = (note or "collect").split(" ", 1)[0].rstrip(":")
    if verb in ("collect", "validate"):
        return f"finish it with 'rooftop {'validate' if verb == 'validate' else 'collect --resume'} {run_id}'"
    return f"what its {verb} measured is kept ('rooftop doctor --recover' adds its time)"


class RunTables(SampleTables):
    """The runs table (a run's parameters go with its samples: put_params)."""

    # runs
    @guarded
    def new_run(self, config: dict, environment: dict) -> str:
        run_id = time.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)
        t = now_iso()
        pid = os.getpid()  # its owner: a run whose owner died reads as interrupted
        self.db.execute(
            "INSERT INTO runs (id, created, updated, status, config, environment, "
            "owner_pid, owner_host, owner_start) VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?)",
            (run_id, t, t, json.dumps(config), json.dumps(environment), pid, socket.gethostname(), process_start(pid)),
        )
        self.put_params(run_id, config)
        self.db.commit()
        self.run_dir(run_id).mkdir(parents=True, exist_ok=True)
        files.write(self.run_dir(run_id) / "config.json", json.dumps(config, indent=2))
        return run_id

    @guarded
    def get_run(self, run_id: str) -> Run:
        row = self.db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            known = [r["id"] for r in self.db.execute("SELECT id FROM runs ORDER BY created DESC LIMIT 5")]
            hint = f"; recent runs: {', '.join(known)}" if known else "; there are no runs yet"
            raise StoreError(f"no run '{run_id}' in {self.path}{hint}")
        run = Run(
            row["id"],
            row["created"],
            row["updated"],
            row["status"],
            up_to_date(json.loads(row["config"])),  # once, here: its readers index it plainly
            json.loads(row["environment"]),
            row["wall_s"],
            row["measured_s"],
            row["note"],
            (row["owner_pid"], row["owner_host"], row["owner_start"]),
        )
        held = _HELD.match(row["note"] or "")
        if run.status == "running" and owner_gone(*run.owner) and held:
            # A command that measures beside the run (rooftop service) died:
            # the run is what it was before that command claimed it.
            run.status, run.note = held.group("status"), held.group("note") or ""
        elif run.status == "running" and owner_gone(*run.owner):
            # Its campaign died without a word (SIGKILL, a crash, a lost node).
            run.status = "interrupted"
            run.note = (
                f"its campaign (pid {run.owner[0]} on {run.owner[1]}) is gone; {finish_hint(row['note'], run.id)}"
            )
        elif run.status == "running" and owner_elsewhere(*run.owner):
            if not held_by_anyone(self.dir / ".lock"):
                # A campaign running it would hold the results folder's lock:
                # its owner on another host was most likely killed, but this
                # host cannot look at that host's processes.
                run.status = "unknown"
                run.note = (
                    f"its campaign (pid {run.owner[0]} on host {run.owner[1]}) holds no lock on "
                    f"{self.dir / '.lock'}: probably killed (check on {run.owner[1]}); if it is "
                    f"gone, {finish_hint(row['note'], run.id)}"
                )
        return run

    @guarded
    def runs(self) -> list[Run]:
        ids = [r["id"] for r in self.db.execute("SELECT id FROM runs ORDER BY created, id")]
        return [self.get_run(i) for i in ids]

    @guarded
    def claim(self, run_id: str, note: str = "", before: tuple[str, str] | None = None) -> None:
        """This process runs the run now: status running, owner recorded.
        before: the (status, note) the run reads as again once this owner
        is gone without setting it back (a SIGKILL): a command that adds to
        a run without measuring its samples (rooftop service) gives it;
        otherwise a run whose owner is gone reads interrupted."""
        pid = os.getpid()
        if before is not None:
            note = f"{note}; {HELD_AS} {before[0]}" + (f" ({before[1]})" if before[1] else "")
        self.db.execute(
            "UPDATE runs SET status = 'running', note = ?, updated = ?, owner_pid = ?, "
            "owner_host = ?, owner_start = ? WHERE id = ?",
            (note, now_iso(), pid, socket.gethostname(), process_start(pid), run_id),
        )
        self.db.commit()

    @guarded
    def set_status(self, run_id: str, status: str, note: str = "") -> None:
        self.db.execute(
            "UPDATE runs SET status = ?, note = ?, updated = ? WHERE id = ?", (status, note, now_iso(), run_id)
        )
        self.db.commit()

    @guarded
    def update_config(self, run_id: str, config: dict) -> None:
        self.db.execute("UPDATE runs SET config = ?, updated = ? WHERE id = ?", (json.dumps(config), now_iso(), run_id))
        self.put_params(run_id, config)
        self.db.commit()
        files.write(self.run_dir(run_id) / "config.json", json.dumps(config, indent=2))

    @guarded
    def update_environment(self, run_id: str, fields: dict) -> None:
        """Sets fields of the run's environment (the machine a command read:
        rooftop.campaign.machine), keeping the others."""
        row = self.db.execute("SELECT environment FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise StoreError(f"no run '{run_id}' in {self.path}")
        env = dict(json.loads(row["environment"]), **fields)
        self.db.execute(
            "UPDATE runs SET environment = ?, updated = ? WHERE id = ?", (json.dumps(env), now_iso(), run_id)
        )
        self.db.commit()

    @guarded
    def add_time(self, run_id: str, wall_s: float) -> None:
        self.db.execute("UPDATE runs SET wall_s = wall_s + ?, updated = ? WHERE id = ?", (wall_s, now_iso(), run_id))
        self.db.commit()
