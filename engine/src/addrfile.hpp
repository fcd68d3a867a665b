// Group directory: each server publishes <dir>/<rank>.addr (written to a
// temporary file and linked into place, so readers never see half a file
// and a rank has one publisher: link() fails if the name exists). The file
// names its publisher (host, pid, process start time, boot id), so a file
// left by a dead process is told apart from a live holder.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace rooftop {

struct ServerAddress {
  int rank = -1;
  std::string provider;  // libfabric provider name (tcp;ofi_rxm, shm, ...)
  std::string domain;
  std::string ip;        // for sockaddr providers, "" otherwise
  std::string interface; // the network interface carrying ip, "" if none
  std::string raw;       // raw fabric address bytes
  std::string text;      // human-readable address
  std::string host;
  int64_t pid = 0;
  // The publisher's start time (clock ticks after boot, /proc/PID/stat) and
  // boot id: with host and pid, they name one process. Written on a comment
  // line ("#owner start=... boot=... pidns=...") so older readers skip them; 0/"" in
  // files written before they existed.
  uint64_t start = 0;
  std::string boot;
  std::string pidns;     // pid namespace ("pid:[4026531836]"): pids compare only within one
  std::string path;      // the file it came from
};

// Who holds a rank's address file, as far as this host can tell.
enum class Holder { Live, Dead, Unknown };  // Unknown: another host
struct HolderState {
  Holder state;
  std::string why;  // "pid 123 is gone", "pid 123 now runs another process", ...
};
HolderState holder_state(const ServerAddress& a);
// This process's identity as written into its address file.
void fill_owner(ServerAddress& a);

// What publishing did: the stale file it replaced, if any.
struct Published {
  bool replaced = false;
  ServerAddress previous;  // the stale file's contents
  std::string why;         // why it was stale
};

std::string addr_path(const std::string& dir, int rank);
// Publishes a exclusively: refuses (EngineError, exit 2) when a live
// process on this host, or any process on another host, holds the rank;
// replaces a file whose publisher is gone on this host.
Published write_address(const std::string& dir, const ServerAddress& a);
// Removes <dir>/<rank>.addr only if it is still a's; true if removed.
bool withdraw_address(const std::string& dir, const ServerAddress& a);
// Parses one file; throws EngineError naming the file (and line) if malformed.
ServerAddress read_address(const std::string& path);
// Waits up to timeout_s for <dir>/<rank>.addr; throws EngineError (exit 3),
// at once when the file names a process of this host that is gone.
ServerAddress wait_address(const std::string& dir, int rank, double timeout_s);
// Ranks with an address file in dir, sorted.
std::vector<int> list_ranks(const std::string& dir);
// Extracts the IP of a raw sockaddr address ("" if not an IP address).
std::string ip_of_raw(const std::string& raw);

std::string to_hex(const std::string& raw);
std::string from_hex(const std::string& hex);  // throws std::invalid_argument

}  // namespace rooftop
