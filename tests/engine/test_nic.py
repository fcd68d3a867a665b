"""What was asked is what was measured: --domain and --address name what
exists here (else exit 2 with the list), and every document records the
domain, interface and address the endpoint really used."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from rooftop.engine.base import engine_path
from rooftop.engine.commands import run_engine
from rooftop.engine.servers import Group

#: TEST-NET-3 (RFC 5737): never assigned to a host.
FOREIGN_IP = "203.0.113.77"


def engine(*args, timeout=30):
    t = time.monotonic()
    p = subprocess.run([engine_path(), *args], capture_output=True, text=True, timeout=timeout)
    return p, time.monotonic() - t


def interfaces(fabric="ofi+tcp") -> dict[str, list[str]]:
    """Interfaces with addresses that carry the provider, per the engine."""
    doc = run_engine(["domains", "--fabric", fabric], timeout=30)
    return {i["name"]: i["ips"] for i in doc["result"]["interfaces"] if i["carries_provider"]}


@pytest.mark.parametrize("command", ["serve", "load", "ping", "stat", "shutdown"])
def test_nonexistent_domain_is_refused_with_the_list(command, tmp_path, validate):
    wait = [] if command == "serve" else ["--timeout", "20"]  # no server: would wait 20 s
    p, took = engine(command, "--domain", "bogus0", "--group-dir", str(tmp_path), *wait)
    assert p.returncode == 2, p.stderr
    assert "--domain bogus0: no such network interface" in p.stderr
    assert "lo (127.0.0.1" in p.stderr  # what exists, with its addresses
    assert took < 10  # refused up front, not after waiting for a server
    doc = validate(json.loads(p.stdout))
    assert not doc["complete"] and "bogus0" in doc["errors"][0]
    assert not (tmp_path / "0.addr").exists()


def test_shm_domains_are_its_own(tmp_path, cores, validate):
    p, _ = engine("serve", "--fabric", "ofi+shm", "--domain", "lo", "--group-dir", str(tmp_path))
    assert p.returncode == 2
    assert "provider shm has no domain 'lo' here; its domains: shm" in p.stderr
    with Group(fabric="ofi+shm") as g:
        g.start_server(0, cpus=cores[0], extra=["--domain", "shm"])
        doc = validate(g.load(duration=0.2, warmup=0.1, cpus=cores[1], extra=["--domain", "shm"]))
        server = validate(g.close()[0])
    for d in (doc, server):
        e = d["engine"]
        assert e["domain"] == "shm" and e["domain_choice"] == "given with --domain"
        assert e["ip"] is None and e["interface"] is None
        assert e["address"] == e["local_address"].strip() and e["address"].startswith("fi_shm://")


def test_domain_lo_is_used_and_recorded(cores, validate):
    with Group() as g:
        g.start_server(0, cpus=cores[0], extra=["--domain", "lo"])
        addr_file = (g.directory / "0.addr").read_text()
        client = validate(g.load(duration=0.2, warmup=0.1, cpus=cores[1], extra=["--domain", "lo"]))
        server = validate(g.close()[0])
    for d in (server, client):
        e = d["engine"]
        assert (e["domain"], e["interface"], e["ip"]) == ("lo", "lo", "127.0.0.1"), e
        assert e["domain_choice"] == "given with --domain"
        ip, port = e["address"].rsplit(":", 1)
        assert ip == "127.0.0.1" and 0 < int(port) < 65536
        assert e["local_address"].endswith(e["address"])  # fi_sockaddr_in://IP:port
    # The server's document names the address clients were given.
    assert f"ip={server['engine']['ip']}" in addr_file
    assert client["result"]["servers"][0]["address"].endswith(server["engine"]["address"])


def test_default_choice_is_recorded_with_its_address(cores, validate):
    with Group() as g:
        g.start_server(0, cpus=cores[0])
        client = validate(g.load(duration=0.2, warmup=0.1, cpus=cores[1]))
    e = client["engine"]
    assert e["interface"] == "lo" and e["address"].startswith("127.0.0.1:")
    assert "routing to the server's address 127.0.0.1" in e["domain_choice"]


def test_address_no_interface_carries_is_refused(tmp_path):
    p, _ = engine("serve", "--address", FOREIGN_IP, "--group-dir", str(tmp_path))
    assert p.returncode == 2
    assert f"--address {FOREIGN_IP}: no local interface carries this address" in p.stderr
    assert "lo (127.0.0.1" in p.stderr
    p, _ = engine("serve", "--address", "lo", "--group-dir", str(tmp_path))
    assert p.returncode == 2 and "not an IP address" in p.stderr
    assert not (tmp_path / "0.addr").exists()


def test_address_must_be_on_the_domain_given(tmp_path):
    other = {n: ips for n, ips in interfaces().items() if n != "lo" and ips}
    if not other:
        pytest.skip("no interface besides loopback carries tcp here")
    name, ips = next(iter(other.items()))
    p, _ = engine("serve", "--domain", "lo", "--address", ips[0], "--group-dir", str(tmp_path))
    assert p.returncode == 2
    assert f"--address {ips[0]}: it is on interface {name}, not on --domain lo" in p.stderr


def test_domains_command_lists_and_checks(validate):
    doc = validate(run_engine(["domains", "--fabric", "ofi+tcp"], timeout=30))
    res = doc["result"]
    assert res["provider"] == "tcp" and res["ip_provider"] and "lo" in res["domains"]
    lo = [i for i in res["interfaces"] if i["name"] == "lo"][0]
    assert "127.0.0.1" in lo["ips"] and lo["carries_provider"]
    shm = run_engine(["domains", "--fabric", "ofi+shm", "--domain", "shm"], timeout=30)["result"]
    assert shm["domains"] == ["shm"] and not shm["ip_provider"]
    p, _ = engine("domains", "--fabric", "ofi+tcp", "--domain", "eth99")
    assert p.returncode == 2 and "--domain eth99" in p.stderr
