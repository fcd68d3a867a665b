#include "sysinfo.hpp"

#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace rooftop {

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

double realtime_s() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec / 1e9;
}

std::string utc_timestamp() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  tm t;
  gmtime_r(&ts.tv_sec, &t);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", t.tm_year + 1900,
                t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, ts.tv_nsec / 1000000);
  return buf;
}

CpuTimes process_cpu() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  CpuTimes c;
  c.user_s = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
  c.sys_s = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
  return c;
}

std::string hostname() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

std::string kernel_release() {
  utsname u;
  if (uname(&u) != 0) return "";
  return std::string(u.sysname) + " " + u.release + " " + u.machine;
}

std::string tcp_congestion_control() {
  std::ifstream f("/proc/sys/net/ipv4/tcp_congestion_control");
  std::string name;
  if (!(f >> name)) return "";
  return name;
}

std::vector<int> affinity_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> r;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return r;
  for (int i = 0; i < CPU_SETSIZE; i++)
    if (CPU_ISSET(i, &set)) r.push_back(i);
  return r;
}

std::string cpu_list_string(const std::vector<int>& cpus) {
  std::string s;
  size_t i = 0;
  while (i < cpus.size()) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) j++;
    if (!s.empty()) s += ',';
    s += std::to_string(cpus[i]);
    if (j > i) {
      s += '-';
      s += std::to_string(cpus[j]);
    }
    i = j + 1;
  }
  return s;
}

std::vector<int> parse_cpu_list(const std::string& s) {
  std::set<int> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ',')) {
    if (part.empty()) throw std::invalid_argument("empty element in cpu list '" + s + "'");
    auto dash = part.find('-');
    try {
      size_t used = 0;
      if (dash == std::string::npos) {
        int v = std::stoi(part, &used);
        if (used != part.size() || v < 0) throw std::invalid_argument("");
        out.insert(v);
      } else {
        std::string a = part.substr(0, dash), b = part.substr(dash + 1);
        size_t ua = 0, ub = 0;
        int lo = std::stoi(a, &ua), hi = std::stoi(b, &ub);
        if (ua != a.size() || ub != b.size() || lo < 0 || hi < lo) throw std::invalid_argument("");
        for (int v = lo; v <= hi; v++) out.insert(v);
      }
    } catch (const std::exception&) {
      throw std::invalid_argument("'" + part + "' is not a cpu number or range (e.g. 0-3,6)");
    }
  }
  if (out.empty()) throw std::invalid_argument("empty cpu list");
  for (int c : out)
    if (c >= CPU_SETSIZE) throw std::invalid_argument("cpu " + std::to_string(c) + " is too large");
  return {out.begin(), out.end()};
}

std::string set_affinity(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0)
    return std::string("cannot bind to cpus ") + cpu_list_string(cpus) + ": " + std::strerror(errno);
  return "";
}

void CoreSampler::sample() {
  int c = sched_getcpu();
  if (c >= 0) seen_.insert(c);
}

namespace {
// A /proc/meminfo line's value in bytes ("MemTotal:"); 0 if absent.
uint64_t meminfo_bytes(const std::string& key_wanted) {
  std::ifstream f("/proc/meminfo");
  std::string key;
  uint64_t val;
  std::string unit;
  while (f >> key >> val >> unit)
    if (key == key_wanted) return val * 1024;
  return 0;
}
}  // namespace

uint64_t mem_available_bytes() { return meminfo_bytes("MemAvailable:"); }
uint64_t mem_total_bytes() { return meminfo_bytes("MemTotal:"); }

}  // namespace rooftop

namespace rooftop {

namespace {

// A /proc/meminfo field's number ("Hugepagesize:" is in kB); 0 if absent.
uint64_t meminfo_field(const std::string& name) {
  std::ifstream f("/proc/meminfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(name + ":", 0) == 0) return std::strtoull(line.c_str() + name.size() + 1, nullptr, 10);
  return 0;
}

uint64_t huge_page_bytes() {
  const uint64_t kb = meminfo_field("Hugepagesize");
  return kb ? kb * 1024 : 2u << 20;
}

size_t rounded(size_t len, Pages pages) {
  if (pages == Pages::Base) return len;
  const uint64_t h = huge_page_bytes();
  return static_cast<size_t>((len + h - 1) / h * h);
}

}  // namespace

Pages parse_pages(const std::string& s) {
  if (s == "base") return Pages::Base;
  if (s == "huge") return Pages::Huge;
  throw std::invalid_argument("pages: " + s + " (base or huge)");
}

uint8_t* alloc_resident(size_t len, Pages pages) {
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE;
  if (pages == Pages::Huge) flags |= MAP_HUGETLB;
  void* p = mmap(nullptr, rounded(len, pages), PROT_READ | PROT_WRITE, flags, -1, 0);
  return p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
}

void free_resident(uint8_t* p, size_t len, Pages pages) {
  if (p) munmap(p, rounded(len, pages));
}

std::string alloc_error(size_t len, Pages pages, const std::string& what) {
  const int err = errno;
  std::string msg = "cannot allocate " + std::to_string(len) + " bytes of " + what;
  if (pages == Pages::Base) return msg + " (" + std::strerror(err) + ")";
  const uint64_t h = huge_page_bytes();
  const uint64_t need = rounded(len, pages) / h;
  return "--buffer-pages huge: " + msg + " in huge pages (" + std::to_string(need) + (need == 1 ? " page" : " pages") +
         " of " + std::to_string(h >> 10) + " KiB needed, " + std::to_string(meminfo_field("HugePages_Free")) + " free, " +
         std::to_string(meminfo_field("HugePages_Total")) + " reserved; " + std::strerror(err) +
         "): reserve more in /proc/sys/vm/nr_hugepages, or use --buffer-pages base";
}

uint64_t backing_page_bytes(const void* p) {
  std::ifstream f("/proc/self/smaps");
  std::string line;
  const auto addr = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  while (std::getline(f, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2) {  // a mapping's header line
      inside = addr >= lo && addr < hi;
    } else if (inside && line.rfind("KernelPageSize:", 0) == 0) {
      return std::strtoull(line.c_str() + 15, nullptr, 10) * 1024;
    }
  }
  return 0;
}

}  // namespace rooftop
