#include "report.hpp"

#include <unistd.h>

#include <csignal>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "fabric.hpp"

namespace rooftop {

const char* const kEngineVersion = ROOFTOP_VERSION;
std::atomic<int> g_signal{0};

namespace {
void on_signal(int sig) { g_signal.store(sig); }
}  // namespace

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

void Report::capture(const Endpoint& ep) {
  JsonWriter w;
  w.begin_object();
  ep.describe(w);
  w.end_object();
  fabric_json = w.str();
}

std::string Report::document() const {
  JsonWriter w;
  w.begin_object();
  w.kv("schema", "rooftop-engine-output/1");
  w.kv("role", role);
  w.key("engine").begin_object();
  w.kv("name", "rooftop-engine");
  w.kv("version", kEngineVersion);
  w.kv("libfabric_version", Endpoint::libfabric_version());
  w.kv("libfabric_build_version", std::to_string(FI_MAJOR_VERSION) + "." + std::to_string(FI_MINOR_VERSION));
  if (!fabric_json.empty()) w.raw_members(fabric_json);
  else w.key("provider").null();
  w.end_object();
  w.key("config");
  if (options) options->write_json(w);
  else w.begin_object().end_object();
  w.key("environment").begin_object();
  w.kv("host", hostname());
  w.kv("pid", static_cast<int64_t>(getpid()));
  w.kv("kernel", kernel_release());
  w.kv("tcp_congestion_control", tcp_congestion_control());
  w.kv("cpus_online", static_cast<int64_t>(sysconf(_SC_NPROCESSORS_ONLN)));
  w.kv("cpuset", cpu_list_string(cpuset));
  w.kv("binding", binding);
  w.key("cores_used").begin_array();
  for (int c : cores.cores()) w.value(c);
  w.end_array();
  w.kv("start_utc", start_utc);
  w.kv("end_utc", utc_timestamp());
  w.end_object();
  w.key("result");
  if (result_json.empty()) w.null();
  else w.raw(result_json);
  w.kv("complete", complete);
  w.key("errors").begin_array();
  for (auto& e : errors) w.value(e);
  w.end_array();
  w.end_object();
  return w.str() + "\n";
}

bool Report::emit(const std::string& output) const {
  std::string doc = document();
  if (output.empty() || output == "-") {
    std::fwrite(doc.data(), 1, doc.size(), stdout);
    std::fflush(stdout);
    return true;
  }
  std::string tmp = output + ".tmp." + std::to_string(getpid());
  {
    std::ofstream f(tmp);
    f << doc;
    f.flush();
    if (!f) {
      std::fprintf(stderr, "rooftop-engine: cannot write %s: %s\n", tmp.c_str(), std::strerror(errno));
      std::remove(tmp.c_str());  // a full disk: no partial file left behind
      return false;
    }
  }
  if (rename(tmp.c_str(), output.c_str()) != 0) {
    std::fprintf(stderr, "rooftop-engine: cannot write %s: %s\n", output.c_str(), std::strerror(errno));
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace rooftop
