// Group directory: each server publishes <dir>/<rank>.addr (written to a
// temporary file and renamed, so readers never see half a file).
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
  std::string path;      // the file it came from
};

std::string addr_path(const std::string& dir, int rank);
void write_address(const std::string& dir, const ServerAddress& a);  // throws EngineError
// Parses one file; throws EngineError naming the file (and line) if malformed.
ServerAddress read_address(const std::string& path);
// Waits up to timeout_s for <dir>/<rank>.addr; throws EngineError (exit 3).
ServerAddress wait_address(const std::string& dir, int rank, double timeout_s);
// Ranks with an address file in dir, sorted.
std::vector<int> list_ranks(const std::string& dir);
// Extracts the IP of a raw sockaddr address ("" if not an IP address).
std::string ip_of_raw(const std::string& raw);

std::string to_hex(const std::string& raw);
std::string from_hex(const std::string& hex);  // throws std::invalid_argument

}  // namespace rooftop
