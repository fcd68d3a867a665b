#include "counters.hpp"

#include "ops/table.hpp"

namespace rooftop {

const char* counter_name(Counter c) {
  switch (c) {
#define ROOFTOP_X(name) \
  case Counter::name: return #name;
    ROOFTOP_REQUESTS_BEFORE_OPS(ROOFTOP_X)
    ROOFTOP_REQUESTS_AFTER_OPS(ROOFTOP_X)
    ROOFTOP_ERROR_COUNTERS(ROOFTOP_X)
#undef ROOFTOP_X
    case Counter::kCount: break;
  }
  return "unknown";
}

ServerCounters::ServerCounters() : per_op(ops::table().size(), 0) {}

size_t ServerCounters::index_of(const ops::Op& op) { return ops::index_of(op); }

uint64_t ServerCounters::total_ops() const {
  uint64_t sum = 0;
  for (uint64_t v : per_op) sum += v;
  return sum;
}

wire::StatBody ServerCounters::stat(uint64_t dropped, double user_s, double sys_s, double wall_s) const {
  wire::StatBody s;
  s.ops = total_ops();
  const auto& t = ops::table();
  for (size_t i = 0; i < t.size(); i++) (t[i]->has(ops::kMovesBulk) ? s.bulks : s.noops) += per_op[i];
  s.bytes = bytes;
  s.dropped = dropped;
  s.user_s = user_s;
  s.sys_s = sys_s;
  s.wall_s = wall_s;
  return s;
}

void ServerCounters::write_requests(JsonWriter& w) const {
#define ROOFTOP_X(name) w.kv(#name, (*this)[Counter::name]);
  ROOFTOP_REQUESTS_BEFORE_OPS(ROOFTOP_X)
  const auto& t = ops::table();
  for (size_t i = 0; i < t.size(); i++) w.kv(t[i]->counter, per_op[i]);
  ROOFTOP_REQUESTS_AFTER_OPS(ROOFTOP_X)
#undef ROOFTOP_X
}

void ServerCounters::write_errors(JsonWriter& w) const {
#define ROOFTOP_X(name) w.kv(#name, (*this)[Counter::name]);
  ROOFTOP_ERROR_COUNTERS(ROOFTOP_X)
#undef ROOFTOP_X
}

std::vector<std::string> request_keys() {
  std::vector<std::string> keys;
#define ROOFTOP_X(name) keys.push_back(#name);
  ROOFTOP_REQUESTS_BEFORE_OPS(ROOFTOP_X)
  for (const ops::Op* op : ops::table()) keys.push_back(op->counter);
  ROOFTOP_REQUESTS_AFTER_OPS(ROOFTOP_X)
#undef ROOFTOP_X
  return keys;
}

}  // namespace rooftop
