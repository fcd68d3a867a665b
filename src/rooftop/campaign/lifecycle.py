"""A run's lifecycle: one command's hold on one run, the same for every
command that stores a run (collect, validate, tune, bursts, interfere,
audit; service beside a run).

    with Hold(store, run_id, "collect") as hold:
        ... measure, storing each row as it is measured ...
        hold.finish(*run_status(store, run_id, cfg))

On entering, the run is claimed (status running, this process its owner),
refused while another live command on this host runs it; the time an
earlier command of the run spent and could not add (it was killed:
SIGKILL, a crash) is added from its progress log; a 'command' event starts
this command's. On leaving, the run's status: the one the body gave
(finish), else `planned` (default complete); Ctrl-C (KeyboardInterrupt)
leaves it interrupted, every row stored before kept; a results database
that took no more rows, interrupted (doctor --recover brings in the rest);
any other error, failed. Then an 'end' event and the command's wall time
are added to the run. Exceptions go on to the command, which says what
happened and returns its exit code.

A command `beside` the run (rooftop service: it adds points without
measuring the run's samples) claims it too, but keeps its status: on
leaving, and should it be killed, the run reads as it did before; its own
time is not the run's (no events of its own, no time added but a killed
command's).
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable

from rooftop.campaign.plan import plan_collect, plan_validate
from rooftop.campaign.tracking import log_event, unrecorded_time
from rooftop.store.records import StoreError

__all__ = ["Hold", "claim", "keys_status", "recover_time", "run_status"]


def run_status(store, run_id: str, cfg: dict) -> tuple[str, str]:
    """complete when every planned sample of every stage asked for so far
    (cfg["stages"]) is stored; else interrupted, saying what is missing and
    the command that measures it."""
    stored = store.stored_keys(run_id)
    plans = {"collect": plan_collect, "validate": plan_validate}
    missing = []
    for stage in cfg.get("stages") or ["collect"]:
        if stage not in plans:  # a tune or bursts run plans as it goes: its command gives the status
            continue
        keys = {k for g in plans[stage](cfg) for k in g.keys()}
        left = len(keys - stored)
        if left:
            again = f"collect --resume {run_id}" if stage == "collect" else f"validate {run_id}"
            missing.append(f"{stage}: {left} of {len(keys)} samples missing (rooftop {again})")
    return ("interrupted", "; ".join(missing)) if missing else ("complete", "")


def keys_status(store, run_id: str, keys: set[str], verb: str, what: str = "samples") -> tuple[str, str]:
    """complete when every planned row key is stored; else interrupted,
    saying how many are missing (a command whose plan is its own: bursts,
    interfere)."""
    left = len(keys - store.stored_keys(run_id))
    return ("interrupted", f"{verb}: {left} of {len(keys)} {what} missing") if left else ("complete", "")


def claim(store, run_id: str, verb: str, keep_status: bool = False) -> tuple[str, str]:
    """This process runs the run now; refused while another live command on
    this host runs it (one whose owner is gone reads as interrupted, and may
    be taken over). keep_status: the run reads as it did before should this
    process die without a word. Returns the run's (status, note) before."""
    run = store.get_run(run_id)
    pid, host, _ = run.owner
    if run.status == "running" and pid and pid != os.getpid() and host == socket.gethostname():
        raise StoreError(
            f"run {run_id} is being run by another command (pid {pid} on {host}: {run.note}); "
            "wait for it or stop it first"
        )
    store.claim(run_id, f"{verb} running", (run.status, run.note) if keep_status else None)
    return run.status, run.note


def recover_time(store, run_id: str) -> tuple[float, str]:
    """Adds to the run the time its last command spent and did not add (it
    was killed), read from the run's progress log: (seconds, why), (0, '')
    when there is none. The 'end' event is written first, so it is never
    added twice."""
    run_dir = store.run_dir(run_id)
    lost, why = unrecorded_time(run_dir)
    if lost > 0:
        log_event(run_dir, "end", wall_s=round(lost, 3), recovered=why)
        _quietly(store.add_time, run_id, lost)
    return lost, why


def _quietly(fn, *args) -> None:
    """A bookkeeping write that must not hide the error being reported."""
    try:
        fn(*args)
    except StoreError:
        pass


class Hold:
    """One command's hold on one run (the module's docstring)."""

    def __init__(
        self,
        store,
        run_id: str,
        verb: str,
        planned: Callable[[], tuple[str, str]] | None = None,
        beside: bool = False,
        say: Callable[[str], None] | None = None,
    ):
        self.store, self.run_id, self.verb = store, run_id, verb
        self.planned, self.beside, self.say = planned, beside, say
        self.status: tuple[str, str] | None = None
        self.before: tuple[str, str] = ("", "")
        self.t0 = 0.0

    def finish(self, status: str, note: str = "") -> None:
        """The run's status once the body ends without an exception."""
        self.status = (status, note)

    def __enter__(self) -> Hold:
        self.before = claim(self.store, self.run_id, self.verb, keep_status=self.beside)
        lost, why = recover_time(self.store, self.run_id)  # a killed command's, beside or not
        if lost > 0 and self.say:
            self.say(f"run time: {lost:.1f} s added for an earlier {why}")
        if not self.beside:
            log_event(self.store.run_dir(self.run_id), "command", verb=self.verb, pid=os.getpid())
        self.t0 = time.monotonic()
        return self

    def __exit__(self, kind, exc, tb) -> None:
        verb = self.verb
        try:
            if self.beside:
                status, note = self.before
            elif kind is None:
                status, note = self.status or (self.planned() if self.planned else ("complete", ""))
                self.store.set_status(self.run_id, status, note)  # not quietly: nothing else says it failed
                return
            elif issubclass(kind, StoreError):
                status, note = (
                    "interrupted",
                    f"{verb} stopped: the results database could not be written; "
                    "'rooftop doctor --recover' brings in what was measured",
                )
            elif issubclass(kind, Exception):
                status, note = "failed", f"{verb}: {exc}"
            else:  # Ctrl-C, SIGTERM, SIGHUP (raised as KeyboardInterrupt), an exit
                status, note = "interrupted", f"{verb} interrupted: what it measured is stored"
            _quietly(self.store.set_status, self.run_id, status, note)
        finally:
            if not self.beside:
                wall = time.monotonic() - self.t0
                log_event(self.store.run_dir(self.run_id), "end", wall_s=round(wall, 3))  # first: never counted twice
                _quietly(self.store.add_time, self.run_id, wall)
