#include "client_core.hpp"

#include <algorithm>
#include <cstring>

#include "commands.hpp"
#include "report.hpp"
#include "sysinfo.hpp"

namespace rooftop {

namespace {
std::string provider_base(std::string p) {
  for (auto& c : p) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto semi = p.find(';');
  return semi == std::string::npos ? p : p.substr(0, semi);
}
}  // namespace

std::vector<ServerAddress> resolve_servers(const std::string& dir, const std::vector<int>& ranks,
                                           const std::string& fabric, double timeout_s) {
  FabricSpec spec = parse_fabric_spec(fabric);
  std::vector<ServerAddress> out;
  for (int r : ranks) {
    ServerAddress a = wait_address(dir, r, timeout_s);
    if (provider_base(a.provider) != provider_base(spec.provider))
      throw EngineError(kExitUsage, "server rank " + std::to_string(r) + " (" + a.path +
                                        ") serves provider '" + a.provider + "' but --fabric is '" +
                                        fabric + "'");
    out.push_back(a);
  }
  return out;
}

ClientCore::ClientCore(const Options& o, const ServerAddress& first, size_t nrx, size_t rx_size)
    : rx_size_(std::max<size_t>(rx_size, 4096)), timeout_(o.seconds("timeout")) {
  EndpointOptions eo;
  eo.fabric = parse_fabric_spec(o.str("fabric"));
  eo.domain = o.str("domain");
  eo.peer_ip = first.ip;
  eo.server = false;
  eo.progress = parse_progress(o.str("progress"));
  set_nic_options(o, eo);
  // Without an explicit domain, a sockaddr provider whose server address
  // names an interface we cannot route to would fail obscurely: the
  // endpoint's domain choice is recorded in the output either way.
  ep_ = std::make_unique<Endpoint>(eo);
  rx_mem_.assign(nrx * rx_size_, 0);
  tx_mem_.assign(rx_size_, 0);
  rx_mr_ = ep_->register_memory(rx_mem_.data(), rx_mem_.size(), false);
  tx_mr_ = ep_->register_memory(tx_mem_.data(), tx_mem_.size(), false);
  rx_.resize(nrx);
  for (size_t i = 0; i < nrx; i++) {
    rx_[i].ctx.kind = CtxKind::Rx;
    rx_[i].buf = rx_mem_.data() + i * rx_size_;
    repost(&rx_[i]);
  }
}

void ClientCore::repost(ClientRx* rx) {
  ssize_t rc;
  int tries = 0;
  while ((rc = ep_->post_recv(rx->buf, rx_size_, rx_mr_.desc, &rx->ctx)) == -FI_EAGAIN && tries++ < 1000) {
  }
  if (rc != 0) throw EngineError(kExitFailure, "fi_recv failed: " + fi_error_text(static_cast<int>(rc)));
}

wire::Message ClientCore::call(const Target& t, const std::string& what,
                               const std::function<size_t(uint8_t*, size_t, uint64_t)>& encode) {
  const std::string who = "server rank " + std::to_string(t.addr.rank) + " at " + t.addr.text;
  uint64_t req_id = (++seq_ << 16) | kControlSlot;
  size_t len = encode(tx_mem_.data(), tx_mem_.size(), req_id);
  if (len == 0) throw EngineError(kExitFailure, what + ": request does not fit in a message");
  OpContext tx_ctx{};
  tx_ctx.kind = CtxKind::Tx;
  int64_t deadline = now_ns() + static_cast<int64_t>(timeout_ * 1e9);
  auto timed_out = [&]() {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", timeout_);
    return EngineError(kExitUnreachable, what + ": no answer from " + who + " within " + buf +
                                             " s (is it running and reachable? see --timeout)");
  };
  ssize_t rc;
  while ((rc = ep_->post_send(tx_mem_.data(), len, tx_mr_.desc, t.fa, &tx_ctx)) == -FI_EAGAIN) {
    CqEvent ev[8];
    size_t n = ep_->poll(ev, 8);
    for (size_t i = 0; i < n; i++)
      if (ev[i].ctx && ev[i].ctx->kind == CtxKind::Rx) {
        dropped++;
        repost(reinterpret_cast<ClientRx*>(ev[i].ctx));
      }
    if (now_ns() > deadline) throw timed_out();
    if (g_signal.load()) throw EngineError(128 + g_signal.load(), what + ": interrupted");
  }
  if (rc != 0) throw EngineError(kExitUnreachable, what + ": cannot send to " + who + ": " + fi_error_text(static_cast<int>(rc)));
  bool sent = false, answered = false;
  wire::Message resp;
  CqEvent ev[16];
  while (!(sent && answered)) {
    size_t n = ep_->poll(ev, 16);
    for (size_t i = 0; i < n; i++) {
      OpContext* c = ev[i].ctx;
      if (c == &tx_ctx) {
        if (ev[i].err)
          throw EngineError(kExitUnreachable, what + ": sending to " + who + " failed: " + ev[i].err_text);
        sent = true;
        continue;
      }
      if (!c || c->kind != CtxKind::Rx) continue;
      auto* rx = reinterpret_cast<ClientRx*>(c);
      if (ev[i].err) {
        repost(rx);
        continue;
      }
      wire::Message m;
      if (wire::decode(rx->buf, ev[i].len, m) == wire::DecodeError::None && m.response &&
          m.h.req_id == req_id && !answered) {
        resp = m;  // responses carry no string views into the buffer
        answered = true;
      } else {
        dropped++;
      }
      repost(rx);
    }
    if (n == 0) {
      if (now_ns() > deadline) throw timed_out();
      if (g_signal.load()) throw EngineError(128 + g_signal.load(), what + ": interrupted");
      ep_->idle(true, now_ns(), 0, 50);
    }
  }
  return resp;
}

void ClientCore::send_raw(const Target& t, const uint8_t* bytes, size_t len) {
  len = std::min(len, tx_mem_.size());
  std::memcpy(tx_mem_.data(), bytes, len);
  OpContext tx_ctx{};
  tx_ctx.kind = CtxKind::Tx;
  int64_t deadline = now_ns() + static_cast<int64_t>(timeout_ * 1e9);
  ssize_t rc;
  while ((rc = ep_->post_send(tx_mem_.data(), len, tx_mr_.desc, t.fa, &tx_ctx)) == -FI_EAGAIN)
    if (now_ns() > deadline) throw EngineError(kExitUnreachable, "send_raw: timed out");
  if (rc != 0) throw EngineError(kExitUnreachable, "send failed: " + fi_error_text(static_cast<int>(rc)));
  CqEvent ev[8];
  for (bool done = false; !done;) {
    size_t n = ep_->poll(ev, 8);
    for (size_t i = 0; i < n; i++) {
      if (ev[i].ctx == &tx_ctx) done = true;
      else if (ev[i].ctx && ev[i].ctx->kind == CtxKind::Rx) {
        dropped++;
        repost(reinterpret_cast<ClientRx*>(ev[i].ctx));
      }
    }
    if (!done && now_ns() > deadline) throw EngineError(kExitUnreachable, "send_raw: no completion");
  }
}

Target ClientCore::connect(const ServerAddress& a, uint32_t client_rank) {
  Target t;
  t.addr = a;
  t.fa = ep_->insert(a.raw);
  std::string me = ep_->local_address();
  wire::Message m = call(t, "hello", [&](uint8_t* b, size_t cap, uint64_t req) {
    return wire::encode_hello_req(b, cap, req, me, client_rank);
  });
  if (m.type != wire::Type::Hello || m.status != wire::Status::Ok)
    throw EngineError(kExitFailure, "server rank " + std::to_string(a.rank) + " refused the handshake (" +
                                        wire::status_name(m.status) + ")");
  t.conn = m.assigned_conn;
  t.max_bulk = m.max_bulk;
  t.max_msg = m.max_msg;
  return t;
}

}  // namespace rooftop
