"""Source 'probe': a short latency probe that clusters the nodes by their ping
times, where no switch tree is known (not `rooftop probe`, the quick answer
on one machine: rooftop.probe). A server on one node (a landmark), and from
each other node one 'rooftop-engine ping' (PINGS noop round trips; the
fastest is its round-trip time); the times split in two by 1-D 2-means (near
and far, when the far ones are at least SEPARATION times the near ones).
Nodes near a landmark join its group; the first landmark's farthest node
becomes the second landmark when the first sees no split (it may be alone in
its group); then each node near no landmark yet becomes one, pinging only
the nodes left, up to MAX_LANDMARKS (the rest: one group). About N pings per
group. Each group is treated as one switch: the probe cannot tell a switch
from a group, only near from far. The engines run as a campaign's do (the
launcher, the fabric, a lease), in a folder under the results folder."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from rooftop.engine import enginedoc
from rooftop.engine.base import engine_path, private_dir, write_token
from rooftop.engine.leases import Leases
from rooftop.engine.reaping import terminate
from rooftop.engine.servers import wait_published
from rooftop.topology.base import Context, Topology, Unavailable

NAME = "probe"
HELP = "a latency probe: rooftop-engine ping from every node to a few landmark nodes, 2-means on the times"
#: Noop round trips per ping (the fastest counts).
PINGS = 20
#: The far cluster's mean must be this many times the near one's.
SEPARATION = 1.3
#: Landmarks at most (each costs one ping per node left).
MAX_LANDMARKS = 16
#: Seconds one ping or one server start may take.
TIMEOUT = 30.0


def split(values: list[float]) -> float | None:
    """The threshold between near and far (optimal 1-D 2-means: the cut
    with the least squared error, midway between the two means); None when
    the values do not fall in two clusters SEPARATION apart."""
    v = sorted(values)
    if len(v) < 2:
        return None
    best = None
    for k in range(1, len(v)):
        lo, hi = v[:k], v[k:]
        ml, mh = sum(lo) / len(lo), sum(hi) / len(hi)
        sse = sum((x - ml) ** 2 for x in lo) + sum((x - mh) ** 2 for x in hi)
        if best is None or sse < best[0]:
            best = (sse, ml, mh)
    _, ml, mh = best
    return (ml + mh) / 2 if mh >= SEPARATION * ml and mh > ml else None


def cluster(n: int, measure: Callable[[int, list[int]], dict[int, float]]) -> tuple[list[str], dict]:
    """Groups of nodes 0..n-1 by latency. measure(landmark, targets) ->
    {target: round-trip time} pings targets from the landmark. Returns (the
    group of each node, {(landmark, node): time})."""
    rtt: dict[tuple[int, int], float] = {}

    def ping(lm: int, targets) -> None:
        todo = [t for t in targets if t != lm and (lm, t) not in rtt]
        rtt.update({(lm, t): v for t, v in measure(lm, todo).items()})

    landmarks = [0]
    ping(0, range(n))
    while True:
        thr = split(list(rtt.values()))
        if thr is None and len(landmarks) == 1 and n > 2:
            far = max((x for x in range(1, n) if (0, x) in rtt), key=lambda x: rtt[(0, x)])
            landmarks.append(far)  # the first landmark may be alone in its group
            ping(far, range(n))
            continue

        def near(lm: int, x: int, thr=thr) -> bool:
            return x == lm or thr is None or rtt.get((lm, x), math.inf) <= thr

        group = [next((lm for lm in landmarks if near(lm, x)), None) for x in range(n)]
        left = [x for x in range(n) if group[x] is None]
        if not left or len(landmarks) >= MAX_LANDMARKS:
            break
        landmarks.append(left[0])
        ping(left[0], left)
    return [f"near-n{g}" if g is not None else "far-rest" for g in group], rtt


def find(ctx: Context) -> Topology:
    if ctx.launcher is None:
        raise Unavailable("the latency probe starts engines: it runs when measuring, not in a dry run")
    nodes = ctx.launcher.nodes()
    base = Path(ctx.cfg["results"]).resolve() / f".topology-probe-{os.getpid()}"
    try:
        groups, rtt = cluster(len(nodes), _Pinger(ctx.cfg, ctx.launcher, nodes, base))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    k = len(set(groups))
    note = f"{len(rtt)} pings, {k} latency cluster(s)"
    return Topology(NAME, groups, list(groups), note, [[a, b, round(v, 2)] for (a, b), v in sorted(rtt.items())])


class _Pinger:
    """measure() of cluster(): a server on the landmark, pings from the
    targets, each through the campaign's launcher."""

    def __init__(self, cfg: dict, launcher, nodes, base: Path):
        self.cfg, self.launcher, self.nodes, self.base = cfg, launcher, nodes, private_dir(base)
        self.engine = cfg["engine"]["path"] or engine_path()
        fab = cfg["fabric"]
        self.fabric = ["--fabric", fab["provider"]] + (["--domain", fab["domain"]] if fab["domain"] else [])

    def __call__(self, lm: int, targets: list[int]) -> dict[int, float]:
        if not targets:
            return {}
        gdir = private_dir(self.base / f"n{lm}")
        leases = Leases(float(self.cfg["engine"]["lease"]))
        leases.add(gdir)
        node = self.nodes[lm]
        argv = [self.engine, "serve", *self.fabric, "--group-dir", str(gdir), "--progress", "busy"]
        argv += ["--token-file", str(write_token(gdir, os.urandom(16).hex())), *leases.args(gdir)]
        argv += ["--output", str(gdir / enginedoc.SERVER_DOCUMENT)]
        argv += ["--address", ",".join(node.nic_addresses())] if node.address else []
        (launch,) = self.launcher.launches(node, argv, 1, "none", 0)
        log = gdir / "server.log"
        with open(log, "w") as f:
            server = subprocess.Popen(
                launch.argv,
                stdout=f,
                stderr=subprocess.STDOUT,
                env=dict(os.environ, **launch.env),
                start_new_session=True,
                stdin=subprocess.DEVNULL,
            )
        try:
            wait_published(gdir, [(server, [0], log)], TIMEOUT)
            return {t: self._ping(gdir, t) for t in targets}
        except Exception as e:  # an engine that fails here fails the campaign's samples too
            raise Unavailable(f"the latency probe from node {lm} failed: {e}") from None
        finally:
            terminate([server])
            leases.close()

    def _ping(self, gdir: Path, t: int) -> float:
        argv = [self.engine, "ping", *self.fabric, "--group-dir", str(gdir), "--count", str(PINGS)]
        argv += ["--timeout", str(self.cfg["engine"]["timeout"]), "--output", "-"]
        (launch,) = self.launcher.launches(self.nodes[t], argv, 1, "none", 0)
        p = subprocess.run(
            launch.argv,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            env=dict(os.environ, **launch.env),
            stdin=subprocess.DEVNULL,
        )
        doc = next((enginedoc.parse(line) for line in p.stdout.splitlines() if line.startswith("{")), None)
        if p.returncode != 0 or not doc or "rtt_min_us" not in (doc.get("result") or {}):
            raise Unavailable(f"ping from node {t} failed (exit {p.returncode}): {(p.stderr or p.stdout)[-300:]}")
        return float(doc["result"]["rtt_min_us"])
