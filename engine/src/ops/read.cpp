// read: a storage read. The client sends a bulk request naming its
// registered buffer; the server RMA-writes --size bytes into it, then
// answers. With --verify the server writes a pattern the client checks.
#include "ops/bulk.hpp"

namespace rooftop::ops {

extern const Op read_op;

namespace {

size_t encode(const Workload& w, const ClientOp& c, uint8_t* buf, size_t cap) {
  return bulk::encode(read_op, w, c, buf, cap);
}

std::string verify(const Workload& w, const ClientOp& c) {
  size_t bad = wire::check_pattern(c.data, w.bytes, c.req_id);
  if (bad == w.bytes) return "";
  return "verify: read data differs from the pattern at byte " + std::to_string(bad);
}

void before_rma(const RmaJob& j, uint8_t* buf) {
  if (j.verify) wire::fill_pattern(buf, j.size, j.req_id);
}

}  // namespace

const Op read_op = {
    .name = "read",
    .help = "server RMA-writes into our buffer",
    .counter = "bulk_read",
    .wire_type = wire::Type::Bulk,
    .bulk_op = wire::BulkOp::Read,
    .meta_op = wire::MetaOp::Create,  // unused: not a metadata request
    .caps = kMovesBulk | kVerifiable,
    .options = bulk::options,
    .client = {.configure = bulk::configure,
               .check_server = bulk::check_server,
               .check_provider = bulk::check_provider,
               .prepare = nullptr,
               .encode = encode,
               .response = bulk::response,
               .verify = verify},
    .server = {.serve = bulk::serve, .rma = Rma::Write, .before_rma = before_rma, .after_rma = nullptr,
               .io_when = IoWhen::None, .io = nullptr},
};

}  // namespace rooftop::ops
