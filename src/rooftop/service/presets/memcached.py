"""memcached: Debian's memcached (one worker thread, TCP only), Debian's
memcaslap (libmemcached-tools) as the client with one thread and one
connection (-T 1 -c 1): it sends one request and reads its reply before
the next (checked with strace: one sendmsg, one read, in turn), its
default mix of 90 % get and 10 % set of small values, for {duration} s;
its final line "Run time: ... TPS: N" gives the rate (rpc: one request =
one operation). memcached refuses to run as root without -u, so the
server runs as the user rooftop runs as ({user} is not a placeholder:
'-u root' is harmless for other users, who cannot switch user anyway).
"""

import getpass

from rooftop.service.presets.base import Preset

PRESETS = (
    Preset(
        "memcached",
        "memcached get/set (90/10, small values), one connection per client (rpc)",
        ("memcached", "memcaslap"),
        "Debian: apt-get install memcached libmemcached-tools",
        {
            "name": "memcached",
            "metric": "rpc",
            "description": "memcached get/set (90/10, small values), one connection per client (rpc)",
            "server": {
                "command": f"memcached -u {getpass.getuser()} -l {{address}} -p {{port}} -U 0 -t 1 -m 64",
                "base_port": 21211,
            },
            "ready": {"tcp": True, "timeout": 15},
            "client": {"command": "memcaslap -s {server_address}:{server_port} -T 1 -c 1 -t {duration}s"},
            "rate": {"regex": r"TPS: (?P<rate>[0-9]+)", "unit": "ops/s"},
        },
    ),
)
