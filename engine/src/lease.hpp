// A campaign's lease on the engines it started (--lease FILE): the campaign
// rewrites FILE every few seconds; an engine whose lease file is removed,
// or not rewritten for --lease-timeout, stops by itself. Engines so never
// outlive the campaign that started them, on any launcher: a SIGKILLed
// campaign cannot stop them, but stops renewing. Only the file's content
// is compared, with this host's monotonic clock: no clock is shared, and
// opening the file revalidates it on NFS (close-to-open consistency).
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "options.hpp"

namespace rooftop {

std::vector<OptSpec> lease_options();

class Lease {
 public:
  explicit Lease(const Options& o);  // no --lease: never lapses
  // True once lapsed (checked at most every 200 ms); why() says how.
  bool lapsed(int64_t now_ns);
  const std::string& why() const { return why_; }

 private:
  std::string path_, last_, why_;
  int64_t timeout_ns_ = 0, renewed_ns_ = 0, next_check_ns_ = 0;
};

// A thread watching the lease in every phase (connecting, waiting at a
// barrier): once it lapsed and the main loop has not stopped on it within
// a second, on_lapse(why) is called (it raises the stop flag).
void watch_lease(const Options& o, std::function<void(const std::string&)> on_lapse);

}  // namespace rooftop
