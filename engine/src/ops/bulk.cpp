#include "ops/bulk.hpp"

#include "counters.hpp"
#include "storage.hpp"
#include "sysinfo.hpp"

namespace rooftop::ops::bulk {

std::vector<OpOption> options() {
  return {
      {{"size", OptKind::Size, "4MiB", "bytes per bulk operation ({ops})", ""}, Place::AfterOp},
      {{"buffer", OptKind::Choice, "stream", "reuse: one buffer per outstanding op (as osu_bw); stream: walk through --stream-size (as a data service)", "reuse|stream"}, Place::WithData},
      {{"stream-size", OptKind::Size, "1GiB", "client buffer walked by --buffer stream", ""}, Place::WithData},
      {{"buffer-pages", OptKind::Choice, "base", "base: the data buffer in the kernel's base pages (where they land physically varies run to run, and with it how a device splits a large O_DIRECT transfer); huge: in hugetlb pages (MAP_HUGETLB), refused unless enough are reserved in /proc/sys/vm/nr_hugepages", "base|huge"}, Place::WithData},
  };
}

void configure(const Options& o, int64_t k, Workload& w) {
  w.bytes = o.size("size");
  if (w.bytes == 0) throw UsageError("--size must be at least 1 byte for bulk ops");
  w.stream = o.str("buffer") == "stream";
  w.pages = parse_pages(o.str("buffer-pages"));
  // Memory for bulk data, checked before anything starts.
  w.data_len = w.stream ? o.size("stream-size") : w.bytes * static_cast<uint64_t>(k);
  if (w.stream && w.data_len < w.bytes * static_cast<uint64_t>(k))
    throw UsageError("--stream-size " + o.str("stream-size") + " is smaller than --size x --concurrency");
  uint64_t avail = mem_available_bytes();
  if (avail && w.data_len > avail * 9 / 10)
    throw UsageError("the client buffer needs " + std::to_string(w.data_len >> 20) + " MiB but only " +
                     std::to_string(avail >> 20) + " MiB of memory are available (--size/--stream-size)");
}

void check_server(const Options& o, const Workload& w, const ServerLimits& server) {
  if (w.bytes > server.max_bulk)
    throw UsageError("--size " + o.str("size") + " exceeds what server rank " + std::to_string(server.rank) +
                     " registered (" + std::to_string(server.max_bulk) + " bytes; its --max-size)");
}

void check_provider(const Options&, const Workload& w, uint64_t max_transfer) {
  if (w.bytes > max_transfer)
    throw UsageError("--size exceeds the provider's largest transfer (" + std::to_string(max_transfer) +
                     " bytes)");
}

size_t encode(const Op& op, const Workload& w, const ClientOp& c, uint8_t* buf, size_t cap) {
  return wire::encode_bulk_req(buf, cap, c.req_id, c.conn, op.bulk_op, w.bytes, c.data_addr, c.data_key,
                               w.verify, w.req_size, w.resp_size);
}

wire::Status response(const Workload& w, const wire::Message& m) {
  if (m.type == wire::Type::Bulk && m.status == wire::Status::Ok && m.bytes != w.bytes)
    return wire::Status::BadRequest;
  return m.status;
}

void serve(ServerContext& ctx, const Request& r) {
  const wire::Message& m = r.m;
  const uint64_t req = m.h.req_id, conn = m.h.conn_id;
  if (m.size == 0 || m.size > ctx.max_bulk()) {
    ctx.count(Counter::bulk_too_large);
    auto encode = [&](uint8_t* b, size_t cap) {
      return wire::encode_resp(b, cap, r.op.wire_type, req, conn, wire::Status::TooLarge, 0, r.resp_total);
    };
    ctx.respond(r.peer, encode);
    return;
  }
  ctx.queue_rma({&r.op, req, conn, m.size, m.remote_addr, m.rkey, r.peer,
                 (m.h.flags & wire::kFlagVerify) != 0, m.h.resp_len, (m.h.flags & wire::kFlagRandom) != 0});
}

std::vector<OpOption> storage_options() {
  auto o = options();
  o.push_back({{"pattern", OptKind::Choice, "seq",
                "file offsets of {ops} on the server: seq (sequential) or rand (random, in multiples of --size)",
                "seq|rand"},
               Place::AfterOp});
  return o;
}

void configure_storage(const Options& o, int64_t k, Workload& w) {
  configure(o, k, w);
  if (w.bytes % storage::kBlock)
    throw UsageError("--size " + o.str("size") + ": put/get move whole 4KiB blocks (a multiple of 4KiB)");
  w.args[0] = o.str("pattern") == "rand";
}

size_t encode_storage(const Op& op, const Workload& w, const ClientOp& c, uint8_t* buf, size_t cap) {
  size_t len = encode(op, w, c, buf, cap);
  if (len && w.args[0]) wire::set_flag(buf, wire::kFlagRandom);
  return len;
}

void serve_storage(ServerContext& ctx, const Request& r) {
  if (!ctx.store()) return ctx.refuse_storage(r, std::string(r.op.name) + ": this server has no --storage-dir");
  serve(ctx, r);
}

}  // namespace rooftop::ops::bulk
