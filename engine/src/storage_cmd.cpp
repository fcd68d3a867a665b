// rooftop-engine storage: the local storage mode. One process drives the
// storage operations of the table (put, get, the metadata operations)
// through the same io hooks and the same storage::Store a server runs, but
// in-process, without the network: one operation at a time (queue depth 1,
// as fio's psync engine), for --duration after --warmup. Its rate is the
// node's storage ceiling, to tell apart from the network's (a put through a
// server is bound by the lower of the two).
#include <cstdio>
#include <memory>
#include <set>

#include "commands.hpp"
#include "fabric.hpp"
#include "common_options.hpp"
#include "histogram.hpp"
#include "ops/table.hpp"
#include "report.hpp"
#include "storage.hpp"

namespace rooftop {

namespace {

// --op's choices: the operations of the table with an io hook.
OptSpec storage_op_option() {
  std::string choices, help;
  for (const ops::Op* op : ops::table()) {
    if (!op->has(ops::kStorage)) continue;
    if (!choices.empty()) choices += '|';
    choices += op->name;
    if (!help.empty()) help += "; ";
    help += op->name;
    help += ": ";
    help += op->help;
  }
  return {"op", OptKind::Choice, choices.substr(0, choices.find('|')), help + " (here: in-process)", choices};
}

// The options of the storage operations, each once (--size, --pattern, ...).
std::vector<OptSpec> storage_op_options() {
  std::vector<OptSpec> out;
  std::set<std::string> seen;
  for (const ops::Op* op : ops::table()) {
    if (!op->has(ops::kStorage) || !op->options) continue;
    for (const ops::OpOption& o : op->options()) {
      if (!seen.insert(o.spec.name).second) continue;
      OptSpec s = o.spec;
      if (s.name == "buffer") {  // one buffer of --size: no registration here to walk past
        s.def = "reuse";
        s.help += " (default here: reuse)";
      }
      const size_t p = s.help.find("{ops}");
      if (p != std::string::npos) s.help.replace(p, 5, "put/get");
      out.push_back(s);
    }
  }
  return out;
}

class Local {
 public:
  Local(const Options& o, Report& rep) : o_(o), rep_(rep) {}
  ~Local() {
    free_resident(data_, w_.data_len, w_.pages);
  }
  int run();

 private:
  // One operation: its latency (ns), or -1 after an error (reported once).
  int64_t one(uint64_t seq);
  std::string result_json(double elapsed, CpuTimes cpu) const;

  const Options& o_;
  Report& rep_;
  const ops::Op* op_ = nullptr;
  ops::Workload w_;
  std::unique_ptr<storage::Store> store_;
  uint8_t* data_ = nullptr;
  uint64_t stream_off_ = 0;
  Histogram hist_;
  uint64_t ops_ = 0, bytes_ = 0, warm_ops_ = 0, checked_ = 0, failed_ = 0;
  std::set<std::string> reported_;
};

int64_t Local::one(uint64_t seq) {
  ops::ClientOp c;
  c.req_id = seq;
  if (data_) {
    if (w_.stream && stream_off_ + w_.bytes > w_.data_len) stream_off_ = 0;
    c.data = data_ + (w_.stream ? stream_off_ : 0);
    if (w_.stream) stream_off_ += w_.bytes;
  }
  if (op_->client.prepare) op_->client.prepare(w_, c);
  const ops::RmaJob job{op_, seq, 0, w_.bytes, 0, 0, 0, w_.verify, 0, w_.args[0] != 0};
  const int64_t t = now_ns();
  storage::Outcome out = op_->server.io(*store_, job, c.data);
  const int64_t lat = now_ns() - t;
  std::string bad = out.error;
  if (out.status == wire::Status::Ok && w_.verify && op_->has(ops::kVerifiable)) {
    checked_++;
    bad = op_->client.verify(w_, c);
  }
  if (out.status == wire::Status::VerifyFailed) bad = "verify: the blocks to put differ from the pattern";
  if (out.status != wire::Status::Ok || !bad.empty()) {
    if (out.status == wire::Status::Ok || out.status == wire::Status::VerifyFailed) failed_++;
    if (bad.empty()) bad = std::string(op_->name) + ": " + wire::status_name(out.status);
    if (reported_.insert(bad).second && rep_.errors.size() < 100) rep_.errors.push_back(bad);
    return -1;
  }
  return lat;
}

int Local::run() {
  op_ = ops::find(o_.str("op"));
  op_->client.configure(o_, 1, w_);
  w_.verify = o_.flag("verify");
  const double duration = o_.seconds("duration"), warmup = o_.seconds("warmup");
  if (duration <= 0) throw UsageError("--duration must be > 0");
  storage::Config sc = storage::configure(o_, static_cast<int>(o_.integer("rank")));
  sc.data = op_->has(ops::kMovesBulk);  // a metadata run opens no data file
  store_ = std::make_unique<storage::Store>(std::move(sc));
  if (w_.data_len) {
    data_ = alloc_resident(w_.data_len, w_.pages);  // page-aligned: O_DIRECT takes it as is
    if (!data_) throw UsageError(alloc_error(w_.data_len, w_.pages, "data buffer (--size/--stream-size)"));
  }
  const int64_t t_start = now_ns(), t0 = t_start + static_cast<int64_t>(warmup * 1e9);
  const int64_t t_end = t0 + static_cast<int64_t>(duration * 1e9);
  CpuTimes cpu0;
  bool measuring = false;
  uint64_t seq = 0;
  for (int64_t now = t_start; now < t_end && !g_signal.load(); now = now_ns()) {
    if (!measuring && now >= t0) {
      measuring = true;
      cpu0 = process_cpu();
    }
    const int64_t lat = one(++seq);
    if (lat < 0) break;
    if (!measuring) {
      warm_ops_++;
      continue;
    }
    ops_++;
    bytes_ += w_.bytes;
    hist_.record(static_cast<uint64_t>(lat));
  }
  const int64_t t_stop = now_ns();
  CpuTimes c = process_cpu();
  const double elapsed = measuring ? (std::min(t_stop, t_end) - t0) / 1e9 : 0.0;
  rep_.result_json = result_json(elapsed, {c.user_s - cpu0.user_s, c.sys_s - cpu0.sys_s});
  rep_.complete = rep_.errors.empty() && measuring && !g_signal.load();
  if (g_signal.load()) return 128 + g_signal.load();
  return rep_.complete ? kExitOk : kExitFailure;
}

std::string Local::result_json(double elapsed, CpuTimes cpu) const {
  JsonWriter w;
  w.begin_object();
  w.kv("op", op_->name).kv("op_bytes", w_.bytes);
  if (data_) w.kv("buffer_page_bytes", backing_page_bytes(data_));  // what --buffer-pages got
  w.kv("ops", ops_).kv("bytes", bytes_).kv("elapsed_s", elapsed);
  w.kv("ops_per_sec", elapsed > 0 ? ops_ / elapsed : 0.0);
  w.kv("bytes_per_sec", elapsed > 0 ? bytes_ / elapsed : 0.0);
  w.key("latency_us").begin_object();
  w.kv("count", hist_.count()).kv("min", hist_.min() / 1e3).kv("mean", hist_.mean() / 1e3);
  w.kv("p50", hist_.quantile(0.5) / 1e3).kv("p90", hist_.quantile(0.9) / 1e3);
  w.kv("p99", hist_.quantile(0.99) / 1e3).kv("max", hist_.max() / 1e3);
  w.end_object();
  w.key("cpu").begin_object();
  w.kv("user_s", cpu.user_s).kv("sys_s", cpu.sys_s);
  w.kv("utilization", elapsed > 0 ? (cpu.user_s + cpu.sys_s) / elapsed : 0.0);
  w.end_object();
  w.key("warmup").begin_object().kv("ops", warm_ops_).end_object();
  w.key("verify").begin_object().kv("enabled", w_.verify).kv("checked", checked_).kv("failures", failed_).end_object();
  w.key("storage");
  store_->write_json(w);
  w.end_object();
  return w.str();
}

}  // namespace

int cmd_storage(int argc, char** argv) {
  std::vector<OptSpec> specs = {storage_op_option()};
  for (const OptSpec& s : storage_op_options()) specs.push_back(s);
  specs.insert(specs.end(), {
      {"duration", OptKind::Seconds, "5", "measured time", ""},
      {"warmup", OptKind::Seconds, "1", "time run before measuring (not counted)", ""},
      {"verify", OptKind::Bool, "false", "put: verifiable blocks, checked before writing; get: check the blocks read", ""},
      opt::rank("names the per-process data file and metadata directory, as a server's rank does"),
      opt::cpus(" (e.g. 1); default: inherited"),
      opt::output(),
  });
  for (const OptSpec& s : storage::options(true)) specs.push_back(s);
  Options o("storage",
            "The local storage mode: put, get or a metadata operation on --storage-dir,\n"
            "in-process and one at a time (queue depth 1), through the same I/O path\n"
            "a server runs for its clients, but without the network: the node's\n"
            "storage ceiling. Prints one JSON document (role \"storage\"; result.storage\n"
            "records every knob, the file system, device, mount options, free space\n"
            "and whether O_DIRECT was honoured).",
            specs);
  return run_command(o, "storage", argc, argv, [&](Report& rep) { return Local(o, rep).run(); });
}

}  // namespace rooftop
