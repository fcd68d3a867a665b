// Unit tests for the wire codec (wire.hpp): round trips for every message
// type, every decode rejection path, encoder capacity handling, the verify
// data pattern, and a randomized robustness run over mutated messages.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <iterator>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "wire.hpp"

using namespace rooftop::wire;

// Readable gtest failure messages for the wire enums (found by ADL).
namespace rooftop::wire {
void PrintTo(DecodeError e, std::ostream* os) { *os << decode_error_name(e); }
void PrintTo(Status s, std::ostream* os) { *os << status_name(s); }
void PrintTo(Type t, std::ostream* os) { *os << "Type(" << static_cast<int>(t) << ")"; }
void PrintTo(BulkOp o, std::ostream* os) { *os << "BulkOp(" << static_cast<int>(o) << ")"; }
}  // namespace rooftop::wire

namespace {

using Bytes = std::vector<uint8_t>;

// Little-endian field access into an encoded message.
uint64_t get_le(const Bytes& b, size_t off, int k) {
  uint64_t v = 0;
  for (int i = 0; i < k; i++) v |= static_cast<uint64_t>(b.at(off + i)) << (8 * i);
  return v;
}
void put_le(Bytes& b, size_t off, uint64_t v, int k) {
  for (int i = 0; i < k; i++) b.at(off + i) = static_cast<uint8_t>(v >> (8 * i));
}

// Header field offsets (see decode()).
constexpr size_t kOffMagic = 0, kOffVersion = 4, kOffType = 6, kOffFlags = 7, kOffBodyLen = 8,
                 kOffTotalLen = 12, kOffRespLen = 16, kOffReqId = 24, kOffConnId = 32;

// Builds a raw message: header + body, lengths consistent unless overridden.
Bytes raw_message(uint8_t type, const Bytes& body, uint64_t req_id = 1, uint64_t conn = 2) {
  Bytes b(kHeaderSize + body.size(), 0);
  put_le(b, kOffMagic, kMagic, 4);
  put_le(b, kOffVersion, kVersion, 2);
  b[kOffType] = type;
  put_le(b, kOffBodyLen, body.size(), 4);
  put_le(b, kOffTotalLen, b.size(), 4);
  put_le(b, kOffReqId, req_id, 8);
  put_le(b, kOffConnId, conn, 8);
  std::copy(body.begin(), body.end(), b.begin() + kHeaderSize);
  return b;
}

struct BodyBuilder {
  Bytes b;
  BodyBuilder& u8(uint8_t v) { return le(v, 1); }
  BodyBuilder& u16(uint16_t v) { return le(v, 2); }
  BodyBuilder& u32(uint32_t v) { return le(v, 4); }
  BodyBuilder& u64(uint64_t v) { return le(v, 8); }
  BodyBuilder& str(const std::string& s) {
    size_t at = b.size();
    b.resize(at + s.size());
    std::copy(s.begin(), s.end(), b.begin() + static_cast<std::ptrdiff_t>(at));
    return *this;
  }
  BodyBuilder& le(uint64_t v, int k) {
    size_t at = b.size();
    b.resize(at + static_cast<size_t>(k));
    put_le(b, at, v, k);
    return *this;
  }
};

DecodeError decode_bytes(const Bytes& b, Message& m) { return decode(b.data(), b.size(), m); }
DecodeError decode_bytes(const Bytes& b) {
  Message m;
  return decode(b.data(), b.size(), m);
}

// Encodes into a fresh buffer with sentinel bytes after `cap`, checks the
// encoder wrote nothing past `cap`, and returns the message (empty if the
// encoder returned 0).
template <typename F>
Bytes encode_with(size_t cap, F&& enc) {
  constexpr size_t kGuard = 64;
  Bytes buf(cap + kGuard, 0xA5);
  size_t n = enc(buf.data(), cap);
  for (size_t i = cap; i < buf.size(); i++)
    EXPECT_EQ(buf[i], 0xA5) << "encoder wrote past its capacity at offset " << i;
  EXPECT_LE(n, cap);
  buf.resize(n);
  return buf;
}

constexpr size_t kBig = 1 << 16;

void expect_header(const Message& m, Type t, bool resp, uint64_t req, uint64_t conn,
                   size_t body_len, size_t total_len) {
  EXPECT_EQ(m.type, t);
  EXPECT_EQ(m.response, resp);
  EXPECT_EQ(m.h.magic, kMagic);
  EXPECT_EQ(m.h.version, kVersion);
  EXPECT_EQ(m.h.type, static_cast<uint8_t>(t) | (resp ? kResponseBit : 0));
  EXPECT_EQ(m.h.req_id, req);
  EXPECT_EQ(m.h.conn_id, conn);
  EXPECT_EQ(m.h.body_len, body_len);
  EXPECT_EQ(m.h.total_len, total_len);
}

}  // namespace

// ---------------------------------------------------------------- round trips

TEST(WireRoundTrip, HelloRequest) {
  for (std::string addr : {std::string("a"), std::string("fi_addr\0with\x01nul", 16),
                           std::string(kMaxAddrLen, '\xfe')}) {
    Bytes b = encode_with(kBig, [&](uint8_t* p, size_t cap) {
      return encode_hello_req(p, cap, 0x1122334455667788ULL, addr, 0xdeadbeef);
    });
    ASSERT_EQ(b.size(), kHeaderSize + 2 + addr.size() + 4);
    Message m;
    ASSERT_EQ(decode_bytes(b, m), DecodeError::None);
    expect_header(m, Type::Hello, false, 0x1122334455667788ULL, 0, 2 + addr.size() + 4, b.size());
    EXPECT_EQ(m.addr, addr);
    EXPECT_EQ(m.client_rank, 0xdeadbeefu);
    // The view points into the decoded buffer.
    EXPECT_EQ(reinterpret_cast<const uint8_t*>(m.addr.data()), b.data() + kHeaderSize + 2);
  }
}

TEST(WireRoundTrip, HelloRequestRejectsBadAddress) {
  uint8_t buf[4096];
  EXPECT_EQ(encode_hello_req(buf, sizeof buf, 1, "", 0), 0u);
  std::string too_long(kMaxAddrLen + 1, 'x');
  EXPECT_EQ(encode_hello_req(buf, sizeof buf, 1, too_long, 0), 0u);
}

TEST(WireRoundTrip, HelloResponse) {
  Bytes b = encode_with(kBig, [](uint8_t* p, size_t cap) {
    return encode_hello_resp(p, cap, 77, 0xabcdef0123ULL, 1ULL << 40, 65536, 3);
  });
  ASSERT_EQ(b.size(), kHeaderSize + 2 + 8 + 8 + 4 + 4);
  Message m;
  ASSERT_EQ(decode_bytes(b, m), DecodeError::None);
  expect_header(m, Type::Hello, true, 77, 0xabcdef0123ULL, 26, b.size());
  EXPECT_EQ(m.status, Status::Ok);
  EXPECT_EQ(m.assigned_conn, 0xabcdef0123ULL);
  EXPECT_EQ(m.max_bulk, 1ULL << 40);
  EXPECT_EQ(m.max_msg, 65536u);
  EXPECT_EQ(m.server_rank, 3u);
}

TEST(WireRoundTrip, NoopRequestWithPadding) {
  for (size_t total : {size_t{0}, size_t{1}, kHeaderSize - 1, kHeaderSize, kHeaderSize + 1,
                       size_t{4096}, size_t{65536}}) {
    Bytes b = encode_with(kBig + 1, [&](uint8_t* p, size_t cap) {
      return encode_noop_req(p, cap, 5, 9, total, 8192);
    });
    size_t want = std::max(total, kHeaderSize);
    ASSERT_EQ(b.size(), want) << "total=" << total;
    Message m;
    ASSERT_EQ(decode_bytes(b, m), DecodeError::None);
    expect_header(m, Type::Noop, false, 5, 9, 0, want);
    EXPECT_EQ(m.h.resp_len, 8192u);
    EXPECT_EQ(m.h.flags, 0);
    // Padding is zeroed (the buffer was pre-filled with 0xA5).
    for (size_t i = kHeaderSize; i < b.size(); i++) ASSERT_EQ(b[i], 0) << "offset " << i;
  }
}

TEST(WireRoundTrip, BulkRequest) {
  for (BulkOp op : {BulkOp::Read, BulkOp::Write, BulkOp::Put, BulkOp::Get}) {
    for (bool verify : {false, true}) {
      for (size_t total : {size_t{0}, size_t{512}}) {
        Bytes b = encode_with(kBig, [&](uint8_t* p, size_t cap) {
          return encode_bulk_req(p, cap, 1000, 2000, op, 4ULL << 20, 0x7f0000001000ULL,
                                 0xfeedfacecafebeefULL, verify, total, 64);
        });
        const size_t body = 1 + 8 + 8 + 8;
        ASSERT_EQ(b.size(), std::max(total, kHeaderSize + body));
        Message m;
        ASSERT_EQ(decode_bytes(b, m), DecodeError::None);
        expect_header(m, Type::Bulk, false, 1000, 2000, body, b.size());
        EXPECT_EQ(m.op, op);
        EXPECT_EQ(m.size, 4ULL << 20);
        EXPECT_EQ(m.remote_addr, 0x7f0000001000ULL);
        EXPECT_EQ(m.rkey, 0xfeedfacecafebeefULL);
        EXPECT_EQ((m.h.flags & kFlagVerify) != 0, verify);
        EXPECT_EQ(m.h.resp_len, 64u);
      }
    }
  }
}

TEST(WireRoundTrip, StatRequest) {
  Bytes b = encode_with(kBig, [](uint8_t* p, size_t cap) { return encode_stat_req(p, cap, 3, 4); });
  ASSERT_EQ(b.size(), kHeaderSize);
  Message m;
  ASSERT_EQ(decode_bytes(b, m), DecodeError::None);
  expect_header(m, Type::Stat, false, 3, 4, 0, kHeaderSize);
}

TEST(WireRoundTrip, StatResponse) {
  StatBody s{1, 2, 3, 1ULL << 50, 5, 0.1, 1e-9, 12345.678};
  Bytes b = encode_with(kBig, [&](uint8_t* p, size_t cap) {
    return encode_stat_resp(p, cap, 11, 12, s);
  });
  ASSERT_EQ(b.size(), kHeaderSize + 2 + 5 * 8 + 3 * 8);
  Message m;
  ASSERT_EQ(decode_bytes(b, m), DecodeError::None);
  expect_header(m, Type::Stat, true, 11, 12, 66, b.size());
  EXPECT_EQ(m.status, Status::Ok);
  EXPECT_EQ(m.stat.ops, 1u);
  EXPECT_EQ(m.stat.noops, 2u);
  EXPECT_EQ(m.stat.bulks, 3u);
  EXPECT_EQ(m.stat.bytes, 1ULL << 50);
  EXPECT_EQ(m.stat.dropped, 5u);
  // Doubles travel bit-exact.
  EXPECT_EQ(m.stat.user_s, 0.1);
  EXPECT_EQ(m.stat.sys_s, 1e-9);
  EXPECT_EQ(m.stat.wall_s, 12345.678);
}

TEST(WireRoundTrip, ShutdownRequestWithToken) {
  for (std::string token : {std::string(), std::string("s3cr3t"), std::string(kMaxTokenLen, 't')}) {
    Bytes b = encode_with(kBig, [&](uint8_t* p, size_t cap) {
      return encode_shutdown_req(p, cap, 21, 22, token);
    });
    ASSERT_EQ(b.size(), kHeaderSize + 2 + token.size());
    Message m;
    ASSERT_EQ(decode_bytes(b, m), DecodeError::None);
    expect_header(m, Type::Shutdown, false, 21, 22, 2 + token.size(), b.size());
    EXPECT_EQ(m.token, token);
  }
  uint8_t buf[4096];
  EXPECT_EQ(encode_shutdown_req(buf, sizeof buf, 1, 1, std::string(kMaxTokenLen + 1, 't')), 0u);
}

TEST(WireRoundTrip, BarrierRequest) {
  Bytes b = encode_with(kBig, [&](uint8_t* p, size_t cap) {
    return encode_barrier_req(p, cap, 41, 42, 0xfedcba9876543210ULL, 17, 5);
  });
  ASSERT_EQ(b.size(), kHeaderSize + 16);
  Message m;
  ASSERT_EQ(decode_bytes(b, m), DecodeError::None);
  expect_header(m, Type::Barrier, false, 41, 42, 16, b.size());
  EXPECT_EQ(m.barrier_id, 0xfedcba9876543210ULL);
  EXPECT_EQ(m.barrier_clients, 17u);
  EXPECT_EQ(m.client_rank, 5u);
  uint8_t buf[256];
  EXPECT_EQ(encode_barrier_req(buf, sizeof buf, 1, 1, 1, 0, 0), 0u);  // nobody to wait for
}

TEST(WireDecode, BarrierForNoClientsIsBadField) {
  Bytes b = encode_with(kBig, [&](uint8_t* p, size_t cap) {
    return encode_barrier_req(p, cap, 1, 2, 3, 4, 5);
  });
  // Zero the client count (body offset 8, u32).
  for (size_t i = 0; i < 4; i++) b[kHeaderSize + 8 + i] = 0;
  EXPECT_EQ(decode_bytes(b), DecodeError::BadField);
}

TEST(WireRoundTrip, GenericResponse) {
  const Status statuses[] = {Status::Ok,           Status::Denied,    Status::TooLarge,
                             Status::VerifyFailed, Status::RmaFailed, Status::BadRequest};
  for (Type t : {Type::Noop, Type::Bulk, Type::Shutdown, Type::Barrier}) {
    for (Status st : statuses) {
      for (size_t total : {size_t{0}, size_t{100}, size_t{4096}}) {
        Bytes b = encode_with(kBig, [&](uint8_t* p, size_t cap) {
          return encode_resp(p, cap, t, 31, 32, st, 123456789, total);
        });
        const bool counted = t == Type::Bulk || t == Type::Barrier;
        const size_t body = counted ? 10 : 2;
        ASSERT_EQ(b.size(), std::max(total, kHeaderSize + body));
        Message m;
        ASSERT_EQ(decode_bytes(b, m), DecodeError::None);
        expect_header(m, t, true, 31, 32, body, b.size());
        EXPECT_EQ(m.status, st);
        EXPECT_EQ(m.bytes, counted ? 123456789u : 0u);
      }
    }
  }
}

TEST(WireRoundTrip, StatusAndErrorNames) {
  EXPECT_STREQ(status_name(Status::Ok), "ok");
  EXPECT_STREQ(status_name(Status::Denied), "denied");
  EXPECT_STREQ(status_name(Status::BadRequest), "bad_request");
  EXPECT_STREQ(status_name(static_cast<Status>(999)), "unknown");
  EXPECT_STREQ(decode_error_name(DecodeError::None), "none");
  EXPECT_STREQ(decode_error_name(DecodeError::Truncated), "truncated");
  EXPECT_STREQ(decode_error_name(DecodeError::BadField), "bad_field");
}

// ------------------------------------------------------------------ capacity

TEST(WireEncode, ReturnsZeroWhenCapacityTooSmall) {
  StatBody s{1, 2, 3, 4, 5, 1.0, 2.0, 3.0};
  const std::string addr = "some-address", token = "tok";
  std::vector<std::pair<const char*, std::function<size_t(uint8_t*, size_t)>>> encoders = {
      {"hello_req", [&](uint8_t* p, size_t c) { return encode_hello_req(p, c, 1, addr, 2); }},
      {"hello_resp", [&](uint8_t* p, size_t c) { return encode_hello_resp(p, c, 1, 2, 3, 4, 5); }},
      {"noop_req", [&](uint8_t* p, size_t c) { return encode_noop_req(p, c, 1, 2, 0, 0); }},
      {"noop_req_padded",
       [&](uint8_t* p, size_t c) { return encode_noop_req(p, c, 1, 2, 300, 0); }},
      {"bulk_req",
       [&](uint8_t* p, size_t c) {
         return encode_bulk_req(p, c, 1, 2, BulkOp::Write, 3, 4, 5, true, 0, 0);
       }},
      {"bulk_req_padded",
       [&](uint8_t* p, size_t c) {
         return encode_bulk_req(p, c, 1, 2, BulkOp::Read, 3, 4, 5, false, 200, 0);
       }},
      {"stat_req", [&](uint8_t* p, size_t c) { return encode_stat_req(p, c, 1, 2); }},
      {"stat_resp", [&](uint8_t* p, size_t c) { return encode_stat_resp(p, c, 1, 2, s); }},
      {"shutdown_req",
       [&](uint8_t* p, size_t c) { return encode_shutdown_req(p, c, 1, 2, token); }},
      {"barrier_req",
       [&](uint8_t* p, size_t c) { return encode_barrier_req(p, c, 1, 2, 3, 4, 5); }},
      {"resp_bulk",
       [&](uint8_t* p, size_t c) {
         return encode_resp(p, c, Type::Bulk, 1, 2, Status::Ok, 9, 0);
       }},
      {"resp_noop_padded",
       [&](uint8_t* p, size_t c) {
         return encode_resp(p, c, Type::Noop, 1, 2, Status::Ok, 0, 128);
       }},
  };
  for (auto& [name, enc] : encoders) {
    SCOPED_TRACE(name);
    Bytes full = encode_with(4096, enc);
    ASSERT_GE(full.size(), kHeaderSize);
    // Every capacity below the needed size fails cleanly, never writing past cap.
    for (size_t cap = 0; cap < full.size(); cap++) {
      Bytes b = encode_with(cap, enc);
      EXPECT_TRUE(b.empty()) << "cap=" << cap << " returned " << b.size();
    }
    // The exact size succeeds and produces the same bytes.
    Bytes exact = encode_with(full.size(), enc);
    EXPECT_EQ(exact, full);
  }
}

// ----------------------------------------------------------------- rejection

TEST(WireDecode, ShorterThanHeaderIsTruncated) {
  Bytes b = encode_with(kBig, [](uint8_t* p, size_t cap) { return encode_stat_req(p, cap, 1, 2); });
  ASSERT_EQ(b.size(), kHeaderSize);
  Message m;
  for (size_t len = 0; len < kHeaderSize; len++)
    EXPECT_EQ(decode(b.data(), len, m), DecodeError::Truncated) << "len=" << len;
  EXPECT_EQ(decode(nullptr, 0, m), DecodeError::Truncated);
}

TEST(WireDecode, BadMagic) {
  Bytes b = raw_message(static_cast<uint8_t>(Type::Stat), {});
  for (size_t i = 0; i < 4; i++) {
    Bytes c = b;
    c[kOffMagic + i] ^= 0x20;
    EXPECT_EQ(decode_bytes(c), DecodeError::BadMagic);
  }
  put_le(b, kOffMagic, 0x52544f50, 4);  // byte-swapped magic
  EXPECT_EQ(decode_bytes(b), DecodeError::BadMagic);
}

TEST(WireDecode, BadVersion) {
  Bytes b = raw_message(static_cast<uint8_t>(Type::Stat), {});
  for (uint16_t v : {0, kVersion - 1, kVersion + 1, 0x100, 0xffff}) {  // kVersion - 1: an older engine
    put_le(b, kOffVersion, v, 2);
    EXPECT_EQ(decode_bytes(b), DecodeError::BadVersion) << "version " << v;
  }
}

TEST(WireDecode, BadType) {
  for (uint8_t t : {0x00, 0x08, 0x7f, 0x80, 0x88, 0xff}) {
    Bytes b = raw_message(t, BodyBuilder().u16(0).u64(0).u64(0).u32(0).u32(0).b);
    EXPECT_EQ(decode_bytes(b), DecodeError::BadType) << "type 0x" << std::hex << int(t);
  }
}

TEST(WireDecode, BodyLongerThanTotalIsBadLength) {
  Bytes b = raw_message(static_cast<uint8_t>(Type::Noop), Bytes(16, 0));
  // body_len + header == total_len is fine ...
  EXPECT_EQ(decode_bytes(b), DecodeError::None);
  // ... one more is not, even if the buffer holds the bytes.
  put_le(b, kOffBodyLen, 17, 4);
  b.push_back(0);
  EXPECT_EQ(decode_bytes(b), DecodeError::BadLength);
  // total_len smaller than a header.
  Bytes c = raw_message(static_cast<uint8_t>(Type::Noop), {});
  put_le(c, kOffTotalLen, kHeaderSize - 1, 4);
  EXPECT_EQ(decode_bytes(c), DecodeError::BadLength);
  put_le(c, kOffTotalLen, 0, 4);
  EXPECT_EQ(decode_bytes(c), DecodeError::BadLength);
  // body_len near UINT32_MAX must not wrap around.
  Bytes d = raw_message(static_cast<uint8_t>(Type::Noop), {});
  put_le(d, kOffBodyLen, 0xffffffffu, 4);
  put_le(d, kOffTotalLen, 0xffffffffu, 4);
  EXPECT_EQ(decode_bytes(d), DecodeError::BadLength);
  put_le(d, kOffBodyLen, 0xffffffffu - kHeaderSize + 1, 4);
  EXPECT_EQ(decode_bytes(d), DecodeError::BadLength);
}

TEST(WireDecode, TotalLongerThanReceivedIsTruncated) {
  Bytes b = encode_with(kBig, [](uint8_t* p, size_t cap) {
    return encode_noop_req(p, cap, 1, 2, 100, 0);
  });
  ASSERT_EQ(b.size(), 100u);
  Message m;
  EXPECT_EQ(decode(b.data(), 100, m), DecodeError::None);
  for (size_t len = kHeaderSize; len < 100; len++)
    EXPECT_EQ(decode(b.data(), len, m), DecodeError::Truncated) << "len=" << len;
  // Extra bytes after total_len are ignored.
  b.resize(200, 0xee);
  EXPECT_EQ(decode(b.data(), b.size(), m), DecodeError::None);
  EXPECT_EQ(m.h.total_len, 100u);
}

TEST(WireDecode, HelloAddressLengthOutOfRangeIsBadField) {
  const uint8_t hello = static_cast<uint8_t>(Type::Hello);
  // Length 0, with enough body for the rank.
  EXPECT_EQ(decode_bytes(raw_message(hello, BodyBuilder().u16(0).u32(1).b)), DecodeError::BadField);
  // Length kMaxAddrLen + 1 (and the bytes are really there).
  Bytes big = BodyBuilder().u16(kMaxAddrLen + 1).str(std::string(kMaxAddrLen + 1, 'a')).u32(1).b;
  EXPECT_EQ(decode_bytes(raw_message(hello, big)), DecodeError::BadField);
  EXPECT_EQ(decode_bytes(raw_message(hello, BodyBuilder().u16(0xffff).b)), DecodeError::BadField);
  // kMaxAddrLen itself is accepted.
  Bytes max = BodyBuilder().u16(kMaxAddrLen).str(std::string(kMaxAddrLen, 'a')).u32(1).b;
  EXPECT_EQ(decode_bytes(raw_message(hello, max)), DecodeError::None);
}

TEST(WireDecode, BulkOpOutOfRangeIsBadField) {
  const uint8_t bulk = static_cast<uint8_t>(Type::Bulk);
  for (int op = 0; op < 256; op++) {
    Bytes b = raw_message(bulk, BodyBuilder().u8(static_cast<uint8_t>(op)).u64(1).u64(2).u64(3).b);
    DecodeError want = (op >= 1 && op <= 4) ? DecodeError::None : DecodeError::BadField;
    EXPECT_EQ(decode_bytes(b), want) << "op " << op;
  }
}

TEST(WireRoundTrip, RandomFlagOfAStorageRequest) {
  Bytes b = encode_with(kBig, [&](uint8_t* p, size_t cap) {
    size_t n = encode_bulk_req(p, cap, 1, 2, BulkOp::Get, 8192, 3, 4, true, 0, 0);
    set_flag(p, kFlagRandom);
    return n;
  });
  Message m;
  ASSERT_EQ(decode_bytes(b, m), DecodeError::None);
  EXPECT_EQ(m.op, BulkOp::Get);
  EXPECT_NE(m.h.flags & kFlagRandom, 0);
  EXPECT_NE(m.h.flags & kFlagVerify, 0);
}

TEST(WireRoundTrip, MetaRequest) {
  for (MetaOp op : {MetaOp::Create, MetaOp::Stat, MetaOp::Open, MetaOp::Unlink, MetaOp::Readdir}) {
    Bytes b = encode_with(kBig, [&](uint8_t* p, size_t cap) { return encode_meta_req(p, cap, 5, 6, op, 256, 128); });
    ASSERT_EQ(b.size(), 256u);
    Message m;
    ASSERT_EQ(decode_bytes(b, m), DecodeError::None);
    expect_header(m, Type::Meta, false, 5, 6, 1, 256);
    EXPECT_EQ(m.meta_op, op);
    EXPECT_EQ(m.h.resp_len, 128u);
  }
}

TEST(WireDecode, MetaOpOutOfRangeIsBadField) {
  const uint8_t meta = static_cast<uint8_t>(Type::Meta);
  for (int op = 0; op < 256; op++) {
    Bytes b = raw_message(meta, BodyBuilder().u8(static_cast<uint8_t>(op)).b);
    DecodeError want = (op >= 1 && op <= 5) ? DecodeError::None : DecodeError::BadField;
    EXPECT_EQ(decode_bytes(b), want) << "op " << op;
  }
}

TEST(WireDecode, ShutdownTokenTooLongIsBadField) {
  const uint8_t sd = static_cast<uint8_t>(Type::Shutdown);
  Bytes b = BodyBuilder().u16(kMaxTokenLen + 1).str(std::string(kMaxTokenLen + 1, 't')).b;
  EXPECT_EQ(decode_bytes(raw_message(sd, b)), DecodeError::BadField);
}

TEST(WireDecode, ResponseStatusOutOfRangeIsBadField) {
  const uint8_t noop_resp = static_cast<uint8_t>(Type::Noop) | kResponseBit;
  EXPECT_EQ(decode_bytes(raw_message(noop_resp, BodyBuilder().u16(6).b)), DecodeError::None);
  EXPECT_EQ(decode_bytes(raw_message(noop_resp, BodyBuilder().u16(7).b)), DecodeError::BadField);
  EXPECT_EQ(decode_bytes(raw_message(noop_resp, BodyBuilder().u16(0xffff).b)),
            DecodeError::BadField);
}

// For each message with body fields, every shorter body_len (header kept
// consistent: total_len shrinks with it) must be rejected as Truncated.
// Exception: a body too short to hold the leading length/op field reads it
// as 0, which the decoder reports as BadField; either error is acceptable
// there, but never None.
TEST(WireDecode, BodyShorterThanFieldsIsTruncated) {
  StatBody s{1, 2, 3, 4, 5, 1.0, 2.0, 3.0};
  struct Case {
    const char* name;
    Bytes msg;
    size_t lead;  // size of a leading field that is validated (may read as 0)
  };
  std::vector<Case> cases = {
      {"hello_req", encode_with(kBig, [](uint8_t* p, size_t c) {
         return encode_hello_req(p, c, 1, "address", 2);
       }), 2},
      {"hello_resp", encode_with(kBig, [](uint8_t* p, size_t c) {
         return encode_hello_resp(p, c, 1, 2, 3, 4, 5);
       }), 0},
      {"bulk_req", encode_with(kBig, [](uint8_t* p, size_t c) {
         return encode_bulk_req(p, c, 1, 2, BulkOp::Read, 3, 4, 5, false, 0, 0);
       }), 1},
      {"shutdown_req", encode_with(kBig, [](uint8_t* p, size_t c) {
         return encode_shutdown_req(p, c, 1, 2, "token");
       }), 0},
      {"stat_resp", encode_with(kBig, [&](uint8_t* p, size_t c) {
         return encode_stat_resp(p, c, 1, 2, s);
       }), 0},
      {"bulk_resp", encode_with(kBig, [](uint8_t* p, size_t c) {
         return encode_resp(p, c, Type::Bulk, 1, 2, Status::Ok, 9, 0);
       }), 0},
      {"noop_resp", encode_with(kBig, [](uint8_t* p, size_t c) {
         return encode_resp(p, c, Type::Noop, 1, 2, Status::Ok, 0, 0);
       }), 0},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.name);
    const size_t body = get_le(c.msg, kOffBodyLen, 4);
    ASSERT_GT(body, 0u);
    ASSERT_EQ(decode_bytes(c.msg), DecodeError::None);
    for (size_t short_body = 0; short_body < body; short_body++) {
      // (a) header says the shorter length, buffer cut to match.
      Bytes b(c.msg.begin(), c.msg.begin() + kHeaderSize + short_body);
      put_le(b, kOffBodyLen, short_body, 4);
      put_le(b, kOffTotalLen, b.size(), 4);
      DecodeError e = decode_bytes(b);
      // (b) shorter body_len, but the rest of the original bytes kept as padding.
      Bytes p = c.msg;
      put_le(p, kOffBodyLen, short_body, 4);
      DecodeError ep = decode_bytes(p);
      if (short_body < c.lead) {
        EXPECT_TRUE(e == DecodeError::Truncated || e == DecodeError::BadField)
            << "body_len=" << short_body << ": " << decode_error_name(e);
        EXPECT_TRUE(ep == DecodeError::Truncated || ep == DecodeError::BadField)
            << "body_len=" << short_body << ": " << decode_error_name(ep);
      } else {
        EXPECT_EQ(e, DecodeError::Truncated) << "body_len=" << short_body;
        EXPECT_EQ(ep, DecodeError::Truncated) << "body_len=" << short_body;
      }
    }
  }
  // A string length pointing past the body.
  const uint8_t hello = static_cast<uint8_t>(Type::Hello);
  EXPECT_EQ(decode_bytes(raw_message(hello, BodyBuilder().u16(10).str("abcde").b)),
            DecodeError::Truncated);
  const uint8_t sd = static_cast<uint8_t>(Type::Shutdown);
  EXPECT_EQ(decode_bytes(raw_message(sd, BodyBuilder().u16(6).str("abcde").b)),
            DecodeError::Truncated);
}

TEST(WireDecode, HeaderFieldsAreDecodedEvenWithoutBody) {
  Bytes b = raw_message(static_cast<uint8_t>(Type::Noop), {}, 0x0102030405060708ULL,
                        0x1112131415161718ULL);
  b[kOffFlags] = 0x5a;
  put_le(b, kOffRespLen, 0xcafe, 4);
  Message m;
  ASSERT_EQ(decode_bytes(b, m), DecodeError::None);
  EXPECT_EQ(m.h.flags, 0x5a);
  EXPECT_EQ(m.h.resp_len, 0xcafeu);
  EXPECT_EQ(m.h.req_id, 0x0102030405060708ULL);
  EXPECT_EQ(m.h.conn_id, 0x1112131415161718ULL);
}

// ------------------------------------------------------------------- pattern

TEST(WirePattern, RoundTripSizes) {
  for (size_t n : {0, 1, 7, 8, 9, 4096, 4097}) {
    for (uint64_t seed : {0ULL, 1ULL, 0xffffffffffffffffULL, 123456789ULL}) {
      Bytes b(n + 16, 0xcc);
      fill_pattern(b.data(), n, seed);
      EXPECT_EQ(check_pattern(b.data(), n, seed), n) << "n=" << n << " seed=" << seed;
      // fill_pattern writes exactly n bytes.
      for (size_t i = n; i < b.size(); i++) ASSERT_EQ(b[i], 0xcc) << "n=" << n;
    }
  }
}

TEST(WirePattern, FlippedByteReportedAtItsOffset) {
  for (size_t n : {1, 7, 8, 9, 4096, 4097}) {
    Bytes b(n);
    fill_pattern(b.data(), n, 42);
    for (size_t off = 0; off < n; off++) {
      for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
        b[off] ^= mask;
        ASSERT_EQ(check_pattern(b.data(), n, 42), off) << "n=" << n << " mask=" << int(mask);
        b[off] ^= mask;
      }
    }
    // Two corruptions: the first one is reported.
    if (n >= 9) {
      b[n - 1] ^= 1;
      b[3] ^= 1;
      EXPECT_EQ(check_pattern(b.data(), n, 42), 3u);
    }
  }
}

TEST(WirePattern, DifferentSeedsGiveDifferentData) {
  const size_t n = 4096;
  std::vector<Bytes> bufs;
  for (uint64_t seed = 0; seed < 64; seed++) {
    Bytes b(n);
    fill_pattern(b.data(), n, seed);
    bufs.push_back(b);
  }
  for (size_t i = 0; i < bufs.size(); i++) {
    for (size_t j = i + 1; j < bufs.size(); j++) {
      EXPECT_NE(bufs[i], bufs[j]) << i << " vs " << j;
      // The first word already differs, so a wrong seed is detected at once.
      EXPECT_LT(check_pattern(bufs[i].data(), n, j), 8u);
    }
  }
  // Nearby seeds also differ in small buffers (first word is the seed hash).
  for (uint64_t seed = 0; seed < 1000; seed++) {
    uint8_t a[8], b[8];
    fill_pattern(a, 8, seed);
    fill_pattern(b, 8, seed + 1);
    EXPECT_NE(std::memcmp(a, b, 8), 0) << seed;
  }
  // And the data is not trivially constant.
  Bytes z(n, 0);
  EXPECT_NE(bufs[0], z);
  EXPECT_LT(check_pattern(z.data(), n, 0), n);
}

// ------------------------------------------------------------- randomized

namespace {

bool valid_enum(DecodeError e) {
  switch (e) {
    case DecodeError::None:
    case DecodeError::Truncated:
    case DecodeError::BadMagic:
    case DecodeError::BadVersion:
    case DecodeError::BadType:
    case DecodeError::BadLength:
    case DecodeError::BadField:
      return true;
  }
  return false;
}

std::vector<Bytes> seed_messages() {
  StatBody s{10, 20, 30, 40, 50, 0.5, 0.25, 99.0};
  std::vector<Bytes> v;
  v.push_back(encode_with(kBig, [](uint8_t* p, size_t c) {
    return encode_hello_req(p, c, 1, "ofi+tcp://10.0.0.1:1234", 0);
  }));
  v.push_back(encode_with(kBig, [](uint8_t* p, size_t c) {
    return encode_hello_resp(p, c, 1, 7, 1 << 20, 4096, 0);
  }));
  v.push_back(encode_with(kBig, [](uint8_t* p, size_t c) {
    return encode_noop_req(p, c, 2, 7, 64, 64);
  }));
  v.push_back(encode_with(kBig, [](uint8_t* p, size_t c) {
    return encode_bulk_req(p, c, 3, 7, BulkOp::Write, 65536, 0x1000, 0x2000, true, 0, 0);
  }));
  v.push_back(encode_with(kBig, [](uint8_t* p, size_t c) { return encode_stat_req(p, c, 4, 7); }));
  v.push_back(encode_with(kBig, [&](uint8_t* p, size_t c) {
    return encode_stat_resp(p, c, 4, 7, s);
  }));
  v.push_back(encode_with(kBig, [](uint8_t* p, size_t c) {
    return encode_shutdown_req(p, c, 5, 7, "token");
  }));
  v.push_back(encode_with(kBig, [](uint8_t* p, size_t c) {
    return encode_resp(p, c, Type::Bulk, 3, 7, Status::VerifyFailed, 65536, 0);
  }));
  v.push_back(encode_with(kBig, [](uint8_t* p, size_t c) {
    return encode_resp(p, c, Type::Shutdown, 5, 7, Status::Denied, 0, 0);
  }));
  return v;
}

}  // namespace

TEST(WireDecode, RandomizedMutationsNeverMisbehave) {
  const std::vector<Bytes> seeds = seed_messages();
  std::mt19937_64 rng(0x5eed);
  auto rnd = [&](uint64_t n) { return n ? rng() % n : 0; };
  size_t counts[8] = {};
  const int kIters = 200000;
  for (int it = 0; it < kIters; it++) {
    Bytes b;
    int kind = static_cast<int>(rnd(10));
    if (kind == 0) {
      // Pure random bytes, sometimes with a valid magic/version.
      b.resize(rnd(160));
      for (auto& x : b) x = static_cast<uint8_t>(rng());
      if (b.size() >= 6 && rnd(2)) {
        put_le(b, kOffMagic, kMagic, 4);
        put_le(b, kOffVersion, kVersion, 2);
      }
    } else {
      b = seeds[rnd(seeds.size())];
      int nmut = 1 + static_cast<int>(rnd(4));
      for (int k = 0; k < nmut; k++) {
        switch (rnd(7)) {
          case 0:  // flip random bits in a random byte
            if (!b.empty()) b[rnd(b.size())] ^= static_cast<uint8_t>(1 + rnd(255));
            break;
          case 1:  // truncate
            b.resize(rnd(b.size() + 1));
            break;
          case 2: {  // extend with random bytes
            size_t extra = 1 + rnd(64);
            for (size_t i = 0; i < extra; i++) b.push_back(static_cast<uint8_t>(rng()));
            break;
          }
          case 3:  // make the header lengths agree with the buffer
            if (b.size() >= kHeaderSize) {
              put_le(b, kOffTotalLen, b.size(), 4);
              put_le(b, kOffBodyLen, rnd(b.size() - kHeaderSize + 2), 4);
            }
            break;
          case 4:  // mutate a length/type field with an edge value
            if (b.size() >= kHeaderSize) {
              static const uint64_t edges[] = {0, 1, 2, 39, 40, 41, 0x7fffffff, 0x80000000,
                                               0xfffffffe, 0xffffffff};
              size_t off = rnd(2) ? kOffBodyLen : kOffTotalLen;
              put_le(b, off, edges[rnd(std::size(edges))], 4);
            }
            break;
          case 5:  // change the type, keep the body
            if (b.size() > kOffType) b[kOffType] = static_cast<uint8_t>(rnd(2) ? rnd(8) : rng());
            break;
          case 6:  // overwrite a body length/op field
            if (b.size() >= kHeaderSize + 2)
              put_le(b, kHeaderSize, rnd(2) ? rnd(kMaxAddrLen + 4) : rng(), 2);
            break;
        }
      }
    }
    // Exact-size heap copy so that any overread is at least out of bounds
    // of the allocation (and caught when run under ASan).
    std::unique_ptr<uint8_t[]> heap(new uint8_t[b.size() ? b.size() : 1]);
    if (!b.empty()) std::memcpy(heap.get(), b.data(), b.size());
    Message m;
    DecodeError e = decode(heap.get(), b.size(), m);
    ASSERT_TRUE(valid_enum(e)) << "iteration " << it << " returned " << static_cast<int>(e);
    counts[static_cast<int>(e)]++;
    if (e != DecodeError::None) continue;
    // Invariants of an accepted message.
    ASSERT_GE(b.size(), kHeaderSize);
    ASSERT_EQ(m.h.magic, kMagic);
    ASSERT_EQ(m.h.version, kVersion);
    ASSERT_LE(m.h.total_len, b.size());
    ASSERT_LE(uint64_t{m.h.body_len} + kHeaderSize, m.h.total_len);
    uint8_t t = m.h.type & ~kResponseBit;
    ASSERT_GE(t, 1);
    ASSERT_LE(t, std::size(kTypes));
    ASSERT_EQ(static_cast<uint8_t>(m.type), t);
    ASSERT_EQ(m.response, (m.h.type & kResponseBit) != 0);
    const uint8_t* body = heap.get() + kHeaderSize;
    const uint8_t* body_end = body + m.h.body_len;
    auto inside = [&](std::string_view s) {
      auto p = reinterpret_cast<const uint8_t*>(s.data());
      return s.empty() || (p >= body && p + s.size() <= body_end);
    };
    ASSERT_TRUE(inside(m.addr));
    ASSERT_TRUE(inside(m.token));
    if (m.response) {
      ASSERT_TRUE(known_status(static_cast<uint16_t>(m.status)));
    } else if (m.type == Type::Hello) {
      ASSERT_GE(m.addr.size(), 1u);
      ASSERT_LE(m.addr.size(), kMaxAddrLen);
    } else if (m.type == Type::Bulk) {
      ASSERT_TRUE(known_bulk_op(static_cast<uint8_t>(m.op)));
    } else if (m.type == Type::Meta) {
      ASSERT_TRUE(known_meta_op(static_cast<uint8_t>(m.meta_op)));
    } else if (m.type == Type::Shutdown) {
      ASSERT_LE(m.token.size(), kMaxTokenLen);
    }
  }
  // The mutator reached both acceptance and every rejection path.
  for (int e = 0; e <= static_cast<int>(DecodeError::BadField); e++)
    EXPECT_GT(counts[e], 0u) << "never produced " << decode_error_name(static_cast<DecodeError>(e));
}
