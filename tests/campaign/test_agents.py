"""engine.launch = agents (issue 31, item 1): one `rooftop-engine agent` per
node for a whole campaign starts every server, client and shutdown by
forking, so a campaign launches nothing per placement.

Launches are counted independently of the agents' own word: the engine is
a wrapper script that appends its command (argv[1]) to a file at every
exec; a process an agent forks is no exec. A SIGKILLed campaign leaves no
process once the agents' lease has passed, and an agent killed mid-round
fails its node's samples, naming the node.

An agent acts only on request files of its own user in its own folder
(issue 42): another user's request is not run, an entry that is no request
file costs it nothing, and a removed agents' folder is named in the samples
it fails."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from campaign_util import counting_engine, engine_processes, execs, rooftop, samples

from rooftop.engine.agents import GRACE_S, LEASE_MARGIN_S, Agents
from rooftop.engine.base import EngineError, engine_path
from rooftop.engine.leases import Leases
from rooftop.launchers.base import Launch
from rooftop.launchers.local import LocalLauncher

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


@pytest.fixture
def agents(tmp_path):
    """The agent of one node on this machine, started as a campaign starts
    it (no campaign: no server, no round), stopped afterwards."""
    leases = Leases(10.0)
    a = Agents(LocalLauncher(1), engine_path(), tmp_path, leases, timeout=30)
    a.start()
    yield a
    a.stop()
    leases.close()


def served(agents: Agents, log: Path) -> int:
    """The exit code of `rooftop-engine version` run by the agent."""
    return agents.run(Launch([engine_path(), "version"], agents.nodes[0], [0]), log).wait(timeout=60)


def request(folder: Path, name: str, log: Path, owner: int) -> None:
    """Drops a request that runs `rooftop-engine version` (its log: created
    by whatever runs it) in folder, as a file of uid owner."""
    fields = ["log", str(log), "arg", engine_path(), "arg", "version"]
    tmp = folder / f".{name}.tmp"
    tmp.write_bytes(b"".join(f.encode() + b"\0" for f in fields))
    os.chown(tmp, owner, owner)
    tmp.rename(folder / name)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a file to another user")
def test_a_request_of_another_user_is_not_run(agents, tmp_path):
    """A well-formed request owned by another user (uid 65534) is ignored,
    said once; the campaign's own request after it is served."""
    ndir, launch_log = agents.node_dir(0), agents.folder / "launch-0.log"
    marker = tmp_path / "marker"
    request(ndir, "req-7", marker, 65534)
    assert served(agents, tmp_path / "ok.log") == 0
    agents.stop()
    assert not marker.exists()
    result = json.loads((ndir / "agent.json").read_text())["result"]
    assert result["ignored"] == 1 and result["started"] == 1, result
    assert "req-7 ignored: owned by uid 65534" in launch_log.read_text()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a file to another user")
def test_an_agents_folder_put_in_place_of_the_campaigns_serves_nobody(agents, tmp_path):
    """Issue 42's case: another user renames RUN/agents, makes the agent's
    folder (and a lease) anew as their own and drops a request there. The
    agent holds its own folder and never reads theirs: it stops, saying
    its folder was replaced, and the campaign names that cause."""
    ndir, session = agents.node_dir(0), agents.folder
    (tmp_path / "agents").rename(tmp_path / "agents.old")
    ndir.mkdir(parents=True)
    (session / "lease").write_text("theirs\n")
    marker = tmp_path / "marker"
    request(ndir, "req-0", marker, 65534)
    for d in (tmp_path / "agents", session, ndir):
        os.chown(d, 65534, 65534)
    agents.procs[0].wait(timeout=60)  # the agent stopped on its own
    assert not marker.exists()
    log = (tmp_path / "agents.old" / session.name / "launch-0.log").read_text()
    assert f"its folder {ndir} was removed or replaced: another folder has its name now" in log, log
    why = agents.lost(0)
    assert why and f"the agents' folder {session} was removed or replaced: another folder has its name" in why, why


def test_an_agent_refuses_a_folder_it_does_not_own_or_others_may_write(tmp_path):
    """Its folder must be its user's and writable by no one else; refused,
    its document goes to stdout, not into that folder."""
    ndir = tmp_path / "node-0"
    ndir.mkdir(mode=0o700)
    cases = [(0o770, os.geteuid(), "writable by other users (mode 0770)")]
    if os.geteuid() == 0:
        cases.append((0o700, 65534, "owned by uid 65534, not by this agent's user (uid 0)"))
    for mode, owner, why in cases:
        ndir.chmod(mode)
        os.chown(ndir, owner, owner)
        p = subprocess.run(
            [engine_path(), "agent", "--dir", str(tmp_path), "--rank", "0", "--lease", str(tmp_path / "lease")]
            + ["--lease-timeout", "1", "--output", str(ndir / "agent.json")],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert p.returncode == 1, p.stderr
        assert f"refuses its folder {ndir}: {why}" in p.stderr, p.stderr
        assert not (ndir / "agent.json").exists()
        assert json.loads(p.stdout)["errors"], p.stdout


def test_an_agents_folder_that_is_a_link_or_another_users_is_refused(tmp_path):
    """RUN/agents must be the campaign's user's own folder: a link (to a
    folder of someone else's choosing) or another user's folder is named
    and refused before any agent starts."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o755)
    cases = [("link", lambda d: d.symlink_to(elsewhere), "is not a folder of this user's own (a link?)")]
    if os.geteuid() == 0:
        cases.append(("theirs", lambda d: (d.mkdir(), os.chown(d, 65534, 65534)), "belongs to uid 65534"))
    for name, make, why in cases:
        run_dir = tmp_path / name
        run_dir.mkdir()
        make(run_dir / "agents")
        leases = Leases(10.0)
        with pytest.raises(EngineError, match=re.escape(f"{run_dir / 'agents'} {why}")):
            Agents(LocalLauncher(1), engine_path(), run_dir, leases, timeout=30).start()
        leases.close()
    assert oct(elsewhere.stat().st_mode & 0o777) == "0o755" and not any(elsewhere.iterdir())
    assert not engine_processes(str(tmp_path))


def cpu_seconds(pid: int) -> float:
    """The user and system CPU time process pid has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_a_folder_named_like_a_request_costs_no_cpu(agents, tmp_path):
    """req-6 as a folder (not empty: it cannot be removed) is ignored once;
    the agent does not look at it again at every wake-up (it spun at 67 %
    of a core, its own answers waking it)."""
    ndir = agents.node_dir(0)
    (ndir / "req-6" / "x").mkdir(parents=True)
    (pid,) = agents.pids()
    before = cpu_seconds(pid)
    time.sleep(2)
    used = cpu_seconds(pid) - before
    assert used < 0.1, f"the agent used {used:.2f} s of CPU in 2 s"  # idle: ~0.01 s (20 looks a second)
    assert served(agents, tmp_path / "ok.log") == 0
    agents.stop()
    result = json.loads((ndir / "agent.json").read_text())["result"]
    assert result["ignored"] == 1 and result["started"] == 1, result


def test_a_removed_agents_folder_is_named_in_the_failed_samples(tmp_path):
    """RUN/agents removed mid-round: its agents stop (their folders are
    gone) and every sample failed names the folder, not only an agent's
    exit."""
    res = tmp_path / "res"
    p = start(res, "--duration", "0.5", "--warmup", "0.1", "--windows", "8")
    wait_for_windows(res, p)
    (folder,) = res.glob("*/agents")
    folder.rename(tmp_path / "gone")  # at once: nothing is written into it half-removed
    shutil.rmtree(tmp_path / "gone", ignore_errors=True)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 1, err[-3000:]
    (run,) = [r["id"] for r in json.loads(rooftop("runs", "--json", "--results", str(res)).stdout)]
    failed = [r for r in samples(res, run) if r["status"] == "failed"]
    assert failed
    for r in failed:
        # Gone, or (the campaign's lease renewal having made the path again) another folder in its place.
        assert f"the agents' folder {folder}/" in r["error"] and "was removed or replaced: " in r["error"], r["error"]
    assert not engine_processes(str(res))
