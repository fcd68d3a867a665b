#include "addrfile.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "fabric.hpp"
#include "sysinfo.hpp"

namespace rooftop {

std::string addr_path(const std::string& dir, int rank) {
  return dir + "/" + std::to_string(rank) + ".addr";
}

std::string to_hex(const std::string& raw) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (unsigned char c : raw) {
    s += d[c >> 4];
    s += d[c & 15];
  }
  return s;
}

std::string from_hex(const std::string& hex) {
  if (hex.size() % 2) throw std::invalid_argument("odd number of hex digits");
  std::string r;
  auto val = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    throw std::invalid_argument(std::string("'") + c + "' is not a hex digit");
  };
  for (size_t i = 0; i < hex.size(); i += 2)
    r += static_cast<char>(val(hex[i]) * 16 + val(hex[i + 1]));
  return r;
}

std::string ip_of_raw(const std::string& raw) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (raw.size() >= sizeof(sockaddr_in)) {
    sa_family_t fam;
    std::memcpy(&fam, raw.data(), sizeof fam);
    if (fam == AF_INET) {
      sockaddr_in s;
      std::memcpy(&s, raw.data(), sizeof s);
      inet_ntop(AF_INET, &s.sin_addr, buf, sizeof buf);
      return buf;
    }
    if (fam == AF_INET6 && raw.size() >= sizeof(sockaddr_in6)) {
      sockaddr_in6 s;
      std::memcpy(&s, raw.data(), sizeof s);
      inet_ntop(AF_INET6, &s.sin6_addr, buf, sizeof buf);
      return buf;
    }
  }
  return "";
}

namespace {

// Field 22 of /proc/PID/stat: when the process started, in clock ticks
// after boot; 0 if unknown.
uint64_t proc_start_ticks(int64_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string s;
  if (!std::getline(f, s)) return 0;
  auto paren = s.rfind(')');  // the command name may hold spaces and parentheses
  if (paren == std::string::npos) return 0;
  std::istringstream in(s.substr(paren + 1));
  std::string field;
  for (int i = 3; i < 22; i++) in >> field;  // fields 3 (state) .. 21
  uint64_t ticks = 0;
  in >> ticks;
  return ticks;
}

std::string first_line(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

std::string boot_id() { return first_line("/proc/sys/kernel/random/boot_id"); }

std::string pid_namespace() {
  char buf[64] = {};
  ssize_t n = readlink("/proc/self/ns/pid", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

bool pid_exists(int64_t pid) {
  if (pid <= 0) return false;
  return kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

// flock on the group directory: one publisher at a time decides about a
// rank whose name is taken (the common path, link(), needs no lock).
class DirLock {
 public:
  explicit DirLock(const std::string& dir) : fd_(open(dir.c_str(), O_RDONLY | O_DIRECTORY)) {
    if (fd_ >= 0) flock(fd_, LOCK_EX);
  }
  ~DirLock() {
    if (fd_ >= 0) close(fd_);
  }
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  int fd_;
};

void write_file(const std::string& path, const ServerAddress& a) {
  std::ofstream f(path);
  f << "# rooftop-engine server address\n"
    << "version=1\n"
    << "rank=" << a.rank << "\n"
    << "provider=" << a.provider << "\n"
    << "domain=" << a.domain << "\n"
    << "ip=" << a.ip << "\n"
    << "interface=" << a.interface << "\n"
    << "addr=" << to_hex(a.raw) << "\n"
    << "text=" << a.text << "\n"
    << "host=" << a.host << "\n"
    << "pid=" << a.pid << "\n"
    << "#owner start=" << a.start << " boot=" << a.boot << " pidns=" << a.pidns << "\n";
  f.flush();
  if (!f) throw EngineError(kExitFailure, "cannot write " + path + ": " + std::strerror(errno));
}

std::string holder_text(const ServerAddress& a) {
  return "pid " + std::to_string(a.pid) + " on host " + (a.host.empty() ? "?" : a.host);
}

// Under the directory lock: the name is taken; replace it if its
// publisher is gone, else refuse naming the holder.
Published replace_if_stale(const std::string& tmp, const std::string& final_path, int rank) {
  Published pub;
  pub.previous = read_address(final_path);
  HolderState h = holder_state(pub.previous);
  if (h.state != Holder::Dead)
    throw EngineError(kExitUsage, "rank " + std::to_string(rank) + " is already published in " +
                                      final_path + " by " + holder_text(pub.previous) + " (" + h.why +
                                      "): stop that server or choose another --rank");
  if (rename(tmp.c_str(), final_path.c_str()) != 0)
    throw EngineError(kExitFailure, "cannot publish " + final_path + ": " + std::strerror(errno));
  pub.replaced = true;
  pub.why = h.why;
  return pub;
}

}  // namespace

void fill_owner(ServerAddress& a) {
  a.host = hostname();
  a.pid = getpid();
  a.start = proc_start_ticks(a.pid);
  a.boot = boot_id();
  a.pidns = pid_namespace();
}

HolderState holder_state(const ServerAddress& a) {
  const std::string who = "pid " + std::to_string(a.pid);
  if (a.host != hostname()) return {Holder::Unknown, "host " + a.host + " is not this host"};
  if (!a.boot.empty() && a.boot != boot_id()) return {Holder::Dead, "this host rebooted since"};
  if (!a.pidns.empty() && a.pidns != pid_namespace())
    return {Holder::Unknown, who + " is in another pid namespace"};
  if (!pid_exists(a.pid)) return {Holder::Dead, who + " is gone"};
  uint64_t now = a.start ? proc_start_ticks(a.pid) : 0;
  if (now && now != a.start) return {Holder::Dead, who + " now runs another process"};
  return {Holder::Live, who + " is running"};
}

Published write_address(const std::string& dir, const ServerAddress& a) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw EngineError(kExitUsage, "--group-dir " + dir + " is not a directory");
  std::string final_path = addr_path(dir, a.rank);
  std::string tmp = dir + "/." + std::to_string(a.rank) + ".addr.tmp." + std::to_string(getpid());
  struct Cleanup {
    std::string path;
    ~Cleanup() { unlink(path.c_str()); }
  } cleanup{tmp};
  write_file(tmp, a);
  for (int tries = 0; tries < 100; tries++) {
    if (link(tmp.c_str(), final_path.c_str()) == 0) return {};
    if (errno != EEXIST)
      throw EngineError(kExitFailure, "cannot publish " + final_path + ": " + std::strerror(errno));
    DirLock lock(dir);
    if (access(final_path.c_str(), F_OK) != 0) continue;  // withdrawn meanwhile: link again
    return replace_if_stale(tmp, final_path, a.rank);
  }
  throw EngineError(kExitFailure, "cannot publish " + final_path + ": it keeps appearing and vanishing");
}

bool withdraw_address(const std::string& dir, const ServerAddress& a) {
  std::string path = addr_path(dir, a.rank);
  DirLock lock(dir);
  try {
    ServerAddress cur = read_address(path);
    if (cur.pid != a.pid || cur.host != a.host || cur.start != a.start) return false;
  } catch (const EngineError&) {
    return false;  // gone, or not ours to judge
  }
  return unlink(path.c_str()) == 0;
}

namespace {
// "#owner start=123 boot=... pidns=...": unknown or bad fields are ignored
// (a comment line, so an older reader skips it).
void read_owner(const std::string& line, ServerAddress& a) {
  std::istringstream in(line.substr(7));
  std::string kv;
  while (in >> kv) {
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    if (k == "start") a.start = std::strtoull(v.c_str(), nullptr, 10);
    else if (k == "boot") a.boot = v;
    else if (k == "pidns") a.pidns = v;
  }
}
}  // namespace

ServerAddress read_address(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw EngineError(kExitUnreachable, "cannot read address file " + path + ": " + std::strerror(errno));
  ServerAddress a;
  a.path = path;
  std::string line;
  int lineno = 0;
  bool have_version = false, have_rank = false, have_provider = false, have_addr = false;
  auto bad = [&](const std::string& why) {
    return EngineError(kExitFailure, "malformed address file " + path + " line " +
                                         std::to_string(lineno) + ": " + why);
  };
  while (std::getline(f, line)) {
    lineno++;
    if (line.rfind("#owner ", 0) == 0) {
      read_owner(line, a);
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    auto eq = line.find('=');
    if (eq == std::string::npos) throw bad("expected key=value, got '" + line.substr(0, 60) + "'");
    std::string k = line.substr(0, eq), v = line.substr(eq + 1);
    try {
      if (k == "version") {
        if (v != "1") throw bad("unsupported version " + v);
        have_version = true;
      } else if (k == "rank") {
        size_t used = 0;
        a.rank = std::stoi(v, &used);
        if (used != v.size() || a.rank < 0) throw bad("rank '" + v + "' is not a rank");
        have_rank = true;
      } else if (k == "provider") {
        a.provider = v;
        have_provider = !v.empty();
      } else if (k == "domain") {
        a.domain = v;
      } else if (k == "ip") {
        a.ip = v;
      } else if (k == "interface") {
        a.interface = v;
      } else if (k == "addr") {
        a.raw = from_hex(v);
        have_addr = !a.raw.empty();
      } else if (k == "text") {
        a.text = v;
      } else if (k == "host") {
        a.host = v;
      } else if (k == "pid") {
        a.pid = std::stoll(v);
      } else {
        throw bad("unknown key '" + k + "'");
      }
    } catch (const EngineError&) {
      throw;
    } catch (const std::exception& e) {
      throw bad("bad value for " + k + ": " + e.what());
    }
  }
  lineno = 0;
  if (!have_version) throw bad("no version line (is this a rooftop address file?)");
  if (!have_rank) throw bad("no rank");
  if (!have_provider) throw bad("no provider");
  if (!have_addr) throw bad("no addr");
  return a;
}

ServerAddress wait_address(const std::string& dir, int rank, double timeout_s) {
  std::string path = addr_path(dir, rank);
  int64_t deadline = now_ns() + static_cast<int64_t>(timeout_s * 1e9);
  for (;;) {
    if (access(path.c_str(), R_OK) == 0) {
      ServerAddress a = read_address(path);
      HolderState h = holder_state(a);
      if (h.state != Holder::Dead) return a;
      throw EngineError(kExitUnreachable, "server rank " + std::to_string(rank) + " is not running: " +
                                              path + " is stale (" + h.why + "; published by " +
                                              holder_text(a) + ")");
    }
    if (now_ns() >= deadline) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", timeout_s);
      throw EngineError(kExitUnreachable, "server rank " + std::to_string(rank) +
                                              " did not publish " + path + " within " + buf +
                                              " s (is it running? see --timeout)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::vector<int> list_ranks(const std::string& dir) {
  std::vector<int> r;
  DIR* d = opendir(dir.c_str());
  if (!d) return r;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n.size() < 6 || n.substr(n.size() - 5) != ".addr" || n[0] == '.') continue;
    std::string num = n.substr(0, n.size() - 5);
    if (num.empty() || !std::all_of(num.begin(), num.end(), ::isdigit)) continue;
    r.push_back(std::stoi(num));
  }
  closedir(d);
  std::sort(r.begin(), r.end());
  return r;
}

}  // namespace rooftop
