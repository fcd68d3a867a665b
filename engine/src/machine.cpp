// rooftop-engine machine: what this node is, for the record of the run
// measured on it (rooftop names the machine of every run, and tells two
// runs measured on different machines apart). Read once per node and
// command, never per sample; nothing is opened or measured.
//   cpu       model and vendor (hwloc's CPUModel, else /proc/cpuinfo),
//             packages, cores, PUs, threads per core, NUMA nodes: the whole
//             machine, not only this process's cpuset (hwloc's disallowed
//             PUs included), so a Slurm step or an emulated node's cgroup
//             does not make the same machine look smaller
//   memory    MemTotal (/proc/meminfo), bytes
//   kernel    uname: system, release, machine
//   libfabric the runtime version (fi_version), the version built against,
//             the provider --fabric resolves to and its version
//             (fabric_attr->prov_version)
//   hwloc     its version and a one-line summary of the topology
//   nics      each NIC the provider can use here (--domain: that one;
//             --address: the interfaces carrying those addresses): driver
//             and firmware as `ethtool -i` has them (the SIOCETHTOOL
//             driver-info request, no privilege needed), else sysfs or the
//             provider's fi_nic; PCI bus id and vendor:device ids, link speed
//             and NUMA node from sysfs (/sys/class/net/IF, or
//             /sys/class/infiniband/DEV and /sys/class/cxi/DEV for domains
//             that are devices). Unknown values are null, keys always there.
#include <hwloc.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <sstream>

#include "commands.hpp"
#include "common_options.hpp"
#include "fabric.hpp"
#include "nic.hpp"
#include "nic_policy.hpp"

namespace rooftop {

namespace {

// The first line of a small sysfs/proc file, trailing whitespace dropped ("" if unreadable).
std::string first_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  if (!std::getline(f, line)) return "";
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  return line;
}

bool exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// A file holding one integer; fallback when unreadable or not a number.
int64_t int_file(const std::string& path, int64_t fallback) {
  std::string s = first_line(path);
  if (s.empty()) return fallback;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 0);
  return (end && *end == '\0') ? v : fallback;
}

std::string basename_of_link(const std::string& link) {
  char buf[4096];
  ssize_t n = readlink(link.c_str(), buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string s(buf, static_cast<size_t>(n));
  return s.substr(s.rfind('/') + 1);
}

void kv_or_null(JsonWriter& w, const char* key, const std::string& v) {
  if (v.empty()) w.key(key).null();
  else w.kv(key, v);
}

void kv_or_null(JsonWriter& w, const char* key, int64_t v) {
  if (v < 0) w.key(key).null();
  else w.kv(key, v);
}

struct Drvinfo {
  std::string driver, firmware;
};

// `ethtool -i IF`'s driver and firmware (SIOCETHTOOL, ETHTOOL_GDRVINFO);
// empty where the interface does not say (lo).
Drvinfo driver_info(const std::string& ifname) {
  Drvinfo d;
  if (ifname.empty() || ifname.size() >= IFNAMSIZ) return d;
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return d;
  struct ethtool_drvinfo info{};
  info.cmd = ETHTOOL_GDRVINFO;
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, ifname.data(), ifname.size());
  ifr.ifr_data = reinterpret_cast<char*>(&info);
  if (ioctl(fd, SIOCETHTOOL, &ifr) == 0) {
    d.driver.assign(info.driver, strnlen(info.driver, sizeof info.driver));
    d.firmware.assign(info.fw_version, strnlen(info.fw_version, sizeof info.fw_version));
    if (d.firmware == "N/A") d.firmware.clear();
  }
  close(fd);
  return d;
}

// "100 Gb/sec (4X EDR)" (an InfiniBand port's rate) -> 100000 Mb/s; -1 if not.
int64_t rate_mbps(const std::string& rate) {
  char* end = nullptr;
  double v = std::strtod(rate.c_str(), &end);
  if (end == rate.c_str() || v <= 0) return -1;
  return static_cast<int64_t>(v * 1000);
}

// An InfiniBand device's first firmware version and port rate under dir.
void infiniband_facts(const std::string& dir, std::string& firmware, int64_t& speed) {
  if (firmware.empty()) firmware = first_line(dir + "/fw_ver");
  if (speed < 0) speed = rate_mbps(first_line(dir + "/ports/1/rate"));
}

// The InfiniBand device behind a network interface (IPoIB, RoCE), "" if none.
std::string infiniband_below(const std::string& device) {
  DIR* d = opendir((device + "/infiniband").c_str());
  if (!d) return "";
  std::string found;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') {
      found = device + "/infiniband/" + e->d_name;
      break;
    }
  closedir(d);
  return found;
}

void write_nic(JsonWriter& w, const NicCandidate& nic, const ProviderInfo& prov) {
  std::string cls;  // the NIC's sysfs class folder
  for (const char* c : {"/sys/class/net/", "/sys/class/infiniband/", "/sys/class/cxi/"})
    if (nic.name.find('/') == std::string::npos && exists(c + nic.name)) {
      cls = c + nic.name;
      break;
    }
  const bool net = cls.rfind("/sys/class/net/", 0) == 0;
  const std::string device = cls.empty() ? "" : cls + "/device";
  Drvinfo d = net ? driver_info(nic.name) : Drvinfo{};
  if (d.driver.empty() && !device.empty()) d.driver = basename_of_link(device + "/driver");
  int64_t speed = net ? int_file(cls + "/speed", -1) : -1;  // Mb/s; -1 (virtio), EINVAL (lo): unknown
  if (!cls.empty() && cls.rfind("/sys/class/infiniband/", 0) == 0) infiniband_facts(cls, d.firmware, speed);
  else if (net && !device.empty()) {
    std::string ib = infiniband_below(device);
    if (!ib.empty()) infiniband_facts(ib, d.firmware, speed);
  }
  for (auto& [domain, pn] : prov.nics)
    if (domain == nic.name) {
      if (d.driver.empty()) d.driver = pn.driver;
      if (d.firmware.empty()) d.firmware = pn.firmware;
      if (speed < 0 && pn.speed_bps > 0) speed = static_cast<int64_t>(pn.speed_bps / 1000000);
    }
  std::string model;
  if (!device.empty()) {
    std::string vendor = first_line(device + "/vendor"), dev = first_line(device + "/device");
    auto hex = [](std::string s) { return s.rfind("0x", 0) == 0 ? s.substr(2) : s; };
    if (!vendor.empty() && !dev.empty()) model = hex(vendor) + ":" + hex(dev);
  }
  std::string pci = nic.pci.empty() && !device.empty() ? device_pci(device) : nic.pci;
  w.begin_object().kv("name", nic.name);
  kv_or_null(w, "driver", d.driver);
  kv_or_null(w, "model", model);
  kv_or_null(w, "pci", pci);
  kv_or_null(w, "firmware", d.firmware);
  kv_or_null(w, "speed_mbps", speed > 0 ? speed : -1);
  kv_or_null(w, "numa_node", device.empty() ? -1 : int_file(device + "/numa_node", -1));
  w.end_object();
}

// The NICs to describe: --domain, else the interfaces carrying --address,
// else every NIC the provider can use here.
std::vector<NicCandidate> nics_used(const FabricSpec& f, const std::string& domain, const std::string& address) {
  if (!domain.empty()) return {{domain, interface_pci(domain)}};
  if (!address.empty()) {
    std::vector<NicCandidate> r;
    auto ifs = local_interfaces();
    for (auto& ip : split_commas(address)) {
      std::string name = interface_of(ifs, ip);
      if (!name.empty() && std::none_of(r.begin(), r.end(), [&](auto& c) { return c.name == name; }))
        r.push_back({name, interface_pci(name)});
    }
    return r;
  }
  return provider_nics(f);
}

std::string plural(int64_t n, const char* what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

std::string mib_text(uint64_t bytes) {
  if (bytes >= (1ull << 20)) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes >> 10) + " KiB";
}

std::string cpuinfo_field(const std::string& name) {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(name, 0) == 0) {
      auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string v = line.substr(colon + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    }
  return "";
}

// cpu, numa_nodes and hwloc's summary, from the whole machine's topology.
void write_cpu(JsonWriter& w) {
  hwloc_topology_t t = nullptr;
  int packages = 0, cores = 0, pus = 0, numa = 0;
  std::string model, vendor, l3, version;
  if (hwloc_topology_init(&t) == 0) {
    hwloc_topology_set_flags(t, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
    if (hwloc_topology_load(t) == 0) {
      packages = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE);
      cores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
      pus = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU);
      numa = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
      if (hwloc_obj_t p = hwloc_get_obj_by_type(t, HWLOC_OBJ_PACKAGE, 0)) {
        if (const char* m = hwloc_obj_get_info_by_name(p, "CPUModel")) model = m;
        if (const char* v = hwloc_obj_get_info_by_name(p, "CPUVendor")) vendor = v;
      }
      if (hwloc_obj_t c = hwloc_get_obj_by_type(t, HWLOC_OBJ_L3CACHE, 0)) l3 = mib_text(c->attr->cache.size);
      if (const char* v = hwloc_obj_get_info_by_name(hwloc_get_root_obj(t), "hwlocVersion")) version = v;
    }
    hwloc_topology_destroy(t);
  }
  if (pus == 0) pus = static_cast<int>(sysconf(_SC_NPROCESSORS_CONF));
  if (model.empty()) model = cpuinfo_field("model name");
  if (vendor.empty()) vendor = cpuinfo_field("vendor_id");
  w.key("cpu").begin_object();
  kv_or_null(w, "model", model);
  kv_or_null(w, "vendor", vendor);
  kv_or_null(w, "sockets", packages > 0 ? packages : -1);
  kv_or_null(w, "cores", cores > 0 ? cores : -1);
  kv_or_null(w, "pus", pus > 0 ? pus : -1);
  kv_or_null(w, "threads_per_core", cores > 0 && pus >= cores ? pus / cores : -1);
  w.end_object();
  kv_or_null(w, "numa_nodes", numa > 0 ? numa : -1);
  const unsigned api = hwloc_get_api_version();  // its API version when the topology does not say
  if (version.empty())
    version = std::to_string(api >> 16) + "." + std::to_string((api >> 8) & 0xff) + "." + std::to_string(api & 0xff);
  std::string summary = plural(packages, "package") + ", " + plural(cores, "core") + ", " + plural(pus, "PU") +
                        ", " + plural(numa, "NUMA node") + (l3.empty() ? "" : ", L3 " + l3);
  w.key("hwloc").begin_object();
  w.kv("version", version);
  w.kv("summary", summary);
  w.end_object();
}

}  // namespace

int cmd_machine(int argc, char** argv) {
  Options o("machine",
            "What this node is, for the record of a run measured on it (rooftop\n"
            "names the machine of every run): CPU model, packages, cores, threads\n"
            "per core and NUMA nodes of the whole machine (hwloc), memory, kernel,\n"
            "libfabric's version and the provider's, hwloc's summary, and each NIC\n"
            "--fabric can use here (or the one --domain names, or those carrying\n"
            "--address): driver, model (PCI vendor:device), firmware, link speed,\n"
            "NUMA node. Nothing is opened or measured; unknown values are null.",
            {opt::fabric(), opt::domain("describe this NIC only"),
             opt::address("describe the interfaces carrying these addresses (comma list) only"),
             opt::rank("the node's index, for {rank} in --output"), opt::rank_from_env(), opt::cpus_unused(),
             opt::output()});
  return run_command(o, "machine", argc, argv, [&](Report& rep) {
    FabricSpec f = parse_fabric_spec(o.str("fabric"));
    ProviderInfo prov = provider_info(f);
    JsonWriter w;
    w.begin_object().kv("host", hostname()).kv("kernel", kernel_release());
    write_cpu(w);
    const uint64_t mem = mem_total_bytes();
    if (mem) w.kv("memory_bytes", mem);
    else w.key("memory_bytes").null();
    w.key("libfabric").begin_object();
    w.kv("version", Endpoint::libfabric_version());
    w.kv("build_version", std::to_string(FI_MAJOR_VERSION) + "." + std::to_string(FI_MINOR_VERSION));
    w.kv("fabric_spec", f.spec);
    kv_or_null(w, "provider", prov.name);
    kv_or_null(w, "provider_version", prov.version);
    kv_or_null(w, "fabric", prov.fabric);
    kv_or_null(w, "error", prov.error);
    w.end_object();
    w.key("nics").begin_array();
    for (auto& nic : nics_used(f, o.str("domain"), o.str("address"))) write_nic(w, nic, prov);
    w.end_array();
    w.end_object();
    rep.result_json = w.str();
    rep.complete = true;
    return kExitOk;
  });
}

}  // namespace rooftop
