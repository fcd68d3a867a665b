// put: a durable write. The server RMA-reads --size bytes from the client's
// buffer (as write), then writes them to its data file (storage.hpp: at
// the next --pattern offset, with its --io-mode, --fsync-every and
// --allocation) on its I/O thread (inline, an O_DIRECT write is submitted
// asynchronously: server.cpp), then answers. With --verify the client
// sends verifiable blocks the server checks before writing them.
#include "ops/bulk.hpp"
#include "storage.hpp"

namespace rooftop::ops {

extern const Op put_op;

namespace {

void prepare(const Workload& w, ClientOp& c) {
  if (w.verify) storage::fill_blocks(c.data, w.bytes, c.req_id);
}

size_t encode(const Workload& w, const ClientOp& c, uint8_t* buf, size_t cap) {
  return bulk::encode_storage(put_op, w, c, buf, cap);
}

// The server checked the blocks; a mismatch came back as verify_failed.
std::string verify(const Workload&, const ClientOp&) { return ""; }

storage::Outcome io(storage::Store& st, const RmaJob& j, uint8_t* buf) {
  return st.put(buf, j.size, j.random, j.verify);
}

storage::Outcome io_async(storage::Store& st, const RmaJob& j, uint8_t* buf, uint64_t tag) {
  return st.put_async(buf, j.size, j.random, j.verify, tag);
}

}  // namespace

const Op put_op = {
    .name = "put",
    .help = "server RMA-reads from our buffer and writes it to its storage",
    .counter = "put",
    .wire_type = wire::Type::Bulk,
    .bulk_op = wire::BulkOp::Put,
    .meta_op = wire::MetaOp::Create,  // unused: not a metadata request
    .caps = kMovesBulk | kVerifiable | kStorage,
    .options = bulk::storage_options,
    .client = {.configure = bulk::configure_storage,
               .check_server = bulk::check_server,
               .check_provider = bulk::check_provider,
               .prepare = prepare,
               .encode = encode,
               .response = bulk::response,
               .verify = verify},
    .server = {.serve = bulk::serve_storage, .rma = Rma::Read, .before_rma = nullptr, .after_rma = nullptr,
               .io_when = IoWhen::AfterRma, .io = io, .io_async = io_async},
};

}  // namespace rooftop::ops
