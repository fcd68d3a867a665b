// noop: an RPC that moves no data; the server answers at once. Measures
// the RPC rate (with --req-size/--resp-size: of padded messages).
#include "ops/op.hpp"

namespace rooftop::ops {

namespace {

void configure(const Options&, int64_t, Workload&) {}

size_t encode(const Workload& w, const ClientOp& c, uint8_t* buf, size_t cap) {
  return wire::encode_noop_req(buf, cap, c.req_id, c.conn, w.req_size, w.resp_size);
}

void serve(ServerContext& ctx, const Request& r) {
  ctx.served(r.op, 0);
  auto encode = [&](uint8_t* b, size_t cap) {
    return wire::encode_resp(b, cap, r.op.wire_type, r.m.h.req_id, r.m.h.conn_id, wire::Status::Ok, 0,
                             r.resp_total);
  };
  ctx.respond(r.peer, encode);
}

}  // namespace

extern const Op noop_op;
const Op noop_op = {
    .name = "noop",
    .help = "an RPC without data",
    .counter = "noop",
    .wire_type = wire::Type::Noop,
    .bulk_op = wire::BulkOp::Read,  // unused: not a bulk request
    .meta_op = wire::MetaOp::Create,  // unused: not a metadata request
    .caps = 0,
    .options = nullptr,
    .client = {.configure = configure,
               .check_server = nullptr,
               .check_provider = nullptr,
               .prepare = nullptr,
               .encode = encode,
               .response = nullptr,
               .verify = nullptr},
    .server = {.serve = serve, .rma = Rma::None, .before_rma = nullptr, .after_rma = nullptr,
               .io_when = IoWhen::None, .io = nullptr},
};

}  // namespace rooftop::ops
