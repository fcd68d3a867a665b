// A server's way out of a connection storm over tcp;ofi_rxm.
//
// rxm (libfabric 1.17 and later) progresses its connection manager only
// once per FI_OFI_RXM_CM_PROGRESS_INTERVAL (10 ms) of polling, and the tcp
// provider accepts one connection each time: after 2,000 connections were
// opened and closed against a polling server (busy, spindown), a real
// client's connection waited in the listening socket's queue behind them,
// ~10 ms each (~20 s). Setting the interval lower would make every empty
// read an epoll_wait (tests/engine/test_progress.py); block and adaptive
// progress are not affected (fi_trywait runs the connection manager).
//
// While rxm is itself connecting it progresses connections on every read.
// So when connections stay queued at two looks kCheckNs apart, the server
// sends a zero-byte message to its own address: rxm connects to it (fi_send
// answers -FI_EAGAIN until connected; the send is retried at every look),
// its connection queues behind the others, and rxm accepts every one of
// them at once while the loop spins (busy, and spindown: the nudge is
// outstanding). Once connected the send goes out; it arrives on the
// server's own receive queue and is counted, not answered. The next nudge
// removes this self-connection first, so that it connects afresh (with
// FI_AV_REMOVE_CLEANUP=1, which `serve` sets unless it is set: otherwise
// removing an address keeps its connection). A nudge not connected within
// kGiveUpNs is dropped (counted as an error).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fabric.hpp"

namespace rooftop {

// The listening TCP sockets of this process (SO_ACCEPTCONN), from /proc/self/fd.
std::vector<int> listening_sockets();
// Whether any of these sockets has a connection waiting to be accepted.
bool connections_waiting(const std::vector<int>& fds);

class CmNudge {
 public:
  static constexpr int64_t kCheckNs = 20'000'000, kGiveUpNs = 30'000'000'000;
  // on: an rxm provider under busy or spindown progress; self: the
  // server's own raw address.
  void start(Endpoint& ep, std::string self, bool on);
  // Called from the progress loop when a poll found nothing; looks at most every kCheckNs.
  void check(int64_t now);
  // A nudge is connecting or sent: the loop must not sleep.
  bool in_flight() const { return state_ != State::Idle; }
  // The nudge's send completed (its context: ctx()).
  void sent(const CqEvent& ev);
  // A zero-byte message arrived (a nudge).
  void received() { received_++; }
  OpContext* ctx() { return &ctx_; }
  void write(JsonWriter& w) const;  // the result's "connection_nudges"

 private:
  enum class State { Idle, Connecting, Sent };
  void post();
  void fail(const std::string& why);
  Endpoint* ep_ = nullptr;
  std::string self_raw_;
  std::vector<int> listeners_;
  fi_addr_t self_ = FI_ADDR_NOTAVAIL;
  OpContext ctx_{{}, CtxKind::Nudge};
  State state_ = State::Idle;
  bool waiting_ = false;
  int64_t next_ = 0, since_ = 0;
  uint64_t sent_ = 0, received_ = 0, errors_ = 0;
  std::string last_error_;
};

}  // namespace rooftop
