#include "addrfile.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <unistd.h>

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

void write_address(const std::string& dir, const ServerAddress& a) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw EngineError(kExitUsage, "--group-dir " + dir + " is not a directory");
  std::string final_path = addr_path(dir, a.rank);
  std::string tmp = dir + "/." + std::to_string(a.rank) + ".addr.tmp." + std::to_string(getpid());
  {
    std::ofstream f(tmp);
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
      << "pid=" << a.pid << "\n";
    f.flush();
    if (!f) throw EngineError(kExitFailure, "cannot write " + tmp + ": " + std::strerror(errno));
  }
  if (rename(tmp.c_str(), final_path.c_str()) != 0) {
    int e = errno;
    unlink(tmp.c_str());
    throw EngineError(kExitFailure, "cannot publish " + final_path + ": " + std::strerror(e));
  }
}

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
    if (access(path.c_str(), R_OK) == 0) return read_address(path);
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
