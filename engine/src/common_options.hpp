// Options common to the engine's commands, declared once: name, kind,
// default, choices and help. A command whose use of one differs (a server's
// --domain is where it serves, a client's is how it reaches the server)
// passes its own help; everything else is shared. run_command() acts on
// some of them by these names (--rank-from-env, --rank, --output, --cpus).
#pragma once
#include <string>
#include <vector>

#include "options.hpp"

namespace rooftop::opt {

inline constexpr const char* kRank = "rank";
inline constexpr const char* kRankFromEnv = "rank-from-env";
inline constexpr const char* kOutput = "output";
inline constexpr const char* kCpus = "cpus";

OptSpec fabric();
OptSpec domain(const std::string& help);
OptSpec address(const std::string& help);
OptSpec group_dir(const std::string& help);
OptSpec timeout();
// --progress with a command's default (servers: spindown, clients: busy).
OptSpec progress(const std::string& def, const std::string& help);
OptSpec rank(const std::string& help);
OptSpec rank_from_env();
// --cpus: "bind this process to these cpus" plus `more` (e.g. an example).
OptSpec cpus(const std::string& more = "");
OptSpec cpus_unused();  // commands with nothing to bind accept it for symmetry
OptSpec output();
// The NIC policy (serve and every client command): --nic-policy,
// --nic-counters (roundrobin's directory), --local-rank (rank's).
OptSpec nic_policy();
OptSpec nic_counters();
OptSpec local_rank();

// What every client command (load, ping, stat, shutdown) starts with:
// --fabric --domain --nic-policy --nic-counters --local-rank --group-dir
// --timeout --progress.
std::vector<OptSpec> client_common();

}  // namespace rooftop::opt
