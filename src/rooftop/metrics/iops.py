"""iops: 4 KiB random puts, one in flight per client process: the client's
RPC makes the server write the block to its storage (engine operation
`put`, the server RMA-reads it first) and answer once written.

Durable by default: `iops.io_mode = direct+dsync` opens the data file with
O_DIRECT | O_DSYNC, so each put is on the device when the server answers
(O_DIRECT: not held in the page cache; O_DSYNC: the data and the metadata
needed to read it are written before write(2) returns), as a key-value
store's write-ahead log with an fdatasync per write. Every knob is a key
below, stored with the run (run_params) with its default.
"""

from __future__ import annotations

from rooftop.keys import Key
from rooftop.metrics import storage

KEYS = (
    Key(
        "iops.op",
        "choice",
        "put",
        "storage operation: put (durable write) or get (read; needs data: iops.fill or puts first)",
        ("put", "get"),
    ),
    Key("iops.size", "size", "4KiB", "bytes per operation (whole 4 KiB blocks)"),
    Key(
        "iops.pattern",
        "choice",
        "rand",
        "file offsets: rand (random, in multiples of iops.size) or seq",
        ("rand", "seq"),
    ),
    *storage.data_keys(
        "iops", "direct+dsync", "default direct+dsync: each put is on the device when the server answers"
    ),
)

METRIC = storage.data_metric(
    name="iops",
    help="4 KiB random durable storage writes (ops/s)",
    unit="ops/s",
    work="ops",
    keys=KEYS,
    title=lambda sec: f"storage IOPS ({sec['size']} {sec['pattern']} {sec['op']}, {sec['io_mode']})",
)
