// rooftop's wire protocol: fixed little-endian header + typed body + padding.
// Pure functions over byte buffers, so the decoder can be fuzzed on its own.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace rooftop::wire {

constexpr uint32_t kMagic = 0x504f5452;  // "RTOP" little-endian
constexpr uint16_t kVersion = 1;
constexpr size_t kHeaderSize = 40;
constexpr size_t kMaxAddrLen = 1024;
constexpr size_t kMaxTokenLen = 256;

enum class Type : uint8_t {
  Hello = 1,
  Noop = 2,
  Bulk = 3,
  Stat = 4,
  Shutdown = 5,
  Barrier = 6,  // start barrier: answered once every expected client is ready
};
constexpr uint8_t kResponseBit = 0x80;

enum class BulkOp : uint8_t { Read = 1, Write = 2 };

enum Flags : uint8_t { kFlagVerify = 1 };

enum class Status : uint16_t {
  Ok = 0,
  Denied = 1,       // shutdown with a wrong token
  TooLarge = 2,     // bulk size beyond the server's registered buffer
  VerifyFailed = 3, // data pattern mismatch seen by the server (write)
  RmaFailed = 4,    // the server's RMA operation failed
  BadRequest = 5,
};
const char* status_name(Status s);

struct Header {
  uint32_t magic = kMagic;
  uint16_t version = kVersion;
  uint8_t type = 0;   // Type, | kResponseBit for responses
  uint8_t flags = 0;
  uint32_t body_len = 0;
  uint32_t total_len = 0;  // header + body + padding
  uint32_t resp_len = 0;   // requests: total size wanted for the response
  uint32_t reserved = 0;
  uint64_t req_id = 0;
  uint64_t conn_id = 0;
};

// A decoded message; only the fields of its type are meaningful.
// String views point into the decoded buffer.
struct Message {
  Header h;
  bool response = false;
  Type type = Type::Noop;
  // Hello request
  std::string_view addr;
  uint32_t client_rank = 0;
  // Hello response
  uint64_t max_bulk = 0;
  uint32_t max_msg = 0;
  uint32_t server_rank = 0;
  uint64_t assigned_conn = 0;
  // Bulk request
  BulkOp op = BulkOp::Read;
  uint64_t size = 0;
  uint64_t remote_addr = 0;
  uint64_t rkey = 0;
  // Responses
  Status status = Status::Ok;
  uint64_t bytes = 0;
  // Stat response
  uint64_t ops = 0, noops = 0, bulks = 0, dropped = 0;
  double user_s = 0, sys_s = 0, wall_s = 0;
  // Shutdown request
  std::string_view token;
  // Barrier request (response: status, bytes = clients released)
  uint64_t barrier_id = 0;
  uint32_t barrier_clients = 0;
};

enum class DecodeError {
  None = 0,
  Truncated,   // fewer bytes than the header/body says
  BadMagic,
  BadVersion,
  BadType,
  BadLength,   // lengths inconsistent with each other
  BadField,    // a field out of range (op, string length)
};
const char* decode_error_name(DecodeError e);

DecodeError decode(const uint8_t* buf, size_t len, Message& out);

// Encoders write into buf (capacity cap) and return the total length written
// (header + body + padding up to `total`, never less than the minimum), or 0
// if cap is too small.
struct Encoder {
  uint8_t* buf;
  size_t cap;
  size_t pos = kHeaderSize;
  bool overflow = false;
  void u8(uint8_t v);
  void u16(uint16_t v);
  void u32(uint32_t v);
  void u64(uint64_t v);
  void f64(double v);
  void bytes(std::string_view s);
  // Writes the header; pads to `total` bytes (when larger than the body).
  size_t finish(Header h, size_t total);
};

size_t encode_hello_req(uint8_t* buf, size_t cap, uint64_t req_id, std::string_view addr,
                        uint32_t client_rank);
size_t encode_hello_resp(uint8_t* buf, size_t cap, uint64_t req_id, uint64_t conn,
                         uint64_t max_bulk, uint32_t max_msg, uint32_t server_rank);
size_t encode_noop_req(uint8_t* buf, size_t cap, uint64_t req_id, uint64_t conn, size_t total,
                       uint32_t resp_len);
size_t encode_bulk_req(uint8_t* buf, size_t cap, uint64_t req_id, uint64_t conn, BulkOp op,
                       uint64_t size, uint64_t remote_addr, uint64_t rkey, bool verify,
                       size_t total, uint32_t resp_len);
size_t encode_stat_req(uint8_t* buf, size_t cap, uint64_t req_id, uint64_t conn);
size_t encode_shutdown_req(uint8_t* buf, size_t cap, uint64_t req_id, uint64_t conn,
                           std::string_view token);
// Start barrier: client `client_rank` is ready; `clients` are expected in
// barrier `id`. The server answers all of them at once.
size_t encode_barrier_req(uint8_t* buf, size_t cap, uint64_t req_id, uint64_t conn, uint64_t id,
                          uint32_t clients, uint32_t client_rank);
// Generic response: status (+ bytes for bulk and barrier), padded to `total`.
size_t encode_resp(uint8_t* buf, size_t cap, Type type, uint64_t req_id, uint64_t conn,
                   Status st, uint64_t bytes, size_t total);
struct StatBody {
  uint64_t ops, noops, bulks, bytes, dropped;
  double user_s, sys_s, wall_s;
};
size_t encode_stat_resp(uint8_t* buf, size_t cap, uint64_t req_id, uint64_t conn,
                        const StatBody& s);

// Deterministic data pattern for --verify: byte i of transfer `seed`.
void fill_pattern(uint8_t* p, size_t n, uint64_t seed);
// Returns the offset of the first mismatching byte, or n if all match.
size_t check_pattern(const uint8_t* p, size_t n, uint64_t seed);

}  // namespace rooftop::wire
