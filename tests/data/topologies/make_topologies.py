"""Writes the synthetic hwloc topologies the NIC policy tests load.

    python3 tests/data/topologies/make_topologies.py   # needs lstopo (Debian: hwloc)

hwloc's own synthetic generator (lstopo --input "pack:2 ...") lays out the
packages, NUMA nodes and cores; this script then marks the cores a site
reserves for its system services as disallowed (allowed_cpuset: hwloc drops
them on load, as it does on a node whose cgroup excludes them) and adds the
PCI devices: host bridges, NICs (a network OS device such as hsn0 and, for
Slingshot, the cxi domain) and GPUs. The files are committed; re-running
this script rewrites them identically.

* aurora.xml: 2 packages x 52 cores, one NUMA node each; cores 0 and 52
  reserved (102 usable); 8 Slingshot NICs, cxi0-3 / hsn0-3 on package 0 and
  cxi4-7 / hsn4-7 on package 1.
* frontier.xml: 1 package of 64 cores in 4 NUMA nodes of 2 L3 caches (8
  cores each); the first core of every L3 reserved (56 usable); 4 NICs
  hsn0-3 (cxi0-3), NIC k behind the PCI switch of GPUs 2k and 2k+1 in NUMA
  node k.
* laptop.xml: 1 package of 4 cores x 2 hardware threads, one NUMA node, one
  Wi-Fi NIC wlp0s20f3 at the machine level.
"""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent


def bitmap(bits: set[int]) -> str:
    """hwloc's bitmap text: 32-bit words, most significant first."""
    top = max(bits) // 32 if bits else 0
    words = []
    for w in range(top, -1, -1):
        v = sum(1 << (b - 32 * w) for b in bits if 32 * w <= b < 32 * (w + 1))
        words.append(f"0x{v:08x}")
    return ",".join(words)


class Builder:
    def __init__(self, synthetic: str):
        xml = subprocess.run(["lstopo-no-graphics", "--input", synthetic, "--of", "xml", "-"],
                             check=True, capture_output=True, text=True).stdout
        self.root = ET.fromstring(xml)
        self.machine = self.root.find("object")
        for info in list(self.machine.findall("info")):
            if info.get("name") == "ProcessName":
                self.machine.remove(info)
        self.gp = max(int(o.get("gp_index")) for o in self.root.iter("object")) + 1

    def objects(self, kind: str) -> list[ET.Element]:
        return [o for o in self.root.iter("object") if o.get("type") == kind]

    def reserve(self, pus: set[int]) -> None:
        all_pus = {int(o.get("os_index")) for o in self.objects("PU")}
        self.machine.set("allowed_cpuset", bitmap(all_pus - pus))

    def _obj(self, parent: ET.Element, kind: str, **attrs: str) -> ET.Element:
        e = ET.SubElement(parent, "object", {"type": kind, "gp_index": str(self.gp), **attrs})
        self.gp += 1
        return e

    def host_bridge(self, parent: ET.Element, bus: int) -> ET.Element:
        return self._obj(parent, "Bridge", bridge_type="0-1", depth="0",
                         bridge_pci=f"0000:[{bus:02x}-{bus:02x}]")

    def nic(self, bridge: ET.Element, busid: str, names: list[tuple[str, int]]) -> None:
        dev = self._obj(bridge, "PCIDev", pci_busid=busid,
                        pci_type="0200 [17db:0501] [17db:0501] 02", pci_link_speed="31.507692")
        for name, osdev_type in names:  # 2: network interface, 3: OpenFabrics / cxi
            self._obj(dev, "OSDev", name=name, osdev_type=str(osdev_type))

    def gpu(self, bridge: ET.Element, busid: str, name: str) -> None:
        dev = self._obj(bridge, "PCIDev", pci_busid=busid,
                        pci_type="0380 [1002:740c] [1002:0b0c] 01", pci_link_speed="31.507692")
        self._obj(dev, "OSDev", name=name, osdev_type="1")

    def write(self, name: str) -> None:
        ET.indent(self.root, "  ")
        body = ET.tostring(self.root, encoding="unicode")
        text = ('<?xml version="1.0" encoding="UTF-8"?>\n'
                '<!DOCTYPE topology SYSTEM "hwloc2.dtd">\n' + body + "\n")
        (HERE / name).write_text(text)


def aurora() -> None:
    b = Builder("pack:2 [numa] core:52 pu:1")
    b.reserve({0, 52})
    for p, pack in enumerate(b.objects("Package")):
        for k in range(4):
            n = 4 * p + k
            bus = 0x18 + 0x11 * k + 0x80 * p
            bridge = b.host_bridge(pack, bus)
            b.nic(bridge, f"0000:{bus:02x}:00.0", [(f"hsn{n}", 2), (f"cxi{n}", 3)])
    b.write("aurora.xml")


def frontier() -> None:
    b = Builder("pack:1 group:4 [numa] l3:2 core:8 pu:1")
    b.reserve(set(range(0, 64, 8)))
    for k, group in enumerate(b.objects("Group")):
        bus = 0xc1 - 0x40 * k
        bridge = b.host_bridge(group, bus)
        b.gpu(bridge, f"0000:{bus:02x}:00.0", f"rsmi{2 * k}")
        b.gpu(bridge, f"0000:{bus:02x}:01.0", f"rsmi{2 * k + 1}")
        b.nic(bridge, f"0000:{bus:02x}:02.0", [(f"hsn{k}", 2), (f"cxi{k}", 3)])
    b.write("frontier.xml")


def laptop() -> None:
    b = Builder("pack:1 [numa] core:4 pu:2")
    bridge = b.host_bridge(b.machine, 0)
    dev = b._obj(bridge, "PCIDev", pci_busid="0000:00:14.3",
                 pci_type="0280 [8086:51f0] [8086:0094] 01", pci_link_speed="0.000000")
    b._obj(dev, "OSDev", name="wlp0s20f3", osdev_type="2")
    b.write("laptop.xml")


if __name__ == "__main__":
    aurora()
    frontier()
    laptop()
