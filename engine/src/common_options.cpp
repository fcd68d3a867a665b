#include "common_options.hpp"

namespace rooftop::opt {

OptSpec fabric() {
  return {"fabric", OptKind::Str, "ofi+tcp", "libfabric provider: ofi+tcp, ofi+shm, ofi+sockets, ofi+verbs, ofi+cxi", ""};
}

OptSpec domain(const std::string& help) { return {"domain", OptKind::Str, "", help, ""}; }

OptSpec address(const std::string& help) { return {"address", OptKind::Str, "", help, ""}; }

OptSpec group_dir(const std::string& help) { return {"group-dir", OptKind::Str, "", help, ""}; }

OptSpec timeout() {
  return {"timeout", OptKind::Seconds, "10", "give up on a missing address file or a silent server after this long", ""};
}

OptSpec progress(const std::string& def, const std::string& help) {
  return {"progress", OptKind::Choice, def, help, "busy|block|adaptive|spindown*"};
}

OptSpec rank(const std::string& help) { return {kRank, OptKind::Int, "0", help, ""}; }

OptSpec rank_from_env() {
  return {kRankFromEnv, OptKind::Bool, "false", "add the launcher's rank (OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK or SLURM_PROCID) to --rank; {rank} in --output becomes the rank", ""};
}

OptSpec cpus(const std::string& more) {
  return {kCpus, OptKind::Str, "", "bind this process to these cpus" + more, ""};
}

OptSpec cpus_unused() { return {kCpus, OptKind::Str, "", "unused; accepted for symmetry", ""}; }

OptSpec output() { return {kOutput, OptKind::Str, "-", "write the JSON document here instead of stdout", ""}; }

OptSpec nic_policy() {
  return {"nic-policy", OptKind::Str, "passthrough", "how a NIC is chosen without --domain: passthrough (the provider's first domain; IP providers: the address's or route's interface), or BUCKET:SELECTION with buckets all, package, numa and selections byset, bycore, random, roundrobin, rank ('rooftop-engine nics --help')", ""};
}

OptSpec nic_counters() {
  return {"nic-counters", OptKind::Str, "", "directory of the roundrobin counters, one file per bucket (created 0700, flock'ed); a fresh one per campaign makes the assignment reproducible", ""};
}

OptSpec local_rank() {
  return {"local-rank", OptKind::Int, "-1", "node-local rank for the rank selection; -1: the launcher's (MPI_LOCALRANKID, OMPI_COMM_WORLD_LOCAL_RANK, PALS_LOCAL_RANKID, SLURM_LOCALID)", ""};
}

std::vector<OptSpec> client_common() {
  return {
      fabric(),
      domain("libfabric domain / network interface; refused (exit 2, with the list) if it does not exist or does not carry --fabric; default: the interface that routes to the server"),
      nic_policy(),
      nic_counters(),
      local_rank(),
      group_dir("directory holding the servers' <rank>.addr files (required)"),
      timeout(),
      progress("busy", "completion progress: busy, block, adaptive, spindown[:MS]"),
  };
}

}  // namespace rooftop::opt
