// The one JSON document each engine process emits: engine, config,
// environment, result, complete, errors.
#pragma once
#include <atomic>
#include <string>
#include <vector>

#include "json.hpp"
#include "options.hpp"
#include "sysinfo.hpp"

namespace rooftop {

class Endpoint;
extern const char* const kEngineVersion;

// Set by SIGINT/SIGTERM; the event loops poll it.
extern std::atomic<int> g_signal;
void install_signal_handlers();

struct Report {
  std::string role;  // "server", "client", "ping"
  const Options* options = nullptr;
  std::string fabric_json;  // endpoint facts, captured once it is open
  void capture(const Endpoint& ep);
  std::vector<int> cpuset;
  CoreSampler cores;
  std::string binding;  // what --cpus did
  std::string start_utc = utc_timestamp();
  std::vector<std::string> errors;
  bool complete = false;
  std::string result_json;  // the "result" object, already serialised

  std::string document() const;
  // Writes to --output FILE (atomically) or stdout; returns false on failure.
  bool emit(const std::string& output) const;
};

}  // namespace rooftop
