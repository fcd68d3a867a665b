"""engine.launch = agents (issue 31, item 1): one `rooftop-engine agent` per
node for a whole campaign starts every server, client and shutdown by
forking, so a campaign launches nothing per placement.

Launches are counted independently of the agents' own word: the engine is
a wrapper script that appends its command (argv[1]) to a file at every
exec; a process an agent forks is no exec. A SIGKILLed campaign leaves no
process once the agents' lease has passed, and an agent killed mid-round
fails its node's samples, naming the node."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from campaign_util import counting_engine, engine_processes, execs, rooftop, samples

from rooftop.engine.agents import GRACE_S, LEASE_MARGIN_S
from rooftop.engine.base import engine_path

LEASE = 2.0
#: The agents' --poll in `runs`: far beyond the 10 s a server's stop waits
#: before SIGKILL and the GRACE_S + 5 s an agent's stop waits.
AGENT_POLL_S = 120.0
QUICK = ["--metrics", "rpc", "--duration", "0.3", "--warmup", "0.1", "--windows", "2"]


def collect(res: Path, wrapper: Path, launch: str, *extra: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, ROOFTOP_ENGINE=str(wrapper))
    return rooftop(
        "collect", *QUICK, "--set", f"engine.launch={launch}", "--results", str(res), *extra, env=env, check=False
    )


def agent_docs(res: Path, run: str) -> dict[int, dict]:
    docs = {}
    for f in (res / run / "agents").glob("*/node-*/agent.json"):
        docs[int(f.parent.name.split("-")[1])] = json.loads(f.read_text())
    return docs


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The same collect with agents and with a launch per placement, each
    through a counting engine: {launch: (results, run, execs)}. The agents
    look for files every AGENT_POLL_S only (their --poll): whatever they
    act on in time (requests, signals, the stop file) woke them (inotify)."""
    out = {}
    for launch in ("agents", "per-placement"):
        folder = tmp_path_factory.mktemp(launch)
        wrapper, log = counting_engine(folder, f"--poll {AGENT_POLL_S:g}")
        p = collect(folder / "res", wrapper, launch)
        assert p.returncode == 0, p.stderr[-3000:]
        out[launch] = (folder / "res", p.stdout.strip().splitlines()[-1], execs(log))
    return out


def test_one_agent_per_node_and_no_other_engine_launch(runs, validate):
    res, run, counted = runs["agents"]
    rows = samples(res, run)
    assert rows and all(r["status"] == "ok" for r in rows), [r["error"] for r in rows]
    # Two nodes: two agents; else only the engine version the run records.
    assert counted == Counter({"agent": 2, "version": 1}), counted
    docs = agent_docs(res, run)
    assert sorted(docs) == [0, 1]
    for doc in docs.values():
        validate(doc)
        assert doc["role"] == "agent" and doc["complete"], doc
        # The campaign's stop file ended them (its lease went with it), and
        # each had room for its children's titles without running itself again.
        assert "asked it to stop" in doc["result"]["stop_reason"], doc["result"]
        assert doc["result"]["ran_again"] is False, doc["result"]
        assert doc["result"]["running_at_stop"] == 0 and doc["result"]["refused"] == 0
        # ofi+tcp: libfabric's providers initialised once in the agent, not in each child.
        assert doc["result"]["preinit"] == "ofi+tcp" and doc["result"]["preinit_done"], doc["result"]
    # Node 0 read the machine (once: the local launcher's nodes are one
    # machine) and served (one server, stopped by its agent's SIGTERM: no
    # shutdown process), node 1 ran the client round.
    assert docs[0]["result"]["started"] == 2 and docs[1]["result"]["started"] == 1, docs
    # Every process still wrote its own document, bound as asked.
    client = json.loads(next((res / run / "raw").glob("*/client-0.json")).read_text())
    server = json.loads(next((res / run / "groups").glob("*/server-0.json")).read_text())
    assert client["environment"]["binding"].startswith("--cpus ") and client["complete"]
    assert server["environment"]["pid"] != docs[0]["environment"]["pid"]
    assert server["complete"] and server["result"]["stop_reason"] == "signal SIGTERM", server["result"]
    assert not engine_processes(str(res))


def test_a_launch_per_placement_stays_a_choice(runs):
    res, run, counted = runs["per-placement"]
    assert all(r["status"] == "ok" for r in samples(res, run))
    # and the machine's record, read once (the local launcher's nodes are one machine)
    assert counted == Counter({"serve": 1, "load": 1, "shutdown": 1, "version": 1, "machine": 1}), counted
    assert not (res / run / "agents").exists()


def start(res: Path, *extra: str) -> subprocess.Popen:
    args = [sys.executable, "-m", "rooftop", "collect", "--metrics", "rpc", "--results", str(res)]
    args += ["--set", "engine.launch=agents", "--set", f"engine.lease={LEASE}", *extra]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_windows(res: Path, p: subprocess.Popen, timeout: float = 60) -> None:
    """Until a client of the first round has logged a window."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert p.poll() is None, p.communicate()
        if any(f.stat().st_size for f in res.glob("*/raw/*/windows-*.jsonl")):
            return
        time.sleep(0.05)
    raise AssertionError("no window measured")


def test_sigkill_of_the_campaign_leaves_no_process_after_the_lease(tmp_path):
    res = tmp_path / "res"
    p = start(res, "--duration", "0.5", "--warmup", "0.1", "--windows", "20")
    wait_for_windows(res, p)
    # Two agents, a server and a client, each showing its own command line (ps).
    commands = sorted(Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[1] for pid in engine_processes(str(res)))
    assert commands == [b"agent", b"agent", b"load", b"serve"], commands
    p.kill()
    p.communicate(timeout=10)
    deadline = time.monotonic() + LEASE + LEASE_MARGIN_S + GRACE_S + 5
    while engine_processes(str(res)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not engine_processes(str(res)), "agents or engines outlived the lease"
    docs = [json.loads(f.read_text()) for f in res.glob("*/agents/*/node-*/agent.json")]
    assert len(docs) == 2 and all("not renewed" in d["result"]["stop_reason"] for d in docs), docs
    # The engines stopped on their own lease first, saying so; the agents after them.
    server = json.loads(next(res.glob("*/groups/*/server-0.json")).read_text())
    assert "lease" in server["result"]["stop_reason"], server["result"]
    assert all(d["result"]["running_at_stop"] == 0 for d in docs), docs


def test_a_dead_agent_fails_its_samples_naming_its_node(tmp_path):
    res = tmp_path / "res"
    p = start(res, "--duration", "0.5", "--warmup", "0.1", "--windows", "8")
    wait_for_windows(res, p)
    (ready,) = res.glob("*/agents/*/node-1/ready")
    os.kill(json.loads(ready.read_text())["pid"], signal.SIGKILL)  # the client node's agent
    _, err = p.communicate(timeout=120)
    assert p.returncode == 1, err[-3000:]
    (run,) = [r["id"] for r in json.loads(rooftop("runs", "--json", "--results", str(res)).stdout)]
    rows = samples(res, run)
    failed = [r for r in rows if r["status"] == "failed"]
    assert failed, rows
    for r in failed:
        assert "the agent of node 1 (localhost) exited (code -9)" in r["error"], r["error"]
    assert not engine_processes(str(res))


def test_no_agent_started_stops_the_campaign_saying_why(tmp_path):
    """An engine whose agent cannot start (here: refused by a wrapper, as
    an older engine without the command would be): the campaign stops
    before measuring, with the agent's own words and the way out."""
    engine = tmp_path / "rooftop-engine"
    real = shlex.quote(engine_path())
    engine.write_text(f'#!/bin/sh\n[ "$1" = agent ] && {{ echo "no agents here" >&2; exit 2; }}\nexec {real} "$@"\n')
    engine.chmod(0o755)
    p = collect(tmp_path / "res", engine, "agents")
    assert p.returncode == 2, p.stderr[-2000:]
    assert "engine.launch = agents: no agent started" in p.stderr and "no agents here" in p.stderr, p.stderr
    assert "engine.launch = per-placement" in p.stderr
    assert not engine_processes(str(tmp_path))
