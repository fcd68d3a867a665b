#include "lease.hpp"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "sysinfo.hpp"

namespace rooftop {

std::vector<OptSpec> lease_options() {
  return {
      {"lease", OptKind::Str, "", "stop once this file is removed or not rewritten for --lease-timeout (the campaign that started this process renews it); default: no lease", ""},
      {"lease-timeout", OptKind::Seconds, "10", "how long an unchanged --lease file is tolerated", ""},
  };
}

Lease::Lease(const Options& o) : path_(o.str("lease")) {
  timeout_ns_ = static_cast<int64_t>(o.seconds("lease-timeout") * 1e9);
}

bool Lease::lapsed(int64_t now_ns) {
  if (path_.empty() || !why_.empty()) return !why_.empty();
  if (now_ns < next_check_ns_) return false;
  next_check_ns_ = now_ns + 200'000'000;
  std::ifstream f(path_);
  if (!f) {
    why_ = "lease file " + path_ + " is gone: the campaign stopped";
    return true;
  }
  std::stringstream text;
  text << f.rdbuf();
  if (renewed_ns_ == 0 || text.str() != last_) {
    last_ = text.str();
    renewed_ns_ = now_ns;
    return false;
  }
  if (now_ns - renewed_ns_ < timeout_ns_) return false;
  char secs[32];
  std::snprintf(secs, sizeof secs, "%g", timeout_ns_ / 1e9);
  why_ = "lease file " + path_ + " not renewed for " + secs + " s: the campaign is gone";
  return true;
}

void watch_lease(const Options& o, std::function<void(const std::string&)> on_lapse) {
  if (o.str("lease").empty()) return;
  std::thread([lease = Lease(o), on_lapse]() mutable {
    while (!lease.lapsed(now_ns())) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::this_thread::sleep_for(std::chrono::seconds(1));
    on_lapse(lease.why());
  }).detach();
}

}  // namespace rooftop
