// The server's counters, declared once (X-macros, as Darshan declares its
// counter lists): the Counter enum, the server's tallies, its result's
// "requests" object and error counts, and the stat response's body all come
// from these lists and from the operation table (one counter per operation,
// named by it), so none of them can drift from another.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "json.hpp"
#include "wire.hpp"

namespace rooftop {

// result.requests is: these, then one counter per operation of the table
// (ops::Op::counter, in table order), then the AFTER_OPS ones.
#define ROOFTOP_REQUESTS_BEFORE_OPS(X) X(hello)
#define ROOFTOP_REQUESTS_AFTER_OPS(X) \
  X(stat)                             \
  X(shutdown)                         \
  X(shutdown_denied)                  \
  X(bulk_too_large)                   \
  X(verify_failed)                    \
  X(rma_failed)                       \
  X(barrier)                          \
  X(barrier_rejected)                 \
  X(storage_failed)
// Top-level members of the server's result.
#define ROOFTOP_ERROR_COUNTERS(X) \
  X(send_errors)                  \
  X(recv_errors)

enum class Counter : size_t {
#define ROOFTOP_X(name) name,
  ROOFTOP_REQUESTS_BEFORE_OPS(ROOFTOP_X)
  ROOFTOP_REQUESTS_AFTER_OPS(ROOFTOP_X)
  ROOFTOP_ERROR_COUNTERS(ROOFTOP_X)
#undef ROOFTOP_X
  kCount
};
const char* counter_name(Counter c);

namespace ops {
struct Op;
}

struct ServerCounters {
  ServerCounters();
  std::array<uint64_t, static_cast<size_t>(Counter::kCount)> n{};
  std::vector<uint64_t> per_op;  // per operation of ops::table()
  uint64_t bytes = 0;            // bulk bytes moved

  uint64_t& operator[](Counter c) { return n[static_cast<size_t>(c)]; }
  uint64_t operator[](Counter c) const { return n[static_cast<size_t>(c)]; }
  void served(const ops::Op& op, uint64_t moved) {
    if (&op != last_op_) {  // the table's search, once per change of operation
      last_op_ = &op;
      last_index_ = index_of(op);
    }
    per_op[last_index_]++;
    bytes += moved;
  }
  uint64_t total_ops() const;  // operations served, every kind
  // The stat response: these counts, plus what the server knows besides.
  wire::StatBody stat(uint64_t dropped, double user_s, double sys_s, double wall_s) const;
  // The members of result.requests, in order: {"hello": n, "noop": n, ...}.
  void write_requests(JsonWriter& w) const;
  // result.send_errors, result.recv_errors (members of the open object).
  void write_errors(JsonWriter& w) const;

 private:
  static size_t index_of(const ops::Op& op);  // ops::index_of
  const ops::Op* last_op_ = nullptr;
  size_t last_index_ = 0;
};

// Every key of result.requests, in order.
std::vector<std::string> request_keys();

}  // namespace rooftop
