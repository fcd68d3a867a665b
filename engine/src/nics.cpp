// rooftop-engine nics: the NICs of this node (or of an hwloc XML
// topology) with their locality, and the NIC each of N processes would get
// under each policy and binding, without opening an endpoint. `rooftop
// nics` prints this document; the choice is the engine's own choose_nic.
#include <stdlib.h>

#include <filesystem>
#include <map>

#include "commands.hpp"
#include "common_options.hpp"
#include "fabric.hpp"
#include "nic.hpp"
#include "nic_policy.hpp"

namespace rooftop {

namespace {

std::vector<std::string> list_or_all(const std::string& given, std::vector<std::string> all) {
  if (given.empty() || given == "all") return all;
  return split_commas(given);
}

void write_ints(JsonWriter& w, const std::vector<int>& v) {
  w.begin_array();
  for (int x : v) w.value(static_cast<int64_t>(x));
  w.end_array();
}

// Processes 0..n-1 of one node under one policy and binding, counters fresh.
void simulate(JsonWriter& w, const Topology& topo, const std::vector<NicCandidate>& nics,
              const std::string& policy, const std::string& binding, int n) {
  char tmpl[] = "/tmp/rooftop-nics-XXXXXX";
  if (!mkdtemp(tmpl)) throw EngineError(kExitFailure, "cannot create a temporary directory");
  const std::string counters = std::string(tmpl) + "/counters";
  std::map<std::string, int> load;
  w.begin_object().kv("policy", policy).kv("binding", binding);
  w.key("processes").begin_array();
  try {
    for (int k = 0; k < n; k++) {
      ProcessPlace p = simulated_place(topo, binding, k);
      NicChoice c = choose_nic(topo, nics, p, policy, counters);
      std::string nic = c.chosen >= 0 ? nics[c.chosen].name : "";
      if (!nic.empty()) load[nic]++;
      w.begin_object().kv("rank", k).key("cpuset");
      write_ints(w, p.cpuset);
      w.kv("last_cpu", p.last_cpu);
      if (c.passthrough) w.key("bucket").null();
      else w.kv("bucket", c.bucket);
      w.kv("fell_back", c.fell_back);
      if (nic.empty()) w.key("nic").null();
      else w.kv("nic", nic);
      w.kv("why", c.why).end_object();
    }
  } catch (...) {
    std::filesystem::remove_all(tmpl);
    throw;
  }
  std::filesystem::remove_all(tmpl);
  w.end_array().key("load").begin_object();
  for (auto& [nic, count] : load) w.kv(nic, count);
  w.end_object().end_object();
}

void write_nics(JsonWriter& w, const Topology& topo, const std::vector<NicCandidate>& nics) {
  w.key("nics").begin_array();
  for (auto& n : nics) {
    NicLocality l = topo.locate(n.pci, n.name);
    w.begin_object().kv("name", n.name);
    if (l.pci.empty() && n.pci.empty()) w.key("pci").null();
    else w.kv("pci", l.pci.empty() ? n.pci : l.pci);
    w.kv("located", l.known).key("packages");
    write_ints(w, l.packages);
    w.key("numa");
    write_ints(w, l.numa);
    w.end_object();
  }
  w.end_array();
}

}  // namespace

int cmd_nics(int argc, char** argv) {
  Options o("nics",
            "The NICs --fabric can use on this node (or those of an hwloc XML\n"
            "topology, --topology) with their locality, and the NIC each of\n"
            "--processes processes would get under each policy and binding.\n"
            "Nothing is opened or measured. Policies (--nic-policy of serve/load):\n" +
                describe_nic_policies() +
                "A policy is passthrough or BUCKET:SELECTION, e.g. package:roundrobin.\n"
                "Bindings as rooftop's launchers place processes on the usable cores in\n"
                "order: core, 2cores, none (unbound; assumed to run on the k-th core).",
            {{opt::fabric().name, OptKind::Str, opt::fabric().def, "libfabric provider whose NICs are candidates (with --topology: the topology's network interfaces for IP providers, its OpenFabrics devices otherwise)", ""},
             {"topology", OptKind::Str, "", "an hwloc XML file (lstopo --of xml) instead of this machine", ""},
             {"policy", OptKind::Str, "all", "policies to show, comma-separated, or all", ""},
             {"binding", OptKind::Str, "all", "bindings to show: core, 2cores, none, comma-separated, or all", ""},
             {"processes", OptKind::Int, "0", "processes on the node; 0: one per usable core", ""},
             opt::cpus_unused(), opt::output()});
  return run_command(o, "nics", argc, argv, [&](Report& rep) {
    FabricSpec f = parse_fabric_spec(o.str("fabric"));
    const bool ip = sockaddr_provider(f.provider);
    const std::string xml = o.str("topology");
    Topology topo = Topology::none("");
    try {
      topo = xml.empty() ? Topology::this_machine() : Topology::from_xml(xml);
    } catch (const std::runtime_error& e) {
      throw UsageError(std::string("--topology: ") + e.what());
    }
    auto nics = xml.empty() ? provider_nics(f) : topo.nics(ip);
    auto policies = list_or_all(o.str("policy"), nic_policy_names());
    auto bindings = list_or_all(o.str("binding"), {"core", "2cores", "none"});
    for (auto& p : policies)
      if (std::string err = check_nic_policy(p); !err.empty()) throw UsageError("--policy: " + err);
    for (auto& b : bindings)
      if (b != "core" && b != "2cores" && b != "none")
        throw UsageError("--binding " + b + ": must be core, 2cores, none or all");
    int n = static_cast<int>(o.integer("processes"));
    if (n < 0 || n > 100000) throw UsageError("--processes must be 0..100000");
    if (n == 0) n = static_cast<int>(topo.cores().size());
    JsonWriter w;
    w.begin_object().kv("topology", topo.source()).kv("provider", f.provider).kv("ip_provider", ip);
    w.key("pus");
    write_ints(w, topo.pus());
    w.kv("cores", static_cast<int64_t>(topo.cores().size())).kv("processes", n);
    write_nics(w, topo, nics);
    w.key("assignments").begin_array();
    for (auto& p : policies)
      for (auto& b : bindings) simulate(w, topo, nics, p, b, n);
    w.end_array().end_object();
    rep.result_json = w.str();
    rep.complete = true;
    return kExitOk;
  });
}

}  // namespace rooftop
