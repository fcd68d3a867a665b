"""A real campaign keeps its shutdown token secret: not on any engine's
command line or environment, only in a 0600 file of a 0700 group directory,
in no other file of the results folder, and gone once the servers stop."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from campaign_util import engine_processes, rooftop, samples

from rooftop.engine.base import engine_path

QUICK = ["--metrics", "rpc", "--duration", "0.3", "--windows", "1", "--warmup", "0.1"]
#: Samples of 1 s leave time to look at a group while its servers run.
SLOWER = ["--metrics", "rpc", "--duration", "1", "--windows", "1", "--warmup", "0.1"]


def files_holding(root: Path, needle: str) -> list[Path]:
    out = []
    for p in root.rglob("*"):
        try:
            if p.is_file() and needle.encode() in p.read_bytes():
                out.append(p)
        except FileNotFoundError:  # a temporary file renamed into place while we looked (an agent's .req-0.tmp)
            continue
    return out


def modes(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mode & 0o777 for p in [root, *root.rglob("*")]}


def wait_for_servers(res: Path, campaign: subprocess.Popen, timeout: float = 60):
    """(token file, server pids) once a group's servers all run."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and campaign.poll() is None:
        for token in res.glob("*/groups/*/token"):
            pids = engine_processes(str(token.parent))
            if pids and (token.parent / "0.addr").exists():
                return token, pids
        time.sleep(0.01)
    raise AssertionError(f"no running servers seen (campaign exit {campaign.poll()})")


def other_user_reads(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["cat", str(path)], user=65534, capture_output=True, text=True)


def check_while_running(res: Path, token_file: Path, pids: list[int]) -> str:
    token = token_file.read_text().strip()
    assert len(token) >= 32
    servers = 0
    for pid in pids:  # ps shows argv to everyone; the environment is ours alone, check it too
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes()
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue  # a client or ping that just ended
        assert token.encode() not in argv and token.encode() not in environ, argv
        servers += b"\0serve\0" in argv and b"--token-file" in argv
    assert servers, "no server process seen"
    groups = token_file.parent.parent
    for name, mode in modes(groups).items():
        want = 0o700 if (groups / name).is_dir() else 0o600
        assert mode == want, f"groups/{name}: {oct(mode)}"
    assert files_holding(res, token) == [token_file]
    if os.geteuid() == 0:  # another user can read neither the token nor the addresses
        for f in (token_file, token_file.parent / "0.addr"):
            p = other_user_reads(f)
            assert p.returncode != 0 and "Permission denied" in p.stderr, (f, p.stderr)
    wrong = token_file.parent / "wrong-token"
    wrong.write_text("0" * 32 + "\n")
    wrong.chmod(0o600)
    p = subprocess.run(
        [
            engine_path(),
            "shutdown",
            "--group-dir",
            str(token_file.parent),
            "--token-file",
            str(wrong),
            "--timeout",
            "5",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    wrong.unlink()
    assert p.returncode == 1 and "wrong token" in p.stderr, p.stderr
    return token


def test_campaign_token_stays_secret(tmp_path):
    res = tmp_path / "res"
    campaign = subprocess.Popen(
        [sys.executable, "-m", "rooftop", "collect", *SLOWER, "--results", str(res)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        token_file, pids = wait_for_servers(res, campaign)
        token = check_while_running(res, token_file, pids)
        out, err = campaign.communicate(timeout=120)
    finally:
        if campaign.poll() is None:
            campaign.kill()
            campaign.wait()
    assert campaign.returncode == 0, err
    run = out.strip().splitlines()[-1]
    rows = samples(res, run)
    assert rows and all(r["status"] == "ok" for r in rows), rows
    assert token not in out + err
    assert files_holding(res, token) == []  # token files are removed once their servers stop
    docs = [json.loads(p.read_text()) for p in res.glob(f"{run}/groups/*/server-*.json")]
    assert docs and all(d["config"]["token"] == "<set>" for d in docs)
    # under node agents (the default) each server stopped on its agent's
    # SIGTERM; a shutdown RPC still needs the token: our wrong one was denied
    # (a launch per placement stops them with the token file: test_cluster_launchers)
    assert {d["result"]["stop_reason"] for d in docs} == {"signal SIGTERM"}
    assert sum(d["result"]["requests"]["shutdown_denied"] for d in docs) == 1  # our wrong token
    assert all(m == 0o700 for m in (p.stat().st_mode & 0o777 for p in res.glob(f"{run}/groups/*")))


def test_dry_run_prints_no_secret(tmp_path):
    res = tmp_path / "res"
    out = rooftop("collect", "--dry-run", *QUICK, "--results", str(res)).stdout
    serve = [l for l in out.splitlines() if " serve " in l]
    assert serve and all("--token-file" in l and "/groups/<group>/token" in l for l in serve)
    assert "<token>" not in out and "--token " not in out
    assert not engine_processes(str(res))
