// The engine's operation table: every operation `load --op` can run, in
// the order --op lists them (like IOR's available_aiori[]). The --op
// option, its choices and help, each operation's options and the server's
// dispatch of requests all come from it.
#pragma once
#include <string_view>
#include <vector>

#include "ops/op.hpp"

namespace rooftop::ops {

// Every operation, in --op order.
const std::vector<const Op*>& table();
// Its position in table() (indexes per-operation counters).
size_t index_of(const Op& op);
// The operation named `name`, or nullptr.
const Op* find(std::string_view name);
// The operation a decoded request is of, or nullptr (a control message).
const Op* for_request(const wire::Message& m);
// Whether a decoded request is of `op` (what for_request tests of each).
inline bool is_request_of(const Op& op, const wire::Message& m) {
  return op.wire_type == m.type && (m.type != wire::Type::Bulk || op.bulk_op == m.op) &&
         (m.type != wire::Type::Meta || op.meta_op == m.meta_op);
}

// --op: choices "noop|read|write" and help "noop: ...; read: ..." from the table.
OptSpec op_option();
// Every operation's options listed at `place`, each once, in table order;
// "{ops}" in a help becomes the operations taking it ("read/write").
std::vector<OptSpec> options(Place place);

}  // namespace rooftop::ops
