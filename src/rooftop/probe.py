"""rooftop probe: the quick answer on one machine.

One server process and one client process, pinned to different cores,
per fabric: the sequential noop RPC rate (the per-process RPC ceiling of a
client/server pair) and the sequential 4 MiB bulk-read bandwidth with a
streaming buffer. Every engine document is kept in the results folder.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from rooftop.engine import EngineError, Group
from rooftop.units import fmt_in


def _cpus() -> tuple[str | None, str | None]:
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) >= 2:
        return str(cpus[0]), str(cpus[1])
    return None, None


def run(fabrics: list[str], duration: float, results: Path, say=print) -> dict:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out_dir = results / f"probe-{stamp}"
    out_dir.mkdir(parents=True, exist_ok=True)
    server_cpu, client_cpu = _cpus()
    rows = []
    for fabric in fabrics:
        for label, op, extra in (("noop RPC", "noop", []),
                                 ("4 MiB read", "read", ["--size", "4MiB", "--buffer", "stream"])):
            say(f"  {fabric:9s} {label:11s} ... ", end="")
            sys.stdout.flush()
            try:
                with Group(fabric=fabric) as g:
                    g.start_server(0, cpus=server_cpu)
                    doc = g.load(op=op, duration=duration, warmup=min(0.5, duration / 2),
                                 cpus=client_cpu, extra=extra)
                    server_doc = g.close()[0]
            except EngineError as e:
                say(f"failed: {e}")
                rows.append({"fabric": fabric, "test": label, "error": str(e)})
                continue
            name = f"{fabric.replace('+', '_')}-{op}"
            (out_dir / f"{name}-client.json").write_text(json.dumps(doc, indent=1))
            if server_doc:
                (out_dir / f"{name}-server.json").write_text(json.dumps(server_doc, indent=1))
            r = doc["result"]
            row = {"fabric": fabric, "test": label, "provider": doc["engine"]["provider"],
                   "domain": doc["engine"].get("domain", ""),
                   "ops_per_sec": r["ops_per_sec"], "bytes_per_sec": r["bytes_per_sec"],
                   "p50_us": r["latency_us"]["p50"], "p99_us": r["latency_us"]["p99"],
                   "client_cpu": r["cpu"]["utilization"]}
            rows.append(row)
            if op == "noop":
                say(f"{fmt_in(r['ops_per_sec'], 'ops/s', '>10,.0f')}   p50 {r['latency_us']['p50']:.1f} us")
            else:
                say(f"{fmt_in(r['bytes_per_sec'], 'GiB/s', '>10.2f')}  p50 {r['latency_us']['p50']:.0f} us")
    summary = {"when": stamp, "server_cpu": server_cpu, "client_cpu": client_cpu,
               "duration_s": duration, "rows": rows}
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=1))
    summary["folder"] = str(out_dir)
    return summary
