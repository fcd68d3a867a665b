// Unit tests for the NIC request checks (nic.hpp) on made-up hosts.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <cstring>
#include <string>

#include "nic.hpp"

using namespace rooftop;

namespace {

NicInventory tcp_host() {
  NicInventory inv;
  inv.provider = "tcp";
  inv.ip_provider = true;
  inv.domains = {"eth0", "lo"};
  inv.interfaces = {{"lo", {"127.0.0.1", "::1"}},
                    {"eth0", {"192.0.2.2", "fd00::2"}},
                    {"docker0", {"172.17.0.1"}}};
  return inv;
}

NicInventory shm_host() {
  NicInventory inv;
  inv.provider = "shm";
  inv.domains = {"shm"};
  inv.interfaces = tcp_host().interfaces;
  return inv;
}

std::string device_of(const std::string& ifname) { return ifname == "ib0" ? "mlx5_0" : ""; }

NicInventory verbs_host() {
  NicInventory inv;
  inv.provider = "verbs";
  inv.ip_provider = true;
  inv.domains = {"mlx5_0"};
  inv.interfaces = {{"lo", {"127.0.0.1"}}, {"ib0", {"10.1.0.5"}}};
  inv.device_of = device_of;
  return inv;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(Nic, ExistingInterfacesAndAddressesPass) {
  EXPECT_EQ(check_nic_request(tcp_host(), "", ""), "");
  EXPECT_EQ(check_nic_request(tcp_host(), "lo", ""), "");
  EXPECT_EQ(check_nic_request(tcp_host(), "eth0", "192.0.2.2"), "");
  EXPECT_EQ(check_nic_request(tcp_host(), "", "fd00::2"), "");
  EXPECT_EQ(check_nic_request(shm_host(), "shm", ""), "");
}

TEST(Nic, UnknownInterfaceIsNamedWithTheOnesThatExist) {
  std::string e = check_nic_request(tcp_host(), "bogus0", "");
  EXPECT_TRUE(has(e, "--domain bogus0")) << e;
  EXPECT_TRUE(has(e, "no such network interface")) << e;
  EXPECT_TRUE(has(e, "lo (127.0.0.1, ::1), eth0 (192.0.2.2, fd00::2)")) << e;
  EXPECT_FALSE(has(e, "docker0")) << e;  // not a tcp domain: not offered
}

TEST(Nic, InterfaceWithoutTheProviderIsRefused) {
  std::string e = check_nic_request(tcp_host(), "docker0", "");
  EXPECT_TRUE(has(e, "interface docker0 does not carry provider tcp")) << e;
  EXPECT_TRUE(has(e, "eth0 (192.0.2.2, fd00::2)")) << e;
}

TEST(Nic, ShmHasItsOwnDomainNames) {
  std::string e = check_nic_request(shm_host(), "lo", "");
  EXPECT_TRUE(has(e, "provider shm has no domain 'lo'")) << e;
  EXPECT_TRUE(has(e, "its domains: shm")) << e;
  // A node's address is still checked (netns nodes pass theirs), not bound.
  EXPECT_EQ(check_nic_request(shm_host(), "", "192.0.2.2"), "");
}

TEST(Nic, VerbsTakesAnInterfaceOrItsDevice) {
  EXPECT_EQ(check_nic_request(verbs_host(), "ib0", ""), "");
  EXPECT_EQ(check_nic_request(verbs_host(), "mlx5_0", ""), "");
  EXPECT_EQ(check_nic_request(verbs_host(), "ib0", "10.1.0.5"), "");
  std::string e = check_nic_request(verbs_host(), "lo", "");
  EXPECT_TRUE(has(e, "does not carry provider verbs")) << e;
  EXPECT_TRUE(has(e, "ib0 (10.1.0.5)") && has(e, "its domains: mlx5_0")) << e;
}

TEST(Nic, AddressMustBeLocalAndOnTheDomain) {
  std::string e = check_nic_request(tcp_host(), "", "10.9.9.9");
  EXPECT_TRUE(has(e, "--address 10.9.9.9: no local interface carries this address")) << e;
  EXPECT_TRUE(has(e, "docker0 (172.17.0.1)")) << e;  // every address of the host
  e = check_nic_request(tcp_host(), "", "eth0");
  EXPECT_TRUE(has(e, "not an IP address")) << e;
  e = check_nic_request(tcp_host(), "lo", "192.0.2.2");
  EXPECT_TRUE(has(e, "on interface eth0, not on --domain lo")) << e;
  // A bad domain is reported first.
  e = check_nic_request(tcp_host(), "eth99", "10.9.9.9");
  EXPECT_TRUE(has(e, "--domain eth99") && !has(e, "--address")) << e;
}

TEST(Nic, SockaddrTextDecodesIpAndPort) {
  sockaddr_in s4{};
  s4.sin_family = AF_INET;
  s4.sin_port = htons(4242);
  inet_pton(AF_INET, "192.0.2.2", &s4.sin_addr);
  EXPECT_EQ(sockaddr_text(std::string(reinterpret_cast<char*>(&s4), sizeof s4)), "192.0.2.2:4242");
  sockaddr_in6 s6{};
  s6.sin6_family = AF_INET6;
  s6.sin6_port = htons(7);
  inet_pton(AF_INET6, "fd00::2", &s6.sin6_addr);
  EXPECT_EQ(sockaddr_text(std::string(reinterpret_cast<char*>(&s6), sizeof s6)), "[fd00::2]:7");
  EXPECT_EQ(sockaddr_text("fi_shm://1"), "");
  EXPECT_EQ(sockaddr_text(""), "");
}

TEST(Nic, InterfaceListsAndLookups) {
  auto ifs = tcp_host().interfaces;
  EXPECT_EQ(interface_of(ifs, "::1"), "lo");
  EXPECT_EQ(interface_of(ifs, "10.0.0.1"), "");
  EXPECT_EQ(describe_interfaces({}), "none");
  EXPECT_EQ(describe_interfaces({{"eth0", {"192.0.2.2"}}}), "eth0 (192.0.2.2)");
}

TEST(Nic, ThisHostHasLoopback) {
  auto ifs = local_interfaces();
  EXPECT_EQ(interface_of(ifs, "127.0.0.1"), "lo") << describe_interfaces(ifs);
  for (auto& i : ifs) EXPECT_FALSE(i.ips.empty()) << i.name;
}

TEST(NicRequest, AnAddressListIsCheckedAddressByAddress) {
  NicInventory inv = tcp_host();
  EXPECT_EQ(check_nic_request(inv, "", "127.0.0.1,192.0.2.2"), "");
  EXPECT_EQ(check_nic_request(inv, "eth0", "127.0.0.1,192.0.2.2"), "");
  EXPECT_EQ(check_nic_request(inv, "", "127.0.0.1,203.0.113.9").rfind(
                "--address 203.0.113.9: no local interface carries this address", 0),
            0u);
  EXPECT_EQ(check_nic_request(inv, "", "127.0.0.1,eth0"), "--address eth0: not an IP address");
  inv.domains.push_back("docker0");
  EXPECT_EQ(check_nic_request(inv, "docker0", "127.0.0.1,192.0.2.2"),
            "--address 127.0.0.1,192.0.2.2: none of these addresses is on --domain docker0");
}

TEST(Nic, SplitCommasKeepsEveryItemInOrder) {
  using V = std::vector<std::string>;
  EXPECT_EQ(split_commas("a"), V({"a"}));
  EXPECT_EQ(split_commas("10.0.0.1,10.0.1.1,lo"), V({"10.0.0.1", "10.0.1.1", "lo"}));
  EXPECT_EQ(split_commas("a,,b,"), V({"a", "", "b", ""}));  // empty items kept: callers refuse them
}
