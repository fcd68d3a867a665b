// rooftop-engine serve: a single-threaded event loop answering the requests
// of the operation table (ops/: noop, bulk read and write, ...), stat,
// start-barrier and shutdown RPCs. It names no operation: a request goes to
// its operation's handler, bulk transfers run in RMA slots through the
// operation's hooks, and the counters come from counters.hpp.
//
// Storage operations (put, get, metadata; serve --storage-dir) run their
// io hook on an I/O thread, never on the progress thread: a storage call
// blocks for as long as the device takes (an O_SYNC write: milliseconds),
// and the progress thread must keep answering the other clients,
// completing RMA and sending responses meanwhile (a Mochi provider likewise
// hands blocking calls to a separate Argobots pool). While storage calls
// are outstanding and nothing else completes, the progress thread yields,
// then sleeps on the I/O threads' eventfd (wait_for_io). A server bound to
// one CPU runs the calls inline by default (--io-threads -1, auto): there
// the thread's hand-offs cost more than the overlap gains (a 1 MiB durable
// put: 0.64x of the storage ceiling with a thread, 0.87x inline;
// benchmarks/put_vs_parts.py). --io-threads 0 always runs them inline, as
// the local mode (`rooftop-engine storage`) does. With --io-async, an
// inline put's O_DIRECT write is submitted with Linux AIO (aio.hpp) rather
// than waited for: the loop copies the next put off the network while the
// device writes this one. One write is in flight at a time (the others
// wait in aio_todo_), so the device sees the queue depth of the local
// mode's ceiling. Not the default: the kernel finishes an asynchronous
// O_DSYNC or first write (the journal, the extent conversion) in a kworker
// on the core that took the device's interrupt, and a process polling that
// core delays it by a scheduler slice (a 1 MiB put at 0.21x the storage
// ceiling, against 0.60x synchronous; benchmarks/RESULTS.md).
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
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
#include "cm_nudge.hpp"
#include "commands.hpp"
#include "common_options.hpp"
#include "counters.hpp"
#include "fabric.hpp"
#include "lease.hpp"
#include "nic.hpp"
#include "ops/table.hpp"
#include "report.hpp"
#include "storage.hpp"
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
struct BulkSlot {
  OpContext ctx;
  uint8_t* buf;
  ops::RmaJob job;
  bool busy = false;
};
// A storage call for the I/O thread: a slot's (put, get) or none (metadata).
struct IoTask {
  ops::RmaJob job;
  BulkSlot* slot;
  storage::Outcome out;
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

class Server : public ops::ServerContext {
 public:
  Server(Options& o, Report& rep) : o_(o), rep_(rep) {}
  ~Server() override { stop_io(); }  // I/O threads joined on every path (an error after they started)
  int run();

  // What operation handlers may do (ops::ServerContext).
  void respond(uint64_t dest, ops::EncodeRef encode) override;
  void served(const ops::Op& op, uint64_t bytes) override { counters_.served(op, bytes); }
  void count(Counter c) override { counters_[c]++; }
  uint64_t max_bulk() const override { return max_bulk_; }
  size_t max_msg() const override { return max_msg_; }
  void queue_rma(const ops::RmaJob& job) override {
    bulk_queue_.push_back(job);
    start_pending_bulk();
  }
  storage::Store* store() override { return store_.get(); }
  void queue_io(const ops::RmaJob& job) override { submit_io({job, nullptr, {}}); }
  void refuse_storage(const ops::Request& r, const std::string& why) override;
  void storage_error(const std::string& why);

 private:
  // run(), step by step.
  void configure();
  void configure_storage();
  void start_async();
  void open_endpoint();
  void allocate();
  void publish();
  void loop();
  void tick(int64_t now);
  void drain();

  void handle_rx(RxBuf* rx, const CqEvent& ev);
  void handle_hello(RxBuf* rx, const wire::Message& m);
  void handle_control(RxBuf* rx, const wire::Message& m, fi_addr_t dest);
  void handle_stat(const wire::Message& m, fi_addr_t dest);
  void handle_shutdown(RxBuf* rx, const wire::Message& m, fi_addr_t dest);
  void handle_tx(TxBuf* tx, const CqEvent& ev);
  void handle_rma(BulkSlot* s, const CqEvent& ev);
  void repost(RxBuf* rx);
  void post_tx(TxBuf* tx, size_t len, fi_addr_t dest);
  void flush_backlog();
  void start_pending_bulk();
  bool start_bulk(BulkSlot* s);
  bool post_rma(BulkSlot* s);
  void finish_bulk(BulkSlot* s, wire::Status st);
  // Storage calls: to the I/O thread (or inline), and back.
  void submit_io(IoTask t);
  void io_loop();
  void collect_io();
  void wait_for_io(int64_t now, int64_t& since);
  void complete_io(IoTask& t);
  void start_async_io();
  void collect_async_io();
  void stop_io();
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
  CmNudge nudge_;  // out of a connection storm (cm_nudge.hpp)
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
  std::deque<ops::RmaJob> bulk_queue_;
  std::map<std::string, fi_addr_t> conn_by_addr_;
  std::set<uint64_t> conns_;
  size_t max_msg_ = 0;
  size_t inject_ = 0;  // responses up to this size go out with fi_inject
  uint64_t max_bulk_ = 0;
  int64_t nslots_ = 0, depth_ = 0;  // --bulk-slots, --rx-depth
  double interval_s_ = 0;
  std::string dir_;
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
  ServerCounters counters_;
  std::map<std::string, uint64_t> dropped_;
  uint64_t dropped_total_ = 0;
  // The request being handled (under mu_ with --handler-threads): decode
  // resets it, so one is kept rather than constructed per message.
  wire::Message rx_msg_;
  const ops::Op* last_op_ = nullptr;  // the operation of the last request served
  int64_t t_ready_ = 0;
  CpuTimes cpu_ready_;
  std::vector<Interval> intervals_;
  uint64_t intervals_dropped_ = 0;
  // The --interval series: where the current interval began.
  int64_t interval_ns_ = 0, next_tick_ = 0;
  uint64_t tick_ops_ = 0, tick_bytes_ = 0;
  CpuTimes tick_cpu_;
  std::map<uint64_t, BarrierState> barriers_;
  std::vector<BarrierRelease> released_;
  ServerAddress addr_;
  Published published_;
  // Storage (--storage-dir) and its I/O threads (--io-threads).
  std::unique_ptr<storage::Store> store_;
  int io_threads_ = 1;
  std::vector<std::thread> io_workers_;
  int io_efd_ = -1;
  std::string io_why_;  // how io_threads_ was chosen (result.io_threads_why)  // written by an I/O thread when it completes a call: wait_for_io sleeps on it
  std::mutex io_mu_;
  std::condition_variable io_cv_;
  std::deque<IoTask> io_todo_, io_done_;
  std::atomic<size_t> io_pending_{0}, io_ready_{0};
  bool io_quit_ = false;
  std::deque<BulkSlot*> rma_retry_;  // read from storage, their RMA not yet posted (EAGAIN)
  std::set<std::string> io_errors_;  // storage errors reported (each once)
  // Inline asynchronous puts: waiting for the device, and the one in flight.
  std::deque<IoTask> aio_todo_;
  std::vector<std::pair<uint64_t, IoTask>> aio_flight_;
  uint64_t aio_tag_ = 0;
};

void Server::answer_barrier(const BarrierWaiter& w, wire::Status st, uint64_t n) {
  respond(w.dest, [&](uint8_t* b, size_t cap) {
    return wire::encode_resp(b, cap, wire::Type::Barrier, w.req, w.conn, st, n, 0);
  });
}

void Server::handle_barrier(const wire::Message& m, fi_addr_t dest) {
  counters_[Counter::barrier]++;
  const BarrierWaiter me{dest, m.h.req_id, m.h.conn_id, m.client_rank};
  BarrierState& b = barriers_[m.barrier_id];
  if (b.waiting.empty()) {
    b.clients = m.barrier_clients;
    b.first_ns = now_ns();
  }
  bool twice = false;
  for (auto& w : b.waiting) twice |= w.rank == m.client_rank;
  if (m.barrier_clients != b.clients || twice) {  // a client of another measurement, or a rank twice
    counters_[Counter::barrier_rejected]++;
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
      counters_[Counter::send_errors]++;
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
    counters_[Counter::send_errors]++;
    error("fi_send failed: " + fi_error_text(static_cast<int>(rc)));
  }
  tx->next_free = free_tx_;
  free_tx_ = tx;
}

void Server::respond(uint64_t dest, ops::EncodeRef encode) {
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
    counters_[Counter::send_errors]++;
    error("fi_send failed: " + fi_error_text(static_cast<int>(rc)));
  }
}

// A get reads its storage first (the I/O thread), then posts its RMA.
bool Server::start_bulk(BulkSlot* s) {
  if (s->job.op->server.io_when == ops::IoWhen::BeforeRma) {
    s->busy = true;
    submit_io({s->job, s, {}});
    return true;
  }
  return post_rma(s);
}

bool Server::post_rma(BulkSlot* s) {
  const ops::RmaJob& j = s->job;
  const ops::ServerHooks& op = j.op->server;
  if (op.before_rma) op.before_rma(j, s->buf);
  ssize_t rc = op.rma == ops::Rma::Write
                   ? ep_->post_write(s->buf, j.size, bulk_mr_.desc, j.peer, j.raddr, j.rkey, &s->ctx)
                   : ep_->post_read(s->buf, j.size, bulk_mr_.desc, j.peer, j.raddr, j.rkey, &s->ctx);
  if (rc == -FI_EAGAIN) return false;
  s->busy = true;
  if (rc != 0) {
    error(std::string("RMA ") + ops::rma_name(op.rma) + " failed to start: " +
          fi_error_text(static_cast<int>(rc)));
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
  const ops::RmaJob j = s->job;
  s->busy = false;
  if (st == wire::Status::Ok) {
    counters_.served(*j.op, j.size);
  } else if (st == wire::Status::VerifyFailed) {
    counters_[Counter::verify_failed]++;
  } else if (st == wire::Status::RmaFailed) {
    counters_[Counter::rma_failed]++;
  }
  size_t total = std::min<size_t>(j.resp_len, max_msg_);
  respond(j.peer, [&](uint8_t* b, size_t cap) {
    return wire::encode_resp(b, cap, j.op->wire_type, j.req_id, j.conn, st,
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
  const ops::ServerHooks& op = s->job.op->server;
  const wire::Status st = op.after_rma ? op.after_rma(s->job, s->buf) : wire::Status::Ok;
  if (st == wire::Status::Ok && op.io_when == ops::IoWhen::AfterRma) return submit_io({s->job, s, {}});
  finish_bulk(s, st);
}

// A storage error, reported once: in the document and at once on stderr,
// where the campaign reads it to name the cause in its clients' samples
// (they only see storage_error).
void Server::storage_error(const std::string& why) {
  if (!io_errors_.insert(why).second) return;
  error(why);
  std::fprintf(stderr, "rooftop-engine: storage error: %s\n", why.c_str());
}

void Server::refuse_storage(const ops::Request& r, const std::string& why) {
  counters_[Counter::storage_failed]++;
  storage_error(why);
  respond(r.peer, [&](uint8_t* b, size_t cap) {
    return wire::encode_resp(b, cap, r.op.wire_type, r.m.h.req_id, r.m.h.conn_id, wire::Status::StorageError, 0,
                             r.resp_total);
  });
}

void Server::submit_io(IoTask t) {
  io_pending_++;
  if (io_threads_ == 0 && t.slot && t.job.op->server.io_async && store_->async()) {
    aio_todo_.push_back(t);
    return start_async_io();
  }
  if (io_threads_ == 0) {
    t.out = t.job.op->server.io(*store_, t.job, t.slot ? t.slot->buf : nullptr);
    return complete_io(t);
  }
  {
    std::lock_guard<std::mutex> g(io_mu_);
    io_todo_.push_back(t);
  }
  io_cv_.notify_one();
}

// Nothing completed and only the I/O threads have work: yield for the first
// 20 us (a buffered call finishes within that), then sleep on the I/O
// threads' eventfd for at most 100 us (a request that arrives meanwhile
// waits no longer). Spinning, even with yields, starves the I/O thread and
// the kernel's own workers (a loop device's) when they share this core: a
// 1 MiB durable put ran at a third of the storage ceiling on a server bound
// to one core (benchmarks/put_vs_parts.py).
void Server::wait_for_io(int64_t now, int64_t& since) {
  if (since == 0) since = now;
  const int efd = io_efd_ >= 0 ? io_efd_ : (store_ ? store_->async_event_fd() : -1);
  if (now - since < 20'000 || efd < 0) return std::this_thread::yield();
  pollfd p{efd, POLLIN, 0};
  const timespec limit{0, 100'000};
  if (ppoll(&p, 1, &limit, nullptr) > 0) {
    uint64_t v;
    if (read(efd, &v, sizeof v) < 0) { /* EAGAIN: another reader drained it */ }
  }
}

// The next waiting put's write to the device, if none is in flight; one
// refused at once (an error) is answered now and the next one tried.
void Server::start_async_io() {
  while (aio_flight_.empty() && !aio_todo_.empty()) {
    IoTask t = aio_todo_.front();
    aio_todo_.pop_front();
    const uint64_t tag = ++aio_tag_;
    t.out = t.job.op->server.io_async(*store_, t.job, t.slot->buf, tag);
    if (t.out.pending) aio_flight_.emplace_back(tag, t);
    else complete_io(t);
  }
}

// On the progress thread: the asynchronous writes that completed.
void Server::collect_async_io() {
  std::vector<std::pair<uint64_t, storage::Outcome>> done;
  store_->reap_async(done);
  for (auto& [tag, out] : done) {
    auto it = std::find_if(aio_flight_.begin(), aio_flight_.end(), [&](auto& e) { return e.first == tag; });
    if (it == aio_flight_.end()) continue;
    IoTask t = it->second;
    aio_flight_.erase(it);
    t.out = out;
    complete_io(t);
  }
  start_async_io();
}

void Server::io_loop() {
  std::unique_lock<std::mutex> lk(io_mu_);
  for (;;) {
    io_cv_.wait(lk, [&] { return io_quit_ || !io_todo_.empty(); });
    if (io_quit_) return;
    IoTask t = io_todo_.front();
    io_todo_.pop_front();
    lk.unlock();
    t.out = t.job.op->server.io(*store_, t.job, t.slot ? t.slot->buf : nullptr);
    lk.lock();
    io_done_.push_back(std::move(t));
    io_ready_++;
    if (io_efd_ >= 0) {
      uint64_t one = 1;
      if (write(io_efd_, &one, sizeof one) < 0) { /* the counter is full: a wake-up is pending anyway */ }
    }
  }
}

// On the progress thread: the storage calls the I/O threads completed.
void Server::collect_io() {
  std::deque<IoTask> done;
  {
    std::lock_guard<std::mutex> g(io_mu_);
    done.swap(io_done_);
    io_ready_ = 0;
  }
  for (auto& t : done) complete_io(t);
}

// A storage call completed: a get posts its RMA, a put and a metadata
// operation are answered.
void Server::complete_io(IoTask& t) {
  io_pending_--;
  const wire::Status st = t.out.status;
  if (!t.out.error.empty()) storage_error(t.out.error);
  if (st != wire::Status::Ok && st != wire::Status::VerifyFailed && !t.slot) counters_[Counter::storage_failed]++;
  if (t.slot) {
    if (st == wire::Status::Ok && t.job.op->server.io_when == ops::IoWhen::BeforeRma) {
      if (!post_rma(t.slot)) rma_retry_.push_back(t.slot);
      return;
    }
    if (st != wire::Status::Ok && st != wire::Status::VerifyFailed) counters_[Counter::storage_failed]++;
    return finish_bulk(t.slot, st);
  }
  if (st == wire::Status::Ok) counters_.served(*t.job.op, 0);
  const ops::RmaJob& j = t.job;
  respond(j.peer, [&](uint8_t* b, size_t cap) {
    return wire::encode_resp(b, cap, j.op->wire_type, j.req_id, j.conn, st, t.out.count,
                             std::min<size_t>(j.resp_len, max_msg_));
  });
}

void Server::stop_io() {
  // Writes in flight finish (their buffers are the slots'), counted, not answered.
  std::vector<std::pair<uint64_t, storage::Outcome>> done;
  for (int64_t deadline = now_ns() + 5'000'000'000LL; store_ && store_->async_in_flight() && now_ns() < deadline;)
    store_->reap_async(done, 100'000'000);
  aio_flight_.clear();
  aio_todo_.clear();
  {
    std::lock_guard<std::mutex> g(io_mu_);
    io_quit_ = true;
  }
  io_cv_.notify_all();
  for (auto& t : io_workers_) t.join();
  io_workers_.clear();
  if (io_efd_ >= 0) close(io_efd_);
  io_efd_ = -1;
}

void Server::handle_tx(TxBuf* tx, const CqEvent& ev) {
  tx_inflight_--;
  if (ev.err) {
    counters_[Counter::send_errors]++;
    error("response send failed: " + ev.err_text);
  }
  tx->next_free = free_tx_;
  free_tx_ = tx;
}

void Server::handle_rx(RxBuf* rx, const CqEvent& ev) {
  if (ev.err) {
    if (ev.err != FI_ECANCELED) {
      counters_[Counter::recv_errors]++;
      error("receive failed: " + ev.err_text);
    }
    if (!stop_) repost(rx);
    return;
  }
  if (ev.len == 0) {  // a zero-byte message: this server's own nudge (cm_nudge.hpp)
    nudge_.received();
    repost(rx);
    return;
  }
  wire::Message& m = rx_msg_;
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
  if (m.type == wire::Type::Hello) return handle_hello(rx, m);
  const uint64_t conn = m.h.conn_id;
  if (!conns_.count(conn)) {
    drop("unknown_connection");
    repost(rx);
    return;
  }
  const fi_addr_t dest = conn;
  // The operation of the last request first: clients repeat theirs.
  const ops::Op* op = last_op_ && ops::is_request_of(*last_op_, m) ? last_op_ : ops::for_request(m);
  if (op) {
    last_op_ = op;
    // The response (or the transfer) first: posting the buffer again is
    // done while it is on its way, off the round trip.
    op->server.serve(*this, {*op, m, dest, std::min<size_t>(m.h.resp_len, max_msg_)});
    repost(rx);
    return;
  }
  handle_control(rx, m, dest);
}

void Server::handle_hello(RxBuf* rx, const wire::Message& m) {
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
  counters_[Counter::hello]++;
  repost(rx);
  const uint64_t req = m.h.req_id;
  respond(fa, [&](uint8_t* b, size_t cap) {
    return wire::encode_hello_resp(b, cap, req, fa, max_bulk_, static_cast<uint32_t>(max_msg_),
                                   static_cast<uint32_t>(rank_));
  });
}

// The requests that are no operation of the table.
void Server::handle_control(RxBuf* rx, const wire::Message& m, fi_addr_t dest) {
  switch (m.type) {
    case wire::Type::Stat:
      repost(rx);
      handle_stat(m, dest);
      return;
    case wire::Type::Barrier:
      repost(rx);
      handle_barrier(m, dest);
      return;
    case wire::Type::Shutdown:
      handle_shutdown(rx, m, dest);
      return;
    default:
      drop("bad_type");
      repost(rx);
      return;
  }
}

void Server::handle_stat(const wire::Message& m, fi_addr_t dest) {
  counters_[Counter::stat]++;
  CpuTimes c = process_cpu();
  wire::StatBody sb = counters_.stat(dropped_total_, c.user_s - cpu_ready_.user_s, c.sys_s - cpu_ready_.sys_s,
                                     (now_ns() - t_ready_) / 1e9);
  respond(dest, [&](uint8_t* b, size_t cap) {
    return wire::encode_stat_resp(b, cap, m.h.req_id, m.h.conn_id, sb);
  });
}

void Server::handle_shutdown(RxBuf* rx, const wire::Message& m, fi_addr_t dest) {
  bool ok = !token_.empty() && m.token == token_;  // before the repost: the token is in rx
  repost(rx);
  counters_[ok ? Counter::shutdown : Counter::shutdown_denied]++;
  respond(dest, [&](uint8_t* b, size_t cap) {
    return wire::encode_resp(b, cap, wire::Type::Shutdown, m.h.req_id, m.h.conn_id,
                             ok ? wire::Status::Ok : wire::Status::Denied, 0, 0);
  });
  if (ok) {
    stop_ = true;
    stop_reason_ = "shutdown rpc";
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
    case CtxKind::Nudge: nudge_.sent(ev); break;
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
  const uint64_t ops = counters_.total_ops(), bytes = counters_.bytes;
  w.begin_object();
  w.kv("elapsed_s", elapsed);
  w.kv("ops", ops);
  w.kv("bytes", bytes);
  w.kv("ops_per_sec", elapsed > 0 ? ops / elapsed : 0.0);
  w.kv("bytes_per_sec", elapsed > 0 ? bytes / elapsed : 0.0);
  w.key("requests").begin_object();
  counters_.write_requests(w);
  w.end_object();
  w.key("barriers").begin_array();  // start barriers released, in order
  for (auto& r : released_) {
    w.begin_object().kv("id", r.id).kv("clients", static_cast<uint64_t>(r.clients));
    w.kv("gather_s", r.gather_s).kv("release_s", r.release_s).end_object();
  }
  w.end_array();
  w.kv("barriers_pending", static_cast<uint64_t>(barriers_.size()));
  w.kv("connections", static_cast<uint64_t>(conns_.size()));
  nudge_.write(w);
  w.key("dropped").begin_object();
  w.kv("total", dropped_total_);
  for (auto& [k, v] : dropped_) w.kv(k, v);
  w.end_object();
  counters_.write_errors(w);  // send_errors, recv_errors
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
  w.key("storage");
  if (store_) store_->write_json(w);
  else w.null();
  w.kv("io_threads", static_cast<int64_t>(io_threads_)).kv("io_threads_why", io_why_);
  w.kv("bulk_page_bytes", bulk_mem_ ? backing_page_bytes(bulk_mem_) : 0);  // what --buffer-pages got
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

// Options, endpoint, buffers, the published address, the event loop, then
// an orderly shutdown and the result.
int Server::run() {
  configure();
  open_endpoint();
  allocate();
  publish();
  loop();
  const int64_t t_stop = now_ns();
  CpuTimes cpu_stop = process_cpu();
  drain();
  CpuTimes used{cpu_stop.user_s - cpu_ready_.user_s, cpu_stop.sys_s - cpu_ready_.sys_s};
  rep_.result_json = result_json((t_stop - t_ready_) / 1e9, used);
  rep_.complete = true;
  return kExitOk;
}

void Server::configure() {
  rank_ = static_cast<int>(o_.integer("rank"));
  if (rank_ < 0) throw UsageError("--rank must be >= 0");
  dir_ = o_.str("group-dir");
  if (dir_.empty()) throw UsageError("--group-dir is required");
  token_ = load_token(o_, wire::kMaxTokenLen);
  max_msg_ = o_.size("max-msg");
  if (max_msg_ < 1024 || max_msg_ > (64u << 20))
    throw UsageError("--max-msg must be between 1KiB and 64MiB");
  max_bulk_ = o_.size("max-size");
  nslots_ = o_.integer("bulk-slots");
  depth_ = o_.integer("rx-depth");
  if (nslots_ < 1 || nslots_ > 1024) throw UsageError("--bulk-slots must be 1..1024");
  if (depth_ < 1 || depth_ > 65536) throw UsageError("--rx-depth must be 1..65536");
  if (max_bulk_ < 1) throw UsageError("--max-size must be at least 1 byte");
  interval_s_ = o_.seconds("interval");
  if (interval_s_ < 0.001) throw UsageError("--interval must be at least 1ms");
  nthreads_ = static_cast<int>(o_.integer("handler-threads"));
  if (nthreads_ < 0 || nthreads_ > 256) throw UsageError("--handler-threads must be 0..256");
  configure_storage();
  bulk_bytes_ = max_bulk_ * static_cast<uint64_t>(nslots_);
  uint64_t need = bulk_bytes_ + (depth_ * 2 + nslots_ + 16) * max_msg_;
  uint64_t avail = mem_available_bytes();
  if (avail && need > avail)
    throw UsageError("--max-size " + o_.str("max-size") + " x --bulk-slots " +
                     std::to_string(nslots_) + " needs " + std::to_string(need >> 20) +
                     " MiB but only " + std::to_string(avail >> 20) + " MiB are available");
}

// --storage-dir: the store opens (a knob its file system refuses is an
// error now, before the address is published) and its I/O threads start.
void Server::configure_storage() {
  const int64_t io = o_.integer("io-threads");
  if (io < -1 || io > 64) throw UsageError("--io-threads must be -1 (auto) or 0..64");
  io_threads_ = static_cast<int>(io);
  io_why_ = "--io-threads " + std::to_string(io);
  if (io == -1 && o_.flag("io-async")) {  // asynchronous writes are the inline calls'
    io_threads_ = 0;
    io_why_ = "auto with --io-async: the calls run inline";
  } else if (io == -1) {  // auto: an I/O thread on the progress thread's only core costs more than it overlaps
    const size_t cpus = affinity_cpus().size();
    io_threads_ = cpus == 1 ? 0 : 1;
    io_why_ = cpus == 1 ? "auto: bound to one CPU, the calls run inline (an I/O thread would share its core)"
                        : "auto: " + std::to_string(cpus) + " CPUs, one I/O thread";
  }
  if (o_.str("storage-dir").empty()) {
    if (o_.flag("io-async")) throw UsageError("--io-async needs --storage-dir (it is about the puts' writes)");
    return;
  }
  storage::Config c = storage::configure(o_, rank_);
  if ((c.open_flags & O_DIRECT) && max_bulk_ % storage::kBlock)
    throw UsageError("--max-size must be a multiple of 4KiB with --io-mode " + c.io_mode +
                     " (O_DIRECT needs aligned buffers)");
  store_ = std::make_unique<storage::Store>(std::move(c));
  if (o_.flag("io-async")) start_async();
  if (io_threads_ > 0) io_efd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);  // -1: yields only
  for (int i = 0; i < io_threads_; i++) io_workers_.emplace_back([this] { io_loop(); });
}

// --io-async: inline O_DIRECT puts are written asynchronously (Linux AIO);
// refused where they would not be (io_threads_why says what ran).
void Server::start_async() {
  if (io_threads_ != 0)
    throw UsageError("--io-async: the storage calls run on " + std::to_string(io_threads_) +
                     " I/O thread(s) (" + io_why_ + "); asynchronous writes are for inline calls: --io-threads 0 or -1");
  if (!store_->async_possible())
    throw UsageError("--io-async needs --io-mode with direct (a buffered write completes inside the submission), "
                     "--allocation preallocate or wrap (an append has no fixed offset) and --fsync-every 0");
  try {
    store_->start_async(static_cast<unsigned>(nslots_));
  } catch (const std::runtime_error& e) {
    throw UsageError(std::string("--io-async: the kernel refused an AIO context (") + e.what() +
                     "; see fs.aio-nr and fs.aio-max-nr)");
  }
  io_why_ += "; --io-async: O_DIRECT puts are submitted with Linux AIO, one write in flight";
}

void Server::open_endpoint() {
  EndpointOptions eo;
  eo.fabric = parse_fabric_spec(o_.str("fabric"));
  eo.domain = o_.str("domain");
  eo.bind_address = o_.str("address");
  eo.server = true;
  eo.progress = parse_progress(o_.str("progress"));
  eo.thread_safe = nthreads_ > 0;
  set_nic_options(o_, eo);
  ep_ = std::make_unique<Endpoint>(eo);
  rep_.capture(*ep_);
  inject_ = ep_->inject_size();
  if (max_bulk_ > ep_->max_msg_size())
    throw UsageError("--max-size " + o_.str("max-size") + " exceeds the provider's largest transfer (" +
                     std::to_string(ep_->max_msg_size()) + " bytes)");
}

// Buffers: receive ring, response pool, bulk slots. Page-aligned and
// touched up front so no page fault lands inside a measurement.
void Server::allocate() {
  rx_mem_.assign(static_cast<size_t>(depth_) * max_msg_, 0);
  size_t ntx = static_cast<size_t>(depth_ + nslots_ + 16);
  tx_mem_.assign(ntx * max_msg_, 0);
  const Pages pages = parse_pages(o_.str("buffer-pages"));
  bulk_mem_ = alloc_resident(bulk_bytes_, pages);
  if (!bulk_mem_ && pages == Pages::Huge)  // asked for and not had: an error, not base pages
    throw UsageError(alloc_error(bulk_bytes_, pages, "bulk buffer (--max-size x --bulk-slots)"));
  if (!bulk_mem_) throw EngineError(kExitFailure, alloc_error(bulk_bytes_, pages, "bulk buffer"));
  rx_mr_ = ep_->register_memory(rx_mem_.data(), rx_mem_.size(), false);
  tx_mr_ = ep_->register_memory(tx_mem_.data(), tx_mem_.size(), false);
  bulk_mr_ = ep_->register_memory(bulk_mem_, bulk_bytes_, true);
  rx_.resize(depth_);
  for (int64_t i = 0; i < depth_; i++) {
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
  slots_.resize(nslots_);
  for (int64_t i = 0; i < nslots_; i++) {
    slots_[i].ctx.kind = CtxKind::Rma;
    slots_[i].buf = bulk_mem_ + i * max_bulk_;
  }
  for (auto& r : rx_) repost(&r);
}

// Ready: from here on clients may connect.
void Server::publish() {
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
  published_ = write_address(dir_, a);
  if (published_.replaced)
    std::fprintf(stderr, "rooftop-engine: replaced the stale %s of pid %lld on %s (%s)\n",
                 addr_path(dir_, rank_).c_str(), static_cast<long long>(published_.previous.pid),
                 published_.previous.host.c_str(), published_.why.c_str());
  if (o_.flag("verbose"))
    std::fprintf(stderr, "rooftop-engine: server rank %d ready at %s (%s)\n", rank_, a.text.c_str(),
                 a.provider.c_str());
  const ProgressMode mode = ep_->progress().mode;
  nudge_.start(*ep_, a.raw,
               a.provider.find("ofi_rxm") != std::string::npos &&
                   (mode == ProgressMode::Busy || mode == ProgressMode::Spindown));
}

// Until a signal, a lapsed lease or an authorised shutdown RPC. With
// --handler-threads the server's state is touched under mu_ only.
//
// The clock is read every kLook-th poll, after a sleep and while waiting
// for storage calls, never per request: nothing it answers needs a time
// stamp, and a clock read costs about as much as an empty poll here (a VM's
// clock_gettime), so reading it after every poll delayed noticing the next
// request. Completions since the last read count as activity at the next
// (spindown: the last activity is known to within kLook polls). An empty
// poll while nothing waits (no queued response, transfer or storage call;
// no handler threads) goes straight to the next poll, but for every
// kLook-th one: the full round of checks is for polls that found work.
void Server::loop() {
  constexpr uint32_t kLook = 64;
  interval_ns_ = static_cast<int64_t>(interval_s_ * 1e9);
  next_tick_ = t_ready_ + interval_ns_;
  tick_cpu_ = cpu_ready_;
  int64_t now = t_ready_, last_activity = t_ready_;
  bool active = false, slept = false;
  CqEvent ev[32];
  uint32_t spins = 0, watched = 0;
  for (int i = 0; i < nthreads_; i++) handlers_.emplace_back([this] { handler_loop(); });
  std::unique_lock<std::mutex> lk(mu_, std::defer_lock);
  auto stop = [&](const std::string& why) {
    if (nthreads_) lk.lock();
    stop_ = true;
    stop_reason_ = why;
    if (nthreads_) lk.unlock();
  };
  Lease lease(o_);
  int64_t io_wait_since = 0;  // when the loop began to wait for the I/O threads only
  const ProgressMode mode = ep_->progress().mode;
  const bool spins_quietly = nthreads_ == 0 && (mode == ProgressMode::Busy || mode == ProgressMode::Spindown);
  bool quiet = false;  // the last full round left nothing waiting
  while (!stop_) {
    const size_t n = ep_->poll(ev, 32);
    const bool round = ++spins % kLook == 0;  // every kLook-th poll: the clock, the checks
    if (n == 0 && quiet && !round) continue;
    if (nthreads_) lk.lock();
    for (size_t i = 0; i < n; i++) dispatch(ev[i]);
    if (!backlog_.empty()) flush_backlog();
    if (io_ready_.load()) collect_io();
    if (!aio_flight_.empty()) collect_async_io();
    while (!rma_retry_.empty() && post_rma(rma_retry_.front())) rma_retry_.pop_front();
    if (!bulk_queue_.empty()) start_pending_bulk();
    bool outstanding = tx_inflight_ || rma_inflight_ || !backlog_.empty() ||
                       !bulk_queue_.empty() || queued_.load();
    const bool io_waiting = io_pending_.load() > 0;
    if (nthreads_) lk.unlock();
    const bool look = round || slept || io_waiting;
    active = active || n;
    if (look) {
      now = now_ns();
      if (active) last_activity = now;
      active = false;
    }
    if (n || !io_waiting) io_wait_since = 0;
    slept = false;
    if (n) {
    } else {
      nudge_.check(now);  // connections queued, not accepted: accept them at once (cm_nudge.hpp)
      if (io_waiting) wait_for_io(now, io_wait_since);
      else slept = ep_->idle(outstanding || active || nudge_.in_flight(), now, last_activity, 100);
    }
    quiet = spins_quietly && !slept && !io_waiting && backlog_.empty() && bulk_queue_.empty() &&
            rma_retry_.empty() && aio_flight_.empty() && io_ready_.load() == 0;
    // A signal is looked for at every look (an atomic load): a SIGTERM from
    // the campaign (its node agent) ends the placement's stop, and waiting
    // for the 16th look or the next tick added ~10 ms to every stop.
    if (look) {
      if (int sig = g_signal.load()) stop(std::string("signal ") + (sig == SIGINT ? "SIGINT" : "SIGTERM"));
    }
    if (look && (++watched % 16 == 0 || now >= next_tick_)) {
      rep_.cores.sample();
      if (lease.lapsed(now)) stop(lease.why());  // the campaign is gone: so is this server
      if (now >= next_tick_) {
        if (nthreads_) lk.lock();
        tick(now);
        if (nthreads_) lk.unlock();
      }
    }
  }
}

// One entry of the --interval series.
void Server::tick(int64_t now) {
  CpuTimes c = process_cpu();
  uint64_t ops = counters_.total_ops();
  uint64_t bytes_now = counters_.bytes;
  double dt = (now - next_tick_ + interval_ns_) / 1e9;
  Interval iv{(now - t_ready_) / 1e9, ops - tick_ops_, bytes_now - tick_bytes_,
              dt > 0 ? (c.user_s - tick_cpu_.user_s + c.sys_s - tick_cpu_.sys_s) / dt : 0};
  if (intervals_.size() < 100000) intervals_.push_back(iv);
  else intervals_dropped_++;
  tick_ops_ = ops;
  tick_bytes_ = bytes_now;
  tick_cpu_ = c;
  next_tick_ = now + interval_ns_;
}

// Orderly shutdown: handler threads joined, the address withdrawn, queued
// responses (e.g. the shutdown acknowledgement) sent, for at most a second.
void Server::drain() {
  stop_io();
  {
    std::lock_guard<std::mutex> g(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  for (auto& t : handlers_) t.join();
  withdraw_address(dir_, addr_);  // only if it is still ours
  int64_t deadline = now_ns() + 1'000'000'000LL;
  CqEvent ev[32];
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
}

}  // namespace

int cmd_serve(int argc, char** argv) {
  // Before libfabric reads its parameters: removing an address from the AV
  // closes its connection, so that each nudge (cm_nudge.hpp) connects afresh.
  setenv("FI_AV_REMOVE_CLEANUP", "1", 0);
  std::vector<OptSpec> specs = {
      opt::fabric(),
      opt::domain("libfabric domain / network interface (e.g. lo, hsn0, mlx5_0, shm); one that does not exist or does not carry --fabric is refused (exit 2) with the list of those that do ('rooftop-engine domains')"),
      opt::address("IP address to serve on (its interface becomes the domain; with --domain it must be on it); a comma list: --nic-policy picks among their interfaces; refused (exit 2) if no local interface carries it; loopback if neither this nor --domain"),
      opt::nic_policy(), opt::nic_counters(), opt::local_rank(),
      opt::group_dir("directory where <rank>.addr is published (required)"),
      opt::rank("this server's rank in the group"),
      opt::rank_from_env(),
      opt::progress("spindown", "completion progress: busy polls; block sleeps on the CQ fd; adaptive sleeps when idle; spindown[:MS] polls as busy, then MS ms (default 10) after the last completion sleep-polls (20 us doubling to 1 ms, to 10 ms after 1 s asleep)"),
      token_file_option("read the shutdown token from this file's first line: a shutdown RPC is accepted only with it (no token: never)"),
      {"max-size", OptKind::Size, "16MiB", "largest bulk transfer served (registered per slot)", ""},
      {"handler-threads", OptKind::Int, "0", "threads running RPC handlers; 0: all in the single progress loop (the paper's single-threaded daemon)", ""},
      {"bulk-slots", OptKind::Int, "4", "bulk transfers in flight at once; more wait in a queue", ""},
      {"buffer-pages", OptKind::Choice, "base", "the bulk slots' memory: base (the kernel's base pages, wherever they land physically) or huge (hugetlb pages, MAP_HUGETLB: a slot's pages are contiguous, so a device splits an O_DIRECT write of it the same way every run); huge is refused unless enough are reserved in /proc/sys/vm/nr_hugepages", "base|huge"},
      {"rx-depth", OptKind::Int, "64", "receive buffers posted", ""},
      {"max-msg", OptKind::Size, "64KiB", "largest request/response message (with padding)", ""},
      {"interval", OptKind::Seconds, "100ms", "period of the ops/CPU series in the result", ""},
      {"io-threads", OptKind::Int, "-1", "threads running the storage calls of put, get and the metadata operations (0: inline on the progress thread, which then waits for the device; -1: auto, 0 when bound to one CPU, else 1)", ""},
      {"io-async", OptKind::Bool, "false", "O_DIRECT puts run inline (refused with --io-threads N > 0), their write submitted with Linux AIO and completed from the progress loop, which serves meanwhile (one write in flight); the kernel then finishes a durable write in a kworker on the core taking the device's interrupts, so keep that core free of polling processes", ""},
      opt::cpus(" (e.g. 0 or 0-3); default: inherited"),
      opt::output(),
      {"verbose", OptKind::Bool, "false", "say when ready on stderr", ""},
      lease_options()[0], lease_options()[1],
  };
  for (const OptSpec& spec : storage::options(false)) specs.push_back(spec);
  Options o("serve",
            "Run one benchmark server process. It publishes its address in\n"
            "<group-dir>/<rank>.addr once its endpoint is ready, answers noop, bulk,\n"
            "stat, start-barrier and shutdown RPCs until SIGTERM/SIGINT or an authorised shutdown\n"
            "RPC, then prints one JSON document (see schema/engine-output.schema.json).\n"
            "With --storage-dir it also serves put/get and the metadata operations on\n"
            "that directory (the --io-mode ... --keep-files knobs; result.storage).\n"
            "Files it writes are private (umask 077); the token is never printed.",
            specs);
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
