// Unit tests for the operation table (ops/): every operation has a name,
// help and counter, appears in --op (choices and help, in the built
// engine's `load --help` too) and in the output schema, and goes through
// its hooks end to end: client request -> wire -> the server's handler
// (and RMA hooks) -> response -> the client's checks, with and without a
// corrupted transfer.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <stdlib.h>

#include <memory>

#include "counters.hpp"
#include "mini_json.hpp"
#include "ops/table.hpp"
#include "storage.hpp"

using namespace rooftop;
using rooftop::ops::Op;

namespace {

bool contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

// The options `load` takes from the table, parsed from args.
struct LoadOptions {
  std::vector<std::string> store;
  std::vector<char*> argv;
  Options o;
  explicit LoadOptions(std::vector<std::string> args) : store(std::move(args)), o("load", "test", specs()) {
    for (auto& s : store) argv.push_back(s.data());
    o.parse(static_cast<int>(argv.size()), argv.data());
  }
  static std::vector<OptSpec> specs() {
    std::vector<OptSpec> s = {ops::op_option()};
    for (auto place : {ops::Place::AfterOp, ops::Place::WithData})
      for (auto& spec : ops::options(place)) s.push_back(spec);
    return s;
  }
};

// A store on a fresh directory: 64 KiB filled with verifiable blocks.
struct TempStore {
  std::string dir;
  std::unique_ptr<storage::Store> store;
  TempStore() {
    char tmpl[] = "/tmp/rooftop-ops-XXXXXX";
    dir = mkdtemp(tmpl);
    std::vector<std::string> args = {"--storage-dir", dir, "--file-size", "64KiB", "--fill", "--meta-files", "4"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    Options o("serve", "test", storage::options(false));
    o.parse(static_cast<int>(argv.size()), argv.data());
    store = std::make_unique<storage::Store>(storage::configure(o, 0));
  }
  ~TempStore() {
    store.reset();  // removes its files
    rmdir(dir.c_str());
  }
};

// A server without a fabric: records what the handlers ask for.
struct FakeServer : ops::ServerContext {
  ServerCounters counters;
  std::vector<std::vector<uint8_t>> responses;
  std::vector<uint64_t> peers;
  std::vector<ops::RmaJob> jobs, io_jobs;
  std::vector<std::string> refused;
  TempStore storage;
  bool has_store = true;
  uint64_t max = 1 << 20;
  void respond(uint64_t peer, ops::EncodeRef encode) override {
    std::vector<uint8_t> b(1 << 16);
    b.resize(encode(b.data(), b.size()));
    responses.push_back(b);
    peers.push_back(peer);
  }
  void served(const Op& op, uint64_t bytes) override { counters.served(op, bytes); }
  void count(Counter c) override { counters[c]++; }
  uint64_t max_bulk() const override { return max; }
  size_t max_msg() const override { return 1 << 16; }
  void queue_rma(const ops::RmaJob& job) override { jobs.push_back(job); }
  storage::Store* store() override { return has_store ? storage.store.get() : nullptr; }
  void queue_io(const ops::RmaJob& job) override { io_jobs.push_back(job); }
  void refuse_storage(const ops::Request& r, const std::string& why) override {
    refused.push_back(why);
    respond(r.peer, [&](uint8_t* b, size_t cap) {
      return wire::encode_resp(b, cap, r.op.wire_type, r.m.h.req_id, r.m.h.conn_id, wire::Status::StorageError, 0,
                               r.resp_total);
    });
  }
};

wire::Message decode(const std::vector<uint8_t>& b) {
  wire::Message m;
  EXPECT_EQ(wire::decode(b.data(), b.size(), m), wire::DecodeError::None);
  return m;
}

// One operation of `op` from the client's hooks through the server's and
// back; `corrupt` flips a byte of the bulk data in transit. Returns the
// client's verdict: "" if the operation succeeded and (with --verify) its
// data checked out, else the status or the verify message.
std::string round_trip(const Op& op, bool verify, bool corrupt, FakeServer& srv) {
  LoadOptions lo({"--op", op.name, "--size", "4KiB", "--buffer", "reuse"});
  ops::Workload w;
  op.client.configure(lo.o, 2, w);
  w.verify = verify;
  w.resp_size = 100;
  std::vector<uint8_t> client_data(w.data_len), server_buf(srv.max);
  ops::ClientOp c;
  c.req_id = 0x10001;
  c.conn = 7;
  if (w.data_len) {
    c.data = client_data.data();
    c.data_addr = reinterpret_cast<uint64_t>(c.data);
    c.data_key = 99;
  }
  if (op.client.prepare) op.client.prepare(w, c);
  std::vector<uint8_t> req(4096);
  req.resize(op.client.encode(w, c, req.data(), req.size()));
  EXPECT_GT(req.size(), 0u);
  wire::Message m = decode(req);
  EXPECT_FALSE(m.response);
  EXPECT_EQ(m.type, op.wire_type);
  EXPECT_EQ(ops::for_request(m), &op) << "a request of " << op.name << " is dispatched to another operation";
  op.server.serve(srv, {op, m, 42, std::min<size_t>(m.h.resp_len, 4096)});
  if (op.server.io_when == ops::IoWhen::Alone) {
    // What the server's I/O thread does (server.cpp: submit_io, complete_io).
    EXPECT_TRUE(srv.responses.empty());
    EXPECT_EQ(srv.io_jobs.size(), 1u);
    if (srv.io_jobs.size() != 1) return "no io job";
    const ops::RmaJob j = srv.io_jobs.back();
    srv.io_jobs.clear();
    storage::Outcome out = op.server.io(*srv.store(), j, nullptr);
    EXPECT_EQ(out.error, "");
    if (out.status == wire::Status::Ok) srv.served(op, 0);
    srv.respond(j.peer, [&](uint8_t* b, size_t cap) {
      return wire::encode_resp(b, cap, op.wire_type, j.req_id, j.conn, out.status, out.count,
                               std::min<size_t>(j.resp_len, 4096));
    });
  }
  if (op.has(ops::kMovesBulk)) {
    // What the server's RMA slot does (server.cpp: start_bulk, handle_rma, finish_bulk).
    EXPECT_TRUE(srv.responses.empty());
    EXPECT_EQ(srv.jobs.size(), 1u);
    if (srv.jobs.size() != 1) return "no job";
    const ops::RmaJob j = srv.jobs.back();
    srv.jobs.clear();
    EXPECT_EQ(j.op, &op);
    EXPECT_EQ(j.size, w.bytes);
    EXPECT_EQ(j.raddr, c.data_addr);
    EXPECT_EQ(j.rkey, c.data_key);
    EXPECT_EQ(j.verify, verify);
    EXPECT_EQ(j.peer, 42u);
    auto io = [&]() { return op.server.io(*srv.store(), j, server_buf.data()).status; };
    wire::Status st = wire::Status::Ok;
    if (op.server.io_when == ops::IoWhen::BeforeRma) st = io();
    if (op.server.before_rma) op.server.before_rma(j, server_buf.data());
    EXPECT_NE(op.server.rma, ops::Rma::None);
    if (op.server.rma == ops::Rma::Write) std::memcpy(c.data, server_buf.data(), j.size);
    else std::memcpy(server_buf.data(), c.data, j.size);
    if (corrupt) (op.server.rma == ops::Rma::Write ? c.data : server_buf.data())[j.size / 2] ^= 0x40;
    if (st == wire::Status::Ok && op.server.after_rma) st = op.server.after_rma(j, server_buf.data());
    if (st == wire::Status::Ok && op.server.io_when == ops::IoWhen::AfterRma) st = io();
    if (st == wire::Status::Ok) srv.served(op, j.size);
    size_t total = std::min<size_t>(j.resp_len, 4096);
    srv.respond(j.peer, [&](uint8_t* b, size_t cap) {
      return wire::encode_resp(b, cap, op.wire_type, j.req_id, j.conn, st, st == wire::Status::Ok ? j.size : 0,
                               total);
    });
  }
  EXPECT_EQ(srv.responses.size(), 1u);
  if (srv.responses.size() != 1) return "no response";
  EXPECT_EQ(srv.peers.back(), 42u);
  wire::Message r = decode(srv.responses.back());
  srv.responses.clear();
  EXPECT_TRUE(r.response);
  EXPECT_EQ(r.type, op.wire_type);
  EXPECT_EQ(r.h.req_id, c.req_id);
  EXPECT_EQ(r.h.total_len, 100u) << "--resp-size pads the response";
  wire::Status st = op.client.response ? op.client.response(w, r) : r.status;
  if (st != wire::Status::Ok) return wire::status_name(st);
  if (verify && op.has(ops::kVerifiable)) return op.client.verify(w, c);
  return "";
}

}  // namespace

TEST(OpTable, EveryOperationIsComplete) {
  ASSERT_FALSE(ops::table().empty());
  std::set<std::string> names, counters;
  for (const Op* op : ops::table()) {
    SCOPED_TRACE(op->name ? op->name : "(null)");
    ASSERT_NE(op->name, nullptr);
    EXPECT_GT(std::strlen(op->name), 0u);
    ASSERT_NE(op->help, nullptr);
    EXPECT_GT(std::strlen(op->help), 0u);
    ASSERT_NE(op->counter, nullptr);
    EXPECT_GT(std::strlen(op->counter), 0u);
    EXPECT_TRUE(names.insert(op->name).second) << "two operations named " << op->name;
    EXPECT_TRUE(counters.insert(op->counter).second) << "two operations count as " << op->counter;
    EXPECT_NE(op->client.configure, nullptr);
    EXPECT_NE(op->client.encode, nullptr);
    EXPECT_NE(op->server.serve, nullptr);
    EXPECT_EQ(op->has(ops::kVerifiable), op->client.verify != nullptr);
    EXPECT_EQ(op->has(ops::kMovesBulk), op->server.rma != ops::Rma::None);
    // A storage operation has an io hook, run before or after its RMA if it moves data.
    EXPECT_EQ(op->has(ops::kStorage), op->server.io != nullptr);
    EXPECT_EQ(op->has(ops::kStorage), op->server.io_when != ops::IoWhen::None);
    if (op->has(ops::kStorage)) {
      EXPECT_EQ(op->has(ops::kMovesBulk), op->server.io_when != ops::IoWhen::Alone) << op->name;
    }
    EXPECT_EQ(ops::find(op->name), op);
    EXPECT_LT(ops::index_of(*op), ops::table().size());
    // Its counter is not one of the server's own.
    for (size_t c = 0; c < static_cast<size_t>(Counter::kCount); c++)
      EXPECT_STRNE(op->counter, counter_name(static_cast<Counter>(c)));
  }
  EXPECT_EQ(ops::find("no-such-op"), nullptr);
}

TEST(OpTable, OpOptionListsEveryOperationWithItsHelp) {
  OptSpec o = ops::op_option();
  EXPECT_EQ(o.name, "op");
  EXPECT_EQ(o.kind, OptKind::Choice);
  EXPECT_EQ(o.def, ops::table().front()->name);
  std::string choices;
  for (const Op* op : ops::table()) {
    if (!choices.empty()) choices += '|';
    choices += op->name;
    EXPECT_TRUE(contains(o.help, std::string(op->name) + ": " + op->help)) << o.help;
  }
  EXPECT_EQ(o.choices, choices);
}

TEST(OpTable, OptionsAreListedOnceAndAgreeBetweenOperations) {
  std::set<std::string> seen;
  for (auto place : {ops::Place::AfterOp, ops::Place::WithData}) {
    for (const OptSpec& s : ops::options(place)) {
      EXPECT_TRUE(seen.insert(s.name).second) << "--" << s.name << " listed twice";
      EXPECT_FALSE(contains(s.help, "{ops}")) << s.help;
      EXPECT_FALSE(s.help.empty()) << "--" << s.name;
    }
  }
  // An option several operations declare is declared alike by each.
  for (const Op* a : ops::table())
    for (const Op* b : ops::table()) {
      if (!a->options || !b->options) continue;
      for (const ops::OpOption& x : a->options())
        for (const ops::OpOption& y : b->options())
          if (x.spec.name == y.spec.name) {
            EXPECT_EQ(x.spec.kind, y.spec.kind) << x.spec.name;
            EXPECT_EQ(x.spec.def, y.spec.def) << x.spec.name;
            EXPECT_EQ(x.spec.help, y.spec.help) << x.spec.name;
            EXPECT_EQ(x.spec.choices, y.spec.choices) << x.spec.name;
            EXPECT_EQ(x.place, y.place) << x.spec.name;
          }
    }
  // "{ops}" names the operations taking the option.
  for (const OptSpec& s : ops::options(ops::Place::AfterOp)) {
    if (s.name == "size") {
      EXPECT_EQ(s.help, "bytes per bulk operation (read/write/put/get)");
    }
  }
}

TEST(OpTable, LoadHelpOfTheBuiltEngineListsEveryOperation) {
  const std::string help = run(std::string(ROOFTOP_ENGINE_BIN) + " load --help");
  ASSERT_TRUE(contains(help, "usage: rooftop-engine load")) << help;
  OptSpec o = ops::op_option();
  // The choices, then their help on the same line or (long choices) the next.
  EXPECT_TRUE(contains(help, "  --op " + o.choices + " ") || contains(help, "  --op " + o.choices + "\n")) << help;
  for (const Op* op : ops::table()) EXPECT_TRUE(contains(help, std::string(op->name) + ": " + op->help)) << op->name;
  for (auto place : {ops::Place::AfterOp, ops::Place::WithData})
    for (const OptSpec& s : ops::options(place)) EXPECT_TRUE(contains(help, "  --" + s.name + " ")) << s.name;
  // An unknown operation is refused with the table's choices.
  const std::string err = run(std::string(ROOFTOP_ENGINE_BIN) + " load --group-dir /nonexistent --op bogus 2>&1");
  EXPECT_TRUE(contains(err, "must be one of " + o.choices)) << err;
}

// The schema is hand-written (readable, with descriptions, read by the
// Python side and by people); this test keeps its operation list equal to
// the table instead of generating it.
TEST(OpTable, SchemaListsExactlyTheTablesOperations) {
  minijson::Value schema = minijson::parse(read_file(ROOFTOP_SCHEMA_PATH));
  const minijson::Value& e = schema["properties"]["config"]["properties"]["op"]["enum"];
  std::vector<std::string> listed, table;
  for (auto& v : e.items) listed.push_back(v.str);
  for (const Op* op : ops::table()) table.push_back(op->name);
  EXPECT_EQ(listed, table) << "engine/schema/engine-output.schema.json: config.op";
}

TEST(OpHooks, EveryOperationRoundTripsThroughClientWireAndServer) {
  for (const Op* op : ops::table()) {
    for (bool verify : {false, true}) {
      SCOPED_TRACE(std::string(op->name) + (verify ? " --verify" : ""));
      FakeServer srv;
      EXPECT_EQ(round_trip(*op, verify, false, srv), "");
      EXPECT_EQ(srv.counters.per_op[ops::index_of(*op)], 1u);
      EXPECT_EQ(srv.counters.total_ops(), 1u);
      ops::Workload w;
      LoadOptions lo({"--size", "4KiB"});
      op->client.configure(lo.o, 1, w);
      EXPECT_EQ(srv.counters.bytes, w.bytes);
      EXPECT_EQ(op->has(ops::kMovesBulk), w.bytes > 0);
    }
  }
}

TEST(OpHooks, VerifiableOperationsCatchACorruptedTransfer) {
  for (const Op* op : ops::table()) {
    if (!op->has(ops::kVerifiable)) continue;
    SCOPED_TRACE(op->name);
    FakeServer srv;
    std::string verdict = round_trip(*op, true, true, srv);
    EXPECT_NE(verdict, "");  // verify_failed from the server, or the client's message
    EXPECT_TRUE(verdict == "verify_failed" || contains(verdict, "differs from the pattern")) << verdict;
    // Without --verify the corruption goes unnoticed: nothing is checked.
    FakeServer quiet;
    EXPECT_EQ(round_trip(*op, false, true, quiet), "");
  }
}

TEST(OpHooks, BulkOperationsCheckTheirOptionsAndLimits) {
  for (const Op* op : ops::table()) {
    if (!op->has(ops::kMovesBulk)) continue;
    SCOPED_TRACE(op->name);
    ops::Workload w;
    LoadOptions zero({"--size", "0"});
    EXPECT_THROW(op->client.configure(zero.o, 1, w), UsageError);
    LoadOptions small({"--size", "1MiB", "--buffer", "stream", "--stream-size", "2MiB"});
    EXPECT_THROW(op->client.configure(small.o, 4, w), UsageError);  // 4 x 1 MiB outstanding
    LoadOptions reuse({"--size", "1MiB", "--buffer", "reuse"});
    op->client.configure(reuse.o, 4, w);
    EXPECT_EQ(w.data_len, 4u << 20);
    EXPECT_FALSE(w.stream);
    ASSERT_NE(op->client.check_server, nullptr);
    EXPECT_THROW(op->client.check_server(reuse.o, w, {0, (1u << 20) - 1, 65536}), UsageError);
    EXPECT_NO_THROW(op->client.check_server(reuse.o, w, {0, 1u << 20, 65536}));
    EXPECT_THROW(op->client.check_provider(reuse.o, w, 1000), UsageError);
    // A request beyond the server's --max-size is refused, not queued.
    FakeServer srv;
    srv.max = 1000;
    ops::ClientOp c;
    c.req_id = 5;
    c.conn = 6;
    std::vector<uint8_t> req(4096);
    req.resize(op->client.encode(w, c, req.data(), req.size()));
    wire::Message m = decode(req);
    op->server.serve(srv, {*op, m, 1, 0});
    EXPECT_TRUE(srv.jobs.empty());
    EXPECT_EQ(srv.counters[Counter::bulk_too_large], 1u);
    ASSERT_EQ(srv.responses.size(), 1u);
    EXPECT_EQ(decode(srv.responses[0]).status, wire::Status::TooLarge);
    // A response reporting other bytes than asked is a bad request.
    wire::Message r = decode(srv.responses[0]);
    r.status = wire::Status::Ok;
    r.bytes = w.bytes - 1;
    EXPECT_EQ(op->client.response(w, r), wire::Status::BadRequest);
    r.bytes = w.bytes;
    EXPECT_EQ(op->client.response(w, r), wire::Status::Ok);
  }
}

TEST(OpHooks, StorageOperationsAreRefusedWithoutStorage) {
  for (const Op* op : ops::table()) {
    if (!op->has(ops::kStorage)) continue;
    SCOPED_TRACE(op->name);
    FakeServer srv;
    srv.has_store = false;
    LoadOptions lo({"--op", op->name, "--size", "4KiB", "--buffer", "reuse"});
    ops::Workload w;
    op->client.configure(lo.o, 1, w);
    ops::ClientOp c;
    c.req_id = 3;
    std::vector<uint8_t> req(4096);
    req.resize(op->client.encode(w, c, req.data(), req.size()));
    op->server.serve(srv, {*op, decode(req), 1, 0});
    EXPECT_TRUE(srv.jobs.empty());
    EXPECT_TRUE(srv.io_jobs.empty());
    ASSERT_EQ(srv.refused.size(), 1u);
    EXPECT_TRUE(contains(srv.refused[0], "no --storage-dir")) << srv.refused[0];
    ASSERT_EQ(srv.responses.size(), 1u);
    EXPECT_EQ(decode(srv.responses[0]).status, wire::Status::StorageError);
  }
}

TEST(OpHooks, PutAndGetMoveWholeBlocksAtTheirPattern) {
  for (const Op* op : ops::table()) {
    if (!op->has(ops::kStorage) || !op->has(ops::kMovesBulk)) continue;
    SCOPED_TRACE(op->name);
    ops::Workload w;
    LoadOptions odd({"--op", op->name, "--size", "6KiB", "--buffer", "reuse"});
    EXPECT_THROW(op->client.configure(odd.o, 1, w), UsageError);  // not whole 4 KiB blocks
    LoadOptions rand({"--op", op->name, "--size", "8KiB", "--buffer", "reuse", "--pattern", "rand"});
    op->client.configure(rand.o, 1, w);
    ops::ClientOp c;
    std::vector<uint8_t> req(4096);
    req.resize(op->client.encode(w, c, req.data(), req.size()));
    FakeServer srv;
    op->server.serve(srv, {*op, decode(req), 1, 0});
    ASSERT_EQ(srv.jobs.size(), 1u);
    EXPECT_TRUE(srv.jobs[0].random);
  }
}
