"""Series meters: the RAPL reader against a synthetic powercap tree (the
exact files the kernel exposes: name, energy_uj, max_energy_range_uj;
wrap-around; root-only counters; no RAPL at all), and a real campaign
recording CPU and power time series, stored and exported."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rooftop import power


def zone(root: Path, index: str, name: str, energy: int, range_uj: int = 262143328850) -> Path:
    z = root / f"intel-rapl:{index}"
    z.mkdir(parents=True)
    (z / "name").write_text(name + "\n")
    (z / "energy_uj").write_text(f"{energy}\n")
    (z / "max_energy_range_uj").write_text(f"{range_uj}\n")
    return z


def test_package_zones_only_and_wrap_around(tmp_path):
    p0 = zone(tmp_path, "0", "package-0", 1_000_000, range_uj=10_000_000)
    zone(tmp_path, "0:0", "core", 5)  # a sub-zone: not a package
    zone(tmp_path, "1", "psys", 7)  # platform zone: not a package
    p1 = zone(tmp_path, "2", "package-1", 0)
    zones = power.package_zones(tmp_path)
    assert [z.name for z in zones] == ["package-0", "package-1"]
    (p0 / "energy_uj").write_text("9000000\n")
    assert zones[0].read() == 8_000_000
    (p0 / "energy_uj").write_text("500000\n")  # wrapped at 10 J
    assert zones[0].read() == 1_500_000 and zones[0].total_uj == 9_500_000
    (p1 / "energy_uj").write_text("2000000\n")
    meter = power.PowerMeter(zones)
    meter.watts()
    assert meter.joules == pytest.approx(9.5 + 2.0)


def test_no_rapl_says_so(tmp_path):
    with pytest.raises(power.PowerUnavailable, match="no RAPL package zones under"):
        power.package_zones(tmp_path / "absent")


def test_root_only_counter_is_explained_in_one_line(tmp_path, monkeypatch):
    """Linux >= 5.10 makes energy_uj 0400 root; as root here the kernel's
    permission check cannot be reproduced, so the read is made to fail as
    it does for a user."""
    z = zone(tmp_path, "0", "package-0", 1)
    real = Path.read_text

    def read_text(self, *a, **k):
        if self == z / "energy_uj":
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *a, **k)

    monkeypatch.setattr(Path, "read_text", read_text)
    with pytest.raises(power.PowerUnavailable) as e:
        power.package_zones(tmp_path)
    text = str(e.value)
    assert "permission denied" in text and "root only since Linux 5.10" in text and "\n" not in text


#: A package drawing 20 W: its counter is 20 J x seconds since start, modulo
#: the zone's range, replaced atomically (the kernel's file never reads
#: empty) every 20 ms by a process of its own, so a stalled test process
#: neither stops the energy nor quantizes it into whole writes.
RAPL_20W = """
import os, sys, time
path, range_uj = sys.argv[1], int(sys.argv[2])
t0 = time.monotonic()
while True:
    uj = int(20e6 * (time.monotonic() - t0)) % range_uj
    with open(path + ".new", "w") as f:
        f.write(f"{uj}\\n")
    os.replace(path + ".new", path)
    time.sleep(0.02)
"""


def test_campaign_records_cpu_and_power_series(tmp_path):
    rapl = tmp_path / "powercap"
    z = zone(rapl, "0", "package-0", 0, range_uj=20_000_000)  # wraps every second at 20 W
    burn = subprocess.Popen([sys.executable, "-c", RAPL_20W, str(z / "energy_uj"), "20000000"])
    res = tmp_path / "res"
    env = dict(os.environ, ROOFTOP_POWERCAP=str(rapl))
    try:
        p = subprocess.run(
            [
                sys.executable,
                "-m",
                "rooftop",
                "collect",
                "--metrics",
                "rpc",
                "--duration",
                "0.5",
                "--warmup",
                "0.1",
                "--windows",
                "2",
                "--series",
                "cpu,power",
                "--set",
                "series_interval=0.2",
                "--results",
                str(res),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
    finally:
        burn.kill()
        burn.wait(timeout=10)
    assert p.returncode == 0, p.stderr
    run = p.stdout.split()[-1]
    out = subprocess.run(
        [sys.executable, "-m", "rooftop", "export", run, "--series", "--results", str(res)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = list(csv.DictReader(io.StringIO(out)))
    by = {}
    for r in rows:
        by.setdefault((r["source"], r["quantity"]), []).append(r)
    assert set(by) >= {
        ("cpu", "cpu_user"),
        ("cpu", "cpu_sys"),
        ("cpu", "context_switches"),
        ("power", "power"),
        ("power", "energy"),
    }
    cpu = [float(r["value"]) + float(b["value"]) for r, b in zip(by["cpu", "cpu_user"], by["cpu", "cpu_sys"])]
    assert max(cpu) > 0.2  # a busy-polling client and server on the round's cores
    watts = sorted(float(r["value"]) for r in by["power", "power"])
    assert 10 < watts[len(watts) // 2] < 30 and all(r["unit"] == "W" for r in by["power", "power"])
    times = [float(r["t"]) for r in by["cpu", "cpu_user"] if r["round"] == by["cpu", "cpu_user"][0]["round"]]
    joules = [float(r["value"]) for r in by["power", "energy"] if r["round"] == by["power", "energy"][0]["round"]]
    assert joules == sorted(joules) and joules[-1] > 20_000_000 / 1e6  # went past a wrap-around
    assert times == sorted(times) and len(times) >= 3
    doc = json.loads(
        subprocess.run(
            [sys.executable, "-m", "rooftop", "export", run, "--series", "--format", "json", "--results", str(res)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    assert len(doc["series"]) == len(rows)
    # The cores_busy column: the busy share of the round's cores, here a
    # busy-polling client and server on both: above the share at which
    # nodes sharing cores time-slice them (rooftop.model.exclude).
    import sqlite3

    from rooftop.model.exclude import SHARED_BUSY_MAX

    with sqlite3.connect(res / "rooftop.db") as db:
        busy = [b for (b,) in db.execute("SELECT cores_busy FROM samples WHERE run_id = ?", (run,))]
    assert busy and all(SHARED_BUSY_MAX < b <= 1.0 for b in busy), busy


def test_without_rapl_the_campaign_says_so_once_and_records_cpu(tmp_path):
    res = tmp_path / "res"
    env = dict(os.environ, ROOFTOP_POWERCAP=str(tmp_path / "none"))
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "rooftop",
            "collect",
            "--metrics",
            "rpc",
            "--duration",
            "0.3",
            "--warmup",
            "0.1",
            "--windows",
            "1",
            "--series",
            "power,cpu",
            "--results",
            str(res),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    assert p.stderr.count("meter power: no RAPL package zones") == 1
