"""The command line's entrance: the top parser, every command's parser
added from its family's module, signal handling, and main()."""

from __future__ import annotations

import argparse
import faulthandler
import io
import signal
import sys

from rooftop import __version__
from rooftop.cli import audit, bursts, campaign, history, interfere, learn, model, plan, report, service, size, tools
from rooftop.cli.common import interrupted_rc, stop_on_signal

DESCRIPTION = """\
rooftop: empirical rooflines for distributed data services.

How fast can a data service go on this machine, and how many servers should
it run for its clients? rooftop measures it with its native engine
(rooftop-engine: noop RPCs and bulk RDMA transfers over libfabric).
"""


EPILOG = """\
commands:
  collect   measure the roofline parameters: server and client ceilings
            (prints the run id)
  validate  add validation samples (server nodes x client nodes) to a run
  plan      how long collect and validate take on N nodes, per stage, before
            any allocation (launches, pairs, rounds)
  runs      list the runs in a results folder
  doctor    check a results folder; --rebuild its database from the engine
            documents
  export    a run's samples as CSV or JSON
  model     the roofline: ceilings, ridge ratio, the verdict on the ratio,
            validation, outlier nodes
  plot      figures of a run or parameters file (roofline, sweep, pair matrix,
            latency), PNG and SVG
  report    one self-contained HTML report (+ Markdown) of a run
  compare   several rooflines (runs, parameters files) on one figure
  size      how many server processes for C client processes (a target
            rate, or the knee), with the ceilings' intervals carried through
  learn     compare learned models of the rate (and the roofline-informed
            ones) on runs' samples; save the best with the run
  predict   a learned model's rate for servers and clients never measured,
            capped by the roofline
  tune      the adaptive loop over engine and deployment knobs: propose from a
            learned model, measure, retrain (prints the run id)
  interfere  the stages alone, then beside background loads (cpu, mem, net,
            io, numio, cmd): impact factors both ways, ensembles
  service   a real data service (a spec or a preset: redis, memcached) measured
            over a run's validation grid, its points stored in the run
  history   each ceiling's median and interval per run, runs grouped by
            what makes them comparable, with the changes found
  check     did a ceiling fall beyond noise against a baseline, a run or the
            history (exit 1: a CI gate); --save-baseline NAME
  cluster   an emulated cluster on this machine (root): up, reshape, status, down
  config    show the fully resolved config (or every key with 'config keys')
  probe     one server + one client per fabric on this machine: RPC rate and
            4 MiB bulk-read bandwidth (the quick answer)
  audit     the Dark Side of Microbenchmarking talk's five benchmark pitfalls and a sixth measured here as
            deltas (buffer reuse, completion, binding, cache modes, file
            allocation, buffer pages)
  bursts    rate, server CPU, wake-ups and power per progress mode in bursts
            (Figure 6 of Carns et al. (CUG 2025)); --neighbour: the cost to a job beside it
  nics      the NICs here (or in an hwloc XML topology) with their locality and
            the NIC each process would get under each NIC policy and binding
  engine    run rooftop-engine directly (serve, load, ping, stat, shutdown, ...)

examples:
  RUN=$(rooftop collect --duration 2 --samples 3)   # this machine, 2 or 3 logical nodes
  rooftop validate --run $RUN
  rooftop report $RUN                                # prints the HTML report's path
  rooftop runs
  rooftop export $RUN --format csv
  rooftop collect --launcher mpiexec --set launcher.hosts=n1,n2,n3 --set fabric.domain=hsn0
  rooftop collect --launcher srun --nodes 8          # inside salloc/sbatch
  rooftop collect --resume $RUN                      # after Ctrl-C
  rooftop cluster up --nodes 4 --link-rate 200mbit && rooftop collect --launcher netns
  rooftop compare $RUN examples/aurora-table2.json
  rooftop size examples/aurora-table2.json --clients 100 --target '10 M ops/s'
  rooftop learn $RUN $RUN2 && rooftop predict $RUN --servers 3 --clients 40
  rooftop audit --only cache,allocation --storage-dir /mnt/nvme/tmp
  rooftop tune --metric bw --run $RUN --budget 12   # settings for this machine
  rooftop bursts --progress busy,spindown:10,block --neighbour stencil
  rooftop interfere --loads cpu,net --load-nodes 0,1 --ensemble 1,2,4
  rooftop service --preset redis --run $RUN          # redis GET on the same grid
  rooftop collect && rooftop check latest --against history   # a weekly gate
"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rooftop", description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--version", action="version", version=f"rooftop {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for add in (
        campaign.add_collect,
        campaign.add_validate,
        plan.add_parser,
        campaign.add_runs,
        campaign.add_doctor,
        report.add_export,
        model.add_model,
        report.add_plot,
        report.add_report,
        model.add_compare,
        size.add_size,
        learn.add_learn,
        learn.add_predict,
        tools.add_config,
        tools.add_probe,
        learn.add_tune,
        audit.add_audit,
        bursts.add_parser,
        interfere.add_parser,
        service.add_parser,
        history.add_history,
        history.add_check,
    ):
        add(sub)
    from rooftop.cluster.cli import add_parser as add_cluster_parser
    from rooftop.nics.policy import add_parser as add_nics_parser

    add_cluster_parser(sub)
    add_nics_parser(sub)
    tools.add_engine(sub)
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


def main(argv: list[str] | None = None) -> int:
    from rooftop.config.keys import ConfigError
    from rooftop.engine.base import EngineError
    from rooftop.launchers import LauncherError
    from rooftop.learn import LearnError
    from rooftop.locks import LockBusy
    from rooftop.model.ceilings import ModelError
    from rooftop.store.records import StoreError

    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["engine"]:  # everything after it is the engine's, --help included
        return tools.cmd_engine(argparse.Namespace(engine_args=argv[1:]))
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    signal.signal(signal.SIGTERM, stop_on_signal)  # stop like Ctrl-C: clean up, keep samples
    signal.signal(signal.SIGHUP, stop_on_signal)  # a closed terminal, too
    # A command that seems stuck: 'kill -USR1 PID' prints where each of its
    # threads is (to stderr) and lets it go on.
    try:
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    except (AttributeError, ValueError, io.UnsupportedOperation):
        pass  # stderr is not a file (rooftop called from Python with stderr captured)
    try:
        return args.func(args)
    except ConfigError as e:
        print(f"rooftop {args.command}: config error: {e}", file=sys.stderr)
        return 2
    except (StoreError, LauncherError, EngineError, ModelError, LockBusy, LearnError) as e:
        print(f"rooftop {args.command}: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\nrooftop: interrupted", file=sys.stderr)
        return interrupted_rc()
    except OSError as e:
        line = _write_error(e)
        if line is None:
            raise
        print(f"rooftop {args.command}: {line}", file=sys.stderr)
        return 2
