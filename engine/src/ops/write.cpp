// write: a storage write. The client sends a bulk request naming its
// registered buffer; the server RMA-reads --size bytes from it, then
// answers. With --verify the client fills a pattern the server checks (a
// mismatch comes back as status verify_failed).
#include "ops/bulk.hpp"

namespace rooftop::ops {

extern const Op write_op;

namespace {

void prepare(const Workload& w, ClientOp& c) {
  if (w.verify) wire::fill_pattern(c.data, w.bytes, c.req_id);
}

size_t encode(const Workload& w, const ClientOp& c, uint8_t* buf, size_t cap) {
  return bulk::encode(write_op, w, c, buf, cap);
}

// The server checked the data; a mismatch came back as verify_failed.
std::string verify(const Workload&, const ClientOp&) { return ""; }

wire::Status after_rma(const RmaJob& j, const uint8_t* buf) {
  if (j.verify && wire::check_pattern(buf, j.size, j.req_id) != j.size) return wire::Status::VerifyFailed;
  return wire::Status::Ok;
}

}  // namespace

const Op write_op = {
    .name = "write",
    .help = "server RMA-reads from our buffer",
    .counter = "bulk_write",
    .wire_type = wire::Type::Bulk,
    .bulk_op = wire::BulkOp::Write,
    .meta_op = wire::MetaOp::Create,  // unused: not a metadata request
    .caps = kMovesBulk | kVerifiable,
    .options = bulk::options,
    .client = {.configure = bulk::configure,
               .check_server = bulk::check_server,
               .check_provider = bulk::check_provider,
               .prepare = prepare,
               .encode = encode,
               .response = bulk::response,
               .verify = verify},
    .server = {.serve = bulk::serve, .rma = Rma::Read, .before_rma = nullptr, .after_rma = after_rma,
               .io_when = IoWhen::None, .io = nullptr},
};

}  // namespace rooftop::ops
