"""rooftop probe: the quick answer on one machine.

One server process and one client process, pinned to different cores,
per fabric: the sequential noop RPC rate (the per-process RPC ceiling of a
client/server pair) and the sequential 4 MiB bulk-read bandwidth with a
streaming buffer. Each test runs `repeat` times (a fresh server each time)
and reports the median with the spread of the runs; runs that disagree by
more than DISAGREE (max - min over the median) get a warning, since one
run on a busy machine can be off by a factor of 3. Every engine document is
kept in the results folder. (The latency probe that groups a cluster's
nodes, the topology source 'probe', is rooftop.topology.pings.)
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

from rooftop.config.catalog import register
from rooftop.engine import enginedoc
from rooftop.engine.base import DEFAULT_LEASE, EngineError
from rooftop.engine.servers import Group
from rooftop.keys import Key
from rooftop.numbers import json_text
from rooftop.units import fmt_pct, fmt_range, fmt_rate

#: The config keys of `rooftop probe` (section `probe`; its --fabric and
#: --lease are the common keys fabric.provider and engine.lease: a site
#: config's fabric is the one probed), registered in the key table: `rooftop
#: config keys` lists them, --set and a config file's [probe] table set
#: them, and its flags (--compare, --duration, --repeats) are KeyFlags of them.
KEYS = [
    Key(
        "probe.compare",
        "list[str]",
        ["ofi+shm"],
        "fabrics probed after fabric.provider, one after the other, to compare with it (default the node's "
        "shared memory; [] or --compare '': fabric.provider alone)",
    ),
    Key("probe.duration", "float", 3.0, "measured seconds per test", minimum=0.05, maximum=3600),
    Key("probe.repeat", "int", 3, "runs per test; the median is reported", minimum=1, maximum=1000),
]
register("probe", KEYS)

#: Runs whose (max - min) / median exceeds this get a warning.
DISAGREE = 0.20

TESTS = (
    ("noop RPC", "noop", [], enginedoc.rate_field("ops"), "ops/s"),
    ("4 MiB read", "read", ["--size", "4MiB", "--buffer", "stream"], enginedoc.rate_field("bytes"), "bytes/s"),
)


def _cpus() -> tuple[str | None, str | None]:
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) >= 2:
        return str(cpus[0]), str(cpus[1])
    return None, None


def _once(
    fabric: str, op: str, extra: list[str], duration: float, cpus, out_dir: Path, lease: float = DEFAULT_LEASE
) -> tuple[dict, dict | None]:
    """One server, one client: (client document, server document). Both
    hold the group's lease: a killed probe leaves neither running, and its
    group folder is in out_dir, not in $TMPDIR."""
    with Group(fabric=fabric, lease=lease, under=out_dir) as g:
        g.start_server(0, cpus=cpus[0])
        doc = g.load(op=op, duration=duration, warmup=min(0.5, duration / 2), cpus=cpus[1], extra=extra)
        return doc, g.close()[0]


def _save(out_dir: Path, name: str, i: int, doc: dict, server_doc: dict | None) -> None:
    """Run 1 as <name>-client.json, run i as <name>-client-<i>.json."""
    suffix = "" if i == 1 else f"-{i}"
    (out_dir / f"{name}-client{suffix}.json").write_text(json_text(doc, indent=1))
    if server_doc:
        (out_dir / f"{name}-server{suffix}.json").write_text(json_text(server_doc, indent=1))


def spread(values: list[float]) -> float:
    """(max - min) / median: 0 for one run."""
    med = statistics.median(values)
    return (max(values) - min(values)) / med if med > 0 else 0.0


def _row(fabric: str, label: str, field: str, docs: list[dict]) -> dict:
    """The test's row: the median run's numbers, every run's rate, the spread."""
    rates = [enginedoc.rate(d["result"], field) for d in docs]
    mid = sorted(docs, key=lambda d: enginedoc.rate(d["result"], field))[(len(docs) - 1) // 2]
    r = mid["result"]
    return {
        "fabric": fabric,
        "test": label,
        "provider": mid["engine"]["provider"],
        "domain": mid["engine"].get("domain", ""),
        "ops_per_sec": statistics.median(enginedoc.rate(d["result"], "ops_per_sec") for d in docs),
        "bytes_per_sec": statistics.median(enginedoc.rate(d["result"], "bytes_per_sec") for d in docs),
        "p50_us": r["latency_us"]["p50"],
        "p99_us": r["latency_us"]["p99"],
        "client_cpu": r["cpu"]["utilization"],
        "runs": rates,
        "spread": spread(rates),
        "disagree": spread(rates) > DISAGREE,
    }


def _line(row: dict, field: str, unit: str) -> str:
    runs = row["runs"]
    text = f"{fmt_rate(row[field], unit):>13}"
    if len(runs) > 1:
        text += f"  median of {len(runs)} ({fmt_range(min(runs), max(runs), unit)}, spread {fmt_pct(row['spread'])})"
    p50 = row["p50_us"]
    return text + f"   p50 {p50:.1f} us" if p50 < 100 else text + f"   p50 {p50:.0f} us"


def run(
    fabrics: list[str], duration: float, results: Path, say=print, repeat: int = 3, lease: float = DEFAULT_LEASE
) -> dict:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out_dir = results / f"probe-{stamp}"
    out_dir.mkdir(parents=True, exist_ok=True)
    cpus = _cpus()
    rows = []
    for fabric in fabrics:
        for label, op, extra, field, unit in TESTS:
            say(f"  {fabric:9s} {label:11s} ... ", end="")
            sys.stdout.flush()
            name = f"{fabric.replace('+', '_')}-{op}"
            try:
                docs = []
                for i in range(1, repeat + 1):
                    doc, server_doc = _once(fabric, op, extra, duration, cpus, out_dir, lease)
                    _save(out_dir, name, i, doc, server_doc)
                    docs.append(doc)
            except EngineError as e:
                say(f"failed: {e}")
                rows.append({"fabric": fabric, "test": label, "error": str(e)})
                continue
            row = _row(fabric, label, field, docs)
            rows.append(row)
            say(_line(row, field, unit))
            if row["disagree"]:
                say(
                    f"  warning: {fabric} {label}: the {repeat} runs disagree by {fmt_pct(row['spread'])} "
                    f"(more than {fmt_pct(DISAGREE)}): something else is using this machine's cores or "
                    f"its clock changes; trust the median less, or measure longer (--duration)"
                )
    summary = {
        "when": stamp,
        "server_cpu": cpus[0],
        "client_cpu": cpus[1],
        "duration_s": duration,
        "repeat": repeat,
        "lease_s": lease,
        "rows": rows,
    }
    (out_dir / "summary.json").write_text(json_text(summary, indent=1))
    summary["folder"] = str(out_dir)
    return summary
