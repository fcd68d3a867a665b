// get: a storage read. The server reads --size bytes from its data file
// (storage.hpp: at the next --pattern offset among those written, or
// anywhere after serve --fill) on its I/O thread, RMA-writes them into the
// client's buffer (as read), then answers. With --verify the client checks
// the blocks a put (or --fill) wrote.
#include <cstring>

#include "ops/bulk.hpp"
#include "storage.hpp"

namespace rooftop::ops {

extern const Op get_op;

namespace {

// With --verify, no stale block of an earlier get may pass for this one's.
void prepare(const Workload& w, ClientOp& c) {
  if (w.verify) std::memset(c.data, 0, w.bytes);
}

size_t encode(const Workload& w, const ClientOp& c, uint8_t* buf, size_t cap) {
  return bulk::encode_storage(get_op, w, c, buf, cap);
}

std::string verify(const Workload& w, const ClientOp& c) {
  uint64_t bad = storage::check_blocks(c.data, w.bytes);
  if (bad == w.bytes) return "";
  return "verify: get data differs from the pattern at byte " + std::to_string(bad) +
         " (not a block put or --fill wrote, or damaged)";
}

storage::Outcome io(storage::Store& st, const RmaJob& j, uint8_t* buf) { return st.get(buf, j.size, j.random); }

}  // namespace

const Op get_op = {
    .name = "get",
    .help = "server reads from its storage and RMA-writes into our buffer",
    .counter = "get",
    .wire_type = wire::Type::Bulk,
    .bulk_op = wire::BulkOp::Get,
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
    .server = {.serve = bulk::serve_storage, .rma = Rma::Write, .before_rma = nullptr, .after_rma = nullptr,
               .io_when = IoWhen::BeforeRma, .io = io},
};

}  // namespace rooftop::ops
