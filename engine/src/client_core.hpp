// Client side of the protocol: an endpoint with posted receive buffers,
// the hello handshake and blocking control RPCs (ping, stat, shutdown).
// The load generator drives the same endpoint with its own fast loop.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "addrfile.hpp"
#include "fabric.hpp"
#include "options.hpp"
#include "wire.hpp"

namespace rooftop {

struct Target {
  ServerAddress addr;
  fi_addr_t fa = FI_ADDR_NOTAVAIL;
  uint64_t conn = 0;
  uint64_t max_bulk = 0;
  uint32_t max_msg = 0;
  uint64_t ops = 0;  // completed in the measured window
};

struct ClientRx {
  OpContext ctx;
  uint8_t* buf;
};

constexpr uint64_t kControlSlot = 0xffff;

class ClientCore {
 public:
  // Opens the endpoint for talking to `first` (its address picks the
  // interface) with nrx receive buffers of rx_size bytes.
  ClientCore(const Options& o, const ServerAddress& first, size_t nrx, size_t rx_size);
  Endpoint& ep() { return *ep_; }
  // Hello handshake; throws EngineError (exit 3) if the server does not answer.
  Target connect(const ServerAddress& a, uint32_t client_rank);
  // Sends a control request built by `encode(buf, cap, req_id)` and waits
  // for its response. Other responses arriving meanwhile are dropped.
  wire::Message call(const Target& t, const std::string& what,
                     const std::function<size_t(uint8_t*, size_t, uint64_t)>& encode);
  // Sends bytes as they are (no response expected) and waits for the send.
  void send_raw(const Target& t, const uint8_t* bytes, size_t len);
  void repost(ClientRx* rx);
  size_t rx_size() const { return rx_size_; }
  const MemRegion& rx_mr() const { return rx_mr_; }
  const MemRegion& tx_mr() const { return tx_mr_; }
  uint8_t* control_tx() { return tx_mem_.data(); }
  double timeout_s() const { return timeout_; }
  uint64_t dropped = 0;

 private:
  std::unique_ptr<Endpoint> ep_;
  std::vector<uint8_t> rx_mem_, tx_mem_;
  MemRegion rx_mr_, tx_mr_;
  std::vector<ClientRx> rx_;
  size_t rx_size_;
  double timeout_;
  uint64_t seq_ = 0;
};

// Resolves the servers a client command talks to: waits for the address
// files (up to --timeout) and checks the provider matches.
std::vector<ServerAddress> resolve_servers(const std::string& dir, const std::vector<int>& ranks,
                                           const std::string& fabric, double timeout_s);

}  // namespace rooftop
