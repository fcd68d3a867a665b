// Subcommands of rooftop-engine and the wrapper that turns their outcome
// into an exit code and one JSON document.
#pragma once
#include <functional>

#include "options.hpp"
#include "report.hpp"

namespace rooftop {

int cmd_serve(int argc, char** argv);
int cmd_load(int argc, char** argv);
int cmd_ping(int argc, char** argv);
int cmd_stat(int argc, char** argv);
int cmd_shutdown(int argc, char** argv);
int cmd_providers(int argc, char** argv);
int cmd_domains(int argc, char** argv);
int cmd_storage(int argc, char** argv);  // storage_cmd.cpp: the local storage mode
int cmd_nics(int argc, char** argv);
int cmd_machine(int argc, char** argv);  // machine.cpp: what this node is, for the run's record
int cmd_agent(int argc, char** argv);  // agent.cpp: one process per node for a whole campaign
// main's argv, kept by agent.cpp: the area an agent's children write
// their own command lines over.
void remember_args(int argc, char** argv);

// rooftop-engine's command dispatch (main.cpp): argv[1] names the command.
// An agent's child calls it with the command it was asked to run.
int run_engine_command(int argc, char** argv);

// Parses options (exit 2 on bad usage, 0 after --help), applies --cpus,
// runs body, and emits the report whatever happened.
int run_command(Options& o, const char* role, int argc, char** argv,
                const std::function<int(Report&)>& body);

// --domain / --address (when the command has them) must name what exists
// here for --fabric: throws UsageError listing what does (exit 2).
void check_nic_options(const Options& o);

// The endpoint's NIC policy from --nic-policy, --nic-counters, --local-rank
// (opt::nic_policy, opt::nic_counters, opt::local_rank: serve and every client command).
struct EndpointOptions;
void set_nic_options(const Options& o, EndpointOptions& eo);

}  // namespace rooftop
