"""redis: Debian's redis-server with persistence off (--save '' --appendonly
no), one redis-benchmark per client process with one connection and no
pipelining (-c 1 -P 1), looping (-l) until the wrapper stops it after
{duration} s; its progress lines (every 250 ms: "GET: rps=R (overall: ...)")
give the rate over the time all clients shared. The key redis-benchmark
uses is set once per server by the readiness command (so GET returns a
value, and the command succeeds only once the server answers).

redis     GET of a 3-byte value, against rpc (one request = one operation)
redis-set SET of a 3-byte value, against rpc
redis-bw  GET of a 1 MiB value, against bw (one request = 1 MiB read)
"""

import shlex

from rooftop.service.presets.base import Preset

INSTALL = "Debian: apt-get install redis-server redis-tools"
_SERVER = {
    "command": "redis-server --bind {address} --port {port} --save '' --appendonly no "
    "--dir {dir} --logfile {dir}/redis.log --daemonize no --protected-mode no",
    "base_port": 16379,
    "stop": "redis-cli -h {address} -p {port} shutdown nosave",
    "keep": ["redis.log"],
}


def _preset(name: str, op: str, size: int, metric: str, help: str) -> Preset:
    value = f"head -c {size} /dev/zero | redis-cli -h {{address}} -p {{port}} -x SET key:__rand_int__"
    data = {
        "name": name,
        "metric": metric,
        "operation": "request" if metric == "rpc" else str(size),
        "description": help,
        "server": dict(_SERVER),
        "ready": {"command": f"sh -c {_quote(value + ' | grep -qx OK')}", "timeout": 15},
        "client": {
            "command": f"redis-benchmark -h {{server_address}} -p {{server_port}} -c 1 -P 1 -d {size} -t {op} -q -l",
            "stop_after_duration": True,
        },
        "rate": {"progress": rf"{op.upper()}: rps=([0-9.]+)", "unit": "ops/s"},
    }
    return Preset(name, help, ("redis-server", "redis-cli", "redis-benchmark"), INSTALL, data)


def _quote(s: str) -> str:
    return shlex.quote(s)


PRESETS = (
    _preset("redis", "get", 3, "rpc", "redis GET of a 3-byte value, one connection, no pipelining (rpc)"),
    _preset("redis-set", "set", 3, "rpc", "redis SET of a 3-byte value, one connection, no pipelining (rpc)"),
    _preset("redis-bw", "get", 1 << 20, "bw", "redis GET of a 1 MiB value, one connection, no pipelining (bw)"),
)
