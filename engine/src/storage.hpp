// Node-local storage behind the storage operations (ops/put.cpp, get.cpp,
// meta.cpp): one data file and one metadata directory per server process
// (or shared by the processes of a node), opened with the knobs the
// options name, and the facts a result must carry about them (file system,
// device, mount options, free space, whether O_DIRECT was honoured).
//
// A knob the file system refuses (O_DIRECT it does not honour, fallocate
// it does not support) is a UsageError naming the knob and the file
// system, raised when the store opens: never a silent fallback (fio's
// users hit exactly that: axboe/fio#719, #1913).
//
// The server (serve --storage-dir) and the local mode (`rooftop-engine
// storage`) both drive a Store through the operations' io hooks: one I/O
// path, measured with or without the network.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "aio.hpp"
#include "json.hpp"
#include "options.hpp"
#include "wire.hpp"

namespace rooftop::storage {

// Every storage knob, declared once: the options of `serve` and `storage`.
std::vector<OptSpec> options(bool required_dir);

struct Config {
  std::string dir;           // --storage-dir ("": no storage)
  std::string io_mode;       // buffered|direct|sync|dsync|direct+sync|direct+dsync
  int open_flags = 0;        // O_DIRECT/O_SYNC/O_DSYNC from io_mode
  uint64_t fsync_every = 0;  // fsync after every N puts (0: never)
  std::string allocation;    // preallocate|append|wrap
  std::string file_layout;   // per-process|shared
  uint64_t file_size = 0;
  bool fill = false;
  std::string meta_layout;   // shared|per-process
  uint64_t meta_files = 0;
  bool keep_files = false;
  int rank = 0;
  bool data = true;  // open the data file (the local mode's metadata runs need none)
};
// Reads and checks the knobs (UsageError names the option).
Config configure(const Options& o, int rank);

// Where the storage directory lives: statfs, statvfs, /proc/self/mountinfo.
struct FsInfo {
  std::string fs_type, device, mount_point, mount_options, super_options;
  uint64_t fs_magic = 0, free_bytes = 0, total_bytes = 0;
};
FsInfo describe_fs(const std::string& dir);

// --verify's blocks: every 4 KiB block of a put carries a header (magic,
// its index, the seed) and a pattern derived from both, so a block read
// back is checked on its own, wherever it landed in the file.
constexpr uint64_t kBlock = 4096;
void fill_blocks(uint8_t* p, uint64_t n, uint64_t seed);
// The offset of the first byte that is not what a put wrote, or n.
uint64_t check_blocks(const uint8_t* p, uint64_t n);

// What one storage call did: its status, a count (readdir: entries) and,
// on failure, why (reported once per kind by the caller).
struct Outcome {
  wire::Status status = wire::Status::Ok;
  uint64_t count = 0;
  std::string error;
  bool pending = false;  // put_async: submitted; its outcome comes from reap_async
};

class Store {
 public:
  // Opens (creating) the data file and probes the knobs: UsageError if the
  // file system refuses one. Fills the file first with --fill.
  explicit Store(Config c);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // n bytes at the next offset of the pattern; buf is 4 KiB aligned.
  Outcome put(const uint8_t* buf, uint64_t n, bool random, bool verify);
  Outcome get(uint8_t* buf, uint64_t n, bool random);
  Outcome meta(wire::MetaOp op);

  // Asynchronous puts (the server's inline mode, server.cpp): possible
  // with O_DIRECT at fixed offsets and no --fsync-every; start_async opens
  // the queue (std::runtime_error if the kernel refuses). put_async checks
  // and places the put as put does, then submits its write: pending, or
  // an immediate outcome (an error). reap_async gives (tag, outcome) of
  // the writes that completed, waiting up to timeout_ns for one.
  bool async_possible() const;
  void start_async(unsigned depth);
  bool async() const { return aio_ != nullptr; }
  int async_event_fd() const { return aio_ ? aio_->event_fd() : -1; }
  size_t async_in_flight() const { return aio_ ? aio_->in_flight() : 0; }
  Outcome put_async(const uint8_t* buf, uint64_t n, bool random, bool verify, uint64_t tag);
  size_t reap_async(std::vector<std::pair<uint64_t, Outcome>>& done, int64_t timeout_ns = 0);

  const Config& config() const { return c_; }
  bool direct_honoured() const { return direct_honoured_; }
  // The result's "storage" object: knobs, file system, counts.
  void write_json(JsonWriter& w) const;

 private:
  void open_data();
  void fill();
  uint64_t next_offset(uint64_t& cursor, uint64_t extent, uint64_t n, bool random);
  void populate();
  std::string meta_name(uint64_t i) const;
  Outcome fail(const std::string& what);
  Outcome fail(const std::string& what, int e);
  // A put, step by step: checked and placed (an outcome if refused), then
  // written by put or put_async, then counted.
  struct PutPlan {
    uint64_t off = 0, n = 0;
    bool sync_now = false, append = false;
    int64_t t0 = 0;
  };
  Outcome plan_put(const uint8_t* buf, uint64_t n, bool random, bool verify, PutPlan& p);
  Outcome count_put(const PutPlan& p, int64_t t1);

  Config c_;
  FsInfo fs_;
  std::string path_, meta_dir_;
  int fd_ = -1;
  bool direct_honoured_ = false;
  double fill_s_ = 0;
  mutable std::mutex mu_;  // cursors, counts and the metadata pool
  uint64_t put_cursor_ = 0, get_cursor_ = 0, written_hi_ = 0, since_fsync_ = 0;
  uint64_t rng_ = 0x9e3779b97f4a7c15ULL;
  struct Counts {
    uint64_t puts = 0, gets = 0, bytes_written = 0, bytes_read = 0, fsyncs = 0, errors = 0;
    uint64_t created = 0, stats = 0, opens = 0, unlinked = 0, readdirs = 0, refills = 0;
  } n_;
  // Seconds inside the data file's write (with its fsync) and read calls of
  // the puts and gets that succeeded: how long the device held this process
  // (result storage.device_s; calls on several I/O threads add up).
  double write_s_ = 0, read_s_ = 0;
  std::vector<uint64_t> alive_;  // metadata files of this process, in creation order
  uint64_t next_name_ = 0, rr_ = 0;
  bool populated_ = false;
  std::unique_ptr<AioQueue> aio_;
  std::vector<std::pair<uint64_t, PutPlan>> async_plans_;  // tag -> its put, while in flight
};

}  // namespace rooftop::storage
