// libFuzzer target for the wire decoder.
//
// Every input is decoded; the decoder must return one of its error values
// and never read outside the input (ASan). An accepted message is then
// re-encoded with the encoder of its type, decoded again, and the key fields
// (type, direction, req_id, conn_id, the type's own fields) must survive the
// trip; re-encoding that second decode must give the very same bytes.
//
// Build and run: engine/fuzz/run.sh [BUILD_DIR] [SECONDS]. Seed inputs (one
// valid encoded message of each kind) are in engine/fuzz/corpus/.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string_view>

#include "wire.hpp"

using namespace rooftop::wire;

#define CHECK(cond)                                                                  \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      std::fprintf(stderr, "wire_fuzz: check failed at %s:%d: %s\n", __FILE__, __LINE__, \
                   #cond);                                                           \
      std::abort();                                                                  \
    }                                                                                \
  } while (0)

namespace {

bool known_error(DecodeError e) {
  switch (e) {
#define ROOFTOP_X(name, text) case DecodeError::name:
    ROOFTOP_DECODE_ERRORS(ROOFTOP_X)
#undef ROOFTOP_X
      return true;
  }
  return false;
}

bool same_double(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Encodes m with the encoder matching its type and direction.
size_t reencode(const Message& m, uint8_t* buf, size_t cap) {
  const Header& h = m.h;
  if (m.response) {
    switch (m.type) {
      case Type::Hello:
        return encode_hello_resp(buf, cap, h.req_id, m.assigned_conn, m.max_bulk, m.max_msg,
                                 m.server_rank);
      case Type::Stat: return encode_stat_resp(buf, cap, h.req_id, h.conn_id, m.stat);
      case Type::Noop:
      case Type::Bulk:
      case Type::Shutdown:
      case Type::Barrier:
      case Type::Meta:
        return encode_resp(buf, cap, m.type, h.req_id, h.conn_id, m.status, m.bytes,
                           h.total_len);
    }
    return 0;
  }
  switch (m.type) {
    case Type::Hello: return encode_hello_req(buf, cap, h.req_id, m.addr, m.client_rank);
    case Type::Noop: return encode_noop_req(buf, cap, h.req_id, h.conn_id, h.total_len, h.resp_len);
    case Type::Bulk: {
      size_t n = encode_bulk_req(buf, cap, h.req_id, h.conn_id, m.op, m.size, m.remote_addr, m.rkey,
                                 (h.flags & kFlagVerify) != 0, h.total_len, h.resp_len);
      if (n && (h.flags & kFlagRandom)) set_flag(buf, kFlagRandom);
      return n;
    }
    case Type::Meta: return encode_meta_req(buf, cap, h.req_id, h.conn_id, m.meta_op, h.total_len, h.resp_len);
    case Type::Stat: return encode_stat_req(buf, cap, h.req_id, h.conn_id);
    case Type::Shutdown: return encode_shutdown_req(buf, cap, h.req_id, h.conn_id, m.token);
    case Type::Barrier:
      return encode_barrier_req(buf, cap, h.req_id, h.conn_id, m.barrier_id, m.barrier_clients,
                                m.client_rank);
  }
  return 0;
}

// The fields of `a` (decoded from the input) that the encoder carries must
// come back unchanged in `b` (decoded from the re-encoding).
void check_same(const Message& a, const Message& b) {
  CHECK(b.type == a.type);
  CHECK(b.response == a.response);
  CHECK(b.h.type == a.h.type);
  CHECK(b.h.req_id == a.h.req_id);
  if (a.response) {
    switch (a.type) {
      case Type::Hello:
        // The hello response's header carries the assigned connection; the
        // encoder always sends status Ok.
        CHECK(b.h.conn_id == a.assigned_conn);
        CHECK(b.assigned_conn == a.assigned_conn);
        CHECK(b.max_bulk == a.max_bulk);
        CHECK(b.max_msg == a.max_msg);
        CHECK(b.server_rank == a.server_rank);
        CHECK(b.status == Status::Ok);
        break;
      case Type::Stat:
        CHECK(b.h.conn_id == a.h.conn_id);
        CHECK(b.status == Status::Ok);
#define ROOFTOP_X(field, key) CHECK(b.stat.field == a.stat.field);
        ROOFTOP_STAT_COUNTS(ROOFTOP_X)
#undef ROOFTOP_X
#define ROOFTOP_X(field) CHECK(same_double(b.stat.field, a.stat.field));
        ROOFTOP_STAT_TIMES(ROOFTOP_X)
#undef ROOFTOP_X
        break;
      case Type::Noop:
      case Type::Bulk:
      case Type::Shutdown:
      case Type::Barrier:
      case Type::Meta:
        CHECK(b.h.conn_id == a.h.conn_id);
        CHECK(b.status == a.status);
        CHECK(b.bytes == (type_info(static_cast<uint8_t>(a.type))->resp_bytes ? a.bytes : 0));
        CHECK(b.h.total_len == a.h.total_len);
        break;
    }
    return;
  }
  switch (a.type) {
    case Type::Hello:
      CHECK(b.h.conn_id == 0);  // a hello is sent before any connection exists
      CHECK(b.addr == a.addr);
      CHECK(b.client_rank == a.client_rank);
      break;
    case Type::Noop:
      CHECK(b.h.conn_id == a.h.conn_id);
      CHECK(b.h.total_len == a.h.total_len);
      CHECK(b.h.resp_len == a.h.resp_len);
      CHECK(b.h.body_len == 0);
      break;
    case Type::Bulk:
      CHECK(b.h.conn_id == a.h.conn_id);
      CHECK(b.op == a.op);
      CHECK(b.size == a.size);
      CHECK(b.remote_addr == a.remote_addr);
      CHECK(b.rkey == a.rkey);
      CHECK((b.h.flags & kFlagVerify) == (a.h.flags & kFlagVerify));
      CHECK((b.h.flags & kFlagRandom) == (a.h.flags & kFlagRandom));
      CHECK(b.h.total_len == a.h.total_len);
      CHECK(b.h.resp_len == a.h.resp_len);
      break;
    case Type::Meta:
      CHECK(b.h.conn_id == a.h.conn_id);
      CHECK(b.meta_op == a.meta_op);
      CHECK(b.h.total_len == a.h.total_len);
      CHECK(b.h.resp_len == a.h.resp_len);
      break;
    case Type::Stat:
      CHECK(b.h.conn_id == a.h.conn_id);
      CHECK(b.h.total_len == kHeaderSize);
      break;
    case Type::Shutdown:
      CHECK(b.h.conn_id == a.h.conn_id);
      CHECK(b.token == a.token);
      break;
    case Type::Barrier:
      CHECK(b.h.conn_id == a.h.conn_id);
      CHECK(b.barrier_id == a.barrier_id && b.barrier_clients == a.barrier_clients);
      CHECK(b.barrier_clients > 0);
      CHECK(b.client_rank == a.client_rank);
      break;
  }
}

// Invariants of any accepted message, with `buf`/`len` the decoded input.
void check_accepted(const Message& m, const uint8_t* buf, size_t len) {
  CHECK(len >= kHeaderSize);
  CHECK(m.h.magic == kMagic && m.h.version == kVersion);
  CHECK(m.h.total_len <= len);
  CHECK(uint64_t{m.h.body_len} + kHeaderSize <= m.h.total_len);
  const uint8_t t = m.h.type & static_cast<uint8_t>(~kResponseBit);
  CHECK(type_info(t) != nullptr && static_cast<uint8_t>(m.type) == t);
  CHECK(m.response == ((m.h.type & kResponseBit) != 0));
  const uint8_t* body = buf + kHeaderSize;
  const uint8_t* end = body + m.h.body_len;
  for (std::string_view s : {m.addr, m.token}) {
    if (s.empty()) continue;
    auto p = reinterpret_cast<const uint8_t*>(s.data());
    CHECK(p >= body && p + s.size() <= end);
  }
  if (m.response) CHECK(known_status(static_cast<uint16_t>(m.status)));
  if (!m.response && m.type == Type::Hello) CHECK(!m.addr.empty() && m.addr.size() <= kMaxAddrLen);
  if (!m.response && m.type == Type::Bulk) CHECK(known_bulk_op(static_cast<uint8_t>(m.op)));
  if (!m.response && m.type == Type::Meta) CHECK(known_meta_op(static_cast<uint8_t>(m.meta_op)));
  if (!m.response && m.type == Type::Shutdown) CHECK(m.token.size() <= kMaxTokenLen);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Message m;
  DecodeError e = decode(data, size, m);
  CHECK(known_error(e));
  if (e != DecodeError::None) return 0;
  check_accepted(m, data, size);

  // Re-encode: never longer than the original message (padding is kept, a
  // body is never longer than the fields the original body already held).
  const size_t cap = m.h.total_len;
  std::unique_ptr<uint8_t[]> enc1(new uint8_t[cap]);
  const size_t n1 = reencode(m, enc1.get(), cap);
  CHECK(n1 >= kHeaderSize && n1 <= cap);

  // Decode from an exact-size copy so that ASan sees any overread.
  std::unique_ptr<uint8_t[]> exact(new uint8_t[n1]);
  std::memcpy(exact.get(), enc1.get(), n1);
  Message m2;
  CHECK(decode(exact.get(), n1, m2) == DecodeError::None);
  CHECK(m2.h.total_len == n1);
  check_accepted(m2, exact.get(), n1);
  check_same(m, m2);

  // The encoding is now canonical: doing it again gives the same bytes.
  std::unique_ptr<uint8_t[]> enc2(new uint8_t[n1]);
  const size_t n2 = reencode(m2, enc2.get(), n1);
  CHECK(n2 == n1);
  CHECK(std::memcmp(enc1.get(), enc2.get(), n1) == 0);
  // And a capacity one byte short is refused.
  if (n1 > 0) CHECK(reencode(m2, enc2.get(), n1 - 1) == 0);
  return 0;
}
