// The metadata operations: create, stat, open (open+close), unlink,
// readdir. Each is an RPC the server performs on its storage (storage.hpp:
// in the shared directory or one per process, --meta-layout) on its I/O
// thread, then answers; readdir's response counts the entries it read.
// They differ only in their op byte, so they share this file: one entry
// each, built by meta_entry.
#include "ops/op.hpp"
#include "storage.hpp"

namespace rooftop::ops {

namespace {

void configure(const Options&, int64_t, Workload&) {}

template <wire::MetaOp M>
size_t encode(const Workload& w, const ClientOp& c, uint8_t* buf, size_t cap) {
  return wire::encode_meta_req(buf, cap, c.req_id, c.conn, M, w.req_size, w.resp_size);
}

void serve(ServerContext& ctx, const Request& r) {
  if (!ctx.store()) return ctx.refuse_storage(r, std::string(r.op.name) + ": this server has no --storage-dir");
  ctx.queue_io({&r.op, r.m.h.req_id, r.m.h.conn_id, 0, 0, 0, r.peer, false, r.m.h.resp_len});
}

storage::Outcome io(storage::Store& st, const RmaJob& j, uint8_t*) { return st.meta(j.op->meta_op); }

template <wire::MetaOp M>
constexpr Op meta_entry(const char* name, const char* help, const char* counter) {
  return {
      .name = name,
      .help = help,
      .counter = counter,
      .wire_type = wire::Type::Meta,
      .bulk_op = wire::BulkOp::Read,  // unused: not a bulk request
      .meta_op = M,
      .caps = kStorage,
      .options = nullptr,
      .client = {.configure = configure,
                 .check_server = nullptr,
                 .check_provider = nullptr,
                 .prepare = nullptr,
                 .encode = encode<M>,
                 .response = nullptr,
                 .verify = nullptr},
      .server = {.serve = serve, .rma = Rma::None, .before_rma = nullptr, .after_rma = nullptr,
                 .io_when = IoWhen::Alone, .io = io},
  };
}

}  // namespace

extern const Op create_op, stat_op, open_op, unlink_op, readdir_op;
const Op create_op = meta_entry<wire::MetaOp::Create>("create", "server creates a file", "meta_create");
const Op stat_op = meta_entry<wire::MetaOp::Stat>("stat", "server stats one of its files", "meta_stat");
const Op open_op = meta_entry<wire::MetaOp::Open>("open", "server opens and closes one of its files", "meta_open");
const Op unlink_op = meta_entry<wire::MetaOp::Unlink>("unlink", "server removes one of its files", "meta_unlink");
const Op readdir_op = meta_entry<wire::MetaOp::Readdir>("readdir", "server lists its metadata directory",
                                                        "meta_readdir");

}  // namespace rooftop::ops
