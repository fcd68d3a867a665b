#include "storage.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "sysinfo.hpp"

namespace rooftop::storage {

namespace {

constexpr uint32_t kBlockMagic = 0x4b425452;  // "RTBK"
constexpr uint64_t kBlockHeader = 16;          // magic u32, index u32, seed u64

// strerror, with the errno name of the cases a user acts on (a full disk,
// a quota, a read-only or forbidden path), so a message names them plainly.
std::string err_text(int e) {
  std::string t = std::strerror(e);
  switch (e) {
    case ENOSPC: return t + " (ENOSPC: the file system is full)";
    case EDQUOT: return t + " (EDQUOT: the disk quota is used up)";
    case EROFS: return t + " (EROFS)";
    case EACCES: return t + " (EACCES)";
    default: return t;
  }
}

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

// mountinfo escapes blanks in paths as \040 and friends.
std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 3), nullptr, 8));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

bool under(const std::string& path, const std::string& mount) {
  if (mount == "/") return true;
  return path.compare(0, mount.size(), mount) == 0 && (path.size() == mount.size() || path[mount.size()] == '/');
}

// The file system an fs_type names in messages: "tmpfs at /dev/shm".
std::string where(const FsInfo& fs, const std::string& dir) {
  return (fs.fs_type.empty() ? "the file system" : fs.fs_type) + " at " + dir;
}

// Writes all of buf at off (O_APPEND: at the end), retrying short writes.
ssize_t write_all(int fd, const uint8_t* buf, uint64_t n, uint64_t off, bool append) {
  uint64_t done = 0;
  while (done < n) {
    ssize_t r = append ? ::write(fd, buf + done, n - done) : ::pwrite(fd, buf + done, n - done, off + done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return r < 0 ? -1 : static_cast<ssize_t>(done);
    done += static_cast<uint64_t>(r);
  }
  return static_cast<ssize_t>(done);
}

ssize_t read_all(int fd, uint8_t* buf, uint64_t n, uint64_t off) {
  uint64_t done = 0;
  while (done < n) {
    ssize_t r = ::pread(fd, buf + done, n - done, off + done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return r < 0 ? -1 : static_cast<ssize_t>(done);
    done += static_cast<uint64_t>(r);
  }
  return static_cast<ssize_t>(done);
}

// Whether O_DIRECT bypasses the page cache here: a block written with it
// must not be resident afterwards (tmpfs accepts O_DIRECT since Linux 6.6
// but its data is the page cache). Opening with O_DIRECT failing is "no".
bool probe_direct(const std::string& dir) {
  const std::string path = dir + "/.rooftop-odirect-probe." + std::to_string(getpid());
  int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_DIRECT, 0600);
  if (fd < 0) return false;
  uint8_t* buf = alloc_resident(kBlock);
  bool ok = buf && write_all(fd, buf, kBlock, 0, false) == static_cast<ssize_t>(kBlock);
  ::close(fd);
  if (buf) munmap(buf, kBlock);
  if (ok) {
    int rfd = ::open(path.c_str(), O_RDONLY);
    void* map = rfd >= 0 ? mmap(nullptr, kBlock, PROT_READ, MAP_SHARED, rfd, 0) : MAP_FAILED;
    unsigned char vec = 1;
    ok = map != MAP_FAILED && mincore(map, kBlock, &vec) == 0 && (vec & 1) == 0;
    if (map != MAP_FAILED) munmap(map, kBlock);
    if (rfd >= 0) ::close(rfd);
  }
  ::unlink(path.c_str());
  return ok;
}

}  // namespace

std::vector<OptSpec> options(bool required_dir) {
  return {
      {"storage-dir", OptKind::Str, "",
       required_dir ? "directory on the storage to measure (required): the data file and metadata directories go here"
                    : "node-local directory for put/get and the metadata operations (unset: they are refused with storage_error)",
       ""},
      {"io-mode", OptKind::Choice, "buffered",
       "cache and durability of the data file: buffered (page cache), direct (O_DIRECT), sync (O_SYNC), dsync (O_DSYNC), or direct with either; refused if the file system does not honour O_DIRECT",
       "buffered|direct|sync|dsync|direct+sync|direct+dsync"},
      {"fsync-every", OptKind::Int, "0", "fsync the data file after every N puts (0: never)", ""},
      {"allocation", OptKind::Choice, "preallocate",
       "preallocate: fallocate --file-size up front (refused where unsupported); append: the file grows by every put (sequential only) up to --file-size, then starts again empty; wrap: no preallocation, puts overwrite from the start after --file-size",
       "preallocate|append|wrap"},
      {"file-layout", OptKind::Choice, "per-process",
       "per-process: one data file per server process (rooftop-data.RANK); shared: one file all processes of the node use (rooftop-data.shared)",
       "per-process|shared"},
      {"file-size", OptKind::Size, "1GiB", "size of the data file: offsets of put/get stay below it (append: where the file starts again empty)", ""},
      {"fill", OptKind::Bool, "false", "write the whole data file (verifiable blocks) before ready, so get reads real data anywhere", ""},
      {"meta-layout", OptKind::Choice, "shared",
       "directory of the metadata operations: shared (rooftop-meta, every process of the node: mdtest's hard case) or per-process (rooftop-meta.RANK: the easy case)",
       "shared|per-process"},
      {"meta-files", OptKind::Int, "1000", "files each process creates before its first metadata operation (stat, open and readdir act on them; unlink refills them when none is left)", ""},
      {"keep-files", OptKind::Bool, "false", "leave the data file and the metadata files in place at exit", ""},
  };
}

Config configure(const Options& o, int rank) {
  Config c;
  c.dir = o.str("storage-dir");
  c.io_mode = o.str("io-mode");
  if (c.io_mode.find("direct") != std::string::npos) c.open_flags |= O_DIRECT;
  if (c.io_mode.find("dsync") != std::string::npos) c.open_flags |= O_DSYNC;
  else if (c.io_mode.find("sync") != std::string::npos) c.open_flags |= O_SYNC;
  const int64_t every = o.integer("fsync-every");
  if (every < 0) throw UsageError("--fsync-every must be >= 0");
  c.fsync_every = static_cast<uint64_t>(every);
  c.allocation = o.str("allocation");
  c.file_layout = o.str("file-layout");
  c.file_size = o.size("file-size");
  if (c.file_size < kBlock || c.file_size % kBlock)
    throw UsageError("--file-size must be a multiple of 4KiB (at least 4KiB)");
  c.fill = o.flag("fill");
  c.meta_layout = o.str("meta-layout");
  const int64_t files = o.integer("meta-files");
  if (files < 1 || files > 10000000) throw UsageError("--meta-files must be 1..10000000");
  c.meta_files = static_cast<uint64_t>(files);
  c.keep_files = o.flag("keep-files");
  c.rank = rank;
  if (c.fill && c.allocation == "append") throw UsageError("--fill and --allocation append exclude each other");
  return c;
}

FsInfo describe_fs(const std::string& dir) {
  FsInfo fs;
  struct statfs sf {};
  if (statfs(dir.c_str(), &sf) == 0) fs.fs_magic = static_cast<uint64_t>(sf.f_type);
  struct statvfs sv {};
  if (statvfs(dir.c_str(), &sv) == 0) {
    fs.free_bytes = static_cast<uint64_t>(sv.f_bavail) * sv.f_frsize;
    fs.total_bytes = static_cast<uint64_t>(sv.f_blocks) * sv.f_frsize;
  }
  char real[PATH_MAX];
  const std::string path = realpath(dir.c_str(), real) ? real : dir;
  struct stat st {};
  const bool have_dev = ::stat(path.c_str(), &st) == 0;
  const std::string devno = std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
  // The mount of this device whose mount point is the longest prefix of the path.
  std::ifstream f("/proc/self/mountinfo");
  size_t best = 0;
  for (std::string line; std::getline(f, line);) {
    std::istringstream ss(line);
    std::string id, parent, mm, root, mnt, opts;
    ss >> id >> parent >> mm >> root >> mnt >> opts;
    mnt = unescape(mnt);
    if ((have_dev && mm != devno) || !under(path, mnt) || mnt.size() < best) continue;
    std::string tok, type, source, super;
    while (ss >> tok && tok != "-") {
    }
    ss >> type >> source >> super;
    best = mnt.size();
    fs = FsInfo{type, unescape(source), mnt, opts, super, fs.fs_magic, fs.free_bytes, fs.total_bytes};
  }
  return fs;
}

void fill_blocks(uint8_t* p, uint64_t n, uint64_t seed) {
  for (uint64_t b = 0; b * kBlock < n; b++) {
    uint8_t* blk = p + b * kBlock;
    const uint64_t len = std::min(kBlock, n - b * kBlock);
    uint8_t head[kBlockHeader];
    const uint32_t idx = static_cast<uint32_t>(b);
    std::memcpy(head, &kBlockMagic, 4);
    std::memcpy(head + 4, &idx, 4);
    std::memcpy(head + 8, &seed, 8);
    std::memcpy(blk, head, std::min(len, kBlockHeader));
    if (len > kBlockHeader) wire::fill_pattern(blk + kBlockHeader, len - kBlockHeader, seed * 1000003 + b);
  }
}

uint64_t check_blocks(const uint8_t* p, uint64_t n) {
  for (uint64_t b = 0; b * kBlock < n; b++) {
    const uint8_t* blk = p + b * kBlock;
    const uint64_t len = std::min(kBlock, n - b * kBlock);
    if (len < kBlockHeader) return b * kBlock;
    uint32_t magic, idx;
    uint64_t seed;
    std::memcpy(&magic, blk, 4);
    std::memcpy(&idx, blk + 4, 4);
    std::memcpy(&seed, blk + 8, 8);
    if (magic != kBlockMagic) return b * kBlock;
    const size_t bad = wire::check_pattern(blk + kBlockHeader, len - kBlockHeader, seed * 1000003 + idx);
    if (bad != len - kBlockHeader) return b * kBlock + kBlockHeader + bad;
  }
  return n;
}

Store::Store(Config c) : c_(std::move(c)) {
  if (c_.dir.empty()) throw UsageError("--storage-dir is required");
  struct stat st {};
  if (::stat(c_.dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw UsageError("--storage-dir " + c_.dir + ": not a directory");
  fs_ = describe_fs(c_.dir);
  direct_honoured_ = probe_direct(c_.dir);
  if ((c_.open_flags & O_DIRECT) && !direct_honoured_)
    throw UsageError("--io-mode " + c_.io_mode + ": " + where(fs_, c_.dir) +
                     " does not honour O_DIRECT (the data would stay in the page cache)");
  meta_dir_ = c_.dir + "/rooftop-meta";
  if (c_.meta_layout != "shared") {
    meta_dir_ += '.';
    meta_dir_ += std::to_string(c_.rank);
  }
  if (!c_.data) return;
  path_ = c_.dir + "/rooftop-data." + (c_.file_layout == "shared" ? std::string("shared") : std::to_string(c_.rank));
  open_data();
  if (c_.fill) fill();
}

void Store::open_data() {
  int flags = O_CREAT | O_RDWR | c_.open_flags;
  // A per-process file starts empty; a shared one may be in use by the others.
  if (c_.allocation != "preallocate" && c_.file_layout == "per-process") flags |= O_TRUNC;
  if (c_.allocation == "append") flags |= O_APPEND;
  const bool created = ::access(path_.c_str(), F_OK) != 0;
  fd_ = ::open(path_.c_str(), flags, 0600);
  if (fd_ < 0) {
    const int e = errno;
    if (e == EINVAL && (c_.open_flags & O_DIRECT))
      throw UsageError("--io-mode " + c_.io_mode + ": " + where(fs_, c_.dir) + " refuses O_DIRECT");
    throw UsageError("--storage-dir: cannot open " + path_ + ": " + err_text(e));
  }
  if (c_.allocation != "preallocate") return;
  // fallocate(2), not posix_fallocate: glibc's emulation writes zeros
  // where the file system lacks it, a silent fallback.
  const int rc = ::fallocate(fd_, 0, 0, static_cast<off_t>(c_.file_size)) == 0 ? 0 : errno;
  if (rc != 0 && created) {  // a refused file leaves nothing behind (it would hold the space it got)
    ::close(fd_);
    fd_ = -1;
    ::unlink(path_.c_str());
  }
  if (rc == EOPNOTSUPP || rc == EINVAL)
    throw UsageError("--allocation preallocate: " + where(fs_, c_.dir) + " does not support fallocate (" +
                     err_text(rc) + ")");
  if (rc == ENOSPC)
    throw UsageError("--file-size " + std::to_string(c_.file_size) + " bytes does not fit in " + where(fs_, c_.dir) +
                     " (" + std::to_string(fs_.free_bytes) + " bytes free; --allocation preallocate reserves " +
                     "the whole file per server process): give a smaller --file-size");
  if (rc != 0)
    throw UsageError("--allocation preallocate: fallocate of --file-size " + std::to_string(c_.file_size) +
                     " bytes in " + path_ + " failed: " + err_text(rc));
}

// --fill: the whole file in verifiable blocks (seed 0), 1 MiB at a time.
void Store::fill() {
  const uint64_t chunk = std::min<uint64_t>(1 << 20, c_.file_size);
  uint8_t* buf = alloc_resident(chunk);
  if (!buf) throw UsageError("--fill: cannot allocate a buffer");
  const int64_t t = now_ns();
  for (uint64_t off = 0; off < c_.file_size; off += chunk) {
    const uint64_t n = std::min(chunk, c_.file_size - off);
    fill_blocks(buf, n, 0);
    if (write_all(fd_, buf, n, off, false) != static_cast<ssize_t>(n)) {
      const int e = errno;
      munmap(buf, chunk);
      throw UsageError("--fill: writing " + path_ + " failed: " + err_text(e));
    }
  }
  munmap(buf, chunk);
  if (::fsync(fd_) != 0) throw UsageError("--fill: fsync of " + path_ + " failed: " + err_text(errno));
  written_hi_ = c_.file_size;
  fill_s_ = (now_ns() - t) / 1e9;
}

Store::~Store() {
  aio_.reset();  // waits for the writes in flight: their buffers and the file outlive them
  if (fd_ >= 0) ::close(fd_);
  if (c_.keep_files) return;
  if (!path_.empty()) ::unlink(path_.c_str());  // a shared file: the others keep their open descriptors
  for (uint64_t i : alive_) ::unlink(meta_name(i).c_str());
  ::rmdir(meta_dir_.c_str());  // fails while other processes' files remain: theirs to remove
}

// The offset of the next n bytes below extent (a multiple of n for random
// offsets, so O_DIRECT's alignment holds); called under mu_.
uint64_t Store::next_offset(uint64_t& cursor, uint64_t extent, uint64_t n, bool random) {
  if (random) {
    rng_ ^= rng_ << 13;
    rng_ ^= rng_ >> 7;
    rng_ ^= rng_ << 17;
    return (rng_ % (extent / n)) * n;
  }
  if (cursor + n > extent) cursor = 0;
  const uint64_t off = cursor;
  cursor += n;
  return off;
}

Outcome Store::fail(const std::string& what) { return fail(what, errno); }

Outcome Store::fail(const std::string& what, int e) {
  std::lock_guard<std::mutex> g(mu_);
  n_.errors++;
  return {wire::Status::StorageError, 0, what + ": " + err_text(e)};
}

// Checks a put and places it (under mu_: the cursor, the fsync count).
// Status Ok: write p.n bytes at p.off.
Outcome Store::plan_put(const uint8_t* buf, uint64_t n, bool random, bool verify, PutPlan& p) {
  if (verify && check_blocks(buf, n) != n) return {wire::Status::VerifyFailed, 0, ""};
  p.n = n;
  p.append = c_.allocation == "append";
  if (p.append && random)
    return {wire::Status::BadRequest, 0, "put --pattern rand: --allocation append only writes at the end"};
  if (!p.append && n > c_.file_size)
    return {wire::Status::TooLarge, 0, "put: --size exceeds the server's --file-size"};
  std::lock_guard<std::mutex> g(mu_);
  if (p.append && put_cursor_ + n > c_.file_size && put_cursor_ > 0) {
    // The file grew to --file-size: it starts again empty, so a long or
    // fast run never fills the file system (disk use stays bounded).
    if (::ftruncate(fd_, 0) != 0) {
      n_.errors++;
      return {wire::Status::StorageError, 0, "put: truncating " + path_ + ": " + err_text(errno)};
    }
    put_cursor_ = 0;
  }
  p.off = p.append ? put_cursor_ : next_offset(put_cursor_, c_.file_size, n, random);
  if (p.append) put_cursor_ += n;
  if (c_.fsync_every && ++since_fsync_ >= c_.fsync_every) {
    since_fsync_ = 0;
    p.sync_now = true;
  }
  return {};
}

Outcome Store::count_put(const PutPlan& p, int64_t t1) {
  std::lock_guard<std::mutex> g(mu_);
  write_s_ += (t1 - p.t0) / 1e9;
  n_.puts++;
  n_.bytes_written += p.n;
  n_.fsyncs += p.sync_now;
  written_hi_ = std::max(written_hi_, p.off + p.n);
  return {};
}

Outcome Store::put(const uint8_t* buf, uint64_t n, bool random, bool verify) {
  PutPlan p;
  Outcome o = plan_put(buf, n, random, verify, p);
  if (o.status != wire::Status::Ok) return o;
  p.t0 = now_ns();
  if (write_all(fd_, buf, n, p.off, p.append) != static_cast<ssize_t>(n)) return fail("put: writing " + path_);
  if (p.sync_now && ::fsync(fd_) != 0) return fail("put: fsync of " + path_);
  return count_put(p, now_ns());
}

// Asynchronous writes need a fixed offset (not O_APPEND), no fsync to
// follow, and O_DIRECT (a buffered AIO write runs inside io_submit).
bool Store::async_possible() const {
  return fd_ >= 0 && (c_.open_flags & O_DIRECT) && c_.allocation != "append" && c_.fsync_every == 0;
}

void Store::start_async(unsigned depth) { aio_ = std::make_unique<AioQueue>(depth); }

Outcome Store::put_async(const uint8_t* buf, uint64_t n, bool random, bool verify, uint64_t tag) {
  PutPlan p;
  Outcome o = plan_put(buf, n, random, verify, p);
  if (o.status != wire::Status::Ok) return o;
  p.t0 = now_ns();
  if (!aio_->write(fd_, buf, n, p.off, tag)) return fail("put: submitting the write to " + path_);
  async_plans_.emplace_back(tag, p);
  o.pending = true;
  return o;
}

size_t Store::reap_async(std::vector<std::pair<uint64_t, Outcome>>& done, int64_t timeout_ns) {
  std::vector<AioQueue::Done> ev;
  if (!aio_ || aio_->reap(ev, timeout_ns) == 0) return 0;
  const int64_t t1 = now_ns();
  for (const auto& d : ev) {
    auto it = std::find_if(async_plans_.begin(), async_plans_.end(), [&](auto& e) { return e.first == d.tag; });
    if (it == async_plans_.end()) continue;  // not ours: cannot happen
    const PutPlan p = it->second;
    async_plans_.erase(it);
    if (d.result < 0) done.emplace_back(d.tag, fail("put: writing " + path_, static_cast<int>(-d.result)));
    else if (static_cast<uint64_t>(d.result) != p.n)
      done.emplace_back(d.tag, fail("put: short write to " + path_, EIO));
    else done.emplace_back(d.tag, count_put(p, t1));
  }
  return ev.size();
}

Outcome Store::get(uint8_t* buf, uint64_t n, bool random) {
  uint64_t off;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (written_hi_ < n)
      return {wire::Status::StorageError, 0,
              "get: nothing to read yet (no put wrote --size bytes and the server did not --fill)"};
    off = next_offset(get_cursor_, written_hi_, n, random);
  }
  const int64_t t0 = now_ns();
  if (read_all(fd_, buf, n, off) != static_cast<ssize_t>(n)) return fail("get: reading " + path_);
  const int64_t t1 = now_ns();
  std::lock_guard<std::mutex> g(mu_);
  read_s_ += (t1 - t0) / 1e9;
  n_.gets++;
  n_.bytes_read += n;
  return {};
}

std::string Store::meta_name(uint64_t i) const {
  return meta_dir_ + "/r" + std::to_string(c_.rank) + "." + std::to_string(i);
}

// --meta-files files, created before the first metadata operation is
// answered (in the client's warmup) and again when unlink used them up.
// Names an earlier server kept (--keep-files: a campaign's next server
// group in the same directory) are passed over, not failed on.
void Store::populate() {
  if (::mkdir(meta_dir_.c_str(), 0700) != 0 && errno != EEXIST) return;
  for (uint64_t k = 0; k < c_.meta_files; k++) {
    const uint64_t i = next_name_++;
    int fd = ::open(meta_name(i).c_str(), O_CREAT | O_EXCL | O_WRONLY, 0600);
    if (fd < 0 && errno == EEXIST) {
      k--;  // taken: the next name (they end: a directory holds finitely many)
      continue;
    }
    if (fd < 0) return;
    ::close(fd);
    alive_.push_back(i);
  }
  populated_ = true;
}

// Metadata calls run under mu_: the pool of names is shared by the I/O
// threads (one by default), and a create must not race an unlink of it.
Outcome Store::meta(wire::MetaOp op) {
  std::lock_guard<std::mutex> g(mu_);
  if (!populated_ || (op == wire::MetaOp::Unlink && alive_.empty())) {
    if (populated_) n_.refills++;
    populate();
    if (alive_.empty()) {
      n_.errors++;
      return {wire::Status::StorageError, 0, "metadata: cannot create files in " + meta_dir_ + ": " + err_text(errno)};
    }
  }
  auto bad = [&](const std::string& what) {
    const int e = errno;
    n_.errors++;
    return Outcome{wire::Status::StorageError, 0, what + ": " + err_text(e)};
  };
  const std::string name = meta_name(alive_[rr_++ % alive_.size()]);
  switch (op) {
    case wire::MetaOp::Create: {
      const uint64_t i = next_name_++;
      int fd = ::open(meta_name(i).c_str(), O_CREAT | O_EXCL | O_WRONLY, 0600);
      if (fd < 0) return bad("create " + meta_name(i));
      ::close(fd);
      alive_.push_back(i);
      n_.created++;
      return {};
    }
    case wire::MetaOp::Stat: {
      struct stat st {};
      if (::stat(name.c_str(), &st) != 0) return bad("stat " + name);
      n_.stats++;
      return {};
    }
    case wire::MetaOp::Open: {
      int fd = ::open(name.c_str(), O_RDONLY);
      if (fd < 0) return bad("open " + name);
      ::close(fd);
      n_.opens++;
      return {};
    }
    case wire::MetaOp::Unlink: {
      const std::string last = meta_name(alive_.back());
      if (::unlink(last.c_str()) != 0) return bad("unlink " + last);
      alive_.pop_back();
      n_.unlinked++;
      return {};
    }
    case wire::MetaOp::Readdir: {
      DIR* d = ::opendir(meta_dir_.c_str());
      if (!d) return bad("opendir " + meta_dir_);
      uint64_t entries = 0;
      while (struct dirent* e = ::readdir(d))
        if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..")) entries++;
      ::closedir(d);
      n_.readdirs++;
      return {wire::Status::Ok, entries, ""};
    }
  }
  return {wire::Status::BadRequest, 0, "unknown metadata operation"};
}

void Store::write_json(JsonWriter& w) const {
  std::lock_guard<std::mutex> g(mu_);
  w.begin_object();
  w.kv("dir", c_.dir).kv("data_file", path_).kv("meta_dir", meta_dir_);
  w.key("knobs").begin_object();
  w.kv("io_mode", c_.io_mode).kv("fsync_every", c_.fsync_every).kv("allocation", c_.allocation);
  w.kv("file_layout", c_.file_layout).kv("file_size", c_.file_size).kv("fill", c_.fill);
  w.kv("meta_layout", c_.meta_layout).kv("meta_files", c_.meta_files).kv("keep_files", c_.keep_files);
  w.end_object();
  w.key("fs").begin_object();
  w.kv("type", fs_.fs_type).kv("magic", hex(fs_.fs_magic)).kv("device", fs_.device);
  w.kv("mount_point", fs_.mount_point).kv("mount_options", fs_.mount_options);
  w.kv("super_options", fs_.super_options);
  w.kv("free_bytes", fs_.free_bytes).kv("total_bytes", fs_.total_bytes);
  w.end_object();
  w.kv("o_direct_honoured", direct_honoured_);
  w.kv("fill_s", fill_s_);
  w.key("counts").begin_object();
  w.kv("puts", n_.puts).kv("gets", n_.gets).kv("bytes_written", n_.bytes_written).kv("bytes_read", n_.bytes_read);
  w.kv("fsyncs", n_.fsyncs).kv("errors", n_.errors).kv("created", n_.created).kv("stats", n_.stats);
  w.kv("opens", n_.opens).kv("unlinked", n_.unlinked).kv("readdirs", n_.readdirs).kv("refills", n_.refills);
  w.kv("meta_files_now", static_cast<uint64_t>(alive_.size()));
  w.end_object();
  w.key("device_s").begin_object().kv("write", write_s_).kv("read", read_s_).end_object();
  w.end_object();
}

}  // namespace rooftop::storage
