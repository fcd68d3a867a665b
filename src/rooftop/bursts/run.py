"""`rooftop bursts`: Figure 6 of Carns et al. (CUG 2025) on this machine. One server (node 0,
pinned), one client or --clients N (the last node), sequential operations of
one metric in bursts (default 3 bursts of 10 s, 20 s gaps), for each server
progress mode asked; per interval the client's rate, the server's CPU,
context switches, wake-ups and package power (rooftop.bursts.timeline), then a
summary per mode (rooftop.bursts.summary) and a figure (bursts/figure.py).
With --neighbour, a compute job runs pinned to the server's core(s), once
alone and once per mode: its slowdown is what the service costs the
application beside it (rooftop.bursts.neighbour).

Built on the campaign's machinery: each mode is a Runner whose server
group is started with that progress mode, each burst a client round of
`on / interval` windows (one stored sample each, stage `bursts`, key
`bursts/METRIC/MODE/bBURST/WINDOW`); the client process starts with each
burst (the engine's load has no pause), so each burst's first window
follows its connection. The command's parser and driver: rooftop.cli.bursts.
Docs: docs/bursts.md.
"""

from __future__ import annotations

import copy
import re
import time

from rich.table import Table

from rooftop import power, ui
from rooftop.bursts import keys as _keys  # noqa: F401  (registers the bursts.* config keys)
from rooftop.bursts import neighbour
from rooftop.bursts import summary as burst_summary
from rooftop.bursts.timeline import Timeline
from rooftop.campaign import ClientRound, Runner, machine
from rooftop.config.files import load_file, merge
from rooftop.config.resolve import resolve
from rooftop.keys import ConfigError
from rooftop.launchers import ON_THIS_MACHINE, LauncherError, make_launcher
from rooftop.launchers.base import core_sets
from rooftop.stages.base import Measurement, Placement

MODE = re.compile(r"^(busy|block|adaptive|spindown(:\d{1,7}(\.\d{1,3})?)?)$")


class BurstsError(ValueError):
    """A bad bursts parameter (usage error, exit 2)."""


def progress_modes(text: str | list[str]) -> list[str]:
    """'busy,spindown:0,1,10' (or that list) -> ['busy', 'spindown:0',
    'spindown:1', 'spindown:10']: a bare number after a spindown continues
    the sweep."""
    modes: list[str] = []
    for item in (t.strip() for t in (text.split(",") if isinstance(text, str) else text)):
        if not item:
            continue
        if re.fullmatch(r"[0-9.]+", item) and modes and modes[-1].startswith("spindown"):
            item = f"spindown:{item}"
        if not MODE.match(item):
            why = (
                "spindown takes milliseconds >= 0 with up to 3 decimals (the engine's --progress spindown:MS)"
                if item.startswith("spindown:")
                else "modes: busy, block, adaptive, spindown[:MS]"
            )
            raise BurstsError(f"bursts.progress (--progress): {item!r} is not a progress mode ({why})")
        if item in modes:
            raise BurstsError(f"bursts.progress (--progress): {item} is asked twice")
        modes.append(item)
    if not modes:
        raise BurstsError("bursts.progress (--progress) names no mode")
    return modes


def params_of(keys: dict) -> dict:
    """The bursts section of a merged config (its keys, each checked against
    its type and limits: rooftop.bursts.keys), checked against each other,
    with what they resolve to (recorded as the run's config 'bursts')."""
    if keys["on"] < keys["interval"]:
        raise BurstsError(
            f"bursts.on (--on) {keys['on']:g}: at least one bursts.interval (--interval, {keys['interval']:g} s)"
        )
    p = dict(
        keys,
        progress=progress_modes(keys["progress"]),
        windows_per_burst=max(1, round(keys["on"] / keys["interval"])),
        neighbour_argv=None,
        neighbour_cores=None,
        server_node=0,
        client_node=None,
    )
    if p["neighbour"]:
        try:
            p["neighbour_argv"] = neighbour.command(p["neighbour"], p["stencil_size"], p["stencil_iterations"])
        except neighbour.NeighbourFailed as e:
            raise BurstsError(f"bursts.neighbour: {e}") from None
    return p


def build_config(config_file: str | None, overrides: dict) -> dict:
    """The resolved campaign config with the run's bursts parameters: the
    common keys and the bursts section (a file, then overrides: --set and
    the command's flags); the metric measured is bursts.metric."""
    merged = merge(load_file(config_file) if config_file else None, overrides, ("bursts",))
    p = params_of(merged["bursts"])
    merged["metrics"] = [p["metric"]]
    cfg = resolve(merged)
    if cfg["launcher"]["type"] not in ON_THIS_MACHINE:
        raise ConfigError(
            f"launcher.type: bursts samples the server's /proc and RAPL here: use "
            f"{' or '.join(ON_THIS_MACHINE)}, not {cfg['launcher']['type']}"
        )
    nodes = make_launcher(cfg["launcher"]).nodes()
    if len(nodes) < 2:
        raise ConfigError("launcher.nodes: bursts needs 2 nodes (server on node 0, clients on the last)")
    p["client_node"] = len(nodes) - 1
    try:
        server_cores = core_sets(nodes[0], 1, cfg["binding"])[0]
        core_sets(nodes[-1], p["clients"], cfg["binding"])  # the clients fit on their node
    except LauncherError as e:
        raise ConfigError(f"bursts.clients (--clients) {p['clients']}: {e}") from None
    p["neighbour_cores"] = list(server_cores or nodes[0].cores) if p["neighbour"] else None
    cfg["bursts"] = p
    cfg["stages"] = ["bursts"]
    return cfg


def burst(p: dict, mode: str, b: int) -> Measurement:
    """Burst b of a mode: one measurement of windows_per_burst windows."""
    m = p["metric"]
    return Measurement(
        f"bursts/{m}/{mode}/b{b}",
        "bursts",
        m,
        [p["client_node"]],
        p["clients"],
        range(p["windows_per_burst"]),
        p["interval"],
        0.0,
    )


def burst_round(p: dict, mode: str, b: int):
    """Burst b of a mode as one client round (every window)."""

    return ClientRound(burst(p, mode, b))


def planned_keys(p: dict) -> set[str]:
    return {k for mode in p["progress"] for b in range(p["bursts"]) for k in burst(p, mode, b).keys()}


def _sleep_gap(seconds: float) -> None:
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        time.sleep(min(left, 0.5))


def server_pid(group) -> int:
    """The server's pid as it published it in its address file (a
    launcher's wrapper, e.g. netns's shell, has another); else the process
    the launcher started."""
    try:
        text = (group.gdir / "0.addr").read_text()
        return int(re.search(r"^pid=(\d+)$", text, flags=re.M).group(1))
    except (OSError, AttributeError, ValueError):
        return group.procs[0].pid


class ModeRun:
    """One progress mode: its server group, time line, bursts and neighbour."""

    def __init__(self, cfg: dict, store, run_id: str, launcher, mode: str, log):
        self.p, self.mode, self.store, self.run_id = cfg["bursts"], mode, store, run_id
        cfg = copy.deepcopy(cfg)
        cfg["engine"]["server_progress"] = mode
        self.runner = Runner(cfg, store, run_id, launcher, log=log)
        self.timeline = self.job = self.group = None
        self.failed = 0

    def run(self, say) -> dict | None:
        """Runs it; returns the neighbour's record (None: no neighbour)."""
        r, p = self.runner, self.p
        try:
            machine.record(r)  # once per command: the machine it measures on
            self.group = r.servers.start(Placement([p["server_node"]], 1))
            self.timeline = Timeline(self.store, self.run_id, self.mode, server_pid(self.group), p["interval"])
            if p["neighbour_argv"]:
                self.job = neighbour.start(
                    p["neighbour_argv"], p["neighbour_cores"], r.run_dir / "neighbour", f"neighbour-{self.mode}"
                )
            for b in range(p["bursts"]):
                self._burst(b, say)
                _sleep_gap(p["off"])
            return self._neighbour_result()
        finally:
            self.close()

    def _burst(self, b: int, say) -> None:
        rnd = burst_round(self.p, self.mode, b)
        self.timeline.mark("burst_start", b)
        try:
            rows = self.runner.run_round(self.group, rnd)
        finally:  # also when interrupted: the windows measured so far are kept
            self.timeline.mark("burst_end", b)
            self.timeline.add_windows(self.runner.run_dir / "raw" / rnd.folder)
            self.timeline.save()
        bad = [row for row in rows if row["status"] != "ok"]
        self.failed += len(bad)
        if bad:
            say(f"{self.mode} burst {b}: {len(bad)} window(s) {bad[0]['status']}: {bad[0]['error']}")

    def _neighbour_result(self) -> dict | None:
        if self.job is None:
            return None
        res = self.job.result(self.p["neighbour_timeout"])
        t = self.timeline.now()
        self.timeline.rows["neighbour"] = [(t, "seconds", res["seconds"], "s"), (t, "wall", res["wall_s"], "s")]
        self.timeline.save()
        return res

    def close(self) -> None:
        """Stops everything it started (neighbour, meter, servers); idempotent."""
        if self.job is not None:
            self.job.stop()
        if self.timeline is not None:
            self.timeline.stop()
            self.timeline.save()
        try:
            if self.group is not None:
                self.runner.servers.stop(self.group)
                self.group = None
        finally:
            self.runner.procs.close()  # its processes, then its node agents
            self.runner.leases.close()


def power_note() -> str:
    """Why power is not measured here ('' when RAPL is readable)."""
    try:
        power.package_zones()
    except power.PowerUnavailable as e:
        return str(e)
    return ""


def run_modes(cfg: dict, store, run_id: str, say, log=None) -> int:
    """The neighbour alone (if any), then every mode; returns the windows
    that failed. Raises KeyboardInterrupt, NeighbourFailed, SampleFailed."""
    p, launcher = cfg["bursts"], make_launcher(cfg["launcher"])
    if p["neighbour_argv"]:
        say(f"neighbour alone on core(s) {p['neighbour_cores']}: {' '.join(p['neighbour_argv'])}")
        alone = neighbour.alone(
            p["neighbour_argv"], p["neighbour_cores"], store.run_dir(run_id) / "neighbour", p["neighbour_timeout"]
        )
        store.add_series(
            run_id,
            "neighbour/alone",
            {"neighbour": [(0.0, "seconds", alone["seconds"], "s"), (0.0, "wall", alone["wall_s"], "s")]},
        )
        say(f"neighbour alone: {alone['seconds']:.2f} s")
    failed = 0
    for mode in p["progress"]:
        say(f"{mode}: {p['bursts']} burst(s) of {p['on']:g} s, {p['off']:g} s gaps")
        mr = ModeRun(cfg, store, run_id, launcher, mode, log)
        res = mr.run(say)
        failed += mr.failed
        if res:
            say(f"{mode}: neighbour {res['seconds']:.2f} s")
    return failed


def neighbour_of(series_rows: list[dict]) -> dict:
    """{'alone_s', 'seconds': {mode: s}, 'slowdown': {mode: x}} from the series."""
    alone = next(
        (r["value"] for r in series_rows if r["round"] == "neighbour/alone" and r["quantity"] == "seconds"), None
    )
    secs = {
        r["round"].split("/", 1)[1]: r["value"]
        for r in series_rows
        if r["round"].startswith("bursts/") and r["source"] == "neighbour" and r["quantity"] == "seconds"
    }
    return {"alone_s": alone, "seconds": secs, "slowdown": {m: s / alone for m, s in secs.items()} if alone else {}}


def results(store, run_id: str) -> dict:
    """A bursts run's summary: params, rows per mode, neighbour, power note."""
    run = store.get_run(run_id)
    p = run.config["bursts"]
    series = store.series(run_id)
    lines = burst_summary.lines(series, p["interval"])
    rows = [burst_summary.summarize(lines[m], p["interval"], p["full_rate"]) for m in p["progress"] if m in lines]
    return {
        "run": run,
        "params": p,
        "lines": lines,
        "rows": rows,
        "neighbour": neighbour_of(series),
        "power_note": run.environment.get("power_note", ""),
    }


def shown_table(res: dict):
    """(header, cells) of the summary table as the CLI and report show it."""
    return burst_summary.table(
        res["rows"], res["neighbour"], power=not res["power_note"], with_neighbour=bool(res["params"].get("neighbour"))
    )


def print_summary(res: dict, out=None) -> None:
    """The summary table and its notes (rich table on the console)."""
    t = Table(title=f"bursts {res['run'].id}", title_justify="left")
    header, cells = shown_table(res)
    for c in header:
        t.add_column(c)
    for row in cells:
        t.add_row(*row)
    console = out or ui.console
    ui.print_table(console, t)
    for line in burst_summary.notes(res["params"], res["power_note"], res["neighbour"], res["rows"]):
        console.print(f"[dim]{line}[/]")
