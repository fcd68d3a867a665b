#include "fabric.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <ifaddrs.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>
#include <thread>

#include "addrfile.hpp"
#include "nic.hpp"
#include "options.hpp"
#include "sysinfo.hpp"

namespace rooftop {

namespace {
constexpr uint32_t kApiVersion = FI_VERSION(1, 9);

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

void check(int rc, const std::string& what) {
  if (rc != 0) throw EngineError(kExitFailure, what + " failed: " + fi_error_text(rc));
}

}  // namespace

std::string fi_error_text(int err) {
  if (err < 0) err = -err;
  return std::string(fi_strerror(err)) + " (" + std::to_string(err) + ")";
}

FabricSpec parse_fabric_spec(const std::string& spec) {
  std::string s = lower(spec);
  if (s.rfind("ofi+", 0) == 0) s = s.substr(4);
  if (s.empty()) throw UsageError("--fabric '" + spec + "': no provider named (e.g. ofi+tcp)");
  // "tcp" matches "tcp;ofi_rxm" on libfabric 1.17 and native tcp RDM later;
  // an explicit "tcp;ofi_rxm" is passed through as given.
  FabricSpec f;
  f.spec = spec;
  f.provider = s;
  return f;
}

std::vector<std::string> available_providers() {
  fi_info* list = nullptr;
  std::set<std::string> names;
  if (fi_getinfo(kApiVersion, nullptr, nullptr, 0, nullptr, &list) == 0) {
    for (fi_info* i = list; i; i = i->next)
      if (i->fabric_attr && i->fabric_attr->prov_name) names.insert(i->fabric_attr->prov_name);
    fi_freeinfo(list);
  }
  return {names.begin(), names.end()};
}

std::string preinit_providers(const std::string& fabric_spec) {
  std::string prov = parse_fabric_spec(fabric_spec).provider;
  std::string first = prov.substr(0, prov.find(';'));
  if (first != "tcp" && first != "udp" && first != "sockets" && first != "shm")
    return "not for provider '" + prov +
           "': a device provider's initialisation may open device contexts a forked child must not use";
  fi_info* list = nullptr;
  int rc = fi_getinfo(kApiVersion, nullptr, nullptr, 0, nullptr, &list);
  if (list) fi_freeinfo(list);
  if (rc != 0 && rc != -FI_ENODATA) return "fi_getinfo: " + fi_error_text(rc);
  return "";
}

namespace {
// The hints every endpoint asks for: RDM, messages and RMA both ways.
fi_info* endpoint_hints(const std::string& prov, bool thread_safe) {
  fi_info* hints = fi_allocinfo();
  if (!hints) throw EngineError(kExitFailure, "fi_allocinfo failed");
  hints->caps = FI_MSG | FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  hints->ep_attr->type = FI_EP_RDM;
  hints->domain_attr->mr_mode =
      FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED | FI_MR_ENDPOINT;
  hints->domain_attr->threading = thread_safe ? FI_THREAD_SAFE : FI_THREAD_DOMAIN;
  hints->fabric_attr->prov_name = strdup(prov.c_str());
  return hints;
}

bool provider_known(const std::string& prov) {
  for (auto& p : available_providers())
    if (lower(p) == lower(prov) || lower(p).rfind(lower(prov) + ";", 0) == 0) return true;
  return false;
}

void require_known_provider(const FabricSpec& f) {
  if (provider_known(f.provider)) return;
  std::string list;
  for (auto& p : available_providers()) list += (list.empty() ? "" : ", ") + p;
  throw EngineError(kExitUsage, "unknown or unavailable provider '" + f.spec +
                                    "'; providers available here: " + list);
}
}  // namespace

std::vector<std::string> provider_domains(const std::string& prov) {
  fi_info* hints = endpoint_hints(prov, false);
  fi_info* list = nullptr;
  std::vector<std::string> names;
  if (fi_getinfo(kApiVersion, nullptr, nullptr, 0, hints, &list) == 0) {
    for (fi_info* i = list; i; i = i->next) {
      const char* n = i->domain_attr ? i->domain_attr->name : nullptr;
      if (n && std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
    }
    fi_freeinfo(list);
  }
  fi_freeinfo(hints);
  return names;
}

NicInventory nic_inventory(const FabricSpec& f) {
  NicInventory inv;
  inv.provider = f.provider;
  inv.ip_provider = sockaddr_provider(f.provider);
  inv.domains = provider_domains(f.provider);
  inv.interfaces = local_interfaces();
  if (lower(f.provider).find("verbs") != std::string::npos)
    inv.device_of = verbs_device_for_interface;
  return inv;
}

ProviderInfo provider_info(const FabricSpec& f) {
  ProviderInfo p;
  fi_info* hints = endpoint_hints(f.provider, false);
  fi_info* list = nullptr;
  int rc = fi_getinfo(kApiVersion, nullptr, nullptr, 0, hints, &list);
  fi_freeinfo(hints);
  if (rc != 0 || !list) {
    p.error = "fi_getinfo offers no RDM endpoint of provider '" + f.provider + "' here" +
              (rc != 0 ? ": " + fi_error_text(rc) : std::string());
    return p;
  }
  if (const fi_fabric_attr* fa = list->fabric_attr) {
    if (fa->prov_name) p.name = fa->prov_name;
    if (fa->name) p.fabric = fa->name;
    p.version = std::to_string(FI_MAJOR(fa->prov_version)) + "." + std::to_string(FI_MINOR(fa->prov_version));
  }
  for (fi_info* i = list; i; i = i->next) {
    const char* d = i->domain_attr ? i->domain_attr->name : nullptr;
    if (!d || std::any_of(p.nics.begin(), p.nics.end(), [&](auto& n) { return n.first == d; })) continue;
    ProviderNic n;
    if (i->nic && i->nic->device_attr) {
      if (i->nic->device_attr->driver) n.driver = i->nic->device_attr->driver;
      if (i->nic->device_attr->firmware) n.firmware = i->nic->device_attr->firmware;
    }
    if (i->nic && i->nic->link_attr) n.speed_bps = i->nic->link_attr->speed;
    p.nics.emplace_back(d, n);
  }
  fi_freeinfo(list);
  return p;
}

std::vector<NicCandidate> provider_nics(const FabricSpec& f) {
  std::vector<NicCandidate> r;
  if (sockaddr_provider(f.provider)) {
    NicInventory inv = nic_inventory(f);
    auto has = [&](const std::string& d) {
      return std::find(inv.domains.begin(), inv.domains.end(), d) != inv.domains.end();
    };
    for (auto& i : inv.interfaces)
      if (has(i.name) || (inv.device_of && has(inv.device_of(i.name))))
        r.push_back({i.name, interface_pci(i.name)});
    return r;
  }
  fi_info* hints = endpoint_hints(f.provider, false);
  fi_info* list = nullptr;
  if (fi_getinfo(kApiVersion, nullptr, nullptr, 0, hints, &list) == 0) {
    for (fi_info* i = list; i; i = i->next) {
      const char* n = i->domain_attr ? i->domain_attr->name : nullptr;
      if (!n || std::any_of(r.begin(), r.end(), [&](auto& c) { return c.name == n; })) continue;
      std::string pci;
      if (i->nic && i->nic->bus_attr && i->nic->bus_attr->bus_type == FI_BUS_PCI) {
        const fi_pci_attr& a = i->nic->bus_attr->attr.pci;
        char buf[32];
        std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", a.domain_id, a.bus_id, a.device_id,
                      a.function_id);
        pci = buf;
      }
      r.push_back({n, pci});
    }
    fi_freeinfo(list);
  }
  fi_freeinfo(hints);
  return r;
}

void check_nic(const FabricSpec& f, const std::string& domain, const std::string& address) {
  if (domain.empty() && address.empty()) return;
  require_known_provider(f);
  std::string err = check_nic_request(nic_inventory(f), domain, address);
  if (!err.empty()) throw UsageError(err);
}

bool sockaddr_provider(const std::string& prov) {
  std::string p = lower(prov);
  return p.find("tcp") != std::string::npos || p.find("sockets") != std::string::npos ||
         p.find("udp") != std::string::npos || p.find("verbs") != std::string::npos;
}

std::string ProgressSpec::text() const {
  switch (mode) {
    case ProgressMode::Busy: return "busy";
    case ProgressMode::Block: return "block";
    case ProgressMode::Adaptive: return "adaptive";
    case ProgressMode::Spindown: {
      std::string t = "spindown:" + std::to_string(spindown_ns / 1000000);
      int64_t us = (spindown_ns % 1000000) / 1000;  // the decimals of the milliseconds, trailing zeros cut
      if (us == 0) return t;
      std::string d = std::to_string(1000 + us).substr(1);
      while (d.back() == '0') d.pop_back();
      return t + "." + d;
    }
  }
  return "?";
}

// "MS" of spindown:MS: milliseconds >= 0, whole or with up to 3 decimals
// (0.1 = 100 us), at most 1000000 (1000 s); returns nanoseconds.
static int64_t parse_spindown_ms(const std::string& s, const std::string& ms) {
  const std::string why = "--progress '" + s + "': spindown time must be milliseconds >= 0 (e.g. 10 or 0.1)";
  size_t dot = ms.find('.');
  std::string whole = ms.substr(0, dot), frac = dot == std::string::npos ? "" : ms.substr(dot + 1);
  auto digits = [](const std::string& t) {
    return std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (whole.empty() || whole.size() > 7 || !digits(whole) || !digits(frac) || frac.size() > 3 ||
      (dot != std::string::npos && frac.empty()))
    throw UsageError(why);
  int64_t ns = std::stoll(whole) * 1000000LL;
  for (size_t i = 0; i < 3; ++i) ns += (i < frac.size() ? frac[i] - '0' : 0) * (i == 0 ? 100000 : i == 1 ? 10000 : 1000);
  if (ns > 1000000LL * 1000000LL) throw UsageError(why);
  return ns;
}

ProgressSpec parse_progress(const std::string& s) {
  ProgressSpec p;
  if (s == "busy") p.mode = ProgressMode::Busy;
  else if (s == "block") p.mode = ProgressMode::Block;
  else if (s == "adaptive") p.mode = ProgressMode::Adaptive;
  else if (s.rfind("spindown", 0) == 0) {
    p.mode = ProgressMode::Spindown;
    if (s.size() > 8) {
      if (s[8] != ':') throw UsageError("--progress '" + s + "': use spindown or spindown:MS");
      p.spindown_ns = parse_spindown_ms(s, s.substr(9));
    }
  } else {
    throw UsageError("--progress '" + s + "': must be busy, block, adaptive or spindown[:MS]");
  }
  return p;
}

std::string interface_with_address(const std::string& ip) {
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) != 0) return "";
  std::string found;
  for (ifaddrs* i = ifs; i; i = i->ifa_next) {
    if (!i->ifa_addr) continue;
    if (ip_text(i->ifa_addr) == ip) {
      found = i->ifa_name;
      break;
    }
  }
  freeifaddrs(ifs);
  return found;
}

std::string address_of_interface(const std::string& ifname) {
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) != 0) return "";
  std::string v4, v6;
  for (ifaddrs* i = ifs; i; i = i->ifa_next) {
    if (!i->ifa_addr || ifname != i->ifa_name) continue;
    if (i->ifa_addr->sa_family == AF_INET && v4.empty()) v4 = ip_text(i->ifa_addr);
    if (i->ifa_addr->sa_family == AF_INET6 && v6.empty()) {
      auto* s6 = reinterpret_cast<sockaddr_in6*>(i->ifa_addr);
      if (!IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr)) v6 = ip_text(i->ifa_addr);
    }
  }
  freeifaddrs(ifs);
  return v4.empty() ? v6 : v4;
}

std::string interface_towards(const std::string& ip, std::string* source_ip) {
  // A connected UDP socket sends nothing but makes the kernel pick the
  // route, whose source address names the interface traffic would use.
  sockaddr_storage ss{};
  socklen_t len;
  int fam;
  if (ip.find(':') != std::string::npos) {
    auto* s6 = reinterpret_cast<sockaddr_in6*>(&ss);
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(9);
    if (inet_pton(AF_INET6, ip.c_str(), &s6->sin6_addr) != 1) return "";
    len = sizeof *s6;
    fam = AF_INET6;
  } else {
    auto* s4 = reinterpret_cast<sockaddr_in*>(&ss);
    s4->sin_family = AF_INET;
    s4->sin_port = htons(9);
    if (inet_pton(AF_INET, ip.c_str(), &s4->sin_addr) != 1) return "";
    len = sizeof *s4;
    fam = AF_INET;
  }
  int fd = socket(fam, SOCK_DGRAM, 0);
  if (fd < 0) return "";
  std::string result;
  if (connect(fd, reinterpret_cast<sockaddr*>(&ss), len) == 0) {
    sockaddr_storage local{};
    socklen_t ll = sizeof local;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &ll) == 0) {
      std::string src = ip_text(reinterpret_cast<sockaddr*>(&local));
      result = interface_with_address(src);
      if (source_ip) *source_ip = src;
    }
  }
  close(fd);
  // The kernel routes to a local address through "lo" whatever interface
  // carries it; a local peer address is served by the interface holding it.
  if (result == "lo") {
    std::string holder = interface_with_address(ip);
    if (!holder.empty()) {
      result = holder;
      if (source_ip) *source_ip = ip;
    }
  }
  return result;
}

namespace {
struct RouteRequest {
  nlmsghdr n;
  rtmsg r;
  char attrs[64];
};

void add_addr(RouteRequest& req, unsigned short type, const in_addr& a) {
  auto* rta = reinterpret_cast<rtattr*>(reinterpret_cast<char*>(&req) + NLMSG_ALIGN(req.n.nlmsg_len));
  rta->rta_type = type;
  rta->rta_len = RTA_LENGTH(sizeof a);
  std::memcpy(RTA_DATA(rta), &a, sizeof a);
  req.n.nlmsg_len = NLMSG_ALIGN(req.n.nlmsg_len) + RTA_ALIGN(rta->rta_len);
}

// The output interface of the first RTM_NEWROUTE in a netlink answer.
std::string answer_oif(char* buf, int len) {
  for (auto* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
    if (h->nlmsg_type != RTM_NEWROUTE) continue;
    auto* r = static_cast<rtmsg*>(NLMSG_DATA(h));
    int alen = static_cast<int>(RTM_PAYLOAD(h));
    for (rtattr* a = RTM_RTA(r); RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
      if (a->rta_type != RTA_OIF) continue;
      int index = 0;
      std::memcpy(&index, RTA_DATA(a), sizeof index);
      char name[IF_NAMESIZE] = {};
      return if_indextoname(static_cast<unsigned>(index), name) ? name : "";
    }
  }
  return "";
}
}  // namespace

std::string route_interface(const std::string& ip, const std::string& src_ip) {
  in_addr dst{}, src{};
  if (inet_pton(AF_INET, ip.c_str(), &dst) != 1 || inet_pton(AF_INET, src_ip.c_str(), &src) != 1)
    return "";
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) return "";
  RouteRequest req{};
  req.n.nlmsg_len = NLMSG_LENGTH(sizeof(rtmsg));
  req.n.nlmsg_type = RTM_GETROUTE;
  req.n.nlmsg_flags = NLM_F_REQUEST;
  req.r.rtm_family = AF_INET;
  req.r.rtm_dst_len = 32;
  req.r.rtm_src_len = 32;
  add_addr(req, RTA_DST, dst);
  add_addr(req, RTA_SRC, src);
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  std::string result;
  if (sendto(fd, &req, req.n.nlmsg_len, 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) >= 0) {
    char buf[8192];
    ssize_t len = recv(fd, buf, sizeof buf, 0);
    if (len > 0) result = answer_oif(buf, static_cast<int>(len));
  }
  close(fd);
  return result;
}

std::string verbs_device_for_interface(const std::string& ifname) {
  std::string dir = "/sys/class/net/" + ifname + "/device/infiniband";
  DIR* d = opendir(dir.c_str());
  if (!d) return "";
  std::string dev;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') dev = e->d_name;
  closedir(d);
  return dev;
}

namespace {

// The NIC policy applied to this process: its binding, the CPU it runs
// on, its node-local rank, this machine's topology (loaded only when a
// candidate has a PCI device to locate, or there is a choice to make).
NicChoice run_policy(const EndpointOptions& o, const std::vector<NicCandidate>& cands) {
  ProcessPlace place;
  place.cpuset = affinity_cpus();
  place.last_cpu = sched_getcpu();
  place.local_rank = o.local_rank >= 0 ? o.local_rank : launcher_local_rank();
  place.seed = static_cast<uint64_t>(getpid());
  bool located = false;
  for (auto& c : cands) located = located || !c.pci.empty();
  Topology topo = Topology::none("none needed: no candidate has a PCI device");
  if (located || cands.size() > 1) {
    try {
      topo = Topology::this_machine();
    } catch (const std::runtime_error& e) {
      topo = Topology::none(std::string("none (") + e.what() + "): every NIC in every bucket");
    }
  }
  try {
    return choose_nic(topo, cands, place, o.nic_policy, o.nic_counters);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  } catch (const std::runtime_error& e) {
    throw EngineError(kExitFailure, e.what());
  }
}

std::string choice_json(const NicChoice& c) {
  JsonWriter w;
  c.write_json(w);
  return w.str();
}

// A client's NICs under a policy (IP providers): every interface of the
// provider whose own IPv4 address routes to the server through that same
// interface -- several on a multi-rail node, where each NIC's address has
// its route (a routing rule per NIC), one where only one interface leads
// there. False (nothing added) when fewer than two qualify, or the server
// is on this host: the interface routing to it is then the only choice.
bool client_nics(const EndpointOptions& o, std::vector<NicCandidate>& cands,
                 std::vector<std::string>& addrs) {
  if (!interface_with_address(o.peer_ip).empty()) return false;
  std::vector<NicCandidate> found;
  std::vector<std::string> found_addrs;
  for (auto& nic : provider_nics(o.fabric)) {
    std::string a = address_of_interface(nic.name);
    if (!a.empty() && route_interface(o.peer_ip, a) == nic.name) {
      found.push_back(nic);
      found_addrs.push_back(a);
    }
  }
  if (found.size() < 2) return false;
  cands.insert(cands.end(), found.begin(), found.end());
  addrs.insert(addrs.end(), found_addrs.begin(), found_addrs.end());
  return true;
}

// IP providers: the interfaces the addresses allow. A server serves on
// its --address (a comma list: one candidate per interface, the policy
// picks), else loopback; a client uses the interface routing to the
// server. addrs[i] is the address to bind on cands[i] ("" for a client).
void ip_candidates(const EndpointOptions& o, const std::string& domain,
                   std::vector<NicCandidate>& cands, std::vector<std::string>& addrs,
                   std::string& reason) {
  if (o.server && !o.bind_address.empty()) {
    auto list = split_commas(o.bind_address);
    if (!domain.empty()) {  // --domain decides: serve on its address
      std::string a = list[0];
      for (auto& x : list)
        if (interface_with_address(x) == domain) a = x;
      cands.push_back({domain, ""});
      addrs.push_back(a);
      return;
    }
    for (auto& a : list) {
      std::string ifn = interface_with_address(a);
      if (ifn.empty())
        throw EngineError(kExitUsage, "--address " + a + ": no local interface carries this address");
      cands.push_back({ifn, interface_pci(ifn)});
      addrs.push_back(a);
    }
    reason = "interface carrying --address " + addrs[0];
  } else if (o.server && domain.empty()) {
    cands.push_back({"lo", ""});
    addrs.push_back("127.0.0.1");
    reason = "default: loopback (pass --address or --domain to serve other nodes)";
  } else if (!o.server && domain.empty() && !o.peer_ip.empty()) {
    std::string src;
    std::string ifn = interface_towards(o.peer_ip, &src);
    if (ifn.empty()) return;
    if (o.nic_policy != "passthrough" && client_nics(o, cands, addrs)) {
      reason = "interfaces whose own address routes to the server's address " + o.peer_ip +
               " through themselves";
      return;
    }
    cands.push_back({ifn, interface_pci(ifn)});
    addrs.push_back(src);
    reason = "interface routing to the server's address " + o.peer_ip;
  }
}

}  // namespace

void Endpoint::decide_domain(const EndpointOptions& o, std::string& domain, std::string& node) {
  domain = o.domain;
  const std::string prov = o.fabric.provider;
  const bool ip_prov = sockaddr_provider(prov);
  const bool policy = o.nic_policy != "passthrough";
  std::vector<NicCandidate> cands;
  std::vector<std::string> addrs;
  std::string reason;
  if (ip_prov) ip_candidates(o, domain, cands, addrs, reason);
  else if (domain.empty() && policy) cands = provider_nics(o.fabric);
  NicChoice choice;
  if (!o.domain.empty() || !policy) {  // the policy does not apply: say why
    choice.policy = o.nic_policy;
    choice.passthrough = true;
    choice.topology = "not loaded";
    choice.why = !o.domain.empty() ? "--domain " + o.domain + " is used whatever the policy"
                                   : "passthrough: the domain is chosen as domain_choice says";
  } else {
    choice = run_policy(o, cands);
  }
  nic_json_ = choice_json(choice);
  int pick = choice.chosen >= 0 ? choice.chosen : (cands.empty() ? -1 : 0);
  domain_reason_ = !o.domain.empty() ? "given with --domain" : reason;
  if (pick >= 0 && o.domain.empty()) domain = cands[pick].name;
  if (pick >= 0 && pick < static_cast<int>(addrs.size())) node = addrs[pick];
  if (o.domain.empty() && choice.chosen >= 0 && (cands.size() > 1 || reason.empty()))
    domain_reason_ = "nic policy " + o.nic_policy + ": " + choice.why;
  else if (o.domain.empty() && cands.size() > 1)
    domain_reason_ = "first of --address " + o.bind_address + " (nic policy passthrough)";
  if (ip_prov) {
    // The tcp provider ignores a bare domain-name hint: bind the domain's
    // own address (FI_SOURCE) so the endpoint really uses that interface.
    if (!domain.empty() && node.empty()) node = address_of_interface(domain);
    if (!domain.empty() && lower(prov).find("verbs") != std::string::npos) {
      std::string dev = verbs_device_for_interface(domain);
      if (!dev.empty()) {
        domain_reason_ += " (verbs device " + dev + " of interface " + domain + ")";
        domain = dev;
      }
    }
  }
  if (domain_reason_.empty()) domain_reason_ = "provider's first choice";
}

Endpoint::Endpoint(const EndpointOptions& o) : progress_(o.progress), spec_(o.fabric.spec) {
  std::string domain, node;
  decide_domain(o, domain, node);
  const std::string prov = o.fabric.provider;

  fi_info* hints = endpoint_hints(prov, o.thread_safe);
  if (!domain.empty()) hints->domain_attr->name = strdup(domain.c_str());
  int rc = fi_getinfo(kApiVersion, node.empty() ? nullptr : node.c_str(), nullptr,
                      node.empty() ? 0 : FI_SOURCE, hints, &info_);
  fi_freeinfo(hints);
  if (rc != 0 || !info_) {
    require_known_provider(o.fabric);
    std::string msg = "no usable libfabric endpoint for --fabric " + o.fabric.spec +
                      " (provider '" + prov + "'";
    if (!domain.empty()) msg += ", domain '" + domain + "'";
    if (!node.empty()) msg += ", address " + node;
    throw EngineError(kExitUsage, msg + "): " + fi_error_text(rc) + "; " +
                                      describe_inventory(nic_inventory(o.fabric)));
  }
  // Some providers (tcp) treat the domain name as a hint they may ignore:
  // what was asked must be what is used.
  if (!domain.empty() && domain_name() != domain)
    throw EngineError(kExitUsage, "provider " + provider() + " offered domain '" + domain_name() +
                                      "' when '" + domain + "' was asked for; " +
                                      describe_inventory(nic_inventory(o.fabric)));
  mr_mode_ = info_->domain_attr->mr_mode;

  check(fi_fabric(info_->fabric_attr, &fabric_, nullptr), "fi_fabric");
  check(fi_domain(fabric_, info_, &domain_, nullptr), "fi_domain");

  fi_cq_attr cq_attr{};
  cq_attr.format = FI_CQ_FORMAT_MSG;
  cq_attr.size = 0;
  // Only block and adaptive sleep on an fd. A CQ with a wait object costs
  // every completion while polling too: over tcp;ofi_rxm (libfabric 1.17)
  // it makes rxm open its tcp CQ in epoll mode, so the sockets and the
  // CQ's signal socket stay registered in an epoll set nested in this CQ's
  // own: each arriving message and each completion signal runs the epoll
  // wake-up callbacks of both sets in the kernel, and each empty read is an
  // epoll_wait (busy: a poll). Measured: +0.75 us on a ~9 us minimum round
  // trip, ~8 % (benchmarks/RESULTS.md). Spindown polls exactly as busy does
  // and, once idle, sleeps in growing steps instead (sleep_poll).
  if (progress_.mode == ProgressMode::Block || progress_.mode == ProgressMode::Adaptive) {
    // Preferred: an fd we poll() after fi_trywait; else sleep-polling.
    cq_attr.wait_obj = FI_WAIT_FD;
    rc = fi_cq_open(domain_, &cq_attr, &cq_, nullptr);
    if (rc == 0) {
      rc = fi_control(&cq_->fid, FI_GETWAIT, &cq_fd_);
      if (rc != 0) {
        fi_close(&cq_->fid);
        cq_ = nullptr;
        cq_fd_ = -1;
      }
    }
    if (!cq_) {
      // shm's own wait object spins on sched_yield and ignores the
      // timeout of fi_cq_sread, so no provider wait object is used.
      progress_note_ = "provider " + provider() + " has no fd wait object (" + fi_error_text(rc) +
                       "): blocking falls back to sleep-polling (" + std::to_string(kMinBackoffUs) +
                       " us doubling to " + std::to_string(kMidBackoffUs / 1000) + " ms, to " + std::to_string(kMaxBackoffUs / 1000) + " ms after 1 s idle)";
    }
  }
  if (!cq_) {
    cq_attr.wait_obj = FI_WAIT_NONE;
    check(fi_cq_open(domain_, &cq_attr, &cq_, nullptr), "fi_cq_open");
  }

  fi_av_attr av_attr{};
  av_attr.type = FI_AV_UNSPEC;
  check(fi_av_open(domain_, &av_attr, &av_, nullptr), "fi_av_open");
  check(fi_endpoint(domain_, info_, &ep_, nullptr), "fi_endpoint");
  check(fi_ep_bind(ep_, &av_->fid, 0), "fi_ep_bind(av)");
  check(fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind(cq)");
  check(fi_enable(ep_), "fi_enable");
}

Endpoint::~Endpoint() {
  if (ep_) fi_close(&ep_->fid);
  if (av_) fi_close(&av_->fid);
  if (cq_) fi_close(&cq_->fid);
  if (domain_) fi_close(&domain_->fid);
  if (fabric_) fi_close(&fabric_->fid);
  if (info_) fi_freeinfo(info_);
}

std::string Endpoint::provider() const { return info_->fabric_attr->prov_name; }
std::string Endpoint::fabric_name() const {
  return info_->fabric_attr->name ? info_->fabric_attr->name : "";
}
std::string Endpoint::domain_name() const {
  return info_->domain_attr->name ? info_->domain_attr->name : "";
}
uint32_t Endpoint::addr_format() const { return info_->addr_format; }
size_t Endpoint::max_msg_size() const { return info_->ep_attr->max_msg_size; }
size_t Endpoint::inject_size() const { return info_->tx_attr->inject_size; }

std::string Endpoint::local_address() const {
  std::string buf(256, '\0');
  size_t len = buf.size();
  int rc = fi_getname(&ep_->fid, buf.data(), &len);
  if (rc == -FI_ETOOSMALL) {
    buf.resize(len);
    rc = fi_getname(&ep_->fid, buf.data(), &len);
  }
  check(rc, "fi_getname");
  buf.resize(len);
  return buf;
}

std::string Endpoint::address_string(const std::string& raw) const {
  char buf[512] = {};
  size_t len = sizeof buf;
  fi_av_straddr(av_, raw.data(), buf, &len);
  return buf;
}

std::vector<std::string> Endpoint::mr_mode_names() const {
  std::vector<std::string> r;
  const std::pair<uint64_t, const char*> bits[] = {
      {FI_MR_LOCAL, "FI_MR_LOCAL"},         {FI_MR_RAW, "FI_MR_RAW"},
      {FI_MR_VIRT_ADDR, "FI_MR_VIRT_ADDR"}, {FI_MR_ALLOCATED, "FI_MR_ALLOCATED"},
      {FI_MR_PROV_KEY, "FI_MR_PROV_KEY"},   {FI_MR_MMU_NOTIFY, "FI_MR_MMU_NOTIFY"},
      {FI_MR_RMA_EVENT, "FI_MR_RMA_EVENT"}, {FI_MR_ENDPOINT, "FI_MR_ENDPOINT"},
      {FI_MR_HMEM, "FI_MR_HMEM"}};
  for (auto& [b, n] : bits)
    if (mr_mode_ & b) r.push_back(n);
  return r;
}

fi_addr_t Endpoint::insert(const std::string& raw) {
  fi_addr_t a = FI_ADDR_NOTAVAIL;
  int n = fi_av_insert(av_, raw.data(), 1, &a, 0, nullptr);
  if (n != 1 || a == FI_ADDR_NOTAVAIL)
    throw EngineError(kExitFailure, "fi_av_insert failed for " + address_string(raw));
  return a;
}

void Endpoint::remove(fi_addr_t a) { fi_av_remove(av_, &a, 1, 0); }

MemRegion Endpoint::register_memory(uint8_t* buf, size_t len, bool remote) {
  MemRegion r;
  r.base = buf;
  r.len = len;
  r.virt_addr = (mr_mode_ & FI_MR_VIRT_ADDR) != 0;
  uint64_t access = FI_SEND | FI_RECV | FI_READ | FI_WRITE;
  if (remote) access |= FI_REMOTE_READ | FI_REMOTE_WRITE;
  uint64_t requested_key = (mr_mode_ & FI_MR_PROV_KEY) ? 0 : next_key_++;
  int rc = fi_mr_reg(domain_, buf, len, access, 0, requested_key, 0, &r.mr, nullptr);
  if (rc != 0)
    throw EngineError(kExitFailure, "memory registration of " + std::to_string(len) +
                                        " bytes failed: " + fi_error_text(rc));
  if (mr_mode_ & FI_MR_ENDPOINT) {
    check(fi_mr_bind(r.mr, &ep_->fid, 0), "fi_mr_bind");
    check(fi_mr_enable(r.mr), "fi_mr_enable");
  }
  r.desc = fi_mr_desc(r.mr);
  r.key = fi_mr_key(r.mr);
  if (r.key == FI_KEY_NOTAVAIL)
    throw EngineError(kExitFailure, "memory registration gave no usable key (FI_MR_RAW keys are not supported)");
  return r;
}

void Endpoint::deregister(MemRegion& r) {
  if (r.mr) fi_close(&r.mr->fid);
  r.mr = nullptr;
}

size_t Endpoint::convert(fi_cq_msg_entry* e, ssize_t n, CqEvent* out) {
  for (ssize_t i = 0; i < n; i++) {
    out[i].ctx = static_cast<OpContext*>(e[i].op_context);
    out[i].flags = e[i].flags;
    out[i].len = e[i].len;
    out[i].err = 0;  // err_text is read only with err set (read_error sets both)
  }
  return static_cast<size_t>(n);
}

size_t Endpoint::read_error(CqEvent* out) {
  fi_cq_err_entry err{};
  ssize_t r = fi_cq_readerr(cq_, &err, 0);
  if (r < 0) return 0;
  out[0].ctx = static_cast<OpContext*>(err.op_context);
  out[0].flags = err.flags;
  out[0].len = err.len;
  out[0].err = err.err ? err.err : FI_EOTHER;
  char buf[256] = {};
  const char* detail = fi_cq_strerror(cq_, err.prov_errno, err.err_data, buf, sizeof buf);
  out[0].err_text = fi_error_text(out[0].err) + (detail && *detail ? std::string(": ") + detail : "");
  return 1;
}

size_t Endpoint::poll(CqEvent* out, size_t max) {
  fi_cq_msg_entry e[32];
  ssize_t n = fi_cq_read(cq_, e, std::min<size_t>(max, 32));
  if (n > 0) {
    backoff_us_ = kMinBackoffUs;
    slept_us_ = 0;
    return convert(e, n, out);
  }
  if (n == -FI_EAGAIN) return 0;
  if (n == -FI_EAVAIL) return read_error(out);
  throw EngineError(kExitFailure, "fi_cq_read failed: " + fi_error_text(static_cast<int>(n)));
}

// Short sleeps right after activity, longer while idle (no fd to sleep on):
// doubling from kMinBackoffUs to kMidBackoffUs for the first second asleep
// (a request that ends a short gap, such as the next transfer over a slow
// link 40 ms later, waits at most 1 ms), then to kMaxBackoffUs (a long idle
// costs 100 wake-ups a second).
void Endpoint::sleep_poll(int timeout_ms) {
  int us = std::min(backoff_us_, timeout_ms * 1000);
  std::this_thread::sleep_for(std::chrono::microseconds(us));
  slept_us_ += us;
  const int cap = slept_us_ < kLongIdleUs ? kMidBackoffUs : kMaxBackoffUs;
  backoff_us_ = std::min(backoff_us_ * 2, cap);
}

void Endpoint::wait(int timeout_ms) {
  if (cq_fd_ < 0) return sleep_poll(timeout_ms);
  fid* f = &cq_->fid;
  if (fi_trywait(fabric_, &f, 1) != FI_SUCCESS) return;  // events pending: poll again
  pollfd p{cq_fd_, POLLIN, 0};
  ::poll(&p, 1, timeout_ms);
}

bool Endpoint::idle(bool outstanding, int64_t now, int64_t last_activity, int max_block_ms) {
  switch (progress_.mode) {
    case ProgressMode::Busy: return false;
    case ProgressMode::Block: wait(max_block_ms); return true;
    case ProgressMode::Adaptive:
      if (outstanding) return false;
      wait(max_block_ms);
      return true;
    case ProgressMode::Spindown:
      // Note: on a machine with few cores, unpinned server and client can
      // land on one core when the server wakes (wake-affine placement) and
      // then time-slice while both spin: pin them (--cpus) to measure.
      if (outstanding || now - last_activity < progress_.spindown_ns) return false;
      wait(max_block_ms);
      return true;
  }
  return false;
}

std::string Endpoint::progress_effective() const {
  if (progress_.mode == ProgressMode::Busy) return "busy";
  if (progress_.mode == ProgressMode::Spindown) return progress_.text();  // sleep-polls by design
  return progress_.text() + (cq_fd_ >= 0 ? "" : " (sleep-poll fallback)");
}

ssize_t Endpoint::post_recv(uint8_t* buf, size_t len, void* desc, OpContext* ctx) {
  return fi_recv(ep_, buf, len, desc, FI_ADDR_UNSPEC, ctx);
}
ssize_t Endpoint::post_send(const uint8_t* buf, size_t len, void* desc, fi_addr_t dest,
                            OpContext* ctx) {
  return fi_send(ep_, buf, len, desc, dest, ctx);
}
ssize_t Endpoint::post_inject(const uint8_t* buf, size_t len, fi_addr_t dest) {
  return fi_inject(ep_, buf, len, dest);
}
ssize_t Endpoint::post_write(const uint8_t* buf, size_t len, void* desc, fi_addr_t dest,
                             uint64_t raddr, uint64_t rkey, OpContext* ctx) {
  return fi_write(ep_, buf, len, desc, dest, raddr, rkey, ctx);
}
ssize_t Endpoint::post_read(uint8_t* buf, size_t len, void* desc, fi_addr_t src, uint64_t raddr,
                            uint64_t rkey, OpContext* ctx) {
  return fi_read(ep_, buf, len, desc, src, raddr, rkey, ctx);
}

std::string Endpoint::libfabric_version() {
  uint32_t v = fi_version();
  return std::to_string(FI_MAJOR(v)) + "." + std::to_string(FI_MINOR(v));
}

// The endpoint's own address (fi_getname): "IP:port" and the interface
// carrying that IP for sockaddr providers; the provider's text otherwise.
static void describe_address(JsonWriter& w, const std::string& raw_address, const std::string& text) {
  std::string hostport = sockaddr_text(raw_address);
  std::string ip = ip_of_raw(raw_address);
  std::string ifname = ip.empty() ? "" : interface_of(local_interfaces(), ip);
  w.kv("address", hostport.empty() ? text : hostport);
  if (ip.empty()) w.key("ip").null();
  else w.kv("ip", ip);
  if (ifname.empty()) w.key("interface").null();
  else w.kv("interface", ifname);
}

void Endpoint::describe(JsonWriter& w) const {
  w.kv("fabric_spec", spec_);
  w.kv("provider", provider());
  w.kv("fabric", fabric_name());
  w.kv("domain", domain_name());
  w.kv("domain_choice", domain_reason_);
  w.key("nic_policy").raw(nic_json_);
  const std::string raw = local_address();
  w.kv("local_address", address_string(raw));
  describe_address(w, raw, address_string(raw));
  w.key("mr_mode").begin_array();
  for (auto& n : mr_mode_names()) w.value(n);
  w.end_array();
  w.kv("max_msg_size", static_cast<uint64_t>(max_msg_size()));
  w.kv("inject_size", static_cast<uint64_t>(inject_size()));
  w.key("progress").begin_object();
  w.kv("requested", progress_.text());
  w.kv("effective", progress_effective());
  w.kv("wait_object", cq_fd_ >= 0 ? "fd" : "none");
  if (progress_note_.empty()) w.key("fallback").null();
  else w.kv("fallback", progress_note_);
  w.end_object();
}

}  // namespace rooftop
