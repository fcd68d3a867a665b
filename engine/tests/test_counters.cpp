// Unit tests for what is declared once: the wire's message types, statuses
// and decode errors (wire.hpp X-macros) and the server's counters
// (counters.hpp): every type has a name and round-trips, every counter
// appears in the server's result (requests, error counts) and in the
// schema, and the stat response adds up the per-operation counters.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "counters.hpp"
#include "mini_json.hpp"
#include "ops/table.hpp"
#include "wire.hpp"

using namespace rooftop;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

using Encode = std::function<size_t(uint8_t*, size_t)>;

// A request and a response of each message type. A type added to
// ROOFTOP_WIRE_TYPES without an entry here fails WireTypes.EveryTypeRoundTrips.
std::map<wire::Type, std::pair<Encode, Encode>> samples() {
  using namespace wire;
  static const StatBody stat{1, 2, 3, 4, 5, 0.5, 0.25, 9.0};
  auto resp = [](Type t) {
    return [t](uint8_t* b, size_t c) { return encode_resp(b, c, t, 11, 12, Status::Ok, 77, 0); };
  };
  return {
      {Type::Hello,
       {[](uint8_t* b, size_t c) { return encode_hello_req(b, c, 11, "addr", 3); },
        [](uint8_t* b, size_t c) { return encode_hello_resp(b, c, 11, 12, 1 << 20, 4096, 0); }}},
      {Type::Noop, {[](uint8_t* b, size_t c) { return encode_noop_req(b, c, 11, 12, 0, 0); }, resp(Type::Noop)}},
      {Type::Bulk,
       {[](uint8_t* b, size_t c) { return encode_bulk_req(b, c, 11, 12, BulkOp::Write, 77, 1, 2, false, 0, 0); },
        resp(Type::Bulk)}},
      {Type::Stat,
       {[](uint8_t* b, size_t c) { return encode_stat_req(b, c, 11, 12); },
        [](uint8_t* b, size_t c) { return encode_stat_resp(b, c, 11, 12, stat); }}},
      {Type::Shutdown,
       {[](uint8_t* b, size_t c) { return encode_shutdown_req(b, c, 11, 12, "tok"); }, resp(Type::Shutdown)}},
      {Type::Barrier,
       {[](uint8_t* b, size_t c) { return encode_barrier_req(b, c, 11, 12, 1, 2, 3); }, resp(Type::Barrier)}},
      {Type::Meta,
       {[](uint8_t* b, size_t c) { return encode_meta_req(b, c, 11, 12, MetaOp::Stat, 0, 0); }, resp(Type::Meta)}},
  };
}

}  // namespace

TEST(WireTypes, EveryTypeHasAUniqueNameAndCode) {
  std::set<std::string> names;
  std::set<int> codes;
  for (const wire::TypeInfo& t : wire::kTypes) {
    const uint8_t code = static_cast<uint8_t>(t.type);
    ASSERT_NE(t.name, nullptr);
    EXPECT_GT(std::string(t.name).size(), 0u);
    EXPECT_TRUE(names.insert(t.name).second) << t.name;
    EXPECT_TRUE(codes.insert(code).second) << t.name;
    EXPECT_EQ(code & wire::kResponseBit, 0) << t.name;
    EXPECT_EQ(wire::type_info(code), &t);
    EXPECT_STREQ(wire::type_name(t.type), t.name);
  }
  EXPECT_EQ(wire::type_info(0), nullptr);
  EXPECT_EQ(wire::type_info(0x7f), nullptr);
  // Every operation of the table sends a known type.
  for (const ops::Op* op : ops::table()) EXPECT_NE(wire::type_info(static_cast<uint8_t>(op->wire_type)), nullptr);
}

TEST(WireTypes, EveryTypeRoundTrips) {
  auto s = samples();
  for (const wire::TypeInfo& t : wire::kTypes) {
    SCOPED_TRACE(t.name);
    auto it = s.find(t.type);
    ASSERT_NE(it, s.end()) << "no sample request/response for wire type " << t.name;
    for (bool response : {false, true}) {
      uint8_t buf[4096];
      size_t n = (response ? it->second.second : it->second.first)(buf, sizeof buf);
      ASSERT_GT(n, 0u);
      wire::Message m;
      ASSERT_EQ(wire::decode(buf, n, m), wire::DecodeError::None);
      EXPECT_EQ(m.type, t.type);
      EXPECT_EQ(m.response, response);
      EXPECT_EQ(m.h.req_id, 11u);
      if (response && t.resp_bytes) {
        EXPECT_EQ(m.bytes, 77u);
      }
      if (response && !t.resp_bytes) {
        EXPECT_EQ(m.bytes, 0u);
      }
    }
  }
}

TEST(WireTypes, StatusesDecodeErrorsAndBulkOpsHaveUniqueNames) {
  std::set<std::string> names;
#define ROOFTOP_X(name, code, text)                                        \
  EXPECT_STREQ(wire::status_name(wire::Status::name), text);               \
  EXPECT_TRUE(wire::known_status(code));                                   \
  EXPECT_TRUE(names.insert(text).second) << text;
  ROOFTOP_WIRE_STATUSES(ROOFTOP_X)
#undef ROOFTOP_X
  EXPECT_FALSE(wire::known_status(999));
  names.clear();
#define ROOFTOP_X(name, text)                                                \
  EXPECT_STREQ(wire::decode_error_name(wire::DecodeError::name), text);      \
  EXPECT_TRUE(names.insert(text).second) << text;
  ROOFTOP_DECODE_ERRORS(ROOFTOP_X)
#undef ROOFTOP_X
  names.clear();
#define ROOFTOP_X(name, code, text)                                       \
  EXPECT_STREQ(wire::bulk_op_name(wire::BulkOp::name), text);             \
  EXPECT_TRUE(wire::known_bulk_op(code));                                 \
  EXPECT_TRUE(names.insert(text).second) << text;
  ROOFTOP_BULK_OPS(ROOFTOP_X)
#undef ROOFTOP_X
  EXPECT_FALSE(wire::known_bulk_op(0));
  names.clear();
#define ROOFTOP_X(name, code, text)                                       \
  EXPECT_STREQ(wire::meta_op_name(wire::MetaOp::name), text);             \
  EXPECT_TRUE(wire::known_meta_op(code));                                 \
  EXPECT_TRUE(names.insert(text).second) << text;
  ROOFTOP_META_OPS(ROOFTOP_X)
#undef ROOFTOP_X
  EXPECT_FALSE(wire::known_meta_op(0));
}

TEST(Counters, EveryCounterAppearsInTheResultWithItsValue) {
  ServerCounters c;
  uint64_t v = 100;
  std::map<std::string, uint64_t> want;
  for (size_t i = 0; i < static_cast<size_t>(Counter::kCount); i++) {
    c[static_cast<Counter>(i)] = ++v;
    want[counter_name(static_cast<Counter>(i))] = v;
  }
  const auto& t = ops::table();
  for (size_t i = 0; i < t.size(); i++) {
    c.per_op[i] = ++v;
    want[t[i]->counter] = v;
  }
  JsonWriter w;
  w.begin_object().key("requests").begin_object();
  c.write_requests(w);
  w.end_object();
  c.write_errors(w);
  w.end_object();
  minijson::Value doc = minijson::parse(w.str());
  EXPECT_EQ(doc["requests"].keys(), request_keys());
  std::set<std::string> found;
  for (auto& [k, val] : doc["requests"].members) {
    EXPECT_EQ(val.num, static_cast<double>(want.at(k))) << k;
    found.insert(k);
  }
  for (auto& [k, val] : doc.members) {
    if (k == "requests") continue;
    EXPECT_EQ(val.num, static_cast<double>(want.at(k))) << k;
    found.insert(k);
  }
  EXPECT_EQ(found.size(), want.size()) << "a counter is missing from the result";
  // The order the server's documents have always had.
  std::vector<std::string> keys = request_keys();
  ASSERT_GE(keys.size(), 4u);
  EXPECT_EQ(keys.front(), "hello");
  EXPECT_EQ(keys[1], t.front()->counter);
  EXPECT_EQ(keys.back(), "storage_failed");
}

TEST(Counters, StatAddsUpTheOperations) {
  ServerCounters c;
  for (const ops::Op* op : ops::table()) {
    for (int i = 0; i <= static_cast<int>(ops::index_of(*op)); i++) c.served(*op, op->has(ops::kMovesBulk) ? 10 : 0);
  }
  wire::StatBody s = c.stat(6, 1.5, 0.5, 3.0);
  uint64_t noops = 0, bulks = 0;
  for (const ops::Op* op : ops::table()) (op->has(ops::kMovesBulk) ? bulks : noops) += ops::index_of(*op) + 1;
  EXPECT_EQ(s.ops, noops + bulks);
  EXPECT_EQ(s.ops, c.total_ops());
  EXPECT_EQ(s.noops, noops);
  EXPECT_EQ(s.bulks, bulks);
  EXPECT_EQ(s.bytes, bulks * 10);
  EXPECT_EQ(s.dropped, 6u);
  EXPECT_EQ(s.user_s, 1.5);
  EXPECT_EQ(s.sys_s, 0.5);
  EXPECT_EQ(s.wall_s, 3.0);
  // The stat response carries every field of the body.
  uint8_t buf[512];
  size_t n = wire::encode_stat_resp(buf, sizeof buf, 1, 2, s);
  wire::Message m;
  ASSERT_EQ(wire::decode(buf, n, m), wire::DecodeError::None);
#define ROOFTOP_X(field, key) EXPECT_EQ(m.stat.field, s.field) << #field;
  ROOFTOP_STAT_COUNTS(ROOFTOP_X)
#undef ROOFTOP_X
#define ROOFTOP_X(field) EXPECT_EQ(m.stat.field, s.field) << #field;
  ROOFTOP_STAT_TIMES(ROOFTOP_X)
#undef ROOFTOP_X
}

// The schema names every counter of result.requests, and the error counts.
TEST(Counters, SchemaListsExactlyTheServersCounters) {
  minijson::Value schema = minijson::parse(read_file(ROOFTOP_SCHEMA_PATH));
  const minijson::Value& server = schema["$defs"]["server_result"]["properties"];
  EXPECT_EQ(server["requests"]["properties"].keys(), request_keys())
      << "engine/schema/engine-output.schema.json: server_result.requests";
#define ROOFTOP_X(name) EXPECT_TRUE(server.has(#name)) << #name;
  ROOFTOP_ERROR_COUNTERS(ROOFTOP_X)
#undef ROOFTOP_X
}
