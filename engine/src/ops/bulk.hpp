// What the bulk operations (ops/read.cpp, ops/write.cpp) share: their
// options (--size, --buffer, --stream-size), the client's data buffer, the
// request and its checks, and the server's admission of a transfer.
#pragma once
#include "ops/op.hpp"

namespace rooftop::ops::bulk {

std::vector<OpOption> options();
void configure(const Options& o, int64_t concurrency, Workload& w);
void check_server(const Options& o, const Workload& w, const ServerLimits& server);
void check_provider(const Options& o, const Workload& w, uint64_t max_transfer);
// The bulk request of `op` (its direction byte).
size_t encode(const Op& op, const Workload& w, const ClientOp& c, uint8_t* buf, size_t cap);
// Bad request unless an Ok response reports the bytes asked for.
wire::Status response(const Workload& w, const wire::Message& m);
// Refuses a size beyond the server's slots (too_large), else queues the transfer.
void serve(ServerContext& ctx, const Request& r);

}  // namespace rooftop::ops::bulk
