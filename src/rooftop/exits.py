"""rooftop's own exit codes, declared once: the command line returns them,
`rooftop --help` and docs/cli.md list them (the engine's are its own, the
same numbers: `rooftop-engine --help`), and Unreachable, the mark of an
error that exits 3.

Bottom of the layers: the platform (engine, launchers, cluster) marks its
errors with it, and nothing here imports rooftop.
"""

from __future__ import annotations

OK = 0
#: A result that failed: failed samples, a ceiling that fell (check), a problem found (doctor, cluster status).
FAILED = 1
#: Usage or config: a bad flag or value, a bad config file, no such run, a refused start.
USAGE = 2
#: Something rooftop must reach did not answer or is not there.
UNREACHABLE = 3
#: check could not tell whether a ceiling fell: nothing comparable, no
#: ceilings to compare, or ceilings damaged in the database.
CANNOT_TELL = 4
#: Stopped by Ctrl-C or SIGTERM (128 + SIGINT); after SIGHUP (a closed terminal) 129.
INTERRUPTED = 130
#: Its output's reader went away (`rooftop history | head`): 128 + SIGPIPE,
#: what a shell reports for a Unix tool that signal ends.
PIPE_CLOSED = 141

#: (code, meaning) as `rooftop --help` and docs/cli.md list them.
CODES = (
    (OK, "success"),
    (
        FAILED,
        "a result that failed: samples that failed, a ceiling that fell beyond noise (check), "
        "a problem found (doctor, cluster status)",
    ),
    (
        USAGE,
        "usage or config error: a bad flag or value, a bad config file, no such run, "
        "a start refused (another campaign holds the lock)",
    ),
    (
        UNREACHABLE,
        "unreachable: the engine binary is not found, no emulated cluster is up, or an engine server did not answer",
    ),
    (
        CANNOT_TELL,
        "could not tell (check): no comparable baseline or earlier run, no ceilings to compare, or a "
        "ceiling damaged in the database; the message names what is missing",
    ),
    (INTERRUPTED, "interrupted by Ctrl-C or SIGTERM (129 after SIGHUP); what was measured is kept"),
    (PIPE_CLOSED, "the reader of its output went away (`rooftop history | head`); nothing else is lost"),
)


class Unreachable(Exception):
    """Marks an error whose cause is something rooftop could not reach (the
    engine binary, the emulated cluster, a server): the command exits 3.
    Mixed into the error a layer already raises (EngineError, LauncherError),
    so every handler of that error still catches it."""
