// rooftop-engine: the benchmark server and client of rooftop.
#include <cstdio>
#include <cstring>
#include <string>

#include "commands.hpp"
#include "fabric.hpp"
#include "report.hpp"

namespace {
const char* kUsage =
    "usage: rooftop-engine COMMAND [options]\n"
    "\n"
    "rooftop's native benchmark engine over libfabric: noop RPCs, bulk RMA\n"
    "transfers and storage operations (put/get, metadata) between server and\n"
    "client processes, each printing one JSON\n"
    "document (schema: engine/schema/engine-output.schema.json).\n"
    "\n"
    "commands:\n"
    "  serve       run a server process (publishes <group-dir>/<rank>.addr)\n"
    "  load        run a client workload against the servers of a group\n"
    "  ping        check that a server answers\n"
    "  stat        read a server's counters (ops served, CPU time)\n"
    "  shutdown    stop a server (needs its token)\n"
    "  storage     the local storage mode: put/get/metadata on a directory, no network\n"
    "  providers   list the libfabric providers available here\n"
    "  domains     list a provider's domains and interfaces here (and check one)\n"
    "  nics        the NICs here (or in an hwloc XML topology) with their locality,\n"
    "              and the NIC each process would get under each NIC policy\n"
    "  machine     what this node is: CPU, memory, NUMA, kernel, libfabric and\n"
    "              provider versions, and the NICs the provider can use here\n"
    "  agent       serve one node for a whole campaign: start the engine commands\n"
    "              it asks for by forking (binary and libfabric load once)\n"
    "  version     print the engine and libfabric versions\n"
    "\n"
    "'rooftop-engine COMMAND --help' describes each command's options.\n"
    "Exit codes: 0 ok, 1 failure, 2 bad usage, unknown provider, or a --domain\n"
    "or --address that does not exist here (the message lists those that do),\n"
    "3 server missing or unreachable, 128+N interrupted by signal N.\n"
    "\n"
    "example (two shells):\n"
    "  rooftop-engine serve --fabric ofi+tcp --group-dir /tmp/g --rank 0\n"
    "  rooftop-engine load  --fabric ofi+tcp --group-dir /tmp/g --op read --size 4MiB\n";
}

namespace rooftop {

int run_engine_command(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help") ||
      !std::strcmp(argv[1], "help")) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? kExitUsage : 0;
  }
  std::string cmd = argv[1];
  int n = argc - 2;
  char** rest = argv + 2;
  if (cmd == "serve") return rooftop::cmd_serve(n, rest);
  if (cmd == "load") return rooftop::cmd_load(n, rest);
  if (cmd == "ping") return rooftop::cmd_ping(n, rest);
  if (cmd == "stat") return rooftop::cmd_stat(n, rest);
  if (cmd == "shutdown") return rooftop::cmd_shutdown(n, rest);
  if (cmd == "providers") return rooftop::cmd_providers(n, rest);
  if (cmd == "domains") return rooftop::cmd_domains(n, rest);
  if (cmd == "storage") return rooftop::cmd_storage(n, rest);
  if (cmd == "nics") return rooftop::cmd_nics(n, rest);
  if (cmd == "machine") return rooftop::cmd_machine(n, rest);
  if (cmd == "agent") return rooftop::cmd_agent(n, rest);
  if (cmd == "version" || cmd == "--version") {
    std::printf("rooftop-engine %s (libfabric %s)\n", rooftop::kEngineVersion,
                rooftop::Endpoint::libfabric_version().c_str());
    return 0;
  }
  std::fprintf(stderr, "rooftop-engine: unknown command '%s'\n\n%s", cmd.c_str(), kUsage);
  return kExitUsage;
}

}  // namespace rooftop

int main(int argc, char** argv) {
  rooftop::remember_args(argc, argv);  // an agent shows its children's command lines there
  return rooftop::run_engine_command(argc, argv);
}
