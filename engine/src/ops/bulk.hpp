// What the bulk operations (ops/read.cpp, write.cpp, put.cpp, get.cpp) share: their
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

// What the storage bulk operations (ops/put.cpp, ops/get.cpp) add: --pattern,
// a block size of whole 4 KiB blocks, the request's random flag, and the
// server's refusal without storage.
std::vector<OpOption> storage_options();
void configure_storage(const Options& o, int64_t concurrency, Workload& w);
size_t encode_storage(const Op& op, const Workload& w, const ClientOp& c, uint8_t* buf, size_t cap);
void serve_storage(ServerContext& ctx, const Request& r);

}  // namespace rooftop::ops::bulk
