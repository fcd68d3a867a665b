// rooftop's wire protocol: fixed little-endian header + typed body + padding.
// Pure functions over byte buffers, so the decoder can be fuzzed on its own.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace rooftop::wire {

constexpr uint32_t kMagic = 0x504f5452;  // "RTOP" little-endian
constexpr uint16_t kVersion = 2;  // 2: put/get, metadata requests, storage_error
constexpr size_t kHeaderSize = 40;
constexpr size_t kMaxAddrLen = 1024;
constexpr size_t kMaxTokenLen = 256;

// Every message type, declared once: X(Name, code, "name", carries_bytes).
// The enum, type names, the decoder's type check and which responses carry
// a byte count after their status (bulk: bytes moved; barrier: clients
// released) all come from this list. Barrier is the start barrier: answered
// once every expected client is ready. Meta is a metadata operation on the
// server's storage (its response's count: readdir's entries).
#define ROOFTOP_WIRE_TYPES(X)         \
  X(Hello, 1, "hello", false)         \
  X(Noop, 2, "noop", false)           \
  X(Bulk, 3, "bulk", true)            \
  X(Stat, 4, "stat", false)           \
  X(Shutdown, 5, "shutdown", false)   \
  X(Barrier, 6, "barrier", true)       \
  X(Meta, 7, "meta", true)

enum class Type : uint8_t {
#define ROOFTOP_X(name, code, text, bytes) name = code,
  ROOFTOP_WIRE_TYPES(ROOFTOP_X)
#undef ROOFTOP_X
};
constexpr uint8_t kResponseBit = 0x80;

struct TypeInfo {
  Type type;
  const char* name;
  bool resp_bytes;  // the response carries a u64 byte count after its status
};
inline constexpr TypeInfo kTypes[] = {
#define ROOFTOP_X(name, code, text, bytes) {Type::name, text, bytes},
    ROOFTOP_WIRE_TYPES(ROOFTOP_X)
#undef ROOFTOP_X
};
// The entry of a type code (without kResponseBit), or nullptr if unknown.
const TypeInfo* type_info(uint8_t code);
const char* type_name(Type t);

// Bulk transfer directions (the bulk request's op byte), declared once.
// Put and Get move the data to and from the server's storage.
#define ROOFTOP_BULK_OPS(X) \
  X(Read, 1, "read")        \
  X(Write, 2, "write")      \
  X(Put, 3, "put")          \
  X(Get, 4, "get")

enum class BulkOp : uint8_t {
#define ROOFTOP_X(name, code, text) name = code,
  ROOFTOP_BULK_OPS(ROOFTOP_X)
#undef ROOFTOP_X
};
bool known_bulk_op(uint8_t code);
const char* bulk_op_name(BulkOp op);

// Metadata operations (the meta request's op byte), declared once.
#define ROOFTOP_META_OPS(X)  \
  X(Create, 1, "create")     \
  X(Stat, 2, "stat")         \
  X(Open, 3, "open")         \
  X(Unlink, 4, "unlink")     \
  X(Readdir, 5, "readdir")

enum class MetaOp : uint8_t {
#define ROOFTOP_X(name, code, text) name = code,
  ROOFTOP_META_OPS(ROOFTOP_X)
#undef ROOFTOP_X
};
bool known_meta_op(uint8_t code);
const char* meta_op_name(MetaOp op);

// kFlagRandom: put/get at random offsets (else sequential).
enum Flags : uint8_t { kFlagVerify = 1, kFlagRandom = 2 };

// Response status codes, declared once: X(Name, code, "name"). Denied: a
// shutdown with a wrong token; TooLarge: a bulk size beyond the server's
// registered buffer; VerifyFailed: a data pattern mismatch seen by the
// server (write); RmaFailed: the server's RMA operation failed;
// StorageError: the server's storage call failed (or it has no storage).
#define ROOFTOP_WIRE_STATUSES(X)        \
  X(Ok, 0, "ok")                        \
  X(Denied, 1, "denied")                \
  X(TooLarge, 2, "too_large")           \
  X(VerifyFailed, 3, "verify_failed")   \
  X(RmaFailed, 4, "rma_failed")         \
  X(BadRequest, 5, "bad_request")       \
  X(StorageError, 6, "storage_error")

enum class Status : uint16_t {
#define ROOFTOP_X(name, code, text) name = code,
  ROOFTOP_WIRE_STATUSES(ROOFTOP_X)
#undef ROOFTOP_X
};
bool known_status(uint16_t code);
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

// The stat response's body, declared once, in wire order: first the counts
// (u64), then the times (f64). Counts: X(field, "key in the stat command's
// result"); times: X(field).
// ops: operations served, every kind; noops: those moving no bulk data;
// bulks: bulk transfers; bytes: bulk bytes moved; dropped: malformed or
// unexpected messages. Times are CPU and wall seconds since ready.
#define ROOFTOP_STAT_COUNTS(X) \
  X(ops, "ops")                \
  X(noops, "noop")             \
  X(bulks, "bulk")             \
  X(bytes, "bytes")            \
  X(dropped, "dropped")
#define ROOFTOP_STAT_TIMES(X) \
  X(user_s)                   \
  X(sys_s)                    \
  X(wall_s)

struct StatBody {
#define ROOFTOP_X(field, key) uint64_t field = 0;
  ROOFTOP_STAT_COUNTS(ROOFTOP_X)
#undef ROOFTOP_X
#define ROOFTOP_X(field) double field = 0;
  ROOFTOP_STAT_TIMES(ROOFTOP_X)
#undef ROOFTOP_X
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
  // Meta request
  MetaOp meta_op = MetaOp::Create;
  // Responses
  Status status = Status::Ok;
  uint64_t bytes = 0;
  // Stat response
  StatBody stat;
  // Shutdown request
  std::string_view token;
  // Barrier request (response: status, bytes = clients released)
  uint64_t barrier_id = 0;
  uint32_t barrier_clients = 0;
};

// Why a message was refused, declared once: X(Name, "name"). Truncated:
// fewer bytes than the header/body says; BadLength: lengths inconsistent
// with each other; BadField: a field out of range (op, string length).
#define ROOFTOP_DECODE_ERRORS(X)   \
  X(None, "none")                  \
  X(Truncated, "truncated")        \
  X(BadMagic, "bad_magic")         \
  X(BadVersion, "bad_version")     \
  X(BadType, "bad_type")           \
  X(BadLength, "bad_length")       \
  X(BadField, "bad_field")

enum class DecodeError {
#define ROOFTOP_X(name, text) name,
  ROOFTOP_DECODE_ERRORS(ROOFTOP_X)
#undef ROOFTOP_X
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
// Bulk request of put/get at random offsets: encode_bulk_req, then this.
void set_flag(uint8_t* buf, uint8_t flag);
size_t encode_meta_req(uint8_t* buf, size_t cap, uint64_t req_id, uint64_t conn, MetaOp op, size_t total,
                       uint32_t resp_len);
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
size_t encode_stat_resp(uint8_t* buf, size_t cap, uint64_t req_id, uint64_t conn,
                        const StatBody& s);

// Deterministic data pattern for --verify: byte i of transfer `seed`.
void fill_pattern(uint8_t* p, size_t n, uint64_t seed);
// Returns the offset of the first mismatching byte, or n if all match.
size_t check_pattern(const uint8_t* p, size_t n, uint64_t seed);

}  // namespace rooftop::wire
