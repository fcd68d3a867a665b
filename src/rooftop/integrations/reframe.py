"""rooftop as a ReFrame check: a centre's regression suite measures the
platform's roofline on a schedule and alerts when a ceiling falls.

    pip install 'rooftop[reframe]'
    reframe -C site-config.py -c "$(rooftop-reframe-check)" -r \\
        -S rooftop_check.references_file=refs.json
    reframe ... -S rooftop_check.baseline=before-upgrade \\
        -S rooftop_check.baseline_results=/site/rooftop-results

The check runs `rooftop collect`, `rooftop validate` and `rooftop model`
inside ReFrame's job, on the nodes ReFrame's scheduler gave it:

- ReFrame's *scheduler* makes the allocation (`num_nodes` nodes, one task
  per node); its partition's *launcher* tells rooftop how to start engines
  inside it (srun -> `--launcher srun`, mpirun/mpiexec -> `--launcher
  mpiexec` on the allocation's hosts, local -> this machine split into
  logical nodes). rooftop itself is run directly in the job script, never
  under the launcher: it launches its own servers and clients.
- Sanity: the run is complete and no sample is invalid or failed.
- Performance variables, per metric measured (any of rooftop's metrics,
  storage ones included): client and server ceilings (`<metric>_client_min`,
  `_median`, `_max`; `_server_...`) in the unit `rooftop model --json`
  gives the metric (ops/s, bytes/s), the ridge ratio (`<metric>_ridge`,
  servers per client) and the validation median absolute error
  (`<metric>_validation_error`, %).
- rooftop: by default the `rooftop` beside the Python running ReFrame (the
  same installation; no need for it on PATH), else the one on PATH.
- References: `references_file` is JSON mapping a ReFrame system
  (`"*"`, `"cluster"` or `"cluster:partition"`) to performance variables
  and `[value, lower, upper]` (ReFrame's relative thresholds, e.g.
  `[520000, -0.1, null]`: alert when more than 10 % below), optionally
  `[value, lower, upper, unit]`; the unit is the variable's (a file giving
  another is an error). `baseline` names a baseline saved with `rooftop
  check --save-baseline NAME` in `baseline_results`: at setup the check has
  rooftop write its references (`rooftop check --against NAME
  --write-references`: the ceilings' medians, lower bound the rule's
  threshold) and uses those of the metrics it measures; a references_file
  given too adds to them, its entries winning.

Every knob is a ReFrame variable (`-S rooftop_check.<name>=<value>`):
see the declarations below, each with its meaning.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.backends import getlauncher
from reframe.core.builtins import run_after, run_before, sanity_function, variable

from rooftop.config.catalog import DEFAULT_RESULTS

#: ReFrame launcher name -> rooftop launcher.type.
LAUNCHERS = {"local": "local", "srun": "srun", "mpirun": "mpiexec", "mpiexec": "mpiexec"}
#: Ceiling statistics reported for each side.
STATS = ("min", "median", "max")
#: The references file written from `baseline`, in the stage directory.
BASELINE_REFERENCES = "baseline-references.json"


def _model(path: str) -> dict:
    with open(path) as f:
        return {m["metric"]: m for m in json.load(f)["metrics"]}


def performance_variables(model: dict, metrics: list[str]) -> dict[str, tuple[str, tuple[str, ...], str]]:
    """The performance variables of `metrics`: name -> (metric, keys of
    the value in the metric's entry of `rooftop model --json`, unit). The ceilings'
    unit is the one the model gives the metric (any metric; ValueError
    names a metric the model does not have)."""
    out = {}
    for metric in metrics:
        if metric not in model:
            raise ValueError(f"metric {metric!r} is not in rooftop's model ({', '.join(model) or 'none'})")
        unit = model[metric]["unit"]
        for side in ("client", "server"):
            for stat in STATS:
                out[f"{metric}_{side}_{stat}"] = (metric, (side, stat), unit)
        if model[metric]["ridge"]["located"]:  # a ridge the verdict does not locate is no variable
            out[f"{metric}_ridge"] = (metric, ("ridge", "median"), "servers/client")
        if model[metric]["accuracy"]["tested"]:  # the model's accuracy, not a ceiling's repeatability
            out[f"{metric}_validation_error"] = (metric, ("accuracy", "median_abs_error_pct"), "%")
    return out


def default_rooftop() -> str:
    """The rooftop of this installation: the script beside the running
    interpreter (sys.executable's folder, not resolved: a venv's bin), else
    `rooftop` on PATH."""
    beside = os.path.join(os.path.dirname(sys.executable), "rooftop")
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("rooftop")
    if found is None:
        raise ValueError(
            f"no rooftop beside this Python ({beside}) nor on PATH: set -S rooftop_check.rooftop=/path/to/rooftop"
        )
    return found


@sn.deferrable
def _model_value(path: str, metric: str, *keys: str) -> float:
    """A number in the model JSON, e.g. ('client', 'median')."""
    value = _model(path)[metric]
    for key in keys:
        value = value[key]
    if value is None:
        raise ValueError(f"{metric}: {'.'.join(keys)} is not in the model (no validation samples?)")
    return float(value)


@sn.deferrable
def _run_status(path: str) -> tuple[str, int]:
    """(run status, samples not ok) from `rooftop export --format json`."""
    with open(path) as f:
        doc = json.load(f)
    return doc["status"], sum(1 for r in doc["samples"] if r["status"] != "ok")


@rfm.simple_test
class rooftop_check(rfm.RunOnlyRegressionTest):
    """Empirical roofline of the platform: client and server ceilings per
    process, the ridge ratio, and the validation error."""

    descr = "rooftop: empirical roofline (client/server ceilings, ridge, validation error)"
    valid_systems = ["*"]
    valid_prog_environs = ["*"]
    sourcesdir = None
    tags = {"rooftop", "roofline", "data-services"}
    #: Kept in ReFrame's output directory after a pass (the stage directory is removed).
    keep_files = ["model.json", "export.json", "results"]

    #: Metrics to measure (rooftop --metrics).
    metrics = variable(str, value="rpc,bw")
    #: libfabric provider (rooftop --fabric); '' (default): the config's fabric.provider.
    fabric = variable(str, value="")
    #: Measured seconds per sample (rooftop --duration).
    duration = variable(float, value=2.0)
    #: Engine windows per measurement, a sample each (rooftop --windows; the variable keeps its name).
    samples = variable(int, value=6)
    #: Nodes to allocate (one task per node); 0: the partition decides (local: this machine).
    num_nodes = variable(int, value=0)
    #: More arguments for `rooftop collect`, shell-quoted (e.g. "--set bw.stream_size=256MiB").
    collect_args = variable(str, value="")
    #: More arguments for `rooftop validate`, shell-quoted.
    validate_args = variable(str, value="")
    #: The rooftop command; '' (default): the one beside ReFrame's Python, else on PATH.
    rooftop = variable(str, value="")
    #: JSON file of site references (see the module docstring); '' for none.
    references_file = variable(str, value="")
    #: A baseline saved with `rooftop check --save-baseline NAME`: its ceilings are the references; '' for none.
    baseline = variable(str, value="")
    #: The results folder holding the baseline (relative: to where ReFrame runs).
    baseline_results = variable(str, value=DEFAULT_RESULTS)
    #: More arguments for `rooftop check --write-references`, shell-quoted (e.g. "--config site.toml").
    baseline_args = variable(str, value="")

    @run_after("setup")
    def set_allocation(self):
        if self.num_nodes > 0:
            self.num_tasks = self.num_nodes
            self.num_tasks_per_node = 1

    @run_after("setup")
    def set_commands(self):
        launcher = self.current_partition.launcher_type.registered_name
        if launcher not in LAUNCHERS:
            raise ValueError(
                f"partition {self.current_partition.fullname}: launcher '{launcher}' "
                f"is not one rooftop can use ({', '.join(LAUNCHERS)})"
            )
        rt, res = shlex.quote(self.rooftop or default_rooftop()), "--results results"
        fabric = f" --fabric {shlex.quote(self.fabric)}" if self.fabric else ""
        common = f"{res} --metrics {shlex.quote(self.metrics)}{fabric}"
        quick = f"--duration {self.duration:g} --windows {self.samples}"
        self.prerun_cmds = [
            f"RUN=$({rt} collect {common} {quick} --launcher {LAUNCHERS[launcher]} {self.collect_args})",
            'echo "rooftop run: $RUN"',
        ]
        self.executable = rt
        self.executable_opts = ["validate", '"$RUN"', res, quick, self.validate_args]
        self.postrun_cmds = [
            f'{rt} model "$RUN" {res} --json > model.json',
            f'{rt} export "$RUN" {res} --json -o export.json',
        ]

    @run_after("setup")
    def write_baseline_references(self):
        """The baseline's references, written by rooftop into the stage
        directory (kept with the outputs): a wrong name fails here, before
        the campaign."""
        if not self.baseline:
            return
        path = os.path.join(self.stagedir, BASELINE_REFERENCES)
        argv = [
            self.rooftop or default_rooftop(),
            "check",
            "--against",
            self.baseline,
            "--write-references",
            path,
            "--results",
            os.path.abspath(self.baseline_results),
            *shlex.split(self.baseline_args),
        ]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            raise ValueError(f"baseline {self.baseline}: {shlex.join(argv)} failed: {p.stderr.strip()}")
        self.keep_files = [*self.keep_files, BASELINE_REFERENCES]

    @run_before("run")
    def run_rooftop_directly(self):
        """rooftop starts its own engines through the launcher; it is not
        itself run under it."""
        self.job.launcher = getlauncher("local")()

    @sanity_function
    def run_is_clean(self):
        export = os.path.join(self.stagedir, "export.json")
        status = _run_status(export)
        return sn.all(
            [
                sn.assert_found(r"rooftop run: \S+", self.stdout),
                sn.assert_eq(status[0], "complete", msg="rooftop run status is {0}, not complete"),
                sn.assert_eq(status[1], 0, msg="{0} samples are not ok (invalid or failed)"),
            ]
        )

    @run_before("performance")
    def set_perf_variables(self):
        path = os.path.join(self.stagedir, "model.json")
        metrics = [m.strip() for m in self.metrics.split(",") if m.strip()]
        self.perf_variables = {
            name: sn.make_performance_function(_model_value(path, metric, *keys), unit)
            for name, (metric, keys, unit) in performance_variables(_model(path), metrics).items()
        }
        self.reference = self._references()

    def _references(self) -> dict:
        units = {name: fn.unit for name, fn in self.perf_variables.items()}
        out: dict = {}
        if self.baseline:
            path = os.path.join(self.stagedir, BASELINE_REFERENCES)
            metrics = [m.strip() for m in self.metrics.split(",") if m.strip()]
            out = load_references(path, units, only=metrics, source=f"baseline {self.baseline} ({path})")
        if self.references_file:
            for system, values in load_references(self.references_file, units).items():
                out.setdefault(system, {}).update(values)
        return out


def load_references(path: str, units: dict[str, str], only: list[str] | None = None, source: str = "") -> dict:
    """A references file as ReFrame's `reference`: {system: {variable:
    (value, lower, upper, unit)}}. units: the check's variables and their
    units; a name that is not one, or a unit (4th item) not the variable's,
    is an error. only: keep the variables of these metrics (a baseline may
    hold more), at least one."""
    source = source or path
    with open(path) as f:
        refs = json.load(f)
    out: dict = {}
    for system, values in refs.items():
        for name, ref in values.items():
            if only is not None and not any(name.startswith(f"{m}_") for m in only):
                continue
            if name not in units:
                raise ValueError(
                    f"{source}: {system}.{name} is not a performance variable of this check ({', '.join(units)})"
                )
            if len(ref) > 3 and ref[3] is not None and ref[3] != units[name]:
                raise ValueError(f"{source}: {system}.{name} is in {ref[3]}, the check measures it in {units[name]}")
            out.setdefault(system, {})[name] = (*ref[:3], units[name])
    if only is not None and not out:
        raise ValueError(f"{source}: no reference of the metrics measured ({', '.join(only)})")
    return out
