"""sbw: 1 MiB sequential puts, one in flight per client process: the
storage bandwidth a server process sustains (engine operation `put`: the
server RMA-reads the block, writes it to its storage, then answers).

Durable by default, as iops (`sbw.io_mode = direct+dsync`: O_DIRECT |
O_DSYNC, each block on the device when the server answers): the bandwidth
a checkpoint that must survive a crash gets. `buffered` measures the page
cache instead (a copy rate, not the device's). Its aggregate also crosses
the network, so it is checked against a known link rate as bw is.
"""

from __future__ import annotations

from rooftop.keys import Key
from rooftop.metrics import storage

KEYS = (
    Key(
        "sbw.op",
        "choice",
        "put",
        "storage operation: put (durable write) or get (read; needs data: sbw.fill or puts first)",
        ("put", "get"),
    ),
    Key("sbw.size", "size", "1MiB", "bytes per operation (the block size; whole 4 KiB blocks)"),
    Key(
        "sbw.pattern",
        "choice",
        "seq",
        "file offsets: seq (sequential) or rand (multiples of sbw.size)",
        ("seq", "rand"),
    ),
    *storage.data_keys(
        "sbw", "direct+dsync", "default direct+dsync: each block is on the device when the server answers"
    ),
)

METRIC = storage.data_metric(
    name="sbw",
    help="1 MiB sequential durable storage writes (bytes/s)",
    unit="bytes/s",
    work="bytes",
    keys=KEYS,
    link_bound=True,
    title=lambda sec: f"storage bandwidth ({sec['size']} {sec['pattern']} {sec['op']}, {sec['io_mode']})",
)
