// rooftop-engine agent: one long-lived process per node for a whole
// campaign (rooftop's engine.launch = agents). It starts the engine
// commands the campaign asks for -- servers, clients, shutdowns -- by
// forking itself: each child runs the command as `rooftop-engine COMMAND
// ...` would, without exec, so the binary and libfabric (whose Debian build
// spends ~0.35 s in a library constructor) are loaded once per node, not
// once per process, and no launcher (srun step, mpiexec, namespace entry)
// runs per placement.
//
// The campaign and the agent talk through files in the agent's node folder
// <dir>/node-<rank>/ (on the file system the group folders already share):
//   ready          written once the agent runs: pid, host, Slurm node, cpus
//   beat           a counter, rewritten in place every --beat seconds
//   req-<n>        a request (the campaign writes it and renames it in):
//                  NUL-terminated fields "log" PATH, "env" K=V..., "arg" A...
//                  (the first arg is the engine path, as argv[0])
//   pid-<n>        "PID" once forked, padded to kRecord bytes
//   exit-<n>       "PID RC" once reaped: pid-<n> rewritten in place and
//                  renamed (RC: its exit code, 128+N if killed by signal N)
//   sig-<n>-<k>-<N>  an empty file: signal N to child n's process group
//   stop           an empty file: the campaign is done with this agent; it
//                  stops as on its lease's end, without waiting for its
//                  next look at the lease (every 200 ms)
// Files with content are written whole under a temporary name and renamed,
// so a reader sees all of one or nothing; once a child runs, nothing needs
// a new block of the file system (in-place rewrites, renames, empty files),
// so a full results folder still sees every exit and delivers every signal.
// The agent wakes on inotify, and polls every --poll seconds besides
// (inotify does not see another NFS client's writes).
//
// What it trusts (agent_files.hpp): it opens its node folder once, and
// refuses to start unless the folder is its own user's and writable by no
// one else (the campaign makes it 0700, under a session folder whose name
// has a random part); everything after that goes through the descriptor
// held, so renaming a folder above it redirects nothing. A req-, sig- or
// stop entry is acted on only if it is a regular file owned by the agent's
// user (no link followed); any other is ignored, said once on stderr and
// counted (result.ignored), and costs nothing after that (remembered by
// name and inode), as does every entry that is not a request. Once the
// folder's path no longer names the folder it holds (removed, or another
// put in its place) the agent stops, saying so (stderr, stop_reason, an
// error, exit 1), its document then on stdout rather than --output (the
// path may now lead into someone else's folder). A child opens its log
// without following a link.
//
// Each child: a session of its own (setsid), its output to the request's
// log, the request's environment added, the launcher's rank variables
// removed (they are the agent's), SIGTERM once the agent is gone
// (PR_SET_PDEATHSIG), its --cpus mapped to this agent's own cpus when
// --relative-cpus (srun, mpiexec on another host: the launcher picked them),
// and its own command line in /proc/PID/cmdline (ps, pgrep), written over
// the agent's: an agent started with less room than kTitleRoom re-executes
// itself once, padded, then shows its own command line again. A campaign
// gives it the room up front (an argument of spaces only, dropped before
// the options are read), so libfabric and its constructors load once.
//
// The agent holds the campaign's lease (--lease): once the file is removed
// or not renewed for --lease-timeout, it sends SIGTERM to every child's
// process group, SIGKILL --grace seconds later, and exits. SIGTERM, SIGINT
// and SIGHUP do the same.
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "agent_files.hpp"
#include "commands.hpp"
#include "fabric.hpp"
#include "common_options.hpp"
#include "lease.hpp"
#include "report.hpp"
#include "sysinfo.hpp"

namespace rooftop {

namespace {

// The process's command line area (argv[0] up to the end of its last
// argument: what /proc/PID/cmdline shows), from main (remember_args).
char* g_area = nullptr;
size_t g_area_len = 0;
std::vector<std::string> g_args;

// Room a forked child's command line may take (longer ones are cut).
constexpr size_t kTitleRoom = 8192;
// An argument of at least this many spaces (and nothing else) is room for
// titles a launching campaign added: with it the area holds kTitleRoom and
// the agent need not run itself again (loading libfabric a second time).
constexpr size_t kPadMin = 64;

// Shows args as this process's command line, NUL-separated, within the
// area (cut to fit, the last byte kept NUL: /proc/PID/cmdline then reads
// them as arguments).
void set_title(const std::vector<std::string>& args) {
  if (!g_area || g_area_len < 2) return;
  std::memset(g_area, 0, g_area_len);
  size_t at = 0;
  for (auto& a : args) {
    if (at + 1 >= g_area_len) break;
    size_t n = std::min(a.size(), g_area_len - 1 - at);
    std::memcpy(g_area + at, a.data(), n);
    at += n + 1;
  }
}

// Variables a launcher sets for the agent's own rank: a child must not
// read them as its own (--rank-from-env, --local-rank -1).
const char* kRankVars[] = {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_NODE_RANK",
                           "PMIX_RANK", "PMI_RANK", "PMI_LOCAL_RANK", "MPI_LOCALRANKID", "PALS_LOCAL_RANKID",
                           "PALS_RANKID", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID"};

// A folder entry: its name and inode (a new file of the same name is new).
using Entry = std::pair<std::string, ino_t>;

struct Request {
  std::string log;
  std::vector<std::string> env, args;
};

// The fields of a request file; false (with why) if it is malformed.
bool parse_request(const std::string& text, Request& r, std::string& why) {
  std::vector<std::string> fields;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\0', at);
    if (end == std::string::npos) {
      why = "a field is not NUL-terminated";
      return false;
    }
    fields.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  for (size_t i = 0; i + 1 < fields.size(); i += 2) {
    const std::string &k = fields[i], &v = fields[i + 1];
    if (k == "log") r.log = v;
    else if (k == "env") r.env.push_back(v);
    else if (k == "arg") r.args.push_back(v);
    else {
      why = "unknown field '" + k + "'";
      return false;
    }
  }
  if (fields.size() % 2) why = "a field has no value";
  else if (r.args.size() < 2) why = "no command";
  else if (r.log.empty()) why = "no log";
  return why.empty();
}

// The width of a pid/exit record and of the beat: rewritten in place.
constexpr size_t kRecord = 32;

std::string record(const std::string& text) {
  std::string r = text.substr(0, kRecord - 1);
  r.resize(kRecord - 1, ' ');
  return r + "\n";
}

// The whole content of the open file fd (closed).
bool read_fd(int fd, std::string& out) {
  out.clear();
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      close(fd);
      return false;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return true;
}

class Agent {
 public:
  Agent(const Options& o, int node, bool ran_again)
      : node_(node),
        ran_again_(ran_again),
        dir_(o.str("dir") + "/node-" + std::to_string(node)),
        relative_(o.flag("relative-cpus")),
        poll_ms_(std::max(1, static_cast<int>(o.seconds("poll") * 1000))),
        beat_ns_(static_cast<int64_t>(o.seconds("beat") * 1e9)),
        grace_ns_(static_cast<int64_t>(o.seconds("grace") * 1e9)),
        lease_(o),
        cpus_(affinity_cpus()),
        preinit_(o.str("preinit")) {}

  // Runs until the lease ends, a signal stops it or its folder is removed
  // or replaced; the result object. EngineError if its folder cannot be
  // opened or is not its user's own.
  std::string run() {
    open_folder();
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, s);
    sigprocmask(SIG_BLOCK, &set, &old_mask_);
    sfd_ = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sfd_ < 0) throw EngineError(kExitFailure, std::string("signalfd: ") + std::strerror(errno));
    // The folder held, not whatever its path names now (a magic link of
    // /proc); its own removal or renaming wakes the agent too.
    ifd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    std::string held = "/proc/self/fd/" + std::to_string(dfd_);
    if (ifd_ >= 0 &&
        inotify_add_watch(ifd_, held.c_str(), IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF) < 0) {
      close(ifd_);
      ifd_ = -1;
    }
    // Before the first fork: libfabric's providers initialised once here, not
    // in every child (only for socket and shared-memory fabrics).
    std::string preinit_why = preinit_.empty() ? "not asked (--preinit)" : preinit_providers(preinit_);
    say_ready();
    std::string why;
    int64_t next_beat = 0;
    while (why.empty()) {
      pollfd fds[2] = {{sfd_, POLLIN, 0}, {ifd_, POLLIN, 0}};
      poll(fds, ifd_ >= 0 ? 2 : 1, poll_ms_);
      why = drain();
      if (why.empty()) {
        std::string moved = folder_moved(dir_, dfd_);
        if (!moved.empty()) why = lost_ = "its folder " + dir_ + " was removed or replaced: " + moved;
      }
      reap();
      if (why.empty()) scan();
      int64_t now = now_ns();
      if (now >= next_beat) {
        std::string beat = record(std::to_string(++beats_));
        if (!rewrite_at(dfd_, "beat", beat)) write_at(dfd_, "beat", beat);
        next_beat = now + beat_ns_;
      }
      retry();
      if (why.empty() && asked_to_stop_) why = "the campaign asked it to stop (" + dir_ + "/stop)";
      if (why.empty() && lease_.lapsed(now)) why = lease_.why();
    }
    if (!lost_.empty())
      std::fprintf(stderr, "rooftop-engine agent: node %d: %s; stopping\n", node_, lost_.c_str());
    int left = stop();
    unlinkat(dfd_, "ready", 0);
    JsonWriter w;
    w.begin_object();
    w.kv("node", node_);
    w.kv("agent_dir", dir_);
    w.kv("relative_cpus", relative_);
    w.kv("ran_again", ran_again_);
    w.kv("preinit", preinit_);
    w.kv("preinit_done", preinit_why.empty());
    if (!preinit_why.empty()) w.kv("preinit_why", preinit_why);
    w.kv("requests", requests_);
    w.kv("started", started_);
    w.kv("refused", refused_);
    w.kv("ignored", ignored_);
    w.kv("running_at_stop", left);
    w.kv("killed", killed_);
    w.kv("stop_reason", why);
    w.end_object();
    return w.str();
  }

 // Why the agent stopped on its folder ("" if it did not): its document
  // then goes to stdout, not into the folder (--output).
  const std::string& folder_lost() const { return lost_; }
  // Its folder could not be trusted, or is gone: --output, in it, is not
  // to be written either.
  bool output_unsafe() const { return !lost_.empty() || dfd_ < 0; }

 private:
  // Its node folder, opened once and held (dfd_; dirs_ reads its entries).
  void open_folder() {
    int fd = open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      std::string e = errno == ELOOP || errno == ENOTDIR ? "it is a link or not a folder" : std::strerror(errno);
      throw EngineError(kExitFailure, "cannot open its folder " + dir_ + " (the campaign makes it): " + e);
    }
    std::string why = untrusted_folder(fd);
    if (!why.empty()) {
      close(fd);
      throw EngineError(kExitFailure, "refuses its folder " + dir_ + ": " + why);
    }
    int listing = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    dirs_ = listing < 0 ? nullptr : fdopendir(listing);
    if (!dirs_) {
      if (listing >= 0) close(listing);
      close(fd);
      throw EngineError(kExitFailure, "cannot read its folder " + dir_ + ": " + std::strerror(errno));
    }
    dfd_ = fd;
  }

  void say_ready() {
    const char* slurm = std::getenv("SLURMD_NODENAME");
    JsonWriter w;
    w.begin_object();
    w.kv("node", node_);
    w.kv("pid", static_cast<int64_t>(getpid()));
    w.kv("host", hostname());
    w.key("slurm_node");
    if (slurm) w.value(slurm);
    else w.null();
    w.kv("cpus", cpu_list_string(cpus_));
    w.kv("version", kEngineVersion);
    w.end_object();
    if (!write_at(dfd_, "ready", w.str() + "\n"))
      throw EngineError(kExitFailure, "cannot write " + dir_ + "/ready: " + std::strerror(errno));
    std::fprintf(stderr, "rooftop-engine agent: node %d ready (pid %d, cpus %s)\n", node_, getpid(),
                 cpu_list_string(cpus_).c_str());
  }

  // Signals received: the stop reason, or "" (SIGCHLD only).
  std::string drain() {
    std::string why;
    signalfd_siginfo si;
    while (read(sfd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si))
      if (si.ssi_signo != SIGCHLD && why.empty()) why = "signal " + std::to_string(si.ssi_signo);
    if (ifd_ >= 0) {
      char buf[4096];
      while (read(ifd_, buf, sizeof buf) > 0) {
      }
    }
    return why;
  }

  void reap() {
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
      auto it = seq_of_.find(pid);
      if (it == seq_of_.end()) continue;
      int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      pending_[it->second] = std::to_string(pid) + " " + std::to_string(rc);
      pid_of_.erase(it->second);
      seq_of_.erase(it);
    }
    retry();
  }

  // Exits not yet reported: pid-<n> rewritten and renamed to exit-<n>
  // (no new block), else exit-<n> written whole; what fails is tried again.
  void retry() {
    for (auto it = pending_.begin(); it != pending_.end();) {
      std::string n = std::to_string(it->first), pid = "pid-" + n, exit = "exit-" + n;
      bool ok = (rewrite_at(dfd_, pid, record(it->second)) && renameat(dfd_, pid.c_str(), dfd_, exit.c_str()) == 0) ||
                write_at(dfd_, exit, record(it->second));
      it = ok ? pending_.erase(it) : std::next(it);
    }
  }

  // New requests (in order), signals and the stop file: each acted on
  // only if it is a regular file of this user. Entries ignored once (and
  // every name that is no request) cost nothing on later scans.
  void scan() {
    rewinddir(dirs_);
    std::vector<std::pair<long, Entry>> reqs;
    std::vector<Entry> sigs;
    while (dirent* e = readdir(dirs_)) {
      Entry entry{e->d_name, e->d_ino};
      const std::string& name = entry.first;
      bool req = false, sig = false;
      long n = -1;
      if (name.rfind("req-", 0) == 0 && name.find('.') == std::string::npos) {
        req = name.size() > 4 && name.size() < 16 && name.find_first_not_of("0123456789", 4) == std::string::npos;
        if (!req) continue;  // not a request's name
        n = std::strtol(name.c_str() + 4, nullptr, 10);
      } else if (name.rfind("sig-", 0) == 0 && name.find(".tmp") == std::string::npos) {
        sig = true;
      } else if (name != "stop") {
        continue;  // its own files, the campaign's temporary names, anything else
      }
      if ((!req && !sig && asked_to_stop_) || ignored_names_.count(entry)) continue;
      if (req) {
        reqs.push_back({n, entry});
        continue;
      }
      std::string why = untrusted_entry(dfd_, name);
      if (why == "gone") continue;
      if (!why.empty()) ignore(entry, why);
      else if (sig) sigs.push_back(entry);
      else asked_to_stop_ = true;
    }
    std::sort(reqs.begin(), reqs.end());
    for (auto& [n, entry] : reqs) take(n, entry);
    for (auto& entry : sigs) deliver(entry.first);
  }

  // An entry not acted on: said once, then passed over while it stays.
  void ignore(const Entry& entry, const std::string& why) {
    ignored_names_.insert(entry);
    ignored_++;
    std::fprintf(stderr, "rooftop-engine agent: node %d: %s ignored: %s\n", node_, entry.first.c_str(), why.c_str());
  }

  void take(long n, const Entry& entry) {
    std::string text, why;
    int fd = open_request(dfd_, entry.first, why);
    if (fd < 0) {
      if (!why.empty()) ignore(entry, why);
      return;  // "": taken already
    }
    bool ok = read_fd(fd, text);
    if (unlinkat(dfd_, entry.first.c_str(), 0) != 0 && errno != ENOENT) {
      ignored_names_.insert(entry);  // taken once: never run twice
      std::fprintf(stderr, "rooftop-engine agent: node %d: %s cannot be removed: %s\n", node_, entry.first.c_str(),
                   std::strerror(errno));
    }
    if (!ok) return;
    requests_++;
    Request r;
    if (!parse_request(text, r, why)) {
      refused_++;
      std::fprintf(stderr, "rooftop-engine agent: node %d: request %ld refused: %s\n", node_, n, why.c_str());
      pending_[n] = "0 " + std::to_string(kExitUsage);
      retry();
      return;
    }
    std::fflush(nullptr);  // nothing buffered is written twice by the child
    pid_t pid = fork();
    if (pid < 0) {
      refused_++;
      std::fprintf(stderr, "rooftop-engine agent: node %d: request %ld: fork: %s\n", node_, n, std::strerror(errno));
      pending_[n] = "0 " + std::to_string(kExitFailure);
      retry();
      return;
    }
    if (pid == 0) child(r);  // never returns
    started_++;
    pid_of_[n] = pid;
    seq_of_[pid] = n;
    write_at(dfd_, "pid-" + std::to_string(n), record(std::to_string(pid)));
    std::fprintf(stderr, "rooftop-engine agent: node %d: request %ld: pid %d: %s\n", node_, n, pid,
                 r.args[1].c_str());
  }

  [[noreturn]] void child(Request& r) {
    pid_t agent = getppid();
    setsid();
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != agent) _exit(128 + SIGTERM);  // the agent is already gone
    close(sfd_);
    if (ifd_ >= 0) close(ifd_);
    closedir(dirs_);
    close(dfd_);
    // Not through a link: a log planted as one names no file of the agent's user.
    int fd = open(r.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
      std::fprintf(stderr, "rooftop-engine agent: node %d: cannot open %s: %s\n", node_, r.log.c_str(),
                   std::strerror(errno));
      _exit(kExitFailure);
    }
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    if (fd > 2) close(fd);
    if (null > 2) close(null);
    for (const char* v : kRankVars) unsetenv(v);
    for (auto& kv : r.env) {
      size_t eq = kv.find('=');
      if (eq != std::string::npos) setenv(kv.substr(0, eq).c_str(), kv.substr(eq + 1).c_str(), 1);
    }
    if (relative_) {
      for (size_t i = 1; i < r.args.size(); i++) {
        std::string* value = nullptr;
        if (r.args[i] == "--cpus" && i + 1 < r.args.size()) value = &r.args[i + 1];
        if (!value) continue;
        std::vector<int> mine;
        try {
          for (int pos : parse_cpu_list(*value)) {
            if (pos < 0 || pos >= static_cast<int>(cpus_.size()))
              throw std::invalid_argument("position " + std::to_string(pos) + " is beyond the agent's " +
                                          std::to_string(cpus_.size()) + " cpus (" + cpu_list_string(cpus_) + ")");
            mine.push_back(cpus_[pos]);
          }
        } catch (const std::invalid_argument& e) {
          std::fprintf(stderr, "rooftop-engine agent: --cpus %s: %s\n", value->c_str(), e.what());
          _exit(kExitUsage);
        }
        *value = cpu_list_string(mine);
      }
    }
    for (int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) signal(s, SIG_DFL);
    sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
    set_title(r.args);
    std::vector<char*> argv;
    for (auto& a : r.args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int rc = run_engine_command(static_cast<int>(r.args.size()), argv.data());
    std::fflush(nullptr);
    std::exit(rc);
  }

  // sig-<n>-<k>-<N>: signal N to child n's process group.
  void deliver(const std::string& name) {
    unlinkat(dfd_, name.c_str(), 0);
    long n = std::strtol(name.c_str() + 4, nullptr, 10);
    size_t last = name.rfind('-');
    int sig = last == std::string::npos ? 0 : std::atoi(name.c_str() + last + 1);
    auto it = pid_of_.find(n);
    if (sig > 0 && sig < 65 && it != pid_of_.end()) kill(-it->second, sig);
  }

  // SIGTERM to every child's group, SIGKILL after --grace; returns how many ran.
  int stop() {
    int running = static_cast<int>(pid_of_.size());
    for (auto& [n, pid] : pid_of_) kill(-pid, SIGTERM);
    int64_t deadline = now_ns() + grace_ns_;
    while (!pid_of_.empty() && now_ns() < deadline) {
      pollfd fd = {sfd_, POLLIN, 0};
      poll(&fd, 1, 20);
      drain();
      reap();
    }
    for (auto& [n, pid] : pid_of_) {
      kill(-pid, SIGKILL);
      killed_++;
    }
    deadline = now_ns() + 10'000'000'000LL;  // a process stuck in the kernel is not waited for forever
    while (!pid_of_.empty() && now_ns() < deadline) {
      pollfd fd = {sfd_, POLLIN, 0};
      poll(&fd, 1, 20);
      drain();
      reap();
    }
    return running;
  }

  int node_;
  bool ran_again_;  // it ran itself again for room for titles (none was given)
  std::string dir_;
  bool relative_;
  int poll_ms_;
  int64_t beat_ns_, grace_ns_;
  Lease lease_;
  std::vector<int> cpus_;
  std::string preinit_;  // --preinit: the fabric whose providers to initialise before forking
  int sfd_ = -1, ifd_ = -1;
  int dfd_ = -1;          // its node folder, held (open_folder)
  DIR* dirs_ = nullptr;   // its entries (a descriptor of its own)
  std::string lost_;      // why its folder is no longer the one held ("" while it is)
  sigset_t old_mask_{};
  bool asked_to_stop_ = false;  // <dir>/stop seen
  int64_t beats_ = 0, requests_ = 0, started_ = 0, refused_ = 0, ignored_ = 0, killed_ = 0;
  std::set<Entry> ignored_names_;  // entries not acted on, by name and inode: passed over
  std::map<long, pid_t> pid_of_;
  std::map<pid_t, long> seq_of_;
  std::map<long, std::string> pending_;  // request -> "PID RC" not yet reported
};

}  // namespace

void remember_args(int argc, char** argv) {
  g_args.assign(argv, argv + argc);
  if (argc < 1) return;
  for (int i = 1; i < argc; i++)
    if (argv[i] != argv[i - 1] + std::strlen(argv[i - 1]) + 1) return;  // not one area: no titles
  g_area = argv[0];
  g_area_len = static_cast<size_t>(argv[argc - 1] + std::strlen(argv[argc - 1]) + 1 - argv[0]);
}

int cmd_agent(int argc, char** argv) {
  // Room for the children's command lines: once, the agent runs itself
  // again with argv[0] padded (libfabric loads twice per node, not per
  // process), then shows its own arguments without the padding.
  if (g_area && g_area_len < kTitleRoom && g_args.size() >= 2) {
    std::vector<std::string> again = g_args;
    again[0] += std::string(kTitleRoom, ' ');
    std::vector<char*> ptrs;
    for (auto& a : again) ptrs.push_back(a.data());
    ptrs.push_back(nullptr);
    std::fflush(nullptr);
    execv("/proc/self/exe", ptrs.data());  // returns only on failure: then titles are cut short
  }
  // Run again by the lines above: argv[0] ends in its padding (recorded:
  // libfabric and its constructors loaded twice on this node).
  const bool ran_again = !g_args.empty() && !g_args[0].empty() && g_args[0].back() == ' ';
  std::vector<std::string> own = g_args.empty() ? std::vector<std::string>(argv, argv + argc) : g_args;
  // An argument of spaces only is room the campaign gave (rooftop's
  // Agents.argv), not an option: dropped before the options are read.
  own.erase(std::remove_if(own.begin() + (own.empty() ? 0 : 1), own.end(),
                           [](const std::string& a) {
                             return a.size() >= kPadMin && a.find_first_not_of(' ') == std::string::npos;
                           }),
            own.end());
  if (!own.empty()) {
    own[0].erase(own[0].find_last_not_of(' ') + 1);
    std::string base = own[0].substr(own[0].rfind('/') + 1);  // exec of /proc/self/exe named it "exe"
    prctl(PR_SET_NAME, base.substr(0, 15).c_str());
  }
  set_title(own);
  std::vector<std::string> args(own.begin() + (g_args.empty() ? 0 : 2), own.end());
  std::vector<char*> arg_ptrs;
  for (auto& a : args) arg_ptrs.push_back(a.data());
  arg_ptrs.push_back(nullptr);
  argc = static_cast<int>(args.size());
  argv = arg_ptrs.data();
  std::vector<OptSpec> specs = {
      {"dir", OptKind::Str, "", "the campaign's agents folder: this agent serves <dir>/node-<rank>/, which must be its user's and "
       "writable by no one else (required)", ""},
      opt::rank("this agent's node index"),
      opt::rank_from_env(),
      {"relative-cpus", OptKind::Bool, "false",
       "each request's --cpus lists positions in this agent's own cpus (the launcher chose them: srun, mpiexec), "
       "not cpu numbers",
       ""},
      {"poll", OptKind::Seconds, "0.05", "look for requests at least this often (besides inotify)", ""},
      {"preinit", OptKind::Str, "",
       "the campaign's --fabric (e.g. ofi+tcp): initialise libfabric's providers once, before the first fork, "
       "so each child skips it (~0.085 s each here); done only for tcp, udp, sockets and shm (a device "
       "provider's initialisation may open device contexts a forked child must not use); \"\": every child "
       "initialises them itself",
       ""},
      {"beat", OptKind::Seconds, "1", "rewrite <node folder>/beat this often: the campaign sees the agent live", ""},
      {"grace", OptKind::Seconds, "5", "once stopped: seconds its children have after SIGTERM before SIGKILL", ""},
      opt::cpus_unused(),
      opt::output(),
  };
  auto lease = lease_options();
  specs.insert(specs.end(), lease.begin(), lease.end());
  Options o("agent",
            "Serve one node for a whole campaign: start the engine commands the campaign\n"
            "asks for in <dir>/node-<rank>/ by forking (no exec: the binary and libfabric\n"
            "load once), report their pids and exit codes there, deliver signals to them,\n"
            "and stop them all once --lease ends (removed, or not renewed for\n"
            "--lease-timeout), on SIGTERM/SIGINT/SIGHUP, or once its folder is removed or\n"
            "replaced. It acts only on request files of its own user.",
            specs);
  return run_command(o, "agent", argc, argv, [&](Report& rep) {
    if (o.str("dir").empty()) throw UsageError("--dir is required");
    if (o.str("lease").empty()) throw UsageError("--lease is required: an agent never outlives its campaign");
    for (const char* s : {"poll", "beat", "grace"})
      if (o.seconds(s) <= 0) throw UsageError(std::string("--") + s + " must be positive");
    Agent agent(o, static_cast<int>(o.integer(opt::kRank)), ran_again);
    try {
      rep.result_json = agent.run();
    } catch (...) {
      if (agent.output_unsafe()) o.set(opt::kOutput, "-");  // not into a folder it does not trust
      throw;
    }
    rep.complete = true;
    if (agent.folder_lost().empty()) return kExitOk;
    o.set(opt::kOutput, "-");  // its path may lead into another folder now: the document to stdout
    rep.errors.push_back(agent.folder_lost());
    return kExitFailure;
  });
}

}  // namespace rooftop
