#include "nic_policy.hpp"

#include <fcntl.h>
#include <hwloc.h>
#include <limits.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace rooftop {

// ---------------------------------------------------------------- topology

struct Topology::Impl {
  hwloc_topology_t t = nullptr;
  ~Impl() {
    if (t) hwloc_topology_destroy(t);
  }
};

Topology::Topology(std::unique_ptr<Impl> impl, std::string source)
    : impl_(std::move(impl)), source_(std::move(source)) {}
Topology::Topology(Topology&&) noexcept = default;
Topology& Topology::operator=(Topology&&) noexcept = default;
Topology::~Topology() = default;

namespace {

std::unique_ptr<Topology::Impl> load_topology(const std::string& xml) {
  auto impl = std::make_unique<Topology::Impl>();
  if (hwloc_topology_init(&impl->t) != 0) throw std::runtime_error("hwloc_topology_init failed");
  // PCI devices and their OS devices (network, OpenFabrics) are kept.
  hwloc_topology_set_io_types_filter(impl->t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (!xml.empty() && hwloc_topology_set_xml(impl->t, xml.c_str()) != 0)
    throw std::runtime_error("topology " + xml + ": not a readable hwloc XML file (" +
                             std::strerror(errno) + ")");
  if (hwloc_topology_load(impl->t) != 0)
    throw std::runtime_error("hwloc could not load the topology" +
                             (xml.empty() ? std::string() : " of " + xml));
  return impl;
}

std::vector<int> bits(hwloc_const_bitmap_t b) {
  std::vector<int> r;
  unsigned i;
  hwloc_bitmap_foreach_begin(i, b) r.push_back(static_cast<int>(i));
  hwloc_bitmap_foreach_end();
  return r;
}

// os index of the first object of this type whose cpuset holds pu, or -1.
int holder(hwloc_topology_t t, hwloc_obj_type_t type, int pu) {
  int n = hwloc_get_nbobjs_by_type(t, type);
  for (int i = 0; i < n; i++) {
    hwloc_obj_t o = hwloc_get_obj_by_type(t, type, i);
    if (o->cpuset && hwloc_bitmap_isset(o->cpuset, pu)) return static_cast<int>(o->os_index);
  }
  return -1;
}

hwloc_obj_t osdev_named(hwloc_topology_t t, const std::string& name) {
  for (hwloc_obj_t o = hwloc_get_next_osdev(t, nullptr); o; o = hwloc_get_next_osdev(t, o))
    if (o->name && name == o->name) return o;
  return nullptr;
}

std::string busid_text(hwloc_obj_t pci) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", pci->attr->pcidev.domain,
                pci->attr->pcidev.bus, pci->attr->pcidev.dev, pci->attr->pcidev.func);
  return buf;
}

}  // namespace

Topology Topology::this_machine() { return Topology(load_topology(""), "this machine"); }
Topology Topology::none(const std::string& why) { return Topology(nullptr, why); }
Topology Topology::from_xml(const std::string& path) {
  if (access(path.c_str(), R_OK) != 0)
    throw std::runtime_error("topology " + path + ": " + std::strerror(errno));
  return Topology(load_topology(path), path);
}

std::vector<int> Topology::pus() const {
  if (!impl_) return {};
  return bits(hwloc_get_root_obj(impl_->t)->cpuset);
}

std::vector<std::vector<int>> Topology::cores() const {
  std::vector<std::vector<int>> r;
  if (!impl_) return r;
  int n = hwloc_get_nbobjs_by_type(impl_->t, HWLOC_OBJ_CORE);
  for (int i = 0; i < n; i++) {
    auto pus = bits(hwloc_get_obj_by_type(impl_->t, HWLOC_OBJ_CORE, i)->cpuset);
    if (!pus.empty()) r.push_back(pus);
  }
  if (r.empty())  // no Core objects (some virtual machines): one core per PU
    for (int pu : pus()) r.push_back({pu});
  return r;
}

int Topology::package_of(int pu) const {
  return impl_ ? holder(impl_->t, HWLOC_OBJ_PACKAGE, pu) : -1;
}
int Topology::numa_of(int pu) const { return impl_ ? holder(impl_->t, HWLOC_OBJ_NUMANODE, pu) : -1; }

std::vector<NicCandidate> Topology::nics(bool ip) const {
  std::vector<NicCandidate> r;
  if (!impl_) return r;
  const hwloc_obj_osdev_type_e want = ip ? HWLOC_OBJ_OSDEV_NETWORK : HWLOC_OBJ_OSDEV_OPENFABRICS;
  for (hwloc_obj_t o = hwloc_get_next_osdev(impl_->t, nullptr); o; o = hwloc_get_next_osdev(impl_->t, o)) {
    if (o->attr->osdev.type != want || !o->name || !o->parent ||
        o->parent->type != HWLOC_OBJ_PCI_DEVICE)
      continue;
    r.push_back({o->name, busid_text(o->parent)});
  }
  return r;
}

NicLocality Topology::locate(const std::string& pci, const std::string& name) const {
  if (!impl_) return {};
  hwloc_topology_t t = impl_->t;
  hwloc_obj_t dev = pci.empty() ? nullptr : hwloc_get_pcidev_by_busidstring(t, pci.c_str());
  if (!dev && !name.empty()) dev = osdev_named(t, name);
  NicLocality loc;
  if (!dev) return loc;
  loc.known = true;
  for (hwloc_obj_t p = dev; p; p = p->parent)
    if (p->type == HWLOC_OBJ_PCI_DEVICE) {
      loc.pci = busid_text(p);
      break;
    }
  hwloc_obj_t near = hwloc_get_non_io_ancestor_obj(t, dev);
  int n = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE);
  for (int i = 0; i < n; i++) {
    hwloc_obj_t p = hwloc_get_obj_by_type(t, HWLOC_OBJ_PACKAGE, i);
    if (hwloc_bitmap_intersects(p->cpuset, near->cpuset)) loc.packages.push_back(p->os_index);
  }
  n = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < n; i++) {
    hwloc_obj_t m = hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, i);
    if (near->nodeset && hwloc_bitmap_isset(near->nodeset, m->os_index))
      loc.numa.push_back(m->os_index);
  }
  return loc;
}

// ---------------------------------------------------------------- policies

namespace {

struct Ctx {
  const Topology& topo;
  const ProcessPlace& place;
  const std::string& counter_dir;
};

enum class Part { Whole, Bucket, Selection };

struct PolicyRow {
  const char* name;
  Part part;
  const char* help;
  void (*apply)(const Ctx&, NicChoice&);
};

int place_cpu(const ProcessPlace& p) {
  if (p.last_cpu >= 0) return p.last_cpu;
  return p.cpuset.empty() ? -1 : *std::min_element(p.cpuset.begin(), p.cpuset.end());
}

bool has(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// Candidates local to `where` (by `field`), plus those without locality.
// When no candidate has a known locality (veth, lo: no PCI device), the
// bucket is every NIC: with a choice to make, it says so, as the fallback
// of an empty bucket does.
void bucket_near(NicChoice& c, const char* kind, int where,
                 std::vector<int> NicLocality::*field) {
  c.bucket = std::string(kind) + " " + (where < 0 ? "unknown" : std::to_string(where));
  bool located = false;
  for (size_t i = 0; i < c.candidates.size(); i++) {
    const NicLocality& l = c.localities[i];
    located = located || (l.known && !(l.*field).empty());
    if (where < 0 || !l.known || (l.*field).empty() || has(l.*field, where))
      c.bucket_nics.push_back(static_cast<int>(i));
  }
  if (!located && c.candidates.size() > 1) {
    c.bucket = "all (" + c.bucket + ": no NIC has a known locality)";
    c.fell_back = true;
  }
}

void bucket_all(const Ctx&, NicChoice& c) {
  c.bucket = "all";
  for (size_t i = 0; i < c.candidates.size(); i++) c.bucket_nics.push_back(static_cast<int>(i));
}
void bucket_package(const Ctx& x, NicChoice& c) {
  bucket_near(c, "package", x.topo.package_of(place_cpu(x.place)), &NicLocality::packages);
}
void bucket_numa(const Ctx& x, NicChoice& c) {
  bucket_near(c, "numa", x.topo.numa_of(place_cpu(x.place)), &NicLocality::numa);
}

void pick(NicChoice& c, uint64_t value, const std::string& what) {
  uint64_t n = c.bucket_nics.size();
  c.chosen = c.bucket_nics[value % n];
  c.why = what + " " + std::to_string(value) + " mod " + std::to_string(n) + " NICs = " +
          std::to_string(value % n) + ": " + c.candidates[c.chosen].name;
}

void select_byset(const Ctx& x, NicChoice& c) {
  if (x.place.cpuset.empty()) throw std::invalid_argument("byset: the process has no cpuset");
  int first = *std::min_element(x.place.cpuset.begin(), x.place.cpuset.end());
  pick(c, static_cast<uint64_t>(first), "byset: first CPU of the binding");
}
void select_bycore(const Ctx& x, NicChoice& c) {
  int cpu = place_cpu(x.place);
  if (cpu < 0) throw std::invalid_argument("bycore: the process's CPU is unknown");
  pick(c, static_cast<uint64_t>(cpu), "bycore: CPU last run on");
}
void select_random(const Ctx& x, NicChoice& c) {
  uint64_t z = x.place.seed + 0x9e3779b97f4a7c15ULL;  // splitmix64: the same seed, the same NIC
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  pick(c, z, "random (seed " + std::to_string(x.place.seed) + "):");
}
void select_rank(const Ctx& x, NicChoice& c) {
  if (x.place.local_rank < 0)
    throw std::invalid_argument(
        "rank: no node-local rank (--local-rank, or a launcher setting MPI_LOCALRANKID, "
        "OMPI_COMM_WORLD_LOCAL_RANK, PALS_LOCAL_RANKID or SLURM_LOCALID)");
  pick(c, static_cast<uint64_t>(x.place.local_rank), "rank: node-local rank");
}
uint64_t next_counter(const std::string& dir, const std::string& bucket);
void select_roundrobin(const Ctx& x, NicChoice& c) {
  std::string key = c.bucket;
  std::replace(key.begin(), key.end(), ' ', '-');
  pick(c, next_counter(x.counter_dir, key),
       "roundrobin: counter of bucket " + c.bucket + " in " + x.counter_dir + " was");
}
void passthrough(const Ctx&, NicChoice& c) {
  c.passthrough = true;
  c.why = "passthrough: no policy choice";
}

const std::vector<PolicyRow>& table() {
  static const std::vector<PolicyRow> rows = {
      {"passthrough", Part::Whole, "choose nothing: the provider's first domain, or the interface routing to the server (rooftop without a policy)", passthrough},
      {"all", Part::Bucket, "bucket: every candidate NIC of the node", bucket_all},
      {"package", Part::Bucket, "bucket: the NICs attached to the package of the CPU the process last ran on", bucket_package},
      {"numa", Part::Bucket, "bucket: the NICs attached to that CPU's NUMA node", bucket_numa},
      {"byset", Part::Selection, "the first CPU of the process's binding mod the bucket's NICs (static; unbound processes all get the first)", select_byset},
      {"bycore", Part::Selection, "the CPU the process last ran on mod the bucket's NICs", select_bycore},
      {"random", Part::Selection, "a pseudo-random NIC of the bucket, seeded by the process id", select_random},
      {"roundrobin", Part::Selection, "the next NIC of the bucket, from a counter per bucket shared by the node's processes (flock)", select_roundrobin},
      {"rank", Part::Selection, "the launcher's node-local rank mod the bucket's NICs (MPICH's default)", select_rank},
  };
  return rows;
}

const PolicyRow* row(const std::string& name, Part part) {
  for (auto& r : table())
    if (r.name == name && r.part == part) return &r;
  return nullptr;
}

std::string names(Part part) {
  std::string s;
  for (auto& r : table())
    if (r.part == part) s += (s.empty() ? "" : ", ") + std::string(r.name);
  return s;
}

// Creates dir (0700) if needed and refuses one another user owns or that
// others may write: the counters decide which NIC each process gets.
void ensure_private_dir(const std::string& dir) {
  std::string path;
  for (size_t pos = 0; pos != std::string::npos;) {
    pos = dir.find('/', pos + 1);
    path = dir.substr(0, pos);
    if (!path.empty() && mkdir(path.c_str(), 0700) != 0 && errno != EEXIST)
      throw std::runtime_error("NIC counter directory " + path + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
      (st.st_mode & 077) != 0)
    throw std::runtime_error("NIC counter directory " + dir +
                             " must be a directory of this user that only it can use (mode 0700)");
}

uint64_t next_counter(const std::string& dir, const std::string& bucket) {
  if (dir.empty())
    throw std::invalid_argument("roundrobin needs a counter directory (--nic-counters)");
  ensure_private_dir(dir);
  std::string path = dir + "/" + bucket;
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("NIC counter " + path + ": " + std::strerror(errno));
  flock(fd, LOCK_EX);
  char buf[32] = {};
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  uint64_t value = n > 0 ? std::strtoull(buf, nullptr, 10) : 0;
  std::string next = std::to_string(value + 1) + "\n";
  bool ok = ftruncate(fd, 0) == 0 &&
            pwrite(fd, next.data(), next.size(), 0) == static_cast<ssize_t>(next.size());
  flock(fd, LOCK_UN);
  close(fd);
  if (!ok) throw std::runtime_error("NIC counter " + path + ": cannot write");
  return value;
}

void split_policy(const std::string& policy, std::string& bucket, std::string& selection) {
  auto colon = policy.find(':');
  bucket = policy.substr(0, colon);
  selection = colon == std::string::npos ? "" : policy.substr(colon + 1);
}

}  // namespace

std::string check_nic_policy(const std::string& policy) {
  if (row(policy, Part::Whole)) return "";
  std::string b, s;
  split_policy(policy, b, s);
  std::string head = "nic policy '" + policy + "': ";
  if (!row(b, Part::Bucket))
    return head + "use passthrough or BUCKET:SELECTION; buckets: " + names(Part::Bucket) +
           "; selections: " + names(Part::Selection);
  if (!row(s, Part::Selection))
    return head + "unknown selection '" + s + "'; selections: " + names(Part::Selection);
  return "";
}

std::vector<std::string> nic_policy_names() {
  std::vector<std::string> r;
  for (auto& w : table())
    if (w.part == Part::Whole) r.push_back(w.name);
  for (auto& b : table())
    if (b.part == Part::Bucket)
      for (auto& s : table())
        if (s.part == Part::Selection) r.push_back(std::string(b.name) + ":" + s.name);
  return r;
}

std::string describe_nic_policies() {
  std::string r;
  for (auto& w : table()) {
    std::string left = std::string("  ") + w.name;
    left.resize(std::max<size_t>(left.size() + 1, 15), ' ');
    r += left + w.help + "\n";
  }
  return r;
}

NicChoice choose_nic(const Topology& topo, const std::vector<NicCandidate>& candidates,
                     const ProcessPlace& place, const std::string& policy,
                     const std::string& counter_dir) {
  std::string err = check_nic_policy(policy);
  if (!err.empty()) throw std::invalid_argument(err);
  NicChoice c;
  c.policy = policy;
  c.topology = topo.source();
  c.candidates = candidates;
  for (auto& n : candidates) c.localities.push_back(topo.locate(n.pci, n.name));
  Ctx x{topo, place, counter_dir};
  if (const PolicyRow* whole = row(policy, Part::Whole)) {
    whole->apply(x, c);
    return c;
  }
  std::string b, s;
  split_policy(policy, b, s);
  row(b, Part::Bucket)->apply(x, c);
  if (c.candidates.empty()) {
    c.why = "no candidate NIC";
    return c;
  }
  if (c.bucket_nics.empty()) {  // e.g. a package without a NIC: never silently none
    std::string empty = c.bucket;
    c.bucket_nics.clear();
    bucket_all(x, c);
    c.bucket = "all (" + empty + " has no NIC)";
    c.fell_back = true;
  }
  if (c.bucket_nics.size() == 1) {
    c.chosen = c.bucket_nics[0];
    c.why = "the only NIC of bucket " + c.bucket + ": " + c.candidates[c.chosen].name;
    return c;
  }
  try {
    row(s, Part::Selection)->apply(x, c);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("nic policy " + policy + ": " + e.what());
  }
  return c;
}

namespace {
void write_locality(JsonWriter& w, const NicCandidate& n, const NicLocality& l) {
  w.kv("name", n.name);
  if (l.pci.empty() && n.pci.empty()) w.key("pci").null();
  else w.kv("pci", l.pci.empty() ? n.pci : l.pci);
  w.kv("located", l.known);
  w.key("packages").begin_array();
  for (int p : l.packages) w.value(static_cast<int64_t>(p));
  w.end_array();
  w.key("numa").begin_array();
  for (int m : l.numa) w.value(static_cast<int64_t>(m));
  w.end_array();
}
}  // namespace

void NicChoice::write_json(JsonWriter& w) const {
  w.begin_object();
  w.kv("policy", policy);
  w.kv("topology", topology);
  w.key("candidates").begin_array();
  for (size_t i = 0; i < candidates.size(); i++) {
    w.begin_object();
    write_locality(w, candidates[i], localities[i]);
    w.end_object();
  }
  w.end_array();
  if (passthrough) w.key("bucket").null();
  else w.kv("bucket", bucket);
  w.key("bucket_nics").begin_array();
  for (int i : bucket_nics) w.value(candidates[i].name);
  w.end_array();
  w.kv("fell_back", fell_back);
  w.key("chosen");
  if (chosen < 0) {
    w.null();
  } else {
    w.begin_object();
    write_locality(w, candidates[chosen], localities[chosen]);
    w.end_object();
  }
  w.kv("why", why);
  w.end_object();
}

ProcessPlace simulated_place(const Topology& topo, const std::string& binding, int k) {
  auto cores = topo.cores();
  if (cores.empty()) throw std::invalid_argument("the topology has no usable core");
  const size_t n = cores.size();
  ProcessPlace p;
  p.local_rank = k;
  p.seed = static_cast<uint64_t>(k) + 1;
  if (binding == "core") {
    p.cpuset = cores[k % n];
  } else if (binding == "2cores") {
    p.cpuset = cores[(2 * static_cast<size_t>(k)) % n];
    if (n > 1) {
      auto& second = cores[(2 * static_cast<size_t>(k) + 1) % n];
      p.cpuset.insert(p.cpuset.end(), second.begin(), second.end());
    }
  } else if (binding == "none") {
    p.cpuset = topo.pus();
    p.last_cpu = cores[k % n].front();
    return p;
  } else {
    throw std::invalid_argument("binding '" + binding + "': must be core, 2cores or none");
  }
  std::sort(p.cpuset.begin(), p.cpuset.end());
  p.last_cpu = p.cpuset.front();
  return p;
}

int launcher_local_rank() {
  const char* vars[] = {"MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK", "PALS_LOCAL_RANKID",
                        "SLURM_LOCALID", "PMI_LOCAL_RANK"};
  for (const char* v : vars)
    if (const char* e = std::getenv(v)) {
      char* end = nullptr;
      long r = std::strtol(e, &end, 10);
      if (end != e && *end == '\0' && r >= 0 && r < INT_MAX) return static_cast<int>(r);
    }
  return -1;
}

namespace {
bool pci_busid(const std::string& s) {
  // dddd:bb:dd.f (hex)
  if (s.size() != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.') return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9, 11})
    if (!std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}
}  // namespace

std::string interface_pci(const std::string& ifname) {
  if (ifname.empty() || ifname.find('/') != std::string::npos) return "";
  return device_pci("/sys/class/net/" + ifname + "/device");
}

std::string device_pci(const std::string& link) {
  char buf[PATH_MAX];
  if (!realpath(link.c_str(), buf)) return "";  // veth, lo, bridges: no device
  // The nearest PCI function on the device's path (virtio-net sits below one).
  std::string path = buf;
  while (!path.empty()) {
    auto slash = path.rfind('/');
    std::string part = path.substr(slash + 1);
    if (pci_busid(part)) return part;
    if (slash == std::string::npos || slash == 0) break;
    path.resize(slash);
  }
  return "";
}

}  // namespace rooftop
