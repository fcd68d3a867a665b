// Process and machine facts recorded with every result: host, cpuset, the
// cores actually run on, CPU time, clocks.
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace rooftop {

int64_t now_ns();  // CLOCK_MONOTONIC
double realtime_s();  // CLOCK_REALTIME, seconds since the epoch
std::string utc_timestamp();

struct CpuTimes {
  double user_s = 0, sys_s = 0;
};
CpuTimes process_cpu();

std::string hostname();
std::string kernel_release();
// This network namespace's default TCP congestion control ("cubic", "bbr";
// "" if unreadable): how flows of IP providers share a link.
std::string tcp_congestion_control();
std::vector<int> affinity_cpus();
std::string cpu_list_string(const std::vector<int>& cpus);  // "0-3,6"
// Parses "0-3,6" into a list; throws std::invalid_argument with a reason.
std::vector<int> parse_cpu_list(const std::string& s);
// Pins the calling process to the given cpus; returns an error text or "".
std::string set_affinity(const std::vector<int>& cpus);

// Records which cores the process was seen running on.
class CoreSampler {
 public:
  void sample();
  std::vector<int> cores() const { return {seen_.begin(), seen_.end()}; }

 private:
  std::set<int> seen_;
};

uint64_t mem_available_bytes();  // from /proc/meminfo; 0 if unknown
uint64_t mem_total_bytes();      // MemTotal, the same way

// Where a data buffer's pages come from (--buffer-pages). Base: the
// kernel's base pages, wherever they land physically, so a 1 MiB O_DIRECT
// write may span 256 separate pages one run and a few contiguous runs the
// next (a device taking 128 segments per request then splits it, or not).
// Huge: hugetlb pages of the default size (MAP_HUGETLB), reserved at mmap
// time from /proc/sys/vm/nr_hugepages: physically contiguous per page.
enum class Pages { Base, Huge };
Pages parse_pages(const std::string& s);  // "base" | "huge"

// Anonymous memory, made resident up front (MAP_POPULATE) so no page fault
// lands inside a measurement; nullptr if it cannot be had (alloc_error says
// why). Huge rounds len up to whole huge pages: free with free_resident.
uint8_t* alloc_resident(size_t len, Pages pages = Pages::Base);
void free_resident(uint8_t* p, size_t len, Pages pages = Pages::Base);
// Why alloc_resident(len, pages) failed, naming the knob (--buffer-pages)
// and, for huge pages, how many are needed, free and reserved.
std::string alloc_error(size_t len, Pages pages, const std::string& what);
// The page size the kernel backs the mapping holding p with (KernelPageSize
// in /proc/self/smaps): what the buffer really got; 0 if unknown.
uint64_t backing_page_bytes(const void* p);

}  // namespace rooftop
