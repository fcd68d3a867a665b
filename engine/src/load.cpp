// rooftop-engine load: one client process running one workload (an
// operation of the table in ops/, e.g. noop, bulk read or bulk write)
// against one or more servers for a measured duration after a time-based
// warmup, with K operations outstanding. This driver names no operation:
// it calls the operation's hooks (ops/op.hpp) and tests its capabilities.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <sstream>

#include "client_core.hpp"
#include "commands.hpp"
#include "common_options.hpp"
#include "histogram.hpp"
#include "lease.hpp"
#include "ops/table.hpp"
#include "report.hpp"
#include "window_log.hpp"
#include "window_work.hpp"

namespace rooftop {

namespace {

struct Slot {
  OpContext ctx;  // the send's context
  uint32_t idx;
  uint8_t* txbuf;
  bool busy = false, tx_done = false, resp_done = false;
  ops::ClientOp op;  // req_id, connection, data
  int64_t t_issue = 0, t_resp = 0;
  size_t target = 0;
  wire::Status status = wire::Status::Ok;
};

// Ready: warmed up; no new operations, and once those in flight are done,
// ready is reported and the start barrier's answer awaited. Empty pipes
// let the answer arrive at once: queued behind a bulk transfer on a busy
// link it would reach each client up to one transfer apart.
enum class Phase { Warmup, Ready, Measure, Drain, Done };
const char* phase_name(Phase p) {
  switch (p) {
    case Phase::Warmup: return "warmup";
    case Phase::Ready: return "ready";
    case Phase::Measure: return "measure";
    case Phase::Drain: return "drain";
    case Phase::Done: return "done";
  }
  return "?";
}

struct Interval {
  double t_s;
  const char* phase;
  uint64_t ops, bytes;
  double cpu_util;
};

// The ops/bytes/CPU series of --interval: where the current interval began.
struct Ticker {
  int64_t interval_ns = 0, next = 0, start = 0;
  uint64_t ops = 0, bytes = 0;
  CpuTimes cpu;
};

class Load {
 public:
  Load(const Options& o, Report& rep) : o_(o), rep_(rep) {}
  int run();

 private:
  // run(), step by step.
  void configure();
  void configure_timing();
  void configure_barrier();
  std::vector<int> server_ranks();
  void connect();
  void check_limits_of_servers();
  void allocate();
  void start();
  void loop();
  void retry_posts();
  void advance(int64_t now);
  void watch(int64_t now, Lease& lease);
  void tick(int64_t now);
  int finish();

  void issue(Slot& s);
  // An operation's latency runs from its own clock read, taken right before
  // its request is handed to the provider (post), to the clock read taken
  // right after the poll that returned its response (loop: one read per
  // poll that found completions, shared by the operations it completed).
  void post(Slot& s);
  void complete(Slot& s);
  void on_event(const CqEvent& ev, int64_t now);
  void on_response(ClientRx* rx, const CqEvent& ev, int64_t now);
  // The operations a poll completed are counted once the requests issued
  // in their place have left (count_completed), off the round trip.
  void count_completed();
  struct Ended {
    int64_t t_issue, t_resp;
    size_t target;
    wire::Status status;
  };
  void count(const Ended& e);
  // Start barrier (--barrier N): after the warmup and its drain, tell the
  // barrier server this client is ready; its answer starts the first
  // window, for every client of the measurement at once.
  void send_ready(int64_t now);
  void on_release(const wire::Message& m, int64_t now);
  void check_barrier_timeout(int64_t now);
  void setup_barrier(uint32_t rank);
  void fail(const std::string& e, const std::string& reason, int code) {
    error(e);
    end_reason_ = reason;
    fatal_ = true;
    fatal_code_ = code;
  }
  bool check_limits();
  void error(const std::string& e) {
    if (rep_.errors.size() < 100) rep_.errors.push_back(e);
  }
  std::string result_json() const;
  void write_latency(JsonWriter& w) const;
  void write_windows(JsonWriter& w) const;
  void write_barrier(JsonWriter& w) const;
  // --window-log: the measurement's start, each window the clock leaves
  // and the end, as they happen (window_log.hpp: why a file and a thread).
  void open_window_log();
  void log_event(const char* event, int64_t window = -1);
  void write_window_log(JsonWriter& w) const;

  const Options& o_;
  Report& rep_;
  std::string dir_;
  std::unique_ptr<ClientCore> core_;
  std::vector<Target> targets_;
  std::vector<Slot> slots_;
  std::vector<uint8_t> tx_mem_;
  MemRegion tx_mr_{}, data_mr_{};
  uint8_t* data_mem_ = nullptr;
  size_t stream_off_ = 0;
  std::deque<Slot*> to_post_;
  std::vector<Ended> ended_;  // operations this poll completed, counted by count_completed
  // workload
  const ops::Op* op_ = nullptr;
  ops::Workload w_;
  int64_t k_ = 1;  // --concurrency
  int rank_ = 0;
  size_t inject_ = 0;  // requests up to this size go out with fi_inject
  size_t next_target_ = 0;
  uint64_t seq_ = 0;
  double duration_s_ = 0, warmup_s_ = 0, delay_ready_s_ = 0, interval_s_ = 0, timeout_s_ = 0;
  int64_t timeout_ns_ = 0;
  // state
  Phase phase_ = Phase::Warmup;
  int64_t t_start_ = 0, t0_ = 0, t_end_ = 0, t_last_ = 0;
  CpuTimes cpu0_, cpu_end_;
  size_t busy_ = 0;
  uint64_t ops_ = 0, bytes_ = 0, warm_ops_ = 0, verify_checked_ = 0, verify_failed_ = 0;
  std::map<std::string, uint64_t> status_errors_;
  uint64_t dropped_ = 0;
  // The response being handled: decode resets it, so one is kept rather
  // than constructed per message (~40 instructions).
  wire::Message rx_msg_;
  Histogram hist_;
  std::vector<Interval> intervals_;
  Ticker tick_;
  FILE* trace_ = nullptr;
  std::unique_ptr<WindowLog> wlog_;
  uint64_t wlog_lines_ = 0;
  // --windows K: consecutive windows of --duration from one common start
  // (the end of the warmup, or --measure-at, so that every client of a
  // measurement measures the same intervals). An operation counts in a window by
  // the share of its time [issue, response] inside it: counting whole
  // completions would credit a window with work done before it opened
  // (+1 op per window: 20 % too fast for 4 MiB over a 25 MB/s link in 1 s
  // windows). Operations in flight at the end are drained and counted for
  // their share. The shares and completions are work_'s (window_work.hpp).
  struct Window {
    int64_t start = 0, end = 0;
    double cpu_s = 0;
  };
  std::vector<Window> windows_;
  WindowWork work_;
  // Windows whose every operation is counted: all of them, unless stopped
  // early (then those the clock left whose operations all completed).
  int64_t full_windows_ = -1;
  int64_t count_full(int64_t now) const {
    int64_t oldest = now;  // an operation still in flight misses from the windows it began in
    for (auto& s : slots_)
      if (s.busy) oldest = std::min(oldest, s.t_issue);
    int64_t n = 0;
    while (n < static_cast<int64_t>(cur_w_) && windows_[n].end <= oldest) n++;
    return n;
  }
  // Each window split into --slices equal slices of work (shares of
  // operations), so that the campaign can sum the work of several clients
  // over exactly the time all of them were measuring.
  int64_t nslices_ = 20;
  int64_t nwindows_ = 1, duration_ns_ = 0;
  size_t cur_w_ = 0;  // the window the clock is in
  CpuTimes w_cpu0_;
  uint64_t drained_ops_ = 0, all_done_ = 0, all_bytes_ = 0;
  void start_measure(int64_t t) {
    phase_ = Phase::Measure;
    t0_ = t;
    measure_start_s_ = realtime_s() - static_cast<double>(now_ns() - t) / 1e9;
    cpu0_ = w_cpu0_ = process_cpu();
    windows_.assign(static_cast<size_t>(nwindows_), Window{});
    work_.start(t, duration_ns_, nwindows_, nslices_);
    for (int64_t k = 0; k < nwindows_; k++) {
      windows_[k].start = t + k * duration_ns_;
      windows_[k].end = t + (k + 1) * duration_ns_;
    }
    t_end_ = windows_.back().end;
    log_event("measure");
  }
  double measure_at_ = 0, late_s_ = 0, measure_start_s_ = 0;
  // start barrier
  uint32_t barrier_n_ = 0;
  uint64_t barrier_id_ = 0, barrier_req_ = 0;
  Target barrier_t_;
  OpContext barrier_ctx_{};
  uint8_t* barrier_buf_ = nullptr;
  int64_t ready_ns_ = 0, barrier_timeout_ns_ = 0, settle_ns_ = 0, warm_end_ = 0;
  bool released_ = false;
  double ready_s_ = 0, released_s_ = 0, barrier_wait_s_ = 0;
  std::string end_reason_ = "done";
  bool fatal_ = false;
  int fatal_code_ = 0;
};


void Load::post(Slot& s) {
  const Target& t = targets_[s.target];
  size_t len = op_->client.encode(w_, s.op, s.txbuf, core_->rx_size());
  s.t_issue = now_ns();  // each try: the latency starts when the provider takes the request
  ssize_t rc;
  if (len <= inject_) {
    rc = core_->ep().post_inject(s.txbuf, len, t.fa);
    if (rc == 0) s.tx_done = true;  // buffered: no completion will come
  } else {
    rc = core_->ep().post_send(s.txbuf, len, tx_mr_.desc, t.fa, &s.ctx);
  }
  if (rc == -FI_EAGAIN) {
    to_post_.push_back(&s);
    return;
  }
  if (rc != 0) {
    error("send to server rank " + std::to_string(t.addr.rank) + " failed: " + fi_error_text(static_cast<int>(rc)));
    fatal_ = true;
    fatal_code_ = kExitUnreachable;
  }
}

void Load::issue(Slot& s) {
  s.busy = true;
  s.tx_done = s.resp_done = false;
  s.op.req_id = (++seq_ << 16) | s.idx;
  s.target = next_target_;
  s.op.conn = targets_[s.target].conn;
  if (++next_target_ == targets_.size()) next_target_ = 0;
  if (data_mem_) {
    if (w_.stream) {
      if (stream_off_ + w_.bytes > w_.data_len) stream_off_ = 0;
      s.op.data = data_mem_ + stream_off_;
      stream_off_ += w_.bytes;
    } else {
      s.op.data = data_mem_ + static_cast<size_t>(s.idx) * w_.bytes;
    }
    s.op.data_addr = data_mr_.remote_addr(s.op.data);
    s.op.data_key = data_mr_.key;
  }
  if (op_->client.prepare) op_->client.prepare(w_, s.op);
  busy_++;
  post(s);
}

// The measured work can never exceed what was transferred: every share
// belongs to an operation that completed, each counted at most once.
bool Load::check_limits() {
  double work = 0;
  for (int64_t k = 0; k < work_.windows(); k++) work += work_.work(k);
  if (work <= static_cast<double>(all_done_) + 1e-6) return true;
  error("internal: the windows credit " + std::to_string(work) + " operations but only " +
        std::to_string(all_done_) + " completed; result refused");
  return false;
}

void Load::setup_barrier(uint32_t rank) {
  barrier_ctx_.kind = CtxKind::Tx;
  barrier_req_ = (static_cast<uint64_t>(rank) << 16) | 0xfffe;  // no load slot has this index
  barrier_buf_ = tx_mem_.data() + slots_.size() * core_->rx_size();
}

void Load::send_ready(int64_t now) {
  size_t len = wire::encode_barrier_req(barrier_buf_, core_->rx_size(), barrier_req_, barrier_t_.conn,
                                        barrier_id_, barrier_n_, static_cast<uint32_t>(o_.integer("rank")));
  ssize_t rc = len <= inject_ ? core_->ep().post_inject(barrier_buf_, len, barrier_t_.fa)
                              : core_->ep().post_send(barrier_buf_, len, tx_mr_.desc, barrier_t_.fa, &barrier_ctx_);
  if (rc == -FI_EAGAIN) return;  // the main loop tries again
  if (rc != 0) {
    fail("start barrier: cannot reach server rank " + std::to_string(barrier_t_.addr.rank) + ": " +
         fi_error_text(static_cast<int>(rc)), "barrier failed", kExitUnreachable);
    return;
  }
  ready_ns_ = now;
  ready_s_ = realtime_s();
}

void Load::on_release(const wire::Message& m, int64_t now) {
  if (phase_ != Phase::Ready) return;
  if (m.status != wire::Status::Ok) {
    fail("start barrier: server rank " + std::to_string(barrier_t_.addr.rank) + " refused this client (" +
         wire::status_name(m.status) + ": it waits for " + std::to_string(m.bytes) +
         " clients in barrier " + std::to_string(barrier_id_) + ", or this rank came twice)",
         "barrier failed", kExitFailure);
    return;
  }
  barrier_wait_s_ = (now - ready_ns_) / 1e9;
  released_ = true;
  released_s_ = realtime_s();
  // Every client starts its first window --settle after the release, by its
  // own clock: the pipelines (and TCP's congestion windows, reset by the
  // idle wait) fill again first, and the skew stays the release's.
  if (settle_ns_ > 0) {
    phase_ = Phase::Warmup;
    warm_end_ = now + settle_ns_;
  } else {
    start_measure(now);
  }
  for (auto& s : slots_)
    if (!s.busy && !fatal_) issue(s);
}

void Load::check_barrier_timeout(int64_t now) {
  if (phase_ != Phase::Ready || !ready_ns_ || now - ready_ns_ <= barrier_timeout_ns_) return;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", barrier_timeout_ns_ / 1e9);
  fail("start barrier: server rank " + std::to_string(barrier_t_.addr.rank) + " did not release the " +
       std::to_string(barrier_n_) + " clients of barrier " + std::to_string(barrier_id_) + " within " + buf +
       " s of this client being ready (a client never became ready; see --barrier-timeout)",
       "barrier timeout", kExitUnreachable);
}

// The next request of the slot leaves first: what a completed operation
// leaves to count (latency, windows, trace) is done once the requests of
// the poll are on their way (count_completed), off the round trip the
// next latency measures. Only --verify checks the data first (the next
// operation would overwrite it).
void Load::complete(Slot& s) {
  s.busy = false;
  busy_--;
  ended_.push_back({s.t_issue, s.t_resp, s.target, s.status});
  if (s.status == wire::Status::Ok && w_.verify && op_->has(ops::kVerifiable)) {
    verify_checked_++;
    std::string bad = op_->client.verify(w_, s.op);
    if (!bad.empty() && verify_failed_++ == 0) error(bad);
  }
  if ((phase_ == Phase::Warmup || phase_ == Phase::Measure) && !fatal_) issue(s);
}

void Load::count_completed() {
  for (const Ended& e : ended_) count(e);
  ended_.clear();
}

void Load::count(const Ended& e) {
  const bool ok = e.status == wire::Status::Ok;
  if (!ok) {
    std::string name = wire::status_name(e.status);
    if (status_errors_[name]++ == 0)
      error("server rank " + std::to_string(targets_[e.target].addr.rank) + " answered " + name);
  }
  if (e.status == wire::Status::VerifyFailed) verify_failed_++;
  all_done_++;
  if (ok) all_bytes_ += w_.bytes;
  if (t0_ == 0 || e.t_resp < t0_) {
    warm_ops_++;  // done before measuring began (a share of it may still count, below)
  } else if (e.t_resp >= t_end_) {
    drained_ops_++;
  } else if (ok) {  // completed inside the measured time
    const int64_t lat = e.t_resp - e.t_issue;
    ops_++;
    bytes_ += w_.bytes;
    targets_[e.target].ops++;
    hist_.record(static_cast<uint64_t>(lat));
    if (trace_)
      std::fprintf(trace_, "%lld,%lld,%d,%llu\n", static_cast<long long>(e.t_issue - t0_),
                   static_cast<long long>(lat), targets_[e.target].addr.rank,
                   static_cast<unsigned long long>(w_.bytes));
    t_last_ = std::max(t_last_, e.t_resp);
  }
  if (ok && t0_ != 0) work_.add(e.t_issue, e.t_resp);  // its shares of the windows and slices
}

void Load::on_event(const CqEvent& ev, int64_t now) {
  OpContext* c = ev.ctx;
  if (!c) return;
  if (c == &barrier_ctx_) {
    if (ev.err) fail("start barrier: sending ready failed: " + ev.err_text, "barrier failed", kExitUnreachable);
    return;
  }
  if (c->kind == CtxKind::Tx) {
    Slot& s = *reinterpret_cast<Slot*>(c);
    if (ev.err) {
      error("request to server rank " + std::to_string(targets_[s.target].addr.rank) +
            " failed: " + ev.err_text);
      fatal_ = true;
      fatal_code_ = kExitUnreachable;
      return;
    }
    s.tx_done = true;
    if (s.resp_done) complete(s);
    return;
  }
  if (c->kind == CtxKind::Rx) on_response(reinterpret_cast<ClientRx*>(c), ev, now);
}

void Load::on_response(ClientRx* rx, const CqEvent& ev, int64_t now) {
  if (ev.err) {
    if (ev.err != FI_ECANCELED) error("receive failed: " + ev.err_text);
    core_->repost(rx);
    return;
  }
  wire::Message& m = rx_msg_;
  wire::DecodeError de = wire::decode(rx->buf, ev.len, m);
  Slot* s = nullptr;
  if (de == wire::DecodeError::None && m.response && m.type == wire::Type::Barrier &&
      m.h.req_id == barrier_req_) {
    core_->repost(rx);
    on_release(m, now);
    return;
  }
  if (de == wire::DecodeError::None && m.response) {
    uint64_t idx = m.h.req_id & 0xffff;
    if (idx < slots_.size() && slots_[idx].busy && slots_[idx].op.req_id == m.h.req_id &&
        !slots_[idx].resp_done)
      s = &slots_[idx];
  }
  if (!s) {
    dropped_++;
    core_->repost(rx);
    return;
  }
  s->t_resp = now;  // the read right after the poll that returned it
  s->resp_done = true;
  s->status = op_->client.response ? op_->client.response(w_, m) : m.status;
  if (s->tx_done) complete(*s);  // the next request leaves before the buffer is posted again
  core_->repost(rx);
}

std::string Load::result_json() const {
  JsonWriter w;
  double elapsed = t0_ && t_end_ > t0_ ? (t_end_ - t0_) / 1e9 : 0.0;
  double work_ops = 0;
  for (size_t k = 0; k < windows_.size(); k++) work_ops += work_.work(static_cast<int64_t>(k));
  const double work_bytes = work_ops * static_cast<double>(w_.bytes);
  w.begin_object();
  w.kv("ops", ops_);
  w.kv("bytes", bytes_);
  w.kv("elapsed_s", elapsed);
  // Rates are work per second: operations straddling an edge count by share.
  w.kv("ops_per_sec", elapsed > 0 ? work_ops / elapsed : 0.0);
  w.kv("bytes_per_sec", elapsed > 0 ? work_bytes / elapsed : 0.0);
  write_latency(w);
  double cu = cpu_end_.user_s - cpu0_.user_s, cs = cpu_end_.sys_s - cpu0_.sys_s;
  w.key("cpu").begin_object();
  w.kv("user_s", cu).kv("sys_s", cs).kv("utilization", elapsed > 0 ? (cu + cs) / elapsed : 0.0);
  w.end_object();
  w.kv("full_windows", full_windows_ < 0 ? static_cast<int64_t>(windows_.size()) : full_windows_);
  w.kv("drained_ops", drained_ops_);  // completed after the last window: counted for their share
  w.key("warmup").begin_object();
  w.kv("ops", warm_ops_).kv("elapsed_s", t0_ ? (t0_ - t_start_) / 1e9 : (now_ns() - t_start_) / 1e9);
  w.end_object();
  w.key("servers").begin_array();
  for (auto& t : targets_) {
    w.begin_object().kv("rank", t.addr.rank).kv("address", t.addr.text).kv("host", t.addr.host);
    w.kv("ops", t.ops).end_object();
  }
  w.end_array();
  w.key("verify").begin_object();
  w.kv("enabled", w_.verify).kv("checked", verify_checked_).kv("failures", verify_failed_);
  w.end_object();
  w.key("status_errors").begin_object();
  for (auto& [k, v] : status_errors_) w.kv(k, v);
  w.end_object();
  w.kv("dropped_messages", dropped_ + (core_ ? core_->dropped : 0));
  w.kv("interval_s", o_.seconds("interval"));
  w.key("intervals").begin_array();
  for (auto& i : intervals_) {
    w.begin_object().kv("t_s", i.t_s).kv("phase", i.phase).kv("ops", i.ops).kv("bytes", i.bytes);
    w.kv("cpu_utilization", i.cpu_util).end_object();
  }
  w.end_array();
  w.kv("measure_start_s", measure_start_s_);  // wall clock, seconds since the epoch
  if (measure_at_ > 0) w.kv("measure_at_late_s", late_s_);
  write_windows(w);
  w.kv("op_bytes", w_.bytes);
  if (data_mem_) w.kv("buffer_page_bytes", backing_page_bytes(data_mem_));  // what --buffer-pages got
  write_barrier(w);
  write_window_log(w);
  w.kv("end", end_reason_);
  w.end_object();
  return w.str();
}

void Load::write_latency(JsonWriter& w) const {
  w.key("latency_us").begin_object();
  w.kv("count", hist_.count());
  w.kv("min", hist_.min() / 1e3).kv("mean", hist_.mean() / 1e3);
  w.kv("p50", hist_.quantile(0.5) / 1e3).kv("p90", hist_.quantile(0.9) / 1e3);
  w.kv("p99", hist_.quantile(0.99) / 1e3).kv("max", hist_.max() / 1e3);
  // The distribution itself, ~4 % wide bins: [low_us, high_us, count].
  w.key("bins").begin_array();
  for (const auto& b : hist_.bins()) {
    w.begin_array().value(b.low / 1e3).value(b.high / 1e3).value(b.count).end_array();
  }
  w.end_array();
  w.end_object();
}

void Load::write_windows(JsonWriter& w) const {
  w.key("windows").begin_array();
  for (auto& win : windows_) {
    const auto k = static_cast<int64_t>(&win - windows_.data());
    const double el = (win.end - win.start) / 1e9, work = work_.work(k);
    const uint64_t done = work_.completions(k);
    w.begin_object().kv("ops", done).kv("bytes", done * w_.bytes);
    w.kv("elapsed_s", el).kv("work_ops", work);
    w.kv("ops_per_sec", el > 0 ? work / el : 0.0);
    w.kv("bytes_per_sec", el > 0 ? work * static_cast<double>(w_.bytes) / el : 0.0);
    w.kv("cpu_utilization", el > 0 ? win.cpu_s / el : 0.0);
    w.key("slice_ops").begin_array();  // work (operation shares) in each of --slices slices
    for (int64_t j = 0; j < nslices_; j++) w.value(work_.slice(k, j));
    w.end_array().end_object();
  }
  w.end_array();
}

void Load::write_barrier(JsonWriter& w) const {
  w.key("barrier").begin_object();
  w.kv("clients", static_cast<uint64_t>(barrier_n_));
  if (barrier_n_) {
    w.kv("id", barrier_id_).kv("server_rank", barrier_t_.addr.rank);
    w.kv("timeout_s", barrier_timeout_ns_ / 1e9);
    w.kv("ready_s", ready_s_);        // wall clock when ready was sent (0: never)
    w.kv("released_s", released_s_);  // wall clock when the release arrived (0: never)
    w.kv("wait_s", barrier_wait_s_);   // ready -> release
  }
  w.end_object();
}

// Options to workload, connections, buffers, then the measured run; each
// step below says what it checks.
int Load::run() {
  configure();
  connect();
  allocate();
  start();
  loop();
  return finish();
}

void Load::configure() {
  dir_ = o_.str("group-dir");
  if (dir_.empty()) throw UsageError("--group-dir is required");
  op_ = ops::find(o_.str("op"));  // --op's choices are the table's names
  k_ = o_.integer("concurrency");
  if (k_ < 1 || k_ > 4096) throw UsageError("--concurrency must be 1..4096");
  op_->client.configure(o_, k_, w_);  // its own options; bulk: memory checked before anything starts
  configure_timing();
  configure_barrier();
  nwindows_ = o_.integer("windows");
  if (nwindows_ < 1 || nwindows_ > 100000) throw UsageError("--windows must be 1..100000");
  if (duration_s_ <= 0) throw UsageError("--duration must be > 0");
  interval_s_ = o_.seconds("interval");
  if (interval_s_ < 0.001) throw UsageError("--interval must be at least 1ms");
  w_.verify = o_.flag("verify");
  w_.req_size = o_.size("req-size");
  if (o_.size("resp-size") > (64u << 20)) throw UsageError("--resp-size must be <= 64MiB");
  w_.resp_size = static_cast<uint32_t>(o_.size("resp-size"));
  rank_ = static_cast<int>(o_.integer("rank"));
  if (rank_ < 0) throw UsageError("--rank must be >= 0");
  open_window_log();
}

void Load::open_window_log() {
  std::string path = o_.str("window-log");
  if (path.empty()) return;
  for (size_t p; (p = path.find("{rank}")) != std::string::npos;) path.replace(p, 6, std::to_string(rank_));
  wlog_ = std::make_unique<WindowLog>(path);
}

// One line: {"event": "measure"|"window"|"end", "rank", "windows", ...}.
// Each window's "ops" (operations completed inside it) is final when the
// clock leaves it; its rate (shares of operations straddling its end) is
// only in the document.
void Load::log_event(const char* event, int64_t window) {
  if (!wlog_) return;
  const auto wall = [&](int64_t t) { return measure_start_s_ + static_cast<double>(t - t0_) / 1e9; };
  JsonWriter w;
  w.begin_object().kv("event", event).kv("rank", rank_).kv("windows", nwindows_);
  if (window >= 0) {
    const Window& win = windows_[static_cast<size_t>(window)];
    w.kv("window", window).kv("end_s", wall(win.end)).kv("elapsed_s", (win.end - win.start) / 1e9);
    w.kv("ops", work_.completions(window));
  } else if (std::string_view(event) == "measure") {
    w.kv("start_s", measure_start_s_).kv("duration_s", duration_s_);
  } else {
    w.kv("end", fatal_ && end_reason_ == "done" ? "error" : end_reason_);  // as finish() reports it
    w.kv("windows_measured", static_cast<int64_t>(cur_w_)).kv("t_s", realtime_s());
  }
  w.end_object();
  wlog_->push(w.str());
  wlog_lines_++;
}

void Load::write_window_log(JsonWriter& w) const {
  if (!wlog_) return;
  w.key("window_log").begin_object();
  w.kv("lines", wlog_lines_).kv("dropped", wlog_->dropped()).kv("error", wlog_->error());
  w.end_object();
}

void Load::configure_timing() {
  duration_s_ = o_.seconds("duration");
  warmup_s_ = o_.seconds("warmup");
  if (!o_.str("measure-at").empty()) {
    size_t used = 0;
    try {
      measure_at_ = std::stod(o_.str("measure-at"), &used);
    } catch (...) {
      used = 0;
    }
    if (used == 0 || used != o_.str("measure-at").size() || measure_at_ <= 0)
      throw UsageError("--measure-at '" + o_.str("measure-at") + "': expected seconds since the epoch (UTC)");
  }
  nslices_ = o_.integer("slices");
  if (nslices_ < 1 || nslices_ > 1000) throw UsageError("--slices must be 1..1000");
}

void Load::configure_barrier() {
  const int64_t bn = o_.integer("barrier");
  if (bn < 0 || bn > 1000000) throw UsageError("--barrier must be 0..1000000 clients");
  barrier_n_ = static_cast<uint32_t>(bn);
  if (barrier_n_ && measure_at_ > 0) throw UsageError("--barrier and --measure-at exclude each other");
  try {
    size_t used = 0;
    barrier_id_ = std::stoull(o_.str("barrier-id"), &used);
    if (used != o_.str("barrier-id").size()) throw std::invalid_argument("id");
  } catch (...) {
    throw UsageError("--barrier-id '" + o_.str("barrier-id") + "': expected a whole number");
  }
  const double btimeout = o_.seconds("barrier-timeout") > 0 ? o_.seconds("barrier-timeout") : o_.seconds("timeout");
  barrier_timeout_ns_ = static_cast<int64_t>(btimeout * 1e9);
  settle_ns_ = static_cast<int64_t>(o_.seconds("settle") * 1e9);
  if (settle_ns_ < 0) throw UsageError("--settle must be >= 0");
  delay_ready_s_ = o_.seconds("delay-ready");
  if (delay_ready_s_ < 0) throw UsageError("--delay-ready must be >= 0");
}

// Which servers: --server R | R,S,... | all; default rank % nservers.
std::vector<int> Load::server_ranks() {
  int64_t nservers = o_.integer("nservers");
  std::vector<int> ranks;
  const std::string& sv = o_.str("server");
  // The group's ranks are needed only to derive the default server or "all".
  auto group_ranks = [&]() {
    std::vector<int> known;
    if (nservers > 0) {
      for (int r = 0; r < nservers; r++) known.push_back(r);
    } else {
      wait_address(dir_, 0, timeout_s_);  // at least rank 0 must be up
      known = list_ranks(dir_);
    }
    return known;
  };
  if (sv.empty()) {
    auto known = group_ranks();
    ranks.push_back(known[static_cast<size_t>(rank_) % known.size()]);
  } else if (sv == "all") {
    ranks = group_ranks();
  } else {
    std::stringstream ss(sv);
    std::string part;
    while (std::getline(ss, part, ',')) {
      size_t used = 0;
      int r = -1;
      try {
        r = std::stoi(part, &used);
      } catch (...) {
      }
      if (used != part.size() || r < 0) throw UsageError("--server '" + sv + "': expected R, R,S,... or all");
      ranks.push_back(r);
    }
  }
  return ranks;
}

// Opens the endpoint and says hello to every server loaded (and to the
// barrier server), then checks the workload fits what they registered.
void Load::connect() {
  timeout_s_ = o_.seconds("timeout");
  std::vector<int> ranks = server_ranks();
  const int barrier_rank = static_cast<int>(o_.integer("barrier-server"));
  if (barrier_rank < 0) throw UsageError("--barrier-server must be >= 0");
  auto addrs = resolve_servers(dir_, ranks, o_.str("fabric"), timeout_s_);

  size_t msg = std::max<size_t>({w_.req_size, w_.resp_size, w_.max_response, wire::kHeaderSize + 64});
  core_ = std::make_unique<ClientCore>(o_, addrs[0], static_cast<size_t>(k_) + 8, msg);
  rep_.capture(core_->ep());
  inject_ = core_->ep().inject_size();
  for (auto& a : addrs) targets_.push_back(core_->connect(a, static_cast<uint32_t>(rank_)));
  if (barrier_n_) {
    barrier_t_.addr.rank = -1;
    for (auto& t : targets_)
      if (t.addr.rank == barrier_rank) barrier_t_ = t;
    if (barrier_t_.addr.rank < 0)  // the barrier server is not one this client loads
      barrier_t_ = core_->connect(resolve_servers(dir_, {barrier_rank}, o_.str("fabric"), timeout_s_)[0],
                                  static_cast<uint32_t>(rank_));
  }
  check_limits_of_servers();
}

void Load::check_limits_of_servers() {
  for (auto& t : targets_) {
    if (op_->client.check_server) op_->client.check_server(o_, w_, {t.addr.rank, t.max_bulk, t.max_msg});
    if (std::max<size_t>(w_.req_size, w_.resp_size) > t.max_msg)
      throw UsageError("--req-size/--resp-size exceed server rank " + std::to_string(t.addr.rank) +
                       "'s largest message (" + std::to_string(t.max_msg) + " bytes; its --max-msg)");
  }
  if (op_->client.check_provider) op_->client.check_provider(o_, w_, core_->ep().max_msg_size());
}

// Request buffers (one per slot, plus the barrier's), the data buffer
// (resident before measuring), the slots, and the --trace file.
void Load::allocate() {
  tx_mem_.assign(static_cast<size_t>(k_ + 1) * core_->rx_size(), 0);  // + the barrier's
  tx_mr_ = core_->ep().register_memory(tx_mem_.data(), tx_mem_.size(), false);
  if (w_.data_len) {
    data_mem_ = alloc_resident(w_.data_len, w_.pages);
    if (!data_mem_ && w_.pages == Pages::Huge) throw UsageError(alloc_error(w_.data_len, w_.pages, "data buffer"));
    if (!data_mem_) throw EngineError(kExitFailure, alloc_error(w_.data_len, w_.pages, "data buffer"));
    data_mr_ = core_->ep().register_memory(data_mem_, w_.data_len, true);
  }
  slots_.resize(static_cast<size_t>(k_));
  for (size_t i = 0; i < slots_.size(); i++) {
    slots_[i].ctx.kind = CtxKind::Tx;
    slots_[i].idx = static_cast<uint32_t>(i);
    slots_[i].txbuf = tx_mem_.data() + i * core_->rx_size();
  }
  setup_barrier(static_cast<uint32_t>(rank_));
  if (!o_.str("trace").empty()) {
    trace_ = std::fopen(o_.str("trace").c_str(), "w");
    if (!trace_) throw UsageError("--trace " + o_.str("trace") + ": cannot open for writing");
    std::fputs("t_issue_ns,latency_ns,server_rank,bytes\n", trace_);
  }
}

// The clock starts: warmup (until --measure-at, if given), every slot issued.
void Load::start() {
  tick_.interval_ns = static_cast<int64_t>(interval_s_ * 1e9);
  timeout_ns_ = static_cast<int64_t>(timeout_s_ * 1e9);
  t_start_ = now_ns();
  warm_end_ = t_start_ + static_cast<int64_t>((warmup_s_ + delay_ready_s_) * 1e9);
  if (measure_at_ > 0) {
    // Every client of a measurement starts from the same wall-clock instant:
    // warm up until then, whatever the launch skew was.
    double until = measure_at_ - realtime_s();
    late_s_ = until < 0 ? -until : 0.0;
    warm_end_ = t_start_ + static_cast<int64_t>(std::max(0.0, until) * 1e9);
    warmup_s_ = std::max(0.0, until);
  }
  duration_ns_ = std::max<int64_t>(1, static_cast<int64_t>(duration_s_ * 1e9));
  if (warmup_s_ + delay_ready_s_ <= 0 && !barrier_n_) start_measure(t_start_);
  tick_.next = t_start_ + tick_.interval_ns;
  tick_.start = t_start_;
  tick_.cpu = process_cpu();
  for (auto& s : slots_) issue(s);
}

// Warmup, measure, drain: until done or a fatal error. The clock is read
// right after a poll that found completions, before they are handled: the
// response time of the operations it completed (each one's issue time is
// its own read, in post). With --progress busy an empty poll reads it
// every kLook-th time only, for the phase changes, the windows and the
// --interval series: here a clock read (a VM's clock_gettime) costs nearly
// as much as an empty poll, and reading it after every poll delayed
// noticing the next completion. The other modes read it after every poll,
// as they may sleep.
void Load::loop() {
  constexpr uint32_t kLook = 64;
  CqEvent ev[32];
  uint32_t spins = 0, watched = 0;
  int64_t now = t_start_, last_activity = t_start_;
  const bool busy_progress = core_->ep().progress().mode == ProgressMode::Busy;
  ended_.reserve(64);
  Lease lease(o_);
  while (phase_ != Phase::Done && !fatal_) {
    const size_t n = core_->ep().poll(ev, 32);
    if (n) {
      now = now_ns();
      for (size_t i = 0; i < n; i++) on_event(ev[i], now);
      count_completed();
      last_activity = now;
    } else if (!busy_progress || ++spins % kLook == 0) {
      now = now_ns();
    } else {
      if (!to_post_.empty()) retry_posts();
      continue;
    }
    if (!to_post_.empty()) retry_posts();
    advance(now);
    if (++watched % 256 == 0 || now >= tick_.next) watch(now, lease);
    if (n == 0 && !busy_progress && !fatal_) core_->ep().idle(busy_ > 0, now, last_activity, 100);
  }
}

void Load::retry_posts() {
  while (!to_post_.empty()) {
    Slot* s = to_post_.front();
    to_post_.pop_front();
    size_t before = to_post_.size();
    post(*s);
    if (to_post_.size() > before) break;  // still EAGAIN
  }
}

// Phase changes.
void Load::advance(int64_t now) {
  if (phase_ == Phase::Warmup && now >= warm_end_) {
    if (barrier_n_ && !released_) phase_ = Phase::Ready;  // drain, then report ready
    else start_measure(now);
  }
  if (phase_ == Phase::Ready && !ready_ns_ && busy_ == 0 && to_post_.empty()) send_ready(now);
  if (phase_ == Phase::Measure) {
    while (cur_w_ < windows_.size() && now >= windows_[cur_w_].end) {
      CpuTimes c = process_cpu();  // CPU of each window, read as the clock leaves it
      windows_[cur_w_].cpu_s = c.user_s - w_cpu0_.user_s + c.sys_s - w_cpu0_.sys_s;
      w_cpu0_ = c;
      log_event("window", static_cast<int64_t>(cur_w_++));
    }
    if (cur_w_ == windows_.size()) {
      phase_ = Phase::Drain;  // no new operations; those in flight count for their share
      cpu_end_ = process_cpu();
    }
  }
  if (phase_ == Phase::Drain && busy_ == 0) phase_ = Phase::Done;
}

// Now and then: signals, the lease, the barrier's and the servers'
// silence, and the --interval series.
void Load::watch(int64_t now, Lease& lease) {
  rep_.cores.sample();
  if (int sig = g_signal.load()) {
    end_reason_ = sig == SIGINT ? "interrupted by SIGINT" : "interrupted by SIGTERM";
    fatal_ = true;
    fatal_code_ = 128 + sig;
  }
  if (lease.lapsed(now)) {  // the campaign is gone: stop loading its servers
    error(lease.why());
    end_reason_ = "lease lapsed";
    fatal_ = true;
    fatal_code_ = kExitFailure;
  }
  check_barrier_timeout(now);
  // A silent server: the oldest outstanding operation is too old.
  for (auto& s : slots_)
    if (s.busy && now - s.t_issue > timeout_ns_) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", timeout_s_);
      error("no response from server rank " + std::to_string(targets_[s.target].addr.rank) + " within " + buf +
            " s (see --timeout)");
      end_reason_ = "timeout";
      fatal_ = true;
      fatal_code_ = kExitUnreachable;
      break;
    }
  if (now >= tick_.next) tick(now);
}

void Load::tick(int64_t now) {
  CpuTimes c = process_cpu();
  uint64_t all_ops = all_done_;
  double dt = (now - tick_.start) / 1e9;
  intervals_.push_back({(now - t_start_) / 1e9, phase_name(phase_), all_ops - tick_.ops, all_bytes_ - tick_.bytes,
                        dt > 0 ? (c.user_s - tick_.cpu.user_s + c.sys_s - tick_.cpu.sys_s) / dt : 0});
  if (intervals_.size() > 100000) intervals_.erase(intervals_.begin());
  tick_.ops = all_ops;
  tick_.bytes = all_bytes_;
  tick_.cpu = c;
  tick_.start = now;
  tick_.next = now + tick_.interval_ns;
}

// The result: partial after a fatal error, else checked; the exit code.
int Load::finish() {
  if (trace_) std::fclose(trace_);
  log_event("end");
  if (wlog_) wlog_->close(2.0);  // the measurement is over: a stalled writer is left behind
  if (fatal_) {
    // Partial result: what was measured up to now.
    int64_t now = now_ns();
    if (t0_) {  // the windows the clock reached, the last one cut at now
      full_windows_ = count_full(now);
      t_end_ = std::min(t_end_, std::max(now, t0_ + 1));
      windows_.resize(std::min(windows_.size(), cur_w_ + 1));
      if (!windows_.empty() && windows_.back().end > t_end_) {
        CpuTimes c = process_cpu();
        windows_.back().end = t_end_;
        windows_.back().cpu_s = c.user_s - w_cpu0_.user_s + c.sys_s - w_cpu0_.sys_s;
      }
      cpu_end_ = process_cpu();
    }
    if (end_reason_ == "done") end_reason_ = "error";
    rep_.result_json = result_json();
    rep_.complete = false;
    return fatal_code_ ? fatal_code_ : kExitFailure;
  }
  const bool within = check_limits();
  rep_.result_json = result_json();
  rep_.complete = within && verify_failed_ == 0 && status_errors_.empty();
  if (verify_failed_ || !within) return kExitFailure;
  return status_errors_.empty() ? kExitOk : kExitFailure;
}

}  // namespace

int cmd_load(int argc, char** argv) {
  auto opts = opt::client_common();
  auto add = [&](const std::vector<OptSpec>& more) { opts.insert(opts.end(), more.begin(), more.end()); };
  add({
      opt::rank("this client's rank; picks server rank % nservers by default"),
      opt::rank_from_env(),
      {"server", OptKind::Str, "", "server(s) to load: R, R,S,... or all (round-robin); default rank % nservers", ""},
      {"nservers", OptKind::Int, "0", "number of servers in the group (0: count the address files)", ""},
      ops::op_option(),
  });
  add(ops::options(ops::Place::AfterOp));
  add({
      {"concurrency", OptKind::Int, "1", "operations outstanding at once (1: sequential, synchronous)", ""},
      {"duration", OptKind::Seconds, "5", "measured time (of each window)", ""},
      {"windows", OptKind::Int, "1", "consecutive measured windows of --duration after one warmup, each reported in result.windows", ""},
      {"warmup", OptKind::Seconds, "1", "time run before measuring (not counted)", ""},
      {"measure-at", OptKind::Str, "", "start measuring at this wall-clock time (seconds since the epoch), warming up until then; replaces --warmup (a clock guess: --barrier is exact)", ""},
      {"barrier", OptKind::Int, "0", "start barrier: after --warmup, let the operations in flight finish, report ready to --barrier-server and wait until it has heard from this many clients; its answer starts the first window of all of them at once (0: no barrier)", ""},
      {"barrier-id", OptKind::Str, "1", "which barrier (a whole number): the clients of one measurement share it", ""},
      {"barrier-server", OptKind::Int, "0", "rank of the server that gathers the barrier", ""},
      {"barrier-timeout", OptKind::Seconds, "0", "fail if the barrier is not released this long after this client is ready (0: --timeout)", ""},
      {"settle", OptKind::Seconds, "0", "with --barrier: keep loading this long after the release before the first window (pipelines refill; every client waits the same)", ""},
      {"delay-ready", OptKind::Seconds, "0", "testing: report ready this much later than --warmup (a late client)", ""},
      {"slices", OptKind::Int, "20", "slices per window in result.windows[].slice_ops (work over time, to align clients)", ""},
      {"window-log", OptKind::Str, "", "append one JSON line to this file as measuring starts, as each window ends and at the end, while running ({rank} becomes the rank): a campaign's progress. Written by a thread of its own, never waited for: lines that cannot be written are counted in result.window_log", ""},
  });
  add(ops::options(ops::Place::WithData));
  add({
      {"verify", OptKind::Bool, "false", "check a data pattern end to end on every bulk op", ""},
      {"req-size", OptKind::Size, "0", "pad each request to this many bytes (Quintain req_buffer_size; 0: minimal)", ""},
      {"resp-size", OptKind::Size, "0", "ask for responses padded to this many bytes (resp_buffer_size)", ""},
      {"interval", OptKind::Seconds, "100ms", "period of the ops/bytes/CPU series in the result", ""},
      {"trace", OptKind::Str, "", "write one CSV line per measured op to this file", ""},
      opt::cpus(" (e.g. 1 or 2-3); default: inherited"),
      opt::output(),
  });
  add(lease_options());
  Options o("load",
            "Run one client process: a workload against one or more servers for\n"
            "--duration after --warmup, with --concurrency operations outstanding.\n"
            "Rates come from the measured time. Prints one JSON document; on\n"
            "SIGINT/SIGTERM the partial result is written with complete=false.",
            opts);
  return run_command(o, "client", argc, argv, [&](Report& rep) {
    watch_lease(o, [](const std::string& why) {
      std::fprintf(stderr, "rooftop-engine: %s\n", why.c_str());
      g_signal.store(SIGTERM);
    });
    return Load(o, rep).run();
  });
}

}  // namespace rooftop
