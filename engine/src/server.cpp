// rooftop-engine serve: a single-threaded event loop answering noop, bulk,
// stat and shutdown RPCs. Bulk "read" RMA-writes into the client's buffer
// (a storage read); bulk "write" RMA-reads from it (a storage write).
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "addrfile.hpp"
#include "commands.hpp"
#include "fabric.hpp"
#include "lease.hpp"
#include "nic.hpp"
#include "report.hpp"
#include "token.hpp"
#include "wire.hpp"

namespace rooftop {

namespace {

struct RxBuf {
  OpContext ctx;
  uint8_t* buf;
};
struct TxBuf {
  OpContext ctx;
  uint8_t* buf;
  TxBuf* next_free;
};
struct BulkJob {
  uint64_t req_id, conn, size, raddr, rkey;
  fi_addr_t dest;
  wire::BulkOp op;
  bool verify;
  uint32_t resp_len;
};
struct BulkSlot {
  OpContext ctx;
  uint8_t* buf;
  BulkJob job;
  bool busy = false;
};
struct Pending {
  fi_addr_t dest;
  std::vector<uint8_t> bytes;
};

struct Interval {
  double t_s;
  uint64_t ops, bytes;
  double cpu_util;
};

// Start barrier: clients report ready; all are answered at once when the
// expected number has arrived.
struct BarrierWaiter {
  fi_addr_t dest;
  uint64_t req, conn;
  uint32_t rank;
};
struct BarrierState {
  uint32_t clients = 0;
  int64_t first_ns = 0;
  std::vector<BarrierWaiter> waiting;
};
struct BarrierRelease {
  uint64_t id;
  uint32_t clients;
  double gather_s;   // first ready to last ready
  double release_s;  // time taken to send every release
};

class Server {
 public:
  Server(Options& o, Report& rep) : o_(o), rep_(rep) {}
  int run();

 private:
  void handle_rx(RxBuf* rx, const CqEvent& ev);
  void handle_tx(TxBuf* tx, const CqEvent& ev);
  void handle_rma(BulkSlot* s, const CqEvent& ev);
  void repost(RxBuf* rx);
  template <typename F>
  void respond(fi_addr_t dest, F&& encode);
  void post_tx(TxBuf* tx, size_t len, fi_addr_t dest);
  void flush_backlog();
  void start_pending_bulk();
  bool start_bulk(BulkSlot* s);
  void finish_bulk(BulkSlot* s, wire::Status st);
  void error(const std::string& e) {
    if (rep_.errors.size() < 100) rep_.errors.push_back(e);
  }
  void drop(const std::string& why) {
    dropped_[why]++;
    dropped_total_++;
  }
  std::string result_json(double elapsed, CpuTimes cpu) const;
  void handler_loop();
  void dispatch(const CqEvent& ev);
  void handle_barrier(const wire::Message& m, fi_addr_t dest);
  void answer_barrier(const BarrierWaiter& w, wire::Status st, uint64_t n);

  Options& o_;
  Report& rep_;
  std::unique_ptr<Endpoint> ep_;
  std::vector<uint8_t> rx_mem_, tx_mem_;
  uint8_t* bulk_mem_ = nullptr;
  size_t bulk_bytes_ = 0;
  MemRegion rx_mr_, tx_mr_, bulk_mr_;
  std::vector<RxBuf> rx_;
  std::vector<TxBuf> tx_;
  std::vector<BulkSlot> slots_;
  TxBuf* free_tx_ = nullptr;
  size_t tx_inflight_ = 0, rma_inflight_ = 0;
  std::deque<Pending> backlog_;
  std::deque<BulkJob> bulk_queue_;
  std::map<std::string, fi_addr_t> conn_by_addr_;
  std::set<uint64_t> conns_;
  size_t max_msg_ = 0;
  size_t inject_ = 0;  // responses up to this size go out with fi_inject
  uint64_t max_bulk_ = 0;
  int rank_ = 0;
  std::string token_;
  std::atomic<bool> stop_{false};
  std::string stop_reason_;
  // --handler-threads: the progress thread polls the CQ and queues decoded
  // receives; handler threads take them and run the RPC handlers. Server
  // state is guarded by mu_ (the single-threaded default takes no lock).
  int nthreads_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<RxBuf*, CqEvent>> work_;
  std::atomic<size_t> queued_{0};
  std::vector<std::thread> handlers_;
  bool quit_ = false;
  // counters
  uint64_t n_hello_ = 0, n_noop_ = 0, n_bulk_read_ = 0, n_bulk_write_ = 0, n_stat_ = 0,
           n_shutdown_ = 0, n_shutdown_denied_ = 0, bytes_ = 0, n_verify_fail_ = 0,
           n_too_large_ = 0, n_rma_fail_ = 0, n_tx_err_ = 0, n_rx_err_ = 0;
  std::map<std::string, uint64_t> dropped_;
  uint64_t dropped_total_ = 0;
  int64_t t_ready_ = 0;
  CpuTimes cpu_ready_;
  std::vector<Interval> intervals_;
  uint64_t intervals_dropped_ = 0;
  std::map<uint64_t, BarrierState> barriers_;
  std::vector<BarrierRelease> released_;
  uint64_t n_barrier_ = 0, n_barrier_bad_ = 0;
  ServerAddress addr_;
  Published published_;
};

void Server::answer_barrier(const BarrierWaiter& w, wire::Status st, uint64_t n) {
  respond(w.dest, [&](uint8_t* b, size_t cap) {
    return wire::encode_resp(b, cap, wire::Type::Barrier, w.req, w.conn, st, n, 0);
  });
}

void Server::handle_barrier(const wire::Message& m, fi_addr_t dest) {
  n_barrier_++;
  const BarrierWaiter me{dest, m.h.req_id, m.h.conn_id, m.client_rank};
  BarrierState& b = barriers_[m.barrier_id];
  if (b.waiting.empty()) {
    b.clients = m.barrier_clients;
    b.first_ns = now_ns();
  }
  bool twice = false;
  for (auto& w : b.waiting) twice |= w.rank == m.client_rank;
  if (m.barrier_clients != b.clients || twice) {  // a client of another sample, or a rank twice
    n_barrier_bad_++;
    answer_barrier(me, wire::Status::BadRequest, b.clients);
    return;
  }
  b.waiting.push_back(me);
  if (b.waiting.size() < b.clients) return;
  const int64_t t = now_ns();
  for (auto& w : b.waiting) answer_barrier(w, wire::Status::Ok, b.clients);
  if (released_.size() < 10000)
    released_.push_back({m.barrier_id, b.clients, (t - b.first_ns) / 1e9, (now_ns() - t) / 1e9});
  barriers_.erase(m.barrier_id);
}

void Server::repost(RxBuf* rx) {
  for (int tries = 0;;) {
    ssize_t rc = ep_->post_recv(rx->buf, max_msg_, rx_mr_.desc, &rx->ctx);
    if (rc == 0) return;
    if (rc != -FI_EAGAIN) {
      error("fi_recv failed: " + fi_error_text(static_cast<int>(rc)));
      return;
    }
    // Receive queue momentarily full: give the provider a moment.
    if (++tries > 1000) {
      error("fi_recv kept returning EAGAIN; a receive buffer was lost");
      return;
    }
    std::this_thread::yield();
  }
}

void Server::post_tx(TxBuf* tx, size_t len, fi_addr_t dest) {
  if (len <= inject_) {
    ssize_t rc = ep_->post_inject(tx->buf, len, dest);
    if (rc == 0) {  // buffered: the tx buffer is free again at once
      tx->next_free = free_tx_;
      free_tx_ = tx;
      return;
    }
    if (rc != -FI_EAGAIN) {
      n_tx_err_++;
      error("fi_inject failed: " + fi_error_text(static_cast<int>(rc)));
      tx->next_free = free_tx_;
      free_tx_ = tx;
      return;
    }
    // EAGAIN: fall through to the backlog like any send.
    backlog_.push_back({dest, std::vector<uint8_t>(tx->buf, tx->buf + len)});
    tx->next_free = free_tx_;
    free_tx_ = tx;
    return;
  }
  ssize_t rc = ep_->post_send(tx->buf, len, tx_mr_.desc, dest, &tx->ctx);
  if (rc == 0) {
    tx_inflight_++;
    return;
  }
  if (rc == -FI_EAGAIN) {
    backlog_.push_back({dest, std::vector<uint8_t>(tx->buf, tx->buf + len)});
  } else {
    n_tx_err_++;
    error("fi_send failed: " + fi_error_text(static_cast<int>(rc)));
  }
  tx->next_free = free_tx_;
  free_tx_ = tx;
}

template <typename F>
void Server::respond(fi_addr_t dest, F&& encode) {
  if (free_tx_ && backlog_.empty()) {
    TxBuf* tx = free_tx_;
    free_tx_ = tx->next_free;
    size_t len = encode(tx->buf, max_msg_);
    post_tx(tx, len, dest);
    return;
  }
  Pending p{dest, std::vector<uint8_t>(max_msg_)};
  p.bytes.resize(encode(p.bytes.data(), max_msg_));
  backlog_.push_back(std::move(p));
}

void Server::flush_backlog() {
  while (!backlog_.empty() && free_tx_) {
    TxBuf* tx = free_tx_;
    free_tx_ = tx->next_free;
    Pending p = std::move(backlog_.front());
    backlog_.pop_front();
    std::memcpy(tx->buf, p.bytes.data(), p.bytes.size());
    const bool inject = p.bytes.size() <= inject_;
    ssize_t rc = inject ? ep_->post_inject(tx->buf, p.bytes.size(), p.dest)
                        : ep_->post_send(tx->buf, p.bytes.size(), tx_mr_.desc, p.dest, &tx->ctx);
    if (rc == 0) {
      if (inject) {
        tx->next_free = free_tx_;
        free_tx_ = tx;
      } else {
        tx_inflight_++;
      }
      continue;
    }
    tx->next_free = free_tx_;
    free_tx_ = tx;
    if (rc == -FI_EAGAIN) {
      backlog_.push_front(std::move(p));
      return;
    }
    n_tx_err_++;
    error("fi_send failed: " + fi_error_text(static_cast<int>(rc)));
  }
}

bool Server::start_bulk(BulkSlot* s) {
  const BulkJob& j = s->job;
  ssize_t rc;
  if (j.op == wire::BulkOp::Read) {
    if (j.verify) wire::fill_pattern(s->buf, j.size, j.req_id);
    rc = ep_->post_write(s->buf, j.size, bulk_mr_.desc, j.dest, j.raddr, j.rkey, &s->ctx);
  } else {
    rc = ep_->post_read(s->buf, j.size, bulk_mr_.desc, j.dest, j.raddr, j.rkey, &s->ctx);
  }
  if (rc == -FI_EAGAIN) return false;
  s->busy = true;
  if (rc != 0) {
    error(std::string("RMA ") + (j.op == wire::BulkOp::Read ? "write" : "read") +
          " failed to start: " + fi_error_text(static_cast<int>(rc)));
    finish_bulk(s, wire::Status::RmaFailed);
    return true;
  }
  rma_inflight_++;
  return true;
}

void Server::start_pending_bulk() {
  for (auto& s : slots_) {
    if (bulk_queue_.empty()) return;
    if (s.busy) continue;
    s.job = bulk_queue_.front();
    if (!start_bulk(&s)) return;  // EAGAIN: retry after the next progress
    bulk_queue_.pop_front();
  }
}

void Server::finish_bulk(BulkSlot* s, wire::Status st) {
  const BulkJob j = s->job;
  s->busy = false;
  if (st == wire::Status::Ok) {
    bytes_ += j.size;
    (j.op == wire::BulkOp::Read ? n_bulk_read_ : n_bulk_write_)++;
  } else if (st == wire::Status::VerifyFailed) {
    n_verify_fail_++;
  } else if (st == wire::Status::RmaFailed) {
    n_rma_fail_++;
  }
  size_t total = std::min<size_t>(j.resp_len, max_msg_);
  respond(j.dest, [&](uint8_t* b, size_t cap) {
    return wire::encode_resp(b, cap, wire::Type::Bulk, j.req_id, j.conn, st,
                             st == wire::Status::Ok ? j.size : 0, total);
  });
  start_pending_bulk();
}

void Server::handle_rma(BulkSlot* s, const CqEvent& ev) {
  rma_inflight_--;
  if (ev.err) {
    error("RMA failed: " + ev.err_text);
    finish_bulk(s, wire::Status::RmaFailed);
    return;
  }
  wire::Status st = wire::Status::Ok;
  if (s->job.op == wire::BulkOp::Write && s->job.verify) {
    size_t bad = wire::check_pattern(s->buf, s->job.size, s->job.req_id);
    if (bad != s->job.size) st = wire::Status::VerifyFailed;
  }
  finish_bulk(s, st);
}

void Server::handle_tx(TxBuf* tx, const CqEvent& ev) {
  tx_inflight_--;
  if (ev.err) {
    n_tx_err_++;
    error("response send failed: " + ev.err_text);
  }
  tx->next_free = free_tx_;
  free_tx_ = tx;
}

void Server::handle_rx(RxBuf* rx, const CqEvent& ev) {
  if (ev.err) {
    if (ev.err != FI_ECANCELED) {
      n_rx_err_++;
      error("receive failed: " + ev.err_text);
    }
    if (!stop_) repost(rx);
    return;
  }
  wire::Message m;
  wire::DecodeError de = wire::decode(rx->buf, ev.len, m);
  if (de != wire::DecodeError::None) {
    drop(wire::decode_error_name(de));
    repost(rx);
    return;
  }
  if (m.response) {
    drop("unexpected_response");
    repost(rx);
    return;
  }
  const uint64_t req = m.h.req_id;
  if (m.type == wire::Type::Hello) {
    std::string addr(m.addr);
    fi_addr_t fa;
    auto it = conn_by_addr_.find(addr);
    if (it != conn_by_addr_.end()) {
      fa = it->second;
    } else {
      try {
        fa = ep_->insert(addr);
      } catch (const EngineError& e) {
        drop("bad_client_address");
        repost(rx);
        return;
      }
      conn_by_addr_[addr] = fa;
      conns_.insert(fa);
    }
    n_hello_++;
    repost(rx);
    respond(fa, [&](uint8_t* b, size_t cap) {
      return wire::encode_hello_resp(b, cap, req, fa, max_bulk_, static_cast<uint32_t>(max_msg_),
                                     static_cast<uint32_t>(rank_));
    });
    return;
  }
  const uint64_t conn = m.h.conn_id;
  if (!conns_.count(conn)) {
    drop("unknown_connection");
    repost(rx);
    return;
  }
  const fi_addr_t dest = conn;
  const size_t total = std::min<size_t>(m.h.resp_len, max_msg_);
  switch (m.type) {
    case wire::Type::Noop:
      n_noop_++;
      repost(rx);
      respond(dest, [&](uint8_t* b, size_t cap) {
        return wire::encode_resp(b, cap, wire::Type::Noop, req, conn, wire::Status::Ok, 0, total);
      });
      return;
    case wire::Type::Bulk: {
      BulkJob j{req, conn, m.size, m.remote_addr, m.rkey, dest, m.op,
                (m.h.flags & wire::kFlagVerify) != 0, m.h.resp_len};
      repost(rx);
      if (m.size == 0 || m.size > max_bulk_) {
        n_too_large_++;
        respond(dest, [&](uint8_t* b, size_t cap) {
          return wire::encode_resp(b, cap, wire::Type::Bulk, req, conn, wire::Status::TooLarge, 0,
                                   total);
        });
        return;
      }
      bulk_queue_.push_back(j);
      start_pending_bulk();
      return;
    }
    case wire::Type::Stat: {
      n_stat_++;
      repost(rx);
      CpuTimes c = process_cpu();
      wire::StatBody sb{n_noop_ + n_bulk_read_ + n_bulk_write_,
                        n_noop_,
                        n_bulk_read_ + n_bulk_write_,
                        bytes_,
                        dropped_total_,
                        c.user_s - cpu_ready_.user_s,
                        c.sys_s - cpu_ready_.sys_s,
                        (now_ns() - t_ready_) / 1e9};
      respond(dest, [&](uint8_t* b, size_t cap) {
        return wire::encode_stat_resp(b, cap, req, conn, sb);
      });
      return;
    }
    case wire::Type::Barrier:
      repost(rx);
      handle_barrier(m, dest);
      return;
    case wire::Type::Shutdown: {
      bool ok = !token_.empty() && m.token == token_;
      repost(rx);
      (ok ? n_shutdown_ : n_shutdown_denied_)++;
      respond(dest, [&](uint8_t* b, size_t cap) {
        return wire::encode_resp(b, cap, wire::Type::Shutdown, req, conn,
                                 ok ? wire::Status::Ok : wire::Status::Denied, 0, 0);
      });
      if (ok) {
        stop_ = true;
        stop_reason_ = "shutdown rpc";
      }
      return;
    }
    default:
      drop("bad_type");
      repost(rx);
      return;
  }
}

void Server::dispatch(const CqEvent& ev) {
  OpContext* c = ev.ctx;
  if (!c) return;
  switch (c->kind) {
    case CtxKind::Rx:
      if (nthreads_) {
        work_.emplace_back(reinterpret_cast<RxBuf*>(c), ev);
        queued_++;
        cv_.notify_one();
      } else {
        handle_rx(reinterpret_cast<RxBuf*>(c), ev);
      }
      break;
    case CtxKind::Tx: handle_tx(reinterpret_cast<TxBuf*>(c), ev); break;
    case CtxKind::Rma: handle_rma(reinterpret_cast<BulkSlot*>(c), ev); break;
  }
}

void Server::handler_loop() {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    cv_.wait(lk, [&] { return quit_ || !work_.empty(); });
    if (quit_) return;
    auto [rx, ev] = work_.front();
    work_.pop_front();
    handle_rx(rx, ev);
    queued_--;
  }
}

std::string Server::result_json(double elapsed, CpuTimes cpu) const {
  JsonWriter w;
  uint64_t ops = n_noop_ + n_bulk_read_ + n_bulk_write_;
  w.begin_object();
  w.kv("elapsed_s", elapsed);
  w.kv("ops", ops);
  w.kv("bytes", bytes_);
  w.kv("ops_per_sec", elapsed > 0 ? ops / elapsed : 0.0);
  w.kv("bytes_per_sec", elapsed > 0 ? bytes_ / elapsed : 0.0);
  w.key("requests").begin_object();
  w.kv("hello", n_hello_).kv("noop", n_noop_).kv("bulk_read", n_bulk_read_);
  w.kv("bulk_write", n_bulk_write_).kv("stat", n_stat_).kv("shutdown", n_shutdown_);
  w.kv("shutdown_denied", n_shutdown_denied_).kv("bulk_too_large", n_too_large_);
  w.kv("verify_failed", n_verify_fail_).kv("rma_failed", n_rma_fail_);
  w.kv("barrier", n_barrier_).kv("barrier_rejected", n_barrier_bad_);
  w.end_object();
  w.key("barriers").begin_array();  // start barriers released, in order
  for (auto& r : released_) {
    w.begin_object().kv("id", r.id).kv("clients", static_cast<uint64_t>(r.clients));
    w.kv("gather_s", r.gather_s).kv("release_s", r.release_s).end_object();
  }
  w.end_array();
  w.kv("barriers_pending", static_cast<uint64_t>(barriers_.size()));
  w.kv("connections", static_cast<uint64_t>(conns_.size()));
  w.key("dropped").begin_object();
  w.kv("total", dropped_total_);
  for (auto& [k, v] : dropped_) w.kv(k, v);
  w.end_object();
  w.kv("send_errors", n_tx_err_);
  w.kv("recv_errors", n_rx_err_);
  w.key("cpu").begin_object();
  w.kv("user_s", cpu.user_s).kv("sys_s", cpu.sys_s);
  w.kv("utilization", elapsed > 0 ? (cpu.user_s + cpu.sys_s) / elapsed : 0.0);
  w.end_object();
  w.kv("interval_s", o_.seconds("interval"));
  w.key("intervals").begin_array();
  for (auto& i : intervals_) {
    w.begin_object().kv("t_s", i.t_s).kv("ops", i.ops).kv("bytes", i.bytes);
    w.kv("cpu_utilization", i.cpu_util).end_object();
  }
  w.end_array();
  w.kv("intervals_dropped", intervals_dropped_);
  w.kv("stop_reason", stop_reason_);
  w.key("address_file").begin_object();
  w.kv("path", addr_path(o_.str("group-dir"), rank_));
  w.key("replaced_stale");
  if (published_.replaced) {
    const ServerAddress& p = published_.previous;
    w.begin_object().kv("pid", p.pid).kv("host", p.host).kv("why", published_.why).end_object();
  } else {
    w.null();
  }
  w.end_object();
  w.end_object();
  return w.str();
}

int Server::run() {
  rank_ = static_cast<int>(o_.integer("rank"));
  if (rank_ < 0) throw UsageError("--rank must be >= 0");
  const std::string dir = o_.str("group-dir");
  if (dir.empty()) throw UsageError("--group-dir is required");
  token_ = load_token(o_, wire::kMaxTokenLen);
  max_msg_ = o_.size("max-msg");
  if (max_msg_ < 1024 || max_msg_ > (64u << 20))
    throw UsageError("--max-msg must be between 1KiB and 64MiB");
  max_bulk_ = o_.size("max-size");
  int64_t nslots = o_.integer("bulk-slots"), depth = o_.integer("rx-depth");
  if (nslots < 1 || nslots > 1024) throw UsageError("--bulk-slots must be 1..1024");
  if (depth < 1 || depth > 65536) throw UsageError("--rx-depth must be 1..65536");
  if (max_bulk_ < 1) throw UsageError("--max-size must be at least 1 byte");
  double interval = o_.seconds("interval");
  if (interval < 0.001) throw UsageError("--interval must be at least 1ms");
  nthreads_ = static_cast<int>(o_.integer("handler-threads"));
  if (nthreads_ < 0 || nthreads_ > 256) throw UsageError("--handler-threads must be 0..256");
  bulk_bytes_ = max_bulk_ * static_cast<uint64_t>(nslots);
  uint64_t need = bulk_bytes_ + (depth * 2 + nslots + 16) * max_msg_;
  uint64_t avail = mem_available_bytes();
  if (avail && need > avail)
    throw UsageError("--max-size " + o_.str("max-size") + " x --bulk-slots " +
                     std::to_string(nslots) + " needs " + std::to_string(need >> 20) +
                     " MiB but only " + std::to_string(avail >> 20) + " MiB are available");

  EndpointOptions eo;
  eo.fabric = parse_fabric_spec(o_.str("fabric"));
  eo.domain = o_.str("domain");
  eo.bind_address = o_.str("address");
  eo.server = true;
  eo.progress = parse_progress(o_.str("progress"));
  eo.thread_safe = nthreads_ > 0;
  ep_ = std::make_unique<Endpoint>(eo);
  rep_.capture(*ep_);
  inject_ = ep_->inject_size();
  if (max_bulk_ > ep_->max_msg_size())
    throw UsageError("--max-size " + o_.str("max-size") + " exceeds the provider's largest transfer (" +
                     std::to_string(ep_->max_msg_size()) + " bytes)");

  // Buffers: receive ring, response pool, bulk slots. Page-aligned and
  // touched up front so no page fault lands inside a measurement.
  rx_mem_.assign(static_cast<size_t>(depth) * max_msg_, 0);
  size_t ntx = static_cast<size_t>(depth + nslots + 16);
  tx_mem_.assign(ntx * max_msg_, 0);
  bulk_mem_ = alloc_resident(bulk_bytes_);
  if (!bulk_mem_)
    throw EngineError(kExitFailure, "cannot allocate " + std::to_string(bulk_bytes_) + " bytes of bulk buffer");
  rx_mr_ = ep_->register_memory(rx_mem_.data(), rx_mem_.size(), false);
  tx_mr_ = ep_->register_memory(tx_mem_.data(), tx_mem_.size(), false);
  bulk_mr_ = ep_->register_memory(bulk_mem_, bulk_bytes_, true);
  rx_.resize(depth);
  for (int64_t i = 0; i < depth; i++) {
    rx_[i].ctx.kind = CtxKind::Rx;
    rx_[i].buf = rx_mem_.data() + i * max_msg_;
  }
  tx_.resize(ntx);
  for (size_t i = 0; i < ntx; i++) {
    tx_[i].ctx.kind = CtxKind::Tx;
    tx_[i].buf = tx_mem_.data() + i * max_msg_;
    tx_[i].next_free = free_tx_;
    free_tx_ = &tx_[i];
  }
  slots_.resize(nslots);
  for (int64_t i = 0; i < nslots; i++) {
    slots_[i].ctx.kind = CtxKind::Rma;
    slots_[i].buf = bulk_mem_ + i * max_bulk_;
  }
  for (auto& r : rx_) repost(&r);

  ServerAddress& a = addr_;
  a.rank = rank_;
  a.provider = ep_->provider();
  a.domain = ep_->domain_name();
  a.raw = ep_->local_address();
  a.ip = ip_of_raw(a.raw);
  a.interface = a.ip.empty() ? "" : interface_of(local_interfaces(), a.ip);
  a.text = ep_->address_string(a.raw);
  fill_owner(a);
  t_ready_ = now_ns();
  cpu_ready_ = process_cpu();
  published_ = write_address(dir, a);  // from here on clients may connect
  if (published_.replaced)
    std::fprintf(stderr, "rooftop-engine: replaced the stale %s of pid %lld on %s (%s)\n",
                 addr_path(dir, rank_).c_str(), static_cast<long long>(published_.previous.pid),
                 published_.previous.host.c_str(), published_.why.c_str());
  if (o_.flag("verbose"))
    std::fprintf(stderr, "rooftop-engine: server rank %d ready at %s (%s)\n", rank_, a.text.c_str(),
                 a.provider.c_str());

  const int64_t interval_ns = static_cast<int64_t>(interval * 1e9);
  int64_t next_tick = t_ready_ + interval_ns, last_activity = t_ready_;
  uint64_t tick_ops = 0, tick_bytes = 0;
  CpuTimes tick_cpu = cpu_ready_;
  CqEvent ev[32];
  uint32_t spins = 0;
  for (int i = 0; i < nthreads_; i++) handlers_.emplace_back([this] { handler_loop(); });
  std::unique_lock<std::mutex> lk(mu_, std::defer_lock);
  Lease lease(o_);
  while (!stop_) {
    size_t n = ep_->poll(ev, 32);
    int64_t now = 0;
    if (nthreads_) lk.lock();
    for (size_t i = 0; i < n; i++) dispatch(ev[i]);
    if (!backlog_.empty()) flush_backlog();
    if (!bulk_queue_.empty()) start_pending_bulk();
    bool outstanding = tx_inflight_ || rma_inflight_ || !backlog_.empty() ||
                       !bulk_queue_.empty() || queued_.load();
    if (nthreads_) lk.unlock();
    now = now_ns();
    if (n) last_activity = now;
    else ep_->idle(outstanding, now, last_activity, 100);
    if ((++spins & 1023) == 0 || now >= next_tick) {
      rep_.cores.sample();
      if (int sig = g_signal.load()) {
        if (nthreads_) lk.lock();
        stop_ = true;
        stop_reason_ = std::string("signal ") + (sig == SIGINT ? "SIGINT" : "SIGTERM");
        if (nthreads_) lk.unlock();
      }
      if (lease.lapsed(now)) {  // the campaign is gone: so is this server
        if (nthreads_) lk.lock();
        stop_ = true;
        stop_reason_ = lease.why();
        if (nthreads_) lk.unlock();
      }
      if (now >= next_tick) {
        CpuTimes c = process_cpu();
        if (nthreads_) lk.lock();
        uint64_t ops = n_noop_ + n_bulk_read_ + n_bulk_write_;
        uint64_t bytes_now = bytes_;
        if (nthreads_) lk.unlock();
        double dt = (now - next_tick + interval_ns) / 1e9;
        Interval iv{(now - t_ready_) / 1e9, ops - tick_ops, bytes_now - tick_bytes,
                    dt > 0 ? (c.user_s - tick_cpu.user_s + c.sys_s - tick_cpu.sys_s) / dt : 0};
        if (intervals_.size() < 100000) intervals_.push_back(iv);
        else intervals_dropped_++;
        tick_ops = ops;
        tick_bytes = bytes_now;
        tick_cpu = c;
        next_tick = now + interval_ns;
      }
    }
  }
  const int64_t t_stop = now_ns();
  CpuTimes cpu_stop = process_cpu();
  {
    std::lock_guard<std::mutex> g(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  for (auto& t : handlers_) t.join();
  // Orderly shutdown: withdraw the address, let queued responses (e.g. the
  // shutdown acknowledgement) go out, for at most a second.
  withdraw_address(dir, addr_);  // only if it is still ours
  int64_t deadline = now_ns() + 1'000'000'000LL;
  while ((tx_inflight_ || !backlog_.empty() || rma_inflight_) && now_ns() < deadline) {
    size_t n = ep_->poll(ev, 32);
    for (size_t i = 0; i < n; i++) {
      OpContext* c = ev[i].ctx;
      if (!c) continue;
      if (c->kind == CtxKind::Tx) handle_tx(reinterpret_cast<TxBuf*>(c), ev[i]);
      else if (c->kind == CtxKind::Rma) rma_inflight_--;
    }
    flush_backlog();
  }
  CpuTimes used{cpu_stop.user_s - cpu_ready_.user_s, cpu_stop.sys_s - cpu_ready_.sys_s};
  rep_.result_json = result_json((t_stop - t_ready_) / 1e9, used);
  rep_.complete = true;
  return kExitOk;
}

}  // namespace

int cmd_serve(int argc, char** argv) {
  Options o("serve",
            "Run one benchmark server process. It publishes its address in\n"
            "<group-dir>/<rank>.addr once its endpoint is ready, answers noop, bulk,\n"
            "stat, start-barrier and shutdown RPCs until SIGTERM/SIGINT or an authorised shutdown\n"
            "RPC, then prints one JSON document (see schema/engine-output.schema.json).\n"
            "Files it writes are private (umask 077); the token is never printed.",
            {
                {"fabric", OptKind::Str, "ofi+tcp", "libfabric provider: ofi+tcp, ofi+shm, ofi+sockets, ofi+verbs, ofi+cxi", ""},
                {"domain", OptKind::Str, "", "libfabric domain / network interface (e.g. lo, hsn0, mlx5_0, shm); one that does not exist or does not carry --fabric is refused (exit 2) with the list of those that do ('rooftop-engine domains')", ""},
                {"address", OptKind::Str, "", "IP address to serve on (its interface becomes the domain; with --domain it must be on it); refused (exit 2) if no local interface carries it; loopback if neither this nor --domain", ""},
                {"group-dir", OptKind::Str, "", "directory where <rank>.addr is published (required)", ""},
                {"rank", OptKind::Int, "0", "this server's rank in the group", ""},
                {"rank-from-env", OptKind::Bool, "false", "add the launcher's rank (OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK or SLURM_PROCID) to --rank; {rank} in --output becomes the rank", ""},
                {"progress", OptKind::Choice, "spindown", "completion progress: busy polls; block sleeps on the CQ fd; adaptive sleeps when idle; spindown[:MS] keeps polling MS ms (default 10) after the last completion", "busy|block|adaptive|spindown*"},
                token_file_option("read the shutdown token from this file's first line: a shutdown RPC is accepted only with it (no token: never)"),
                {"max-size", OptKind::Size, "16MiB", "largest bulk transfer served (registered per slot)", ""},
                {"handler-threads", OptKind::Int, "0", "threads running RPC handlers; 0: all in the single progress loop (the paper's single-threaded daemon)", ""},
                {"bulk-slots", OptKind::Int, "4", "bulk transfers in flight at once; more wait in a queue", ""},
                {"rx-depth", OptKind::Int, "64", "receive buffers posted", ""},
                {"max-msg", OptKind::Size, "64KiB", "largest request/response message (with padding)", ""},
                {"interval", OptKind::Seconds, "100ms", "period of the ops/CPU series in the result", ""},
                {"cpus", OptKind::Str, "", "bind this process to these cpus (e.g. 0 or 0-3); default: inherited", ""},
                {"output", OptKind::Str, "-", "write the JSON document here instead of stdout", ""},
                {"verbose", OptKind::Bool, "false", "say when ready on stderr", ""},
                lease_options()[0], lease_options()[1],
            });
  retire_token_option(o);
  return run_command(o, "server", argc, argv, [&](Report& rep) {
    watch_lease(o, [](const std::string& why) {
      std::fprintf(stderr, "rooftop-engine: %s\n", why.c_str());
      g_signal.store(SIGTERM);
    });
    return Server(o, rep).run();
  });
}

}  // namespace rooftop
