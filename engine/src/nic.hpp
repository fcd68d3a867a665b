// What a NIC request (--domain, --address) may name, checked before any
// endpoint opens: the interfaces and addresses this host carries, the
// domains a provider offers, and the messages that list them. No libfabric
// calls here (fabric.cpp supplies the provider's domains), so the checks
// are unit-tested with made-up hosts.
#pragma once
#include <sys/socket.h>

#include <string>
#include <vector>

namespace rooftop {

// A network interface and its addresses (IPv4 first; IPv6 link-local left out).
struct Interface {
  std::string name;
  std::vector<std::string> ips;
};

// "a,b,c" as {"a", "b", "c"} (empty items kept: callers check them).
std::vector<std::string> split_commas(const std::string& s);

// Interfaces of this host that carry at least one address (getifaddrs).
std::vector<Interface> local_interfaces();
// The IP address of an AF_INET/AF_INET6 socket address as text ("" otherwise).
std::string ip_text(const sockaddr* sa);

// "lo (127.0.0.1, ::1), eth0 (192.0.2.2)", or "none".
std::string describe_interfaces(const std::vector<Interface>& ifs);

// The interface carrying ip, or "".
std::string interface_of(const std::vector<Interface>& ifs, const std::string& ip);

// A raw sockaddr (fi_getname of a sockaddr provider) as "IP:port" or
// "[IPv6]:port"; "" if raw is not an IPv4/IPv6 sockaddr.
std::string sockaddr_text(const std::string& raw);

// What the provider offers: its domain names (fi_getinfo) and, for sockaddr
// providers, the host's interfaces with addresses.
struct NicInventory {
  std::string provider;              // as asked, e.g. "tcp"
  bool ip_provider = false;          // addresses are IP sockaddrs
  std::vector<std::string> domains;  // the provider's domains here
  std::vector<Interface> interfaces;
  // verbs: the device (domain) behind an interface, "" if none.
  std::string (*device_of)(const std::string& ifname) = nullptr;
};

// Checks --domain and --address against the inventory. Returns "" if they
// name what exists, else an error that names the bad value and lists the
// ones that exist. Either may be "" (not given). address may be a comma
// list (serve: the NIC policy picks): each must be here and, with --domain,
// one of them on it.
std::string check_nic_request(const NicInventory& inv, const std::string& domain,
                              const std::string& address);

// The domains and interfaces a provider can use, as one line for messages.
std::string describe_inventory(const NicInventory& inv);

}  // namespace rooftop
