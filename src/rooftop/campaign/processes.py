"""Every process a campaign starts, registered (Processes), signals
deferred while one is registered or a round's rows are stored, and how a
sample or a round ends early (SampleFailed, RoundInterrupted). How a
process is ended: rooftop.engine.reaping."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from contextlib import contextmanager
from pathlib import Path

from rooftop.engine.agents import Agents
from rooftop.engine.reaping import terminate
from rooftop.launchers import Launch


@contextmanager
def _signals_deferred():
    """SIGINT/SIGTERM/SIGHUP received inside the block take effect when it ends
    (main thread only: elsewhere Python delivers no signals anyway)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []
    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    old = {s: signal.signal(s, lambda n, f: got.append(n)) for s in sigs}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        if got:
            signal.raise_signal(got[0])  # now handled as usual


class Processes:
    """Every process a campaign starts, so that all can be stopped. agents:
    the node agents that start its engines (engine.launch = agents; None:
    every launch is a process of its own)."""

    def __init__(self, agents: Agents | None = None):
        self.procs: list = []  # subprocess.Popen, or AgentProc for what an agent started
        self.agents = agents

    def start(self, launch: Launch, log: Path):
        if launch.agent:
            if self.agents is None:
                raise ValueError(f"{launch.argv[:2]} is for a node agent, but this campaign starts none")
            proc = self.agents.run(launch, log)  # the agents start first, when need be
            self.procs.append(proc)
            return proc
        env = dict(os.environ, **launch.env)
        # Ctrl-C between fork and registration would orphan the child:
        # signals wait until it is on the list stop_all() walks.
        with _signals_deferred():
            with open(log, "w") as f:
                p = subprocess.Popen(launch.argv, stdout=f, stderr=subprocess.STDOUT, env=env, start_new_session=True)
            self.procs.append(p)
        return p

    def stop_all(self, grace: float = 5.0) -> None:
        terminate(self.procs, grace)
        self.forget_finished()

    def forget_finished(self) -> None:
        self.procs = [p for p in self.procs if p.poll() is None]

    def gone(self, nodes) -> list[str]:
        """Why the agents of those node indexes are gone (none: [])."""
        return self.agents.gone_among(nodes) if self.agents is not None else []

    def close(self, grace: float = 5.0) -> None:
        """Stops every process, then the agents."""
        self.stop_all(grace)
        if self.agents is not None:
            self.agents.stop()


class SampleFailed(RuntimeError):
    pass


class RoundInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) during a round: measured holds the rows of the
    windows every client had fully measured, to store before stopping."""

    def __init__(self, measured: list):
        super().__init__()
        self.measured = measured
