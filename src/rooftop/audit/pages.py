"""A sixth pitfall, found on this machine: the pages a buffer is made of. A
1 MiB O_DIRECT write from base pages is up to 256 scattered pages; a device
taking fewer segments per request (a loop device: 128) splits it in two
unless the pages happen to be contiguous, so the same benchmark runs at one
of two speeds, depending on which pages its process got. Huge pages take
that draw away (benchmarks/RESULTS.md, storage vs fio). The huge setting
needs huge pages reserved (/proc/sys/vm/nr_hugepages): otherwise it is not
measurable here, and the row says how many to reserve."""

from rooftop.audit.base import INDISTINGUISHABLE, Pitfall, Setting, pct

SIZE = "1MiB"
LABEL = "1 MiB"


def meaning(comps: list[dict]) -> str:
    c = comps[0]
    if not c["measurable"]:
        return c["verdict"]
    if c["verdict"] == INDISTINGUISHABLE:
        return (
            f"within the noise of these repeats a {LABEL} O_DIRECT write runs as fast from base pages as "
            "from huge ones here: this device takes the write whole either way"
        )
    return (
        f"{LABEL} O_DIRECT writes from huge pages reach {pct(c['ratio'])} bandwidth than from base pages, and "
        "a base-page buffer's rate depends on which pages its process got: give the service's (and the "
        "benchmark's) I/O buffers huge pages, or expect that spread between runs"
    )


PITFALL = Pitfall(
    name="pages",
    title="buffer pages: huge vs base (O_DIRECT)",
    target="storage",
    op="put",
    args=("--size", SIZE, "--pattern", "seq", "--io-mode", "direct", "--file-size", "64MiB"),
    unit="bytes/s",
    settings=(Setting("huge", client=("--buffer-pages", "huge")), Setting("base", client=("--buffer-pages", "base"))),
    comparisons=(("huge", "base"),),
    rationale=(
        f"sequential {LABEL} O_DIRECT writes from a buffer in huge pages (contiguous: every write reaches "
        "the device whole) or in base pages (contiguous or not, by chance: a device taking fewer segments "
        "per request than the write has pages splits it); found here, not in “The Dark Side of Microbenchmarking”: on a loop device "
        "the same command ran at 1.6 - 2.0 or 2.2 - 2.4 GiB/s from run to run"
    ),
    meaning=meaning,
    needs_direct=("huge", "base"),
)
