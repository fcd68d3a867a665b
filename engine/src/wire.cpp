#include "wire.hpp"

#include <bit>
#include <cstring>

namespace rooftop::wire {

const TypeInfo* type_info(uint8_t code) {
  for (const TypeInfo& t : kTypes)
    if (static_cast<uint8_t>(t.type) == code) return &t;
  return nullptr;
}

const char* type_name(Type t) {
  const TypeInfo* i = type_info(static_cast<uint8_t>(t));
  return i ? i->name : "unknown";
}

bool known_bulk_op(uint8_t code) {
#define ROOFTOP_X(name, c, text) \
  if (code == c) return true;
  ROOFTOP_BULK_OPS(ROOFTOP_X)
#undef ROOFTOP_X
  return false;
}

const char* bulk_op_name(BulkOp op) {
  switch (op) {
#define ROOFTOP_X(name, c, text) \
  case BulkOp::name: return text;
    ROOFTOP_BULK_OPS(ROOFTOP_X)
#undef ROOFTOP_X
  }
  return "unknown";
}

bool known_meta_op(uint8_t code) {
#define ROOFTOP_X(name, c, text) \
  if (code == c) return true;
  ROOFTOP_META_OPS(ROOFTOP_X)
#undef ROOFTOP_X
  return false;
}

const char* meta_op_name(MetaOp op) {
  switch (op) {
#define ROOFTOP_X(name, c, text) \
  case MetaOp::name: return text;
    ROOFTOP_META_OPS(ROOFTOP_X)
#undef ROOFTOP_X
  }
  return "unknown";
}

bool known_status(uint16_t code) {
#define ROOFTOP_X(name, c, text) \
  if (code == c) return true;
  ROOFTOP_WIRE_STATUSES(ROOFTOP_X)
#undef ROOFTOP_X
  return false;
}

const char* status_name(Status s) {
  switch (s) {
#define ROOFTOP_X(name, c, text) \
  case Status::name: return text;
    ROOFTOP_WIRE_STATUSES(ROOFTOP_X)
#undef ROOFTOP_X
  }
  return "unknown";
}

const char* decode_error_name(DecodeError e) {
  switch (e) {
#define ROOFTOP_X(name, text) \
  case DecodeError::name: return text;
    ROOFTOP_DECODE_ERRORS(ROOFTOP_X)
#undef ROOFTOP_X
  }
  return "unknown";
}

namespace {

// Little-endian fields of k bytes (1, 2, 4 or 8). On a little-endian host
// one unaligned load or store each (the byte loops, unrolled, cost ~90 of
// the decoder's ~225 instructions per message); byte by byte elsewhere.
inline uint64_t load(const uint8_t* p, int k) {
  uint64_t v = 0;
  if constexpr (std::endian::native == std::endian::little) {
    switch (k) {
      case 1: return p[0];
      case 2: { uint16_t x; std::memcpy(&x, p, 2); return x; }
      case 4: { uint32_t x; std::memcpy(&x, p, 4); return x; }
      case 8: std::memcpy(&v, p, 8); return v;
    }
  }
  for (int i = 0; i < k; i++) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

inline void store(uint8_t* p, uint64_t v, int k) {
  if constexpr (std::endian::native == std::endian::little) {
    switch (k) {
      case 1: p[0] = static_cast<uint8_t>(v); return;
      case 2: { auto x = static_cast<uint16_t>(v); std::memcpy(p, &x, 2); return; }
      case 4: { auto x = static_cast<uint32_t>(v); std::memcpy(p, &x, 4); return; }
      case 8: std::memcpy(p, &v, 8); return;
    }
  }
  for (int i = 0; i < k; i++) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

// Bounds-checked little-endian reader over the body.
struct Reader {
  const uint8_t* p;
  size_t n;
  size_t pos = 0;
  bool bad = false;
  bool need(size_t k) {
    if (bad || k > n - pos) {
      bad = true;
      return false;
    }
    return true;
  }
  uint64_t uint(int k) {
    if (!need(static_cast<size_t>(k))) return 0;
    uint64_t v = load(p + pos, k);
    pos += static_cast<size_t>(k);
    return v;
  }
  uint8_t u8() { return static_cast<uint8_t>(uint(1)); }
  uint16_t u16() { return static_cast<uint16_t>(uint(2)); }
  uint32_t u32() { return static_cast<uint32_t>(uint(4)); }
  uint64_t u64() { return uint(8); }
  double f64() {
    uint64_t b = u64();
    double d;
    std::memcpy(&d, &b, sizeof d);
    return d;
  }
  std::string_view str(size_t k) {
    if (!need(k)) return {};
    std::string_view s(reinterpret_cast<const char*>(p + pos), k);
    pos += k;
    return s;
  }
};

}  // namespace


namespace {
// What decode starts from: copying it is a block copy (~30 instructions),
// where constructing a temporary of every default member and copying that
// (m = Message{}) cost ~70 per message.
constexpr Message kEmptyMessage{};
}  // namespace

DecodeError decode(const uint8_t* buf, size_t len, Message& m) {
  m = kEmptyMessage;
  if (len < kHeaderSize) return DecodeError::Truncated;
  Header& h = m.h;
  h.magic = static_cast<uint32_t>(load(buf, 4));
  h.version = static_cast<uint16_t>(load(buf + 4, 2));
  h.type = buf[6];
  h.flags = buf[7];
  h.body_len = static_cast<uint32_t>(load(buf + 8, 4));
  h.total_len = static_cast<uint32_t>(load(buf + 12, 4));
  h.resp_len = static_cast<uint32_t>(load(buf + 16, 4));
  h.reserved = static_cast<uint32_t>(load(buf + 20, 4));
  h.req_id = load(buf + 24, 8);
  h.conn_id = load(buf + 32, 8);
  if (h.magic != kMagic) return DecodeError::BadMagic;
  if (h.version != kVersion) return DecodeError::BadVersion;
  if (static_cast<uint64_t>(h.body_len) + kHeaderSize > h.total_len)
    return DecodeError::BadLength;
  if (h.total_len > len) return DecodeError::Truncated;
  m.response = (h.type & kResponseBit) != 0;
  const TypeInfo* info = type_info(h.type & ~kResponseBit);
  if (!info) return DecodeError::BadType;
  m.type = info->type;

  Reader r{buf + kHeaderSize, h.body_len};
  if (m.response) {
    uint16_t st = r.u16();
    if (!known_status(st)) return DecodeError::BadField;
    m.status = static_cast<Status>(st);
    if (info->resp_bytes) m.bytes = r.u64();
    switch (m.type) {
      case Type::Hello:
        m.assigned_conn = r.u64();
        m.max_bulk = r.u64();
        m.max_msg = r.u32();
        m.server_rank = r.u32();
        break;
      case Type::Stat:
#define ROOFTOP_X(field, key) m.stat.field = r.u64();
        ROOFTOP_STAT_COUNTS(ROOFTOP_X)
#undef ROOFTOP_X
#define ROOFTOP_X(field) m.stat.field = r.f64();
        ROOFTOP_STAT_TIMES(ROOFTOP_X)
#undef ROOFTOP_X
        break;
      default:
        break;
    }
  } else {
    switch (m.type) {
      case Type::Hello: {
        uint16_t n = r.u16();
        if (n > kMaxAddrLen || n == 0) return DecodeError::BadField;
        m.addr = r.str(n);
        m.client_rank = r.u32();
        break;
      }
      case Type::Bulk: {
        uint8_t op = r.u8();
        if (!known_bulk_op(op)) return DecodeError::BadField;
        m.op = static_cast<BulkOp>(op);
        m.size = r.u64();
        m.remote_addr = r.u64();
        m.rkey = r.u64();
        break;
      }
      case Type::Meta: {
        uint8_t op = r.u8();
        if (!known_meta_op(op)) return DecodeError::BadField;
        m.meta_op = static_cast<MetaOp>(op);
        break;
      }
      case Type::Shutdown: {
        uint16_t n = r.u16();
        if (n > kMaxTokenLen) return DecodeError::BadField;
        m.token = r.str(n);
        break;
      }
      case Type::Barrier:
        m.barrier_id = r.u64();
        m.barrier_clients = r.u32();
        m.client_rank = r.u32();
        if (m.barrier_clients == 0) return DecodeError::BadField;
        break;
      default:
        break;
    }
  }
  if (r.bad) return DecodeError::Truncated;
  return DecodeError::None;
}

void Encoder::u8(uint8_t v) {
  if (pos + 1 > cap) { overflow = true; return; }
  buf[pos++] = v;
}
void Encoder::u16(uint16_t v) {
  if (pos + 2 > cap) { overflow = true; return; }
  store(buf + pos, v, 2);
  pos += 2;
}
void Encoder::u32(uint32_t v) {
  if (pos + 4 > cap) { overflow = true; return; }
  store(buf + pos, v, 4);
  pos += 4;
}
void Encoder::u64(uint64_t v) {
  if (pos + 8 > cap) { overflow = true; return; }
  store(buf + pos, v, 8);
  pos += 8;
}
void Encoder::f64(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  u64(b);
}
void Encoder::bytes(std::string_view s) {
  if (pos + s.size() > cap) { overflow = true; return; }
  std::memcpy(buf + pos, s.data(), s.size());
  pos += s.size();
}

size_t Encoder::finish(Header h, size_t total) {
  if (cap < kHeaderSize || overflow) return 0;
  size_t body = pos - kHeaderSize;
  size_t len = pos;
  if (total > len) {
    if (total > cap) return 0;
    // Padding content is irrelevant; zero it so nothing stale leaks.
    std::memset(buf + len, 0, total - len);
    len = total;
  }
  h.body_len = static_cast<uint32_t>(body);
  h.total_len = static_cast<uint32_t>(len);
  store(buf, h.magic, 4);
  store(buf + 4, h.version, 2);
  buf[6] = h.type;
  buf[7] = h.flags;
  store(buf + 8, h.body_len, 4);
  store(buf + 12, h.total_len, 4);
  store(buf + 16, h.resp_len, 4);
  store(buf + 20, h.reserved, 4);
  store(buf + 24, h.req_id, 8);
  store(buf + 32, h.conn_id, 8);
  return len;
}

namespace {
Header make(Type t, bool resp, uint64_t req_id, uint64_t conn) {
  Header h;
  h.type = static_cast<uint8_t>(t) | (resp ? kResponseBit : 0);
  h.req_id = req_id;
  h.conn_id = conn;
  return h;
}
}  // namespace

size_t encode_hello_req(uint8_t* buf, size_t cap, uint64_t req_id, std::string_view addr,
                        uint32_t client_rank) {
  if (addr.empty() || addr.size() > kMaxAddrLen) return 0;
  Encoder e{buf, cap};
  e.u16(static_cast<uint16_t>(addr.size()));
  e.bytes(addr);
  e.u32(client_rank);
  return e.finish(make(Type::Hello, false, req_id, 0), 0);
}

size_t encode_hello_resp(uint8_t* buf, size_t cap, uint64_t req_id, uint64_t conn,
                         uint64_t max_bulk, uint32_t max_msg, uint32_t server_rank) {
  Encoder e{buf, cap};
  e.u16(static_cast<uint16_t>(Status::Ok));
  e.u64(conn);
  e.u64(max_bulk);
  e.u32(max_msg);
  e.u32(server_rank);
  return e.finish(make(Type::Hello, true, req_id, conn), 0);
}

size_t encode_noop_req(uint8_t* buf, size_t cap, uint64_t req_id, uint64_t conn, size_t total,
                       uint32_t resp_len) {
  Encoder e{buf, cap};
  Header h = make(Type::Noop, false, req_id, conn);
  h.resp_len = resp_len;
  return e.finish(h, total);
}

size_t encode_bulk_req(uint8_t* buf, size_t cap, uint64_t req_id, uint64_t conn, BulkOp op,
                       uint64_t size, uint64_t remote_addr, uint64_t rkey, bool verify,
                       size_t total, uint32_t resp_len) {
  Encoder e{buf, cap};
  e.u8(static_cast<uint8_t>(op));
  e.u64(size);
  e.u64(remote_addr);
  e.u64(rkey);
  Header h = make(Type::Bulk, false, req_id, conn);
  h.flags = verify ? kFlagVerify : 0;
  h.resp_len = resp_len;
  return e.finish(h, total);
}

void set_flag(uint8_t* buf, uint8_t flag) { buf[7] |= flag; }

size_t encode_meta_req(uint8_t* buf, size_t cap, uint64_t req_id, uint64_t conn, MetaOp op, size_t total,
                       uint32_t resp_len) {
  Encoder e{buf, cap};
  e.u8(static_cast<uint8_t>(op));
  Header h = make(Type::Meta, false, req_id, conn);
  h.resp_len = resp_len;
  return e.finish(h, total);
}

size_t encode_stat_req(uint8_t* buf, size_t cap, uint64_t req_id, uint64_t conn) {
  Encoder e{buf, cap};
  return e.finish(make(Type::Stat, false, req_id, conn), 0);
}

size_t encode_shutdown_req(uint8_t* buf, size_t cap, uint64_t req_id, uint64_t conn,
                           std::string_view token) {
  if (token.size() > kMaxTokenLen) return 0;
  Encoder e{buf, cap};
  e.u16(static_cast<uint16_t>(token.size()));
  e.bytes(token);
  return e.finish(make(Type::Shutdown, false, req_id, conn), 0);
}

size_t encode_barrier_req(uint8_t* buf, size_t cap, uint64_t req_id, uint64_t conn, uint64_t id,
                          uint32_t clients, uint32_t client_rank) {
  if (clients == 0) return 0;
  Encoder e{buf, cap};
  e.u64(id);
  e.u32(clients);
  e.u32(client_rank);
  return e.finish(make(Type::Barrier, false, req_id, conn), 0);
}

size_t encode_resp(uint8_t* buf, size_t cap, Type type, uint64_t req_id, uint64_t conn,
                   Status st, uint64_t bytes, size_t total) {
  Encoder e{buf, cap};
  e.u16(static_cast<uint16_t>(st));
  const TypeInfo* info = type_info(static_cast<uint8_t>(type));
  if (info && info->resp_bytes) e.u64(bytes);
  return e.finish(make(type, true, req_id, conn), total);
}

size_t encode_stat_resp(uint8_t* buf, size_t cap, uint64_t req_id, uint64_t conn,
                        const StatBody& s) {
  Encoder e{buf, cap};
  e.u16(static_cast<uint16_t>(Status::Ok));
#define ROOFTOP_X(field, key) e.u64(s.field);
  ROOFTOP_STAT_COUNTS(ROOFTOP_X)
#undef ROOFTOP_X
#define ROOFTOP_X(field) e.f64(s.field);
  ROOFTOP_STAT_TIMES(ROOFTOP_X)
#undef ROOFTOP_X
  return e.finish(make(Type::Stat, true, req_id, conn), 0);
}

namespace {
inline uint64_t mix(uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
}  // namespace

void fill_pattern(uint8_t* p, size_t n, uint64_t seed) {
  uint64_t s = mix(seed);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w = s ^ (i * 0x100000001b3ULL);
    std::memcpy(p + i, &w, 8);
  }
  for (; i < n; i++) p[i] = static_cast<uint8_t>((s ^ (i * 0x100000001b3ULL)) >> ((i % 8) * 8));
}

size_t check_pattern(const uint8_t* p, size_t n, uint64_t seed) {
  uint64_t s = mix(seed);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w = s ^ (i * 0x100000001b3ULL), got;
    std::memcpy(&got, p + i, 8);
    if (got != w) {
      for (size_t j = 0; j < 8; j++)
        if (p[i + j] != static_cast<uint8_t>(w >> (8 * j))) return i + j;
    }
  }
  for (; i < n; i++)
    if (p[i] != static_cast<uint8_t>((s ^ (i * 0x100000001b3ULL)) >> ((i % 8) * 8))) return i;
  return n;
}

}  // namespace rooftop::wire
