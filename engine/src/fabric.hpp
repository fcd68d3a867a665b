// libfabric RDM endpoint: provider selection from a fabric spec, interface
// (domain) choice, memory registration honouring mr_mode, completion-queue
// reads and the progress modes (busy, block, adaptive, spindown).
#pragma once
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "json.hpp"
#include "nic.hpp"
#include "nic_policy.hpp"

namespace rooftop {

// A runtime failure with the process exit code that reports it.
struct EngineError : std::runtime_error {
  int code;
  EngineError(int c, const std::string& m) : std::runtime_error(m), code(c) {}
};
enum ExitCode { kExitOk = 0, kExitFailure = 1, kExitUsage = 2, kExitUnreachable = 3 };

// "ofi+tcp" -> provider filter "tcp" (tcp;ofi_rxm on libfabric 1.17).
struct FabricSpec {
  std::string spec;      // as given
  std::string provider;  // fi_getinfo prov_name filter
};
FabricSpec parse_fabric_spec(const std::string& spec);  // throws UsageError
std::vector<std::string> available_providers();         // every provider here
// Runs libfabric's one-time provider initialisation now (one fi_getinfo),
// so that processes forked afterwards skip it (~0.085 s each on Debian's
// build: every built-in and DL provider's init, the verbs provider reading
// /proc/kallsyms). Only for the socket and shared-memory providers (tcp,
// udp, sockets, shm): a device provider's init may open device contexts,
// which a forked child must not use. Returns "" once done, else why not.
std::string preinit_providers(const std::string& fabric_spec);
bool sockaddr_provider(const std::string& prov);        // addresses are IP sockaddrs
std::vector<std::string> provider_domains(const std::string& prov);  // fi_getinfo's domain names
// The NICs a provider offers here, for the NIC policies: its domains with
// their PCI bus ids (fi_info nic attributes) or, for IP providers, the
// interfaces carrying it with their PCI device (sysfs), "" where none.
std::vector<NicCandidate> provider_nics(const FabricSpec& f);
NicInventory nic_inventory(const FabricSpec& f);  // domains, interfaces with addresses
// What libfabric says of a provider here (rooftop-engine machine): the
// provider and its version as the first RDM fi_info the endpoint's hints
// get has them (fabric_attr->prov_name, prov_version: "117.0" for a
// provider built into libfabric 1.17.0), and per domain its fi_nic's
// driver, firmware and link speed where the provider fills them in.
struct ProviderNic {
  std::string driver, firmware;
  uint64_t speed_bps = 0;  // 0: not said
};
struct ProviderInfo {
  std::string name;     // "" when fi_getinfo offered none (error says why)
  std::string version;  // "MAJOR.MINOR" of prov_version
  std::string fabric;   // fabric_attr->name
  std::string error;
  std::vector<std::pair<std::string, ProviderNic>> nics;  // domain -> its fi_nic
};
ProviderInfo provider_info(const FabricSpec& f);
// --domain / --address must name what exists here and carries the provider:
// throws UsageError (exit 2) naming the value and listing what exists, or
// EngineError (exit 2) for an unknown provider. "" = not given.
void check_nic(const FabricSpec& f, const std::string& domain, const std::string& address);

enum class ProgressMode { Busy, Block, Adaptive, Spindown };
struct ProgressSpec {
  ProgressMode mode = ProgressMode::Busy;
  int64_t spindown_ns = 10'000'000;
  std::string text() const;
};
ProgressSpec parse_progress(const std::string& s);  // throws UsageError

// Interface helpers for sockaddr providers.
std::string interface_with_address(const std::string& ip);  // "" if none
std::string interface_towards(const std::string& ip,        // route source's interface
                              std::string* source_ip = nullptr);
std::string address_of_interface(const std::string& ifname);  // first IPv4 (else IPv6), or ""
// The interface the kernel sends through from the local address src_ip to
// ip (`ip route get IP from SRC`, over netlink; routing rules apply), or ""
// (IPv4 only).
std::string route_interface(const std::string& ip, const std::string& src_ip);
std::string verbs_device_for_interface(const std::string& ifname);

struct EndpointOptions {
  FabricSpec fabric;
  std::string domain;        // explicit --domain, or ""
  std::string bind_address;  // server: address(es) to serve on (comma list: the policy picks), or ""
  std::string peer_ip;       // client: an address the peer serves on, or ""
  bool server = false;
  ProgressSpec progress;
  bool thread_safe = false;
  std::string nic_policy = "passthrough";  // --nic-policy
  std::string nic_counters;                // --nic-counters: roundrobin's directory
  int local_rank = -1;                     // --local-rank, -1: the launcher's
};

// Contexts handed to libfabric: fi_context2 first, then our tag.
enum class CtxKind : uint8_t { Rx, Tx, Rma, Nudge };  // Nudge: cm_nudge.hpp
struct OpContext {
  fi_context2 fi;
  CtxKind kind;
};

struct MemRegion {
  fid_mr* mr = nullptr;
  void* desc = nullptr;
  uint64_t key = 0;
  uint8_t* base = nullptr;
  size_t len = 0;
  bool virt_addr = true;
  // Address a peer uses for RMA into `p` (virtual address or offset).
  uint64_t remote_addr(const uint8_t* p) const {
    return virt_addr ? reinterpret_cast<uint64_t>(p) : static_cast<uint64_t>(p - base);
  }
};

struct CqEvent {
  OpContext* ctx;
  uint64_t flags;
  size_t len;
  int err;  // 0, or a positive fi_errno for an error completion
  std::string err_text;
};

class Endpoint {
 public:
  explicit Endpoint(const EndpointOptions& o);
  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  std::string provider() const;
  std::string fabric_name() const;
  std::string domain_name() const;
  const std::string& domain_reason() const { return domain_reason_; }
  std::string local_address() const;  // raw bytes
  std::string address_string(const std::string& raw) const;
  uint32_t addr_format() const;
  size_t max_msg_size() const;
  size_t inject_size() const;  // sends up to this size can use post_inject
  uint64_t mr_mode() const { return mr_mode_; }
  std::vector<std::string> mr_mode_names() const;

  fi_addr_t insert(const std::string& raw);  // throws EngineError
  void remove(fi_addr_t a);
  MemRegion register_memory(uint8_t* buf, size_t len, bool remote);  // throws
  void deregister(MemRegion& r);

  // Reads up to `max` events (0 if none ready). Error completions are
  // returned as events with err set.
  size_t poll(CqEvent* out, size_t max);
  // Blocks on the CQ (fi_trywait + poll on its fd) for at most timeout_ms.
  // With no fd wait object (spindown, providers without one), sleeps
  // briefly instead: kMinBackoffUs after a completion, doubling to
  // kMidBackoffUs for the first second asleep, then to kMaxBackoffUs.
  void wait(int timeout_ms);
  // Called when poll() found nothing: waits or not per progress mode; true
  // if it waited (or slept).
  bool idle(bool outstanding, int64_t now, int64_t last_activity, int max_block_ms);
  bool can_block() const { return cq_fd_ >= 0; }
  const ProgressSpec& progress() const { return progress_; }
  std::string progress_effective() const;
  const std::string& progress_note() const { return progress_note_; }

  ssize_t post_recv(uint8_t* buf, size_t len, void* desc, OpContext* ctx);
  ssize_t post_send(const uint8_t* buf, size_t len, void* desc, fi_addr_t dest, OpContext* ctx);
  // Buffered send: the buffer is free on return and no completion is
  // generated (half the completion-queue work of a small RPC).
  ssize_t post_inject(const uint8_t* buf, size_t len, fi_addr_t dest);
  ssize_t post_write(const uint8_t* buf, size_t len, void* desc, fi_addr_t dest, uint64_t raddr,
                     uint64_t rkey, OpContext* ctx);
  ssize_t post_read(uint8_t* buf, size_t len, void* desc, fi_addr_t src, uint64_t raddr,
                    uint64_t rkey, OpContext* ctx);

  void describe(JsonWriter& w) const;  // the "engine" section's fabric facts
  static std::string libfabric_version();

 private:
  fi_info* info_ = nullptr;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_ep* ep_ = nullptr;
  fid_av* av_ = nullptr;
  fid_cq* cq_ = nullptr;
  int cq_fd_ = -1;
  static constexpr int kMinBackoffUs = 20, kMidBackoffUs = 1000, kMaxBackoffUs = 10000;
  static constexpr int64_t kLongIdleUs = 1'000'000;
  int backoff_us_ = kMinBackoffUs;  // sleep_poll (no fd)
  int64_t slept_us_ = 0;            // slept since the last completion
  void sleep_poll(int timeout_ms);
  size_t convert(fi_cq_msg_entry* e, ssize_t n, CqEvent* out);
  size_t read_error(CqEvent* out);
  uint64_t mr_mode_ = 0;
  uint64_t next_key_ = 1;
  ProgressSpec progress_;
  std::string progress_note_;
  std::string domain_reason_;
  std::string nic_json_;  // the "nic_policy" object
  std::string spec_;
  // Which domain (and, IP providers, which address) to open: --domain,
  // --address, the route to the server, or the NIC policy. Sets
  // domain_reason_ and nic_json_.
  void decide_domain(const EndpointOptions& o, std::string& domain, std::string& node);
  std::vector<std::string> notes_;
};

std::string fi_error_text(int err);  // err positive or negative

}  // namespace rooftop
