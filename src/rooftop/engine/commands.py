"""One-shot engine commands (run_engine): run to the end under a guard process,
their JSON document parsed."""

from __future__ import annotations

import os
import signal
import subprocess

from rooftop.engine import enginedoc, guard
from rooftop.engine.base import EngineError, engine_path
from rooftop.engine.reaping import signal_proc


def run_engine(
    args: list[str], timeout: float, check: bool = True, env: dict[str, str] | None = None, guard: bool = False
) -> dict:
    """Runs one engine command to completion and returns its JSON document.

    env: variables added to this process's environment for it.
    guard: for a command that takes no --lease (storage) and may run long:
    it runs in a session of its own, which a guard process (rooftop.engine.guard)
    kills once this process is gone.
    Raises EngineError if it fails (when check) or does not finish in time.
    """
    cmd = [engine_path(), *args]
    try:
        if guard:
            p = _run_guarded(cmd, timeout, {**os.environ, **env} if env else None)
        else:
            p = subprocess.run(
                cmd, capture_output=True, text=True, timeout=timeout, env={**os.environ, **env} if env else None
            )
    except subprocess.TimeoutExpired as e:
        raise EngineError(f"'{' '.join(cmd)}' did not finish within {timeout:g} s") from e
    doc = enginedoc.parse(p.stdout)
    if check and p.returncode != 0:
        errors = (doc or {}).get("errors") or [p.stderr.strip() or "no output"]
        raise EngineError(
            f"rooftop-engine {args[0]} failed (exit {p.returncode}): " + "; ".join(errors), p.returncode, doc, p.stderr
        )
    if doc is None:
        raise EngineError(
            f"rooftop-engine {args[0]} printed no JSON document (exit {p.returncode}): {p.stderr.strip()}",
            p.returncode,
            None,
            p.stderr,
        )
    return doc


def _run_guarded(cmd: list[str], timeout: float, env) -> subprocess.CompletedProcess:
    """subprocess.run in a session of its own, under a guard; on any
    exception (a timeout, Ctrl-C) the command is killed, as run() does."""
    with subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True
    ) as p:
        g = guard.start(p.pid)
        try:
            out, err = p.communicate(timeout=timeout)
        except BaseException:
            signal_proc(p, signal.SIGKILL)
            p.wait()
            raise
        finally:
            g.kill()
            g.wait()
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)
