// NIC policies (nic_policy.hpp) on synthetic hwloc topologies
// (tests/data/topologies, written by make_topologies.py): exact NIC
// assignments for every bucket x selection x binding, and seed 000
// Figure 2's two failure modes.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "nic_policy.hpp"

using namespace rooftop;
namespace fs = std::filesystem;

namespace {

const Topology& topology(const std::string& name) {
  static std::map<std::string, Topology> cache;
  auto it = cache.find(name);
  if (it == cache.end())
    it = cache.emplace(name, Topology::from_xml(std::string(ROOFTOP_TOPOLOGIES) + "/" + name + ".xml"))
             .first;
  return it->second;
}

// Aurora-like: cxi0-3 on package 0, cxi4-7 on package 1 (their PCI ids).
std::vector<NicCandidate> aurora_nics() {
  const char* bus[] = {"18", "29", "3a", "4b", "98", "a9", "ba", "cb"};
  std::vector<NicCandidate> r;
  for (int k = 0; k < 8; k++) r.push_back({"cxi" + std::to_string(k), std::string("0000:") + bus[k] + ":00.0"});
  return r;
}
// Frontier-like: NIC k in NUMA node k, behind GPUs 2k and 2k+1.
std::vector<NicCandidate> frontier_nics() {
  const char* bus[] = {"c1", "81", "41", "01"};
  std::vector<NicCandidate> r;
  for (int k = 0; k < 4; k++) r.push_back({"cxi" + std::to_string(k), std::string("0000:") + bus[k] + ":02.0"});
  return r;
}

struct TempDir {
  std::string path;
  TempDir() {
    char t[] = "/tmp/rooftop-nic-test-XXXXXX";
    path = mkdtemp(t);
  }
  ~TempDir() { fs::remove_all(path); }
};

// The NIC each of n processes gets, space-separated, counters fresh.
std::string assign(const std::string& topo, const std::vector<NicCandidate>& nics,
                   const std::string& policy, const std::string& binding, int n) {
  TempDir counters;
  std::string r;
  for (int k = 0; k < n; k++) {
    NicChoice c = choose_nic(topology(topo), nics, simulated_place(topology(topo), binding, k),
                             policy, counters.path + "/rr");
    r += (r.empty() ? "" : " ") + (c.chosen < 0 ? std::string("-") : nics[c.chosen].name);
  }
  return r;
}

std::map<std::string, int> load(const std::string& assignment) {
  std::map<std::string, int> m;
  size_t start = 0;
  while (start < assignment.size()) {
    size_t end = assignment.find(' ', start);
    if (end == std::string::npos) end = assignment.size();
    m[assignment.substr(start, end - start)]++;
    start = end + 1;
  }
  return m;
}

}  // namespace

TEST(Topologies, SyntheticNodesHaveTheirUsableCoresAndNicLocality) {
  EXPECT_EQ(topology("aurora").pus().size(), 102u);  // 2 x 52, cores 0 and 52 reserved
  EXPECT_EQ(topology("aurora").pus().front(), 1);
  EXPECT_EQ(topology("aurora").package_of(53), 1);
  EXPECT_EQ(topology("frontier").pus().size(), 56u);  // 64, the first core of each L3 reserved
  EXPECT_EQ(topology("frontier").numa_of(17), 1);
  EXPECT_EQ(topology("laptop").cores().size(), 4u);
  EXPECT_EQ(topology("laptop").cores()[1], (std::vector<int>{2, 3}));

  NicLocality cxi5 = topology("aurora").locate("0000:a9:00.0", "cxi5");
  EXPECT_TRUE(cxi5.known);
  EXPECT_EQ(cxi5.packages, std::vector<int>{1});
  EXPECT_EQ(cxi5.numa, std::vector<int>{1});
  NicLocality hsn2 = topology("frontier").locate("", "hsn2");  // by OS device name
  EXPECT_EQ(hsn2.pci, "0000:41:02.0");
  EXPECT_EQ(hsn2.numa, std::vector<int>{2});
  EXPECT_EQ(hsn2.packages, std::vector<int>{0});
  EXPECT_FALSE(topology("aurora").locate("", "veth0").known);
}

TEST(Topologies, SimulatedBindingsFollowTheUsableCores) {
  const Topology& a = topology("aurora");
  EXPECT_EQ(simulated_place(a, "core", 0).cpuset, std::vector<int>{1});
  EXPECT_EQ(simulated_place(a, "2cores", 1).cpuset, (std::vector<int>{3, 4}));
  ProcessPlace unbound = simulated_place(a, "none", 60);
  EXPECT_EQ(unbound.cpuset.size(), 102u);
  EXPECT_EQ(unbound.last_cpu, 62);  // the 61st usable core: package 1
  EXPECT_EQ(simulated_place(topology("laptop"), "core", 5).cpuset, (std::vector<int>{2, 3}));
  EXPECT_THROW(simulated_place(a, "socket", 0), std::invalid_argument);
}

// Aurora, 8 processes (all on package 0): every policy x binding.
TEST(AuroraPolicies, ExactAssignmentsForEveryPolicyAndBinding) {
  const std::string seq = "cxi0 cxi1 cxi2 cxi3 cxi4 cxi5 cxi6 cxi7";
  const std::string seq4 = "cxi0 cxi1 cxi2 cxi3 cxi0 cxi1 cxi2 cxi3";
  const std::string plus1 = "cxi1 cxi2 cxi3 cxi4 cxi5 cxi6 cxi7 cxi0";    // CPUs 1..8 mod 8
  const std::string plus1_4 = "cxi1 cxi2 cxi3 cxi0 cxi1 cxi2 cxi3 cxi0";  // CPUs 1..8 mod 4
  const std::string odd8 = "cxi1 cxi3 cxi5 cxi7 cxi1 cxi3 cxi5 cxi7";     // CPUs 1,3,..15 mod 8
  const std::string odd4 = "cxi1 cxi3 cxi1 cxi3 cxi1 cxi3 cxi1 cxi3";     // mod 4
  const std::string one = "cxi1 cxi1 cxi1 cxi1 cxi1 cxi1 cxi1 cxi1";
  struct Case {
    std::string policy, binding, want;
  };
  std::vector<Case> cases = {
      {"all:byset", "core", plus1},      {"all:byset", "2cores", odd8},      {"all:byset", "none", one},
      {"all:bycore", "core", plus1},     {"all:bycore", "2cores", odd8},     {"all:bycore", "none", plus1},
      {"all:roundrobin", "core", seq},   {"all:roundrobin", "2cores", seq},  {"all:roundrobin", "none", seq},
      {"all:rank", "core", seq},         {"all:rank", "2cores", seq},        {"all:rank", "none", seq},
  };
  for (const char* bucket : {"package", "numa"}) {  // one NUMA node per package here
    std::string b = bucket;
    std::vector<Case> more = {
        {"byset", "core", plus1_4},     {"byset", "2cores", odd4},     {"byset", "none", one},
        {"bycore", "core", plus1_4},    {"bycore", "2cores", odd4},    {"bycore", "none", plus1_4},
        {"roundrobin", "core", seq4},   {"roundrobin", "2cores", seq4}, {"roundrobin", "none", seq4},
        {"rank", "core", seq4},         {"rank", "2cores", seq4},      {"rank", "none", seq4},
    };
    for (auto& c : more) cases.push_back({b + ":" + c.policy, c.binding, c.want});
  }
  cases.push_back({"passthrough", "core", "- - - - - - - -"});
  for (auto& c : cases)
    EXPECT_EQ(assign("aurora", aurora_nics(), c.policy, c.binding, 8), c.want)
        << c.policy << " with binding " << c.binding;
}

// Seed 000, Figure 2: static byset with 2-core binding loads some NICs
// twice and leaves others idle; unbound processes all land on one NIC.
// The two-tier package:roundrobin spreads both evenly.
TEST(AuroraPolicies, Figure2FailureModesAndTheirFix) {
  auto twocores = load(assign("aurora", aurora_nics(), "package:byset", "2cores", 8));
  EXPECT_EQ(twocores, (std::map<std::string, int>{{"cxi1", 4}, {"cxi3", 4}}));  // cxi0, cxi2 idle
  auto unbound = load(assign("aurora", aurora_nics(), "all:byset", "none", 16));
  EXPECT_EQ(unbound, (std::map<std::string, int>{{"cxi1", 16}}));
  for (const char* binding : {"core", "2cores", "none"}) {
    auto rr = load(assign("aurora", aurora_nics(), "package:roundrobin", binding, 8));
    EXPECT_EQ(rr, (std::map<std::string, int>{{"cxi0", 2}, {"cxi1", 2}, {"cxi2", 2}, {"cxi3", 2}}))
        << binding;
  }
}

TEST(AuroraPolicies, AFullNodeUsesBothPackagesNics) {
  // 102 processes, one per usable core: 51 per package, each package's
  // counter spreading them over its own 4 NICs.
  auto full = load(assign("aurora", aurora_nics(), "package:roundrobin", "core", 102));
  EXPECT_EQ(full, (std::map<std::string, int>{{"cxi0", 13}, {"cxi1", 13}, {"cxi2", 13}, {"cxi3", 12},
                                              {"cxi4", 13}, {"cxi5", 13}, {"cxi6", 13}, {"cxi7", 12}}));
  // byset over the whole node with one core each: CPU os indexes 1..51,
  // 53..103 mod 8; cxi0 misses CPU 0 and cxi4 CPU 52 (reserved).
  auto byset = load(assign("aurora", aurora_nics(), "all:byset", "core", 102));
  EXPECT_EQ(byset, (std::map<std::string, int>{{"cxi0", 12}, {"cxi1", 13}, {"cxi2", 13}, {"cxi3", 13},
                                               {"cxi4", 12}, {"cxi5", 13}, {"cxi6", 13}, {"cxi7", 13}}));
}

// Frontier: one package (its bucket is every NIC), one NIC per NUMA node.
TEST(FrontierPolicies, ExactAssignments) {
  auto nics = frontier_nics();
  // Usable CPUs 1-7, 9-15, ...: 8 processes are all in NUMA node 0.
  EXPECT_EQ(assign("frontier", nics, "numa:roundrobin", "core", 8), "cxi0 cxi0 cxi0 cxi0 cxi0 cxi0 cxi0 cxi0");
  EXPECT_EQ(assign("frontier", nics, "package:roundrobin", "core", 8), "cxi0 cxi1 cxi2 cxi3 cxi0 cxi1 cxi2 cxi3");
  EXPECT_EQ(assign("frontier", nics, "all:roundrobin", "core", 8), "cxi0 cxi1 cxi2 cxi3 cxi0 cxi1 cxi2 cxi3");
  // 2 cores each: first CPUs 1,3,5,7,10,12,14,17 mod 4.
  EXPECT_EQ(assign("frontier", nics, "package:byset", "2cores", 8), "cxi1 cxi3 cxi1 cxi3 cxi2 cxi0 cxi2 cxi1");
  EXPECT_EQ(assign("frontier", nics, "package:bycore", "none", 8), "cxi1 cxi2 cxi3 cxi0 cxi1 cxi2 cxi3 cxi1");
  EXPECT_EQ(assign("frontier", nics, "package:byset", "none", 4), "cxi1 cxi1 cxi1 cxi1");
  EXPECT_EQ(assign("frontier", nics, "numa:rank", "none", 4), "cxi0 cxi0 cxi0 cxi0");
  // A full node, one process per usable core: 14 per NUMA node, each on its NIC.
  auto full = load(assign("frontier", nics, "numa:byset", "core", 56));
  EXPECT_EQ(full, (std::map<std::string, int>{{"cxi0", 14}, {"cxi1", 14}, {"cxi2", 14}, {"cxi3", 14}}));
}

TEST(LaptopPolicies, OneNicIsEveryPolicysChoice) {
  std::vector<NicCandidate> nics = {{"wlp0s20f3", "0000:00:14.3"}};
  for (auto& policy : nic_policy_names()) {
    for (const char* binding : {"core", "2cores", "none"}) {
      std::string want = policy == "passthrough" ? "- - -" : "wlp0s20f3 wlp0s20f3 wlp0s20f3";
      EXPECT_EQ(assign("laptop", nics, policy, binding, 3), want) << policy << " " << binding;
    }
  }
  TempDir d;
  NicChoice c = choose_nic(topology("laptop"), nics, simulated_place(topology("laptop"), "core", 0),
                           "package:roundrobin", d.path);
  EXPECT_EQ(c.why, "the only NIC of bucket package 0: wlp0s20f3");
  EXPECT_EQ(c.localities[0].numa, std::vector<int>{0});
}

TEST(Buckets, AnEmptyBucketFallsBackToAllAndSaysSo) {
  auto nics = aurora_nics();
  nics.erase(nics.begin(), nics.begin() + 4);  // package 1's NICs only
  TempDir d;
  NicChoice c = choose_nic(topology("aurora"), nics, simulated_place(topology("aurora"), "core", 0),
                           "package:rank", d.path);
  EXPECT_TRUE(c.fell_back);
  EXPECT_EQ(c.bucket, "all (package 0 has no NIC)");
  EXPECT_EQ(nics[c.chosen].name, "cxi4");
}

TEST(Buckets, NicsWithoutLocalityAreInEveryBucket) {
  std::vector<NicCandidate> nics = {{"veth0", ""}, {"cxi5", "0000:a9:00.0"}, {"veth1", ""}};
  TempDir d;
  NicChoice c = choose_nic(topology("aurora"), nics, simulated_place(topology("aurora"), "core", 0),
                           "package:rank", d.path);
  EXPECT_EQ(c.bucket, "package 0");
  EXPECT_EQ(c.bucket_nics, (std::vector<int>{0, 2}));  // cxi5 is on package 1
  EXPECT_FALSE(c.localities[0].known);
}

TEST(Buckets, NicsAllWithoutLocalityFallBackToAllAndSaySo) {
  // Veths of an emulated node: no PCI device, so no package or NUMA node.
  std::vector<NicCandidate> nics = {{"veth0", ""}, {"veth1", ""}, {"veth2", ""}};
  TempDir d;
  for (const char* policy : {"package:rank", "numa:rank"}) {
    NicChoice c = choose_nic(topology("aurora"), nics, simulated_place(topology("aurora"), "core", 1),
                             policy, d.path);
    EXPECT_TRUE(c.fell_back) << policy;
    EXPECT_NE(c.bucket.find("no NIC has a known locality"), std::string::npos) << c.bucket;
    EXPECT_EQ(c.bucket_nics, (std::vector<int>{0, 1, 2}));
    EXPECT_EQ(c.chosen, 1);
  }
  NicChoice a = choose_nic(topology("aurora"), nics, simulated_place(topology("aurora"), "core", 2),
                           "all:rank", d.path);
  EXPECT_FALSE(a.fell_back);
  EXPECT_EQ(a.bucket, "all");
  EXPECT_EQ(a.chosen, 2);
}

TEST(Selections, RandomIsSeededAndStaysInItsBucket) {
  auto nics = aurora_nics();
  std::set<std::string> seen;
  ProcessPlace p = simulated_place(topology("aurora"), "core", 60);  // package 1
  for (uint64_t seed = 1; seed <= 200; seed++) {
    p.seed = seed;
    NicChoice a = choose_nic(topology("aurora"), nics, p, "package:random", "");
    NicChoice b = choose_nic(topology("aurora"), nics, p, "package:random", "");
    EXPECT_EQ(a.chosen, b.chosen);
    seen.insert(nics[a.chosen].name);
  }
  EXPECT_EQ(seen, (std::set<std::string>{"cxi4", "cxi5", "cxi6", "cxi7"}));
}

TEST(Selections, RankNeedsANodeLocalRank) {
  ProcessPlace p = simulated_place(topology("aurora"), "core", 0);
  p.local_rank = -1;
  try {
    choose_nic(topology("aurora"), aurora_nics(), p, "all:rank", "");
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("nic policy all:rank: rank: no node-local rank"), std::string::npos)
        << e.what();
  }
}

TEST(RoundRobin, CountersArePrivatePerDirectoryAndReproducible) {
  TempDir d;
  std::string dir = d.path + "/campaign/nic-counters";
  auto first = assign("aurora", aurora_nics(), "all:roundrobin", "core", 3);
  ProcessPlace p = simulated_place(topology("aurora"), "core", 0);
  for (int i = 0; i < 3; i++) choose_nic(topology("aurora"), aurora_nics(), p, "all:roundrobin", dir);
  struct stat st {};
  ASSERT_EQ(stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_TRUE(fs::exists(dir + "/all"));
  // Another directory (the next campaign) starts from cxi0 again.
  EXPECT_EQ(first, "cxi0 cxi1 cxi2");
  NicChoice c = choose_nic(topology("aurora"), aurora_nics(), p, "all:roundrobin", dir);
  EXPECT_EQ(c.why, "roundrobin: counter of bucket all in " + dir + " was 3 mod 8 NICs = 3: cxi3");
  // A directory others may write to is refused, not used.
  std::string open_dir = d.path + "/open";
  fs::create_directory(open_dir);
  chmod(open_dir.c_str(), 0777);
  EXPECT_THROW(choose_nic(topology("aurora"), aurora_nics(), p, "all:roundrobin", open_dir),
               std::runtime_error);
  EXPECT_THROW(choose_nic(topology("aurora"), aurora_nics(), p, "all:roundrobin", ""),
               std::invalid_argument);
}

TEST(PolicyNames, AreCheckedAgainstTheTable) {
  EXPECT_EQ(check_nic_policy("package:roundrobin"), "");
  EXPECT_EQ(check_nic_policy("passthrough"), "");
  EXPECT_EQ(check_nic_policy("socket:byset"),
            "nic policy 'socket:byset': use passthrough or BUCKET:SELECTION; buckets: all, package, "
            "numa; selections: byset, bycore, random, roundrobin, rank");
  EXPECT_EQ(check_nic_policy("all:first"),
            "nic policy 'all:first': unknown selection 'first'; selections: byset, bycore, random, "
            "roundrobin, rank");
  EXPECT_NE(check_nic_policy("package"), "");
  EXPECT_EQ(nic_policy_names().size(), 16u);
  EXPECT_NE(describe_nic_policies().find("roundrobin"), std::string::npos);
}

TEST(ChoiceDocument, NamesPolicyCandidatesBucketAndChosenNic) {
  TempDir d;
  NicChoice c = choose_nic(topology("aurora"), aurora_nics(), simulated_place(topology("aurora"), "core", 60),
                           "package:roundrobin", d.path);
  JsonWriter w;
  c.write_json(w);
  const std::string j = w.str();
  EXPECT_NE(j.find("\"policy\":\"package:roundrobin\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"bucket\":\"package 1\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"bucket_nics\":[\"cxi4\",\"cxi5\",\"cxi6\",\"cxi7\"]"), std::string::npos) << j;
  EXPECT_NE(j.find("\"chosen\":{\"name\":\"cxi4\",\"pci\":\"0000:98:00.0\",\"located\":true,"
                   "\"packages\":[1],\"numa\":[1]}"),
            std::string::npos)
      << j;
}

TEST(InterfacePci, LoopbackHasNoPciDevice) {
  EXPECT_EQ(interface_pci("lo"), "");
  EXPECT_EQ(interface_pci("../../etc"), "");
  EXPECT_EQ(interface_pci(""), "");
}
