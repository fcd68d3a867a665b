"""Service points read again from what `rooftop service` left under
RUN/service/NAME/ (rooftop doctor --rebuild, when the database lost them):
per server placement SERVERS/, per point CLIENTS-I/tryT/ (its last try is
the one stored), read with the resolved spec (spec.json beside them, else
the old database's copy) by the same function the service run reads them
with (run.read_sample). Imported points exist only in the database: no
folder holds them."""

from __future__ import annotations

import json
import re
from pathlib import Path

from rooftop.keys import ConfigError
from rooftop.service.points import ServicePoint
from rooftop.service.run import SPEC_FILE, Placement, read_sample
from rooftop.service.spec import ServiceSpec, from_resolved

SERVERS = re.compile(r"^s(?P<nodes>\d+(?:-\d+)*)x(?P<per>\d+)$")
POINT = re.compile(r"^c(?P<nodes>\d+(?:-\d+)*)x(?P<per>\d+)-(?P<i>\d+)$")
TRY = re.compile(r"^try(\d+)$")
#: A line of a sample's commands.txt (run._write_commands): which ranks each launch started, where.
LAUNCH = re.compile(r"^node (\d+) ranks \[([\d, ]*)\]:")


def _spec(folder: Path, stored: dict | None) -> ServiceSpec:
    """The spec a service's points were measured with: spec.json, else the old database's."""
    for src, text in ((str(folder / SPEC_FILE), lambda: (folder / SPEC_FILE).read_text()), ("old database", None)):
        try:
            data = json.loads(text()) if text else stored
        except (OSError, ValueError):
            continue
        if data is not None:
            try:
                return from_resolved(data, src)
            except ConfigError:
                continue
    raise ValueError(f"its spec is neither in {folder / SPEC_FILE} nor in the old database")


def _point(spec: ServiceSpec, gdir: Path, pdir: Path, need: float) -> ServicePoint:
    """One point from its folder (ValueError when its files cannot tell)."""
    s, c = SERVERS.match(gdir.name), POINT.match(pdir.name)
    assert s and c
    pl = Placement(
        tuple(int(n) for n in s["nodes"].split("-")),
        int(s["per"]),
        tuple(int(n) for n in c["nodes"].split("-")),
        int(c["per"]),
    )
    tries = sorted((int(m[1]), p) for p in pdir.iterdir() if (m := TRY.match(p.name)) and p.is_dir())
    if not tries:
        raise ValueError("no try folder")
    t, sdir = tries[-1]
    rank_node = {}
    try:
        for line in (sdir / "commands.txt").read_text().splitlines():
            m = LAUNCH.match(line)
            if m:
                rank_node.update({int(r): int(m[1]) for r in m[2].replace(" ", "").split(",") if r})
    except OSError as e:
        raise ValueError(f"{sdir / 'commands.txt'}: {e.strerror}") from None
    if len(rank_node) != pl.clients:
        raise ValueError(f"{sdir / 'commands.txt'} names {len(rank_node)} client(s), not {pl.clients}")
    exits = []
    for r in sorted(rank_node):
        try:
            exits.append((r, json.loads((sdir / f"end-{r}.json").read_text())["rc"]))
        except (OSError, ValueError, KeyError, TypeError):
            exits.append((r, None))  # exec'd by its wrapper: its code was the launch's (not kept)

    def ended(r: int) -> float | None:
        """A client the wrapper exec'd leaves no end-R.json: its output's last write."""
        try:
            return (sdir / f"client-{r}.out").stat().st_mtime
        except OSError:
            return None

    detail = {"servers": pl.server_label, "clients": pl.client_label}
    try:
        status, agg, error, measured, detail = read_sample(spec, sdir, rank_node, need, detail, ended, exits)
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{sdir}: {e}") from None
    detail.update(
        folder=str(sdir.relative_to(gdir.parent)),
        tries=t + 1,
        server_nodes=list(pl.server_nodes),
        client_nodes=list(pl.client_nodes),
        rebuilt_by="rooftop doctor",
    )
    i = int(c["i"])
    return ServicePoint(
        spec.name, spec.metric, spec.unit, pl.servers, pl.clients, i, status, agg,
        key=pl.key(i), error=error, measured_s=measured, detail=detail,
    )  # fmt: skip


def points_from_documents(
    run_dir: Path, cfg: dict, stored_specs: dict[str, dict]
) -> tuple[list[ServicePoint], dict[str, dict], list[str]]:
    """(the measured points a run's service folders hold, the specs they
    were read with by service name (resolved), what could not be read:
    one line each). stored_specs: the old database's specs, by service."""
    need = float(cfg["engine"]["min_overlap"])
    out: list[ServicePoint] = []
    specs: dict[str, dict] = {}
    lost: list[str] = []
    for folder in sorted(p for p in (run_dir / "service").glob("*") if p.is_dir()):
        try:
            spec = _spec(folder, stored_specs.get(folder.name))
        except ValueError as e:
            lost.append(f"service {folder.name}: points not read from {folder}: {e}")
            continue
        specs[spec.name] = spec.resolved()
        for gdir in sorted(p for p in folder.iterdir() if p.is_dir() and SERVERS.match(p.name)):
            for pdir in sorted(p for p in gdir.iterdir() if p.is_dir() and POINT.match(p.name)):
                try:
                    out.append(_point(spec, gdir, pdir, need))
                except ValueError as e:
                    lost.append(f"service {spec.name}: point {gdir.name}/{pdir.name} not read: {e}")
    return out, specs, lost
