// NIC selection policies (seed 000, section 4.1.1; mochi-plumber's
// two-tier policy): a bucket narrows the candidate NICs to those near the
// process (all, package, numa), then a selection picks one of the bucket
// (byset, bycore, random, roundrobin, rank). Every policy is a row of one
// table (name, help, function); "passthrough" chooses nothing and leaves
// the choice to the caller (the provider, or the interface routing to the
// server: rooftop's behaviour without a policy).
//
// choose_nic is a function of (topology, candidates, the process's place,
// policy, counter directory) only, so it is unit-tested with hwloc XML
// topologies and made-up NICs. Locality comes from hwloc: a NIC's PCI
// device (or OS device name) -> its nearest non-I/O ancestor -> the
// packages whose cores and the NUMA nodes whose memory it is attached to.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "json.hpp"

namespace rooftop {

// Where a NIC is attached; known = hwloc found its PCI / OS device.
struct NicLocality {
  bool known = false;
  std::string pci;            // bus id as hwloc has it, "" if none
  std::vector<int> packages;  // os indexes of the packages it is local to
  std::vector<int> numa;      // os indexes of its NUMA nodes
};

// A NIC the process may use: a provider domain or a network interface,
// with its PCI bus id when it has one (veth, lo: none; they have no
// locality and belong to every bucket).
struct NicCandidate {
  std::string name;
  std::string pci;
};

// hwloc topology with I/O devices: this machine's, or an XML file's
// (lstopo --of xml). Move-only.
class Topology {
 public:
  static Topology this_machine();                      // throws std::runtime_error
  static Topology from_xml(const std::string& path);   // throws std::runtime_error
  // No topology (hwloc could not load one, or none is needed): every NIC
  // has unknown locality, so every bucket holds every NIC; why says so.
  static Topology none(const std::string& why);
  Topology(Topology&&) noexcept;
  Topology& operator=(Topology&&) noexcept;
  ~Topology();

  const std::string& source() const { return source_; }
  std::vector<int> pus() const;                 // usable PUs (os indexes), ascending
  std::vector<std::vector<int>> cores() const;  // usable cores, each its PUs
  int package_of(int pu) const;                 // os index, -1 if none
  int numa_of(int pu) const;                    // first NUMA node's os index, -1 if none
  // The NIC with this PCI bus id ("0000:18:00.0") or, failing that, the OS
  // device of this name (hsn0, cxi0, eth0).
  NicLocality locate(const std::string& pci, const std::string& name) const;
  // The NICs the topology shows: PCI devices with a network OS device
  // (ip = true: interfaces such as hsn0) or an OpenFabrics one (cxi0, mlx5_0).
  std::vector<NicCandidate> nics(bool ip) const;
  struct Impl;  // the hwloc handle

 private:
  explicit Topology(std::unique_ptr<Impl> impl, std::string source);
  std::unique_ptr<Impl> impl_;
  std::string source_;
};

// The process being placed.
struct ProcessPlace {
  std::vector<int> cpuset;  // the CPUs it is bound to (all of them when unbound)
  int last_cpu = -1;        // the CPU it last ran on (-1: the cpuset's first)
  int local_rank = -1;      // node-local rank from the launcher, -1 unknown
  uint64_t seed = 0;        // random: the engine passes its pid
};

struct NicChoice {
  std::string policy;                   // as given, e.g. "package:roundrobin"
  std::string topology;                 // where locality came from
  bool passthrough = false;             // no choice made
  std::vector<NicCandidate> candidates;
  std::vector<NicLocality> localities;  // per candidate
  std::string bucket;                   // "package 1", "numa 0", "all"
  std::vector<int> bucket_nics;         // candidate indexes
  bool fell_back = false;               // the bucket was empty: all
  int chosen = -1;                      // candidate index, -1 with passthrough
  std::string why;                      // how the selection got there
  void write_json(JsonWriter& w) const; // the document's "nic_policy" object
};

// "" if policy is "passthrough" or "BUCKET:SELECTION" with both in the
// table; else an error naming the value and listing what exists.
std::string check_nic_policy(const std::string& policy);
// Every bucket and selection with its help, for --help and `nics`.
std::string describe_nic_policies();
std::vector<std::string> nic_policy_names();  // passthrough and every BUCKET:SELECTION

// Applies policy (checked first: std::invalid_argument with
// check_nic_policy's message). roundrobin keeps one counter per bucket in
// counter_dir (created 0700, files flock'ed); "" there is an error for
// roundrobin only. No candidates: nothing chosen, why says so.
NicChoice choose_nic(const Topology& topo, const std::vector<NicCandidate>& candidates,
                     const ProcessPlace& place, const std::string& policy,
                     const std::string& counter_dir);

// Where the k-th process of a node would run under a binding, as the
// campaign's launchers place them on the usable cores in order: "core"
// (its own core), "2cores" (two cores), "none" (bound to every usable PU;
// assumed to last run on the k-th core, as a busy node spreads them).
// local_rank is k, seed k + 1. std::invalid_argument for another binding.
ProcessPlace simulated_place(const Topology& topo, const std::string& binding, int k);

// The node-local rank the launcher set (MPI_LOCALRANKID, ...), -1 if none.
int launcher_local_rank();
// The PCI bus id of a network interface (/sys/class/net/IF/device), "" if none.
std::string interface_pci(const std::string& ifname);
// The same for a sysfs device link (/sys/class/infiniband/mlx5_0/device), "" if none.
std::string device_pci(const std::string& link);

}  // namespace rooftop
