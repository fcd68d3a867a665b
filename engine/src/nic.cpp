#include "nic.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

namespace rooftop {

std::string ip_text(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (sa->sa_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, buf, sizeof buf);
  else if (sa->sa_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, buf, sizeof buf);
  return buf;
}

namespace {

bool link_local6(const sockaddr* sa) {
  return sa->sa_family == AF_INET6 &&
         IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr);
}

Interface& entry(std::vector<Interface>& ifs, const std::string& name) {
  for (auto& i : ifs)
    if (i.name == name) return i;
  ifs.push_back({name, {}});
  return ifs.back();
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::string join(const std::vector<std::string>& v) {
  std::string r;
  for (auto& s : v) r += (r.empty() ? "" : ", ") + s;
  return r.empty() ? "none" : r;
}

const Interface* find_interface(const NicInventory& inv, const std::string& name) {
  for (auto& i : inv.interfaces)
    if (i.name == name) return &i;
  return nullptr;
}

// An interface the provider can use: one of its domains, or (verbs) the
// interface of one of its devices.
bool usable(const NicInventory& inv, const std::string& ifname) {
  if (contains(inv.domains, ifname)) return true;
  if (!inv.device_of) return false;
  std::string dev = inv.device_of(ifname);
  return !dev.empty() && contains(inv.domains, dev);
}

std::vector<Interface> usable_interfaces(const NicInventory& inv) {
  std::vector<Interface> r;
  for (auto& i : inv.interfaces)
    if (usable(inv, i.name)) r.push_back(i);
  return r;
}

bool is_ip(const std::string& s) {
  uint8_t buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, s.c_str(), buf) == 1 || inet_pton(AF_INET6, s.c_str(), buf) == 1;
}

std::string check_domain(const NicInventory& inv, const std::string& domain) {
  const std::string head = "--domain " + domain + ": ";
  if (!inv.ip_provider) {
    if (contains(inv.domains, domain)) return "";
    return head + "provider " + inv.provider + " has no domain '" + domain +
           "' here; its domains: " + join(inv.domains);
  }
  if (find_interface(inv, domain)) {
    if (usable(inv, domain)) return "";
    return head + "interface " + domain + " does not carry provider " + inv.provider + "; " +
           describe_inventory(inv);
  }
  if (inv.device_of && contains(inv.domains, domain)) return "";  // a verbs device name
  return head + "no such network interface with an address here; " + describe_inventory(inv);
}

std::string check_address(const NicInventory& inv, const std::string& domain,
                           const std::string& address) {
  const std::string head = "--address " + address + ": ";
  if (!is_ip(address)) return head + "not an IP address";
  std::string ifname = interface_of(inv.interfaces, address);
  if (ifname.empty())
    return head + "no local interface carries this address; addresses here: " +
           describe_interfaces(inv.interfaces);
  if (inv.ip_provider && !domain.empty() && find_interface(inv, domain) && ifname != domain)
    return head + "it is on interface " + ifname + ", not on --domain " + domain;
  return "";
}

}  // namespace

std::vector<Interface> local_interfaces() {
  std::vector<Interface> v4, v6;  // IPv4 addresses listed first
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) != 0) return {};
  for (ifaddrs* i = ifs; i; i = i->ifa_next) {
    if (!i->ifa_addr || link_local6(i->ifa_addr)) continue;
    int fam = i->ifa_addr->sa_family;
    if (fam != AF_INET && fam != AF_INET6) continue;
    entry(v4, i->ifa_name);  // keeps getifaddrs' interface order
    entry(fam == AF_INET ? v4 : v6, i->ifa_name).ips.push_back(ip_text(i->ifa_addr));
  }
  freeifaddrs(ifs);
  for (auto& i : v6) {
    auto& e = entry(v4, i.name);
    e.ips.insert(e.ips.end(), i.ips.begin(), i.ips.end());
  }
  return v4;
}

std::string describe_interfaces(const std::vector<Interface>& ifs) {
  std::vector<std::string> parts;
  for (auto& i : ifs) parts.push_back(i.name + " (" + join(i.ips) + ")");
  return join(parts);
}

std::string interface_of(const std::vector<Interface>& ifs, const std::string& ip) {
  for (auto& i : ifs)
    if (contains(i.ips, ip)) return i.name;
  return "";
}

std::string sockaddr_text(const std::string& raw) {
  sa_family_t fam = 0;
  if (raw.size() < sizeof fam) return "";
  std::memcpy(&fam, raw.data(), sizeof fam);
  if (fam == AF_INET && raw.size() >= sizeof(sockaddr_in)) {
    sockaddr_in s;
    std::memcpy(&s, raw.data(), sizeof s);
    return ip_text(reinterpret_cast<sockaddr*>(&s)) + ":" + std::to_string(ntohs(s.sin_port));
  }
  if (fam == AF_INET6 && raw.size() >= sizeof(sockaddr_in6)) {
    sockaddr_in6 s;
    std::memcpy(&s, raw.data(), sizeof s);
    std::string r = "[";  // appended, not concatenated: spares gcc 12 a false -Wrestrict
    r += ip_text(reinterpret_cast<sockaddr*>(&s));
    r += "]:";
    return r + std::to_string(ntohs(s.sin6_port));
  }
  return "";
}

std::string describe_inventory(const NicInventory& inv) {
  if (!inv.ip_provider) return "domains of provider " + inv.provider + ": " + join(inv.domains);
  std::string r = "interfaces provider " + inv.provider +
                  " can use: " + describe_interfaces(usable_interfaces(inv));
  if (inv.device_of) r += "; its domains: " + join(inv.domains);
  return r;
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> r;
  size_t start = 0;
  for (size_t comma; (comma = s.find(',', start)) != std::string::npos; start = comma + 1)
    r.push_back(s.substr(start, comma - start));
  r.push_back(s.substr(start));
  return r;
}

std::string check_nic_request(const NicInventory& inv, const std::string& domain,
                              const std::string& address) {
  std::string err = domain.empty() ? "" : check_domain(inv, domain);
  if (!err.empty() || address.empty()) return err;
  const std::vector<std::string> list = split_commas(address);  // serve's NIC policy picks among them
  if (list.size() == 1) return check_address(inv, domain, address);
  // Each must be here; with --domain (an interface), one of them on it.
  bool on_domain = domain.empty() || !find_interface(inv, domain);
  for (auto& a : list) {
    if (std::string e = check_address(inv, "", a); !e.empty()) return e;
    if (interface_of(inv.interfaces, a) == domain) on_domain = true;
  }
  if (!on_domain) return "--address " + address + ": none of these addresses is on --domain " + domain;
  return "";
}

}  // namespace rooftop
