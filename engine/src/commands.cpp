#include "commands.hpp"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>

#include "fabric.hpp"

namespace rooftop {

std::vector<OptSpec> client_common_options() {
  return {
      {"fabric", OptKind::Str, "ofi+tcp", "libfabric provider: ofi+tcp, ofi+shm, ofi+sockets, ofi+verbs, ofi+cxi", ""},
      {"domain", OptKind::Str, "", "libfabric domain / network interface; default: the interface that routes to the server", ""},
      {"group-dir", OptKind::Str, "", "directory holding the servers' <rank>.addr files (required)", ""},
      {"timeout", OptKind::Seconds, "10", "give up on a missing address file or a silent server after this long", ""},
      {"progress", OptKind::Choice, "busy", "completion progress: busy, block, adaptive, spindown[:MS]", "busy|block|adaptive|spindown*"},
  };
}

int run_command(Options& o, const char* role, int argc, char** argv,
                const std::function<int(Report&)>& body) {
  // Address files and documents are for their user only (a group directory
  // may sit on a file system other users can read), whoever started us.
  umask(077);
  try {
    if (!o.parse(argc, argv)) return kExitOk;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "rooftop-engine %s: %s\n", role, e.what());
    return kExitUsage;
  }
  // Under mpiexec/srun one command line starts many processes: each takes
  // its rank from the launcher (plus --rank as an offset), and "{rank}" in
  // --output becomes that rank.
  try {
    if (o.has("rank-from-env") && o.flag("rank-from-env")) {
      const char* vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"};
      const char* found = nullptr;
      for (const char* v : vars)
        if (const char* e = std::getenv(v)) {
          found = e;
          break;
        }
      if (!found)
        throw UsageError("--rank-from-env: none of OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK, "
                         "SLURM_PROCID is set (not started by mpiexec or srun?)");
      o.set("rank", std::to_string(o.integer("rank") + std::atoll(found)));
    }
    if (o.has("rank")) {
      std::string out = o.str("output");
      for (size_t p; (p = out.find("{rank}")) != std::string::npos;)
        out.replace(p, 6, o.str("rank"));
      if (out != o.str("output")) o.set("output", out);
    }
  } catch (const UsageError& e) {
    std::fprintf(stderr, "rooftop-engine %s: %s\n", role, e.what());
    return kExitUsage;
  }
  Report rep;
  rep.role = role;
  rep.options = &o;
  rep.cpuset = affinity_cpus();
  rep.binding = "inherited";
  install_signal_handlers();
  int rc;
  try {
    if (!o.str("cpus").empty()) {
      std::vector<int> cpus;
      try {
        cpus = parse_cpu_list(o.str("cpus"));
      } catch (const std::invalid_argument& e) {
        throw UsageError(std::string("--cpus: ") + e.what());
      }
      std::string err = set_affinity(cpus);
      if (!err.empty()) throw UsageError("--cpus: " + err);
      rep.binding = "--cpus " + cpu_list_string(cpus);
      rep.cpuset = affinity_cpus();
    }
    rep.cores.sample();
    rc = body(rep);
  } catch (const UsageError& e) {
    rep.errors.push_back(e.what());
    rc = kExitUsage;
  } catch (const EngineError& e) {
    rep.errors.push_back(e.what());
    rc = e.code;
  } catch (const std::exception& e) {
    rep.errors.push_back(std::string("internal error: ") + e.what());
    rc = kExitFailure;
  }
  for (auto& e : rep.errors) std::fprintf(stderr, "rooftop-engine %s: %s\n", role, e.c_str());
  rep.cores.sample();
  if (!rep.emit(o.str("output")) && rc == kExitOk) rc = kExitFailure;
  return rc;
}

}  // namespace rooftop
