#include "commands.hpp"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>

#include "common_options.hpp"
#include "fabric.hpp"
#include "nic_policy.hpp"

namespace rooftop {

void check_nic_options(const Options& o) {
  if (o.has("nic-policy")) {
    std::string err = check_nic_policy(o.str("nic-policy"));
    if (!err.empty()) throw UsageError("--nic-policy: " + err);
  }
  if (!o.has("domain") || !o.has("fabric")) return;
  std::string address = o.has("address") ? o.str("address") : "";
  check_nic(parse_fabric_spec(o.str("fabric")), o.str("domain"), address);
}

void set_nic_options(const Options& o, EndpointOptions& eo) {
  eo.nic_policy = o.str("nic-policy");
  eo.nic_counters = o.str("nic-counters");
  eo.local_rank = static_cast<int>(o.integer("local-rank"));
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
    if (o.has(opt::kRankFromEnv) && o.flag(opt::kRankFromEnv)) {
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
      o.set(opt::kRank, std::to_string(o.integer(opt::kRank) + std::atoll(found)));
    }
    if (o.has(opt::kRank)) {
      std::string out = o.str(opt::kOutput);
      for (size_t p; (p = out.find("{rank}")) != std::string::npos;)
        out.replace(p, 6, o.str(opt::kRank));
      if (out != o.str(opt::kOutput)) o.set(opt::kOutput, out);
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
    if (!o.str(opt::kCpus).empty()) {
      std::vector<int> cpus;
      try {
        cpus = parse_cpu_list(o.str(opt::kCpus));
      } catch (const std::invalid_argument& e) {
        throw UsageError(std::string("--cpus: ") + e.what());
      }
      std::string err = set_affinity(cpus);
      if (!err.empty()) throw UsageError("--cpus: " + err);
      rep.binding = "--cpus " + cpu_list_string(cpus);
      rep.cpuset = affinity_cpus();
    }
    rep.cores.sample();
    check_nic_options(o);
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
  if (!rep.emit(o.str(opt::kOutput)) && rc == kExitOk) rc = kExitFailure;
  return rc;
}

}  // namespace rooftop
