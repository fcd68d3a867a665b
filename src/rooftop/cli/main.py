"""The command line's entrance: the top parser, every command's parser
added from its family's module, signal handling, and main()."""

from __future__ import annotations

import argparse
import faulthandler
import io
import os
import signal
import sys

from rooftop.cli import audit, bursts, campaign, history, interfere, learn, model, plan, report, service, size, tools
from rooftop.cli.common import (
    CommandParser,
    Quiet,
    ShowVersion,
    add_quiet,
    interrupted_rc,
    quiet_of,
    resolve_latest,
    stop_on_signal,
)

DESCRIPTION = """\
rooftop: empirical rooflines for distributed data services.

How fast can a data service go on this machine, and how many servers should
it run for its clients? rooftop measures it with its native engine
(rooftop-engine: noop RPCs and bulk RDMA transfers over libfabric).
"""


EXAMPLES = """\
examples:
  RUN=$(rooftop collect --duration 2 --windows 3)   # this machine, 2 or 3 logical nodes
  rooftop validate $RUN
  rooftop report latest                              # prints the HTML report's path
  rooftop runs
  rooftop export $RUN --format csv -o samples.csv
  rooftop collect --launcher mpiexec --set launcher.hosts=n1,n2,n3 --set fabric.domain=hsn0
  rooftop collect --launcher srun --nodes 8          # inside salloc/sbatch
  rooftop collect --resume $RUN                      # after Ctrl-C
  rooftop cluster up --nodes 4 --link-rate 200mbit && rooftop collect --launcher netns
  rooftop compare $RUN examples/aurora-table2.json
  rooftop size examples/aurora-table2.json --clients 100 --target '10 M ops/s'
  rooftop learn $RUN $RUN2 && rooftop predict $RUN --servers 3 --clients 40
  rooftop audit --only cache,allocation --storage-dir /mnt/nvme/tmp
  rooftop tune $RUN --metrics bw --budget 12        # settings for this machine
  rooftop bursts --progress busy,spindown:10,block --neighbour stencil
  rooftop interfere --loads cpu,net --load-nodes 0,1 --ensemble 1,2,4
  rooftop service $RUN --preset redis                # redis GET on the same grid
  rooftop collect && rooftop check latest --against history   # a weekly gate
"""


def _add_nics(sub) -> None:
    from rooftop.cli.nics import add_parser

    add_parser(sub)


def _add_cluster(sub) -> None:
    from rooftop.cli.cluster import add_parser

    add_parser(sub)


#: Every command, one a line, in the order `rooftop --help` lists them
#: under their group's heading. A new command is a line here (its module's
#: function that adds its parser).
COMMANDS = (
    ("measure", campaign.add_collect),
    ("measure", campaign.add_validate),
    ("measure", plan.add_parser),
    ("measure", service.add_parser),
    ("measure", tools.add_probe),
    ("read results", campaign.add_runs),
    ("read results", model.add_model),
    ("read results", report.add_report),
    ("read results", report.add_plot),
    ("read results", report.add_export),
    ("read results", model.add_compare),
    ("read results", size.add_size),
    ("read results", history.add_history),
    ("read results", history.add_check),
    ("studies", audit.add_audit),
    ("studies", bursts.add_parser),
    ("studies", interfere.add_parser),
    ("studies", learn.add_learn),
    ("studies", learn.add_predict),
    ("studies", learn.add_tune),
    ("tools", campaign.add_doctor),
    ("tools", tools.add_config),
    ("tools", _add_nics),
    ("tools", _add_cluster),
    ("tools", tools.add_engine),
)


class _Listed:
    """What each command's module is handed as `sub`: it adds the parser
    and keeps its one-line help for the grouped list, which argparse would
    otherwise print a second time, ungrouped."""

    def __init__(self, sub):
        self.sub = sub
        self.help: dict[str, str] = {}

    def add_parser(self, name: str, help: str = "", **kw):  # noqa: A002 (argparse's name)
        self.help[name] = help
        kw.setdefault("description", help.replace("%%", "%"))
        return self.sub.add_parser(name, **kw)


def _command_list(groups: dict[str, list[tuple[str, str]]]) -> str:
    """Each group's heading, then its commands, one line of help each (wrapped at 79)."""
    import textwrap

    width = max(len(name) for rows in groups.values() for name, _ in rows) + 2
    out = []
    for group, rows in groups.items():
        out.append(f"{group}:")
        for name, text in rows:
            out.append(
                textwrap.fill(
                    text, 79, initial_indent=f"  {name:<{width}}", subsequent_indent=" " * (width + 2)
                ).replace("%%", "%")
            )
        out.append("")
    return "\n".join(out)


def _exit_codes() -> str:
    import textwrap

    from rooftop.exits import CODES

    return "exit status:\n" + "\n".join(
        textwrap.fill(text, 79, initial_indent=f"  {code:<5}", subsequent_indent=" " * 7) for code, text in CODES
    )


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rooftop",
        usage="rooftop [-h] [--version] [-q] COMMAND ...",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    p.add_argument("--version", action=ShowVersion)
    add_quiet(p)
    sub = p.add_subparsers(
        dest="command", metavar="COMMAND", help=argparse.SUPPRESS, prog="rooftop", parser_class=CommandParser
    )
    listed = _Listed(sub)
    groups: dict[str, list[tuple[str, str]]] = {}
    for group, add in COMMANDS:
        before = set(listed.help)
        add(listed)
        groups.setdefault(group, []).extend((n, h) for n, h in listed.help.items() if n not in before)
    p.description = f"{DESCRIPTION}\n{_command_list(groups)}'rooftop COMMAND --help' shows a command's options."
    p.epilog = f"{_exit_codes()}\n\n{EXAMPLES}"
    return p


def _write_error(e: OSError) -> str | None:
    """One line for a file the command could not write (a read-only mount,
    a folder the user may not write, a full disk), None for other errors."""
    import errno

    if e.errno not in (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT):
        return None
    what = {
        errno.EROFS: "the file system is mounted read-only",
        errno.ENOSPC: "the file system is full",
        errno.EDQUOT: "the disk quota is used up",
    }.get(e.errno, "permission denied for this user")
    where = f" {e.filename}" if e.filename else ""
    return f"cannot write{where}: {what} ({e.strerror}); make the results folder writable or choose another --results"


def main(argv: list[str] | None = None) -> int:  # noqa: PLR0915
    """Runs one command; returns rooftop's exit code (rooftop.exits).
    Long: one except clause per family of errors, each with its exit code,
    so every command's errors leave from this one place; and 11 imports
    kept inside (the front door loads only what the command runs)."""
    from rooftop import exits
    from rooftop.cluster.spec import ClusterError
    from rooftop.engine.base import EXIT_UNREACHABLE, EngineError
    from rooftop.files import OutputError
    from rooftop.keys import ConfigError
    from rooftop.launchers import LauncherError
    from rooftop.learn import LearnError
    from rooftop.locks import LockBusy
    from rooftop.model.ceilings import ModelError
    from rooftop.store import damage
    from rooftop.store.records import StoreError

    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["engine"]:  # everything after it is the engine's, --help included
        return tools.cmd_engine(argparse.Namespace(engine_args=argv[1:]))
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return exits.USAGE
    signal.signal(signal.SIGTERM, stop_on_signal)  # stop like Ctrl-C: clean up, keep samples
    signal.signal(signal.SIGHUP, stop_on_signal)  # a closed terminal, too
    # A command that seems stuck: 'kill -USR1 PID' prints where each of its
    # threads is (to stderr) and lets it go on.
    try:
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    except (AttributeError, ValueError, io.UnsupportedOperation):
        pass  # stderr is not a file (rooftop called from Python with stderr captured)
    damage.taken()  # a damaged row is named once per command (main may be called again in one process)
    try:
        resolve_latest(args)
        with Quiet(quiet_of(args)) as quiet:
            rc = args.func(args)
        if rc:
            quiet.show()  # a command that failed says why, --quiet or not
        sys.stdout.flush()  # (a closed reader is met here, not after main returned)
        return rc
    except exits.Unreachable as e:
        print(f"rooftop {args.command}: {e}", file=sys.stderr)
        return exits.UNREACHABLE
    except ConfigError as e:
        print(f"rooftop {args.command}: config error: {e}", file=sys.stderr)
        return exits.USAGE
    except EngineError as e:  # the engine's own exit 3: a server it did not reach
        print(f"rooftop {args.command}: {e}", file=sys.stderr)
        return exits.UNREACHABLE if e.returncode == EXIT_UNREACHABLE else exits.USAGE
    except (StoreError, LauncherError, ClusterError, ModelError, LockBusy, LearnError) as e:
        print(f"rooftop {args.command}: {e}", file=sys.stderr)
        return exits.USAGE
    except KeyboardInterrupt:
        print("\nrooftop: interrupted", file=sys.stderr)
        return interrupted_rc()
    except OutputError as e:  # a file refused or not writable as one (rooftop.files)
        print(f"rooftop {args.command}: {e}", file=sys.stderr)
        return exits.USAGE
    except BrokenPipeError:  # the reader left (| head): no traceback, and nothing more written to it
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return exits.PIPE_CLOSED
    except OSError as e:
        line = _write_error(e)
        if line is None:
            raise
        print(f"rooftop {args.command}: {line}", file=sys.stderr)
        return exits.USAGE
    finally:
        for line in damage.lines(damage.taken()):  # rows the readers left out, each named once
            print(f"rooftop {args.command}: {line}" if not line.startswith(" ") else line, file=sys.stderr)
