#include "ops/table.hpp"

namespace rooftop::ops {

// One file each: ops/noop.cpp, ops/read.cpp, ops/write.cpp, ops/put.cpp,
// ops/get.cpp; the metadata operations, alike but for their op byte, share
// ops/meta.cpp.
extern const Op noop_op;
extern const Op read_op;
extern const Op write_op;
extern const Op put_op;
extern const Op get_op;
extern const Op create_op;
extern const Op stat_op;
extern const Op open_op;
extern const Op unlink_op;
extern const Op readdir_op;

const std::vector<const Op*>& table() {
  static const std::vector<const Op*> all = {&noop_op,   &read_op, &write_op, &put_op,    &get_op,
                                             &create_op, &stat_op, &open_op,  &unlink_op, &readdir_op};
  return all;
}

size_t index_of(const Op& op) {
  const auto& t = table();
  for (size_t i = 0; i < t.size(); i++)
    if (t[i] == &op) return i;
  return t.size();
}

const Op* find(std::string_view name) {
  for (const Op* op : table())
    if (name == op->name) return op;
  return nullptr;
}

const Op* for_request(const wire::Message& m) {
  for (const Op* op : table())
    if (is_request_of(*op, m)) return op;
  return nullptr;
}

const char* rma_name(Rma r) {
  switch (r) {
    case Rma::None: return "none";
    case Rma::Write: return "write";
    case Rma::Read: return "read";
  }
  return "?";
}

OptSpec op_option() {
  std::string choices, help;
  for (const Op* op : table()) {
    if (!choices.empty()) {
      choices += "|";
      help += "; ";
    }
    choices += op->name;
    help += op->name;
    help += ": ";
    help += op->help;
  }
  return {"op", OptKind::Choice, table().front()->name, help, choices};
}

std::vector<OptSpec> options(Place place) {
  std::vector<OptSpec> out;
  std::vector<std::string> takers;  // per entry of out: "read/write"
  for (const Op* op : table()) {
    if (!op->options) continue;
    for (const OpOption& o : op->options()) {
      if (o.place != place) continue;
      size_t i = 0;
      while (i < out.size() && out[i].name != o.spec.name) i++;
      if (i == out.size()) {
        out.push_back(o.spec);
        takers.emplace_back();
      }
      if (!takers[i].empty()) takers[i] += "/";
      takers[i] += op->name;
    }
  }
  for (size_t i = 0; i < out.size(); i++) {
    size_t p = out[i].help.find("{ops}");
    if (p != std::string::npos) out[i].help.replace(p, 5, takers[i]);
  }
  return out;
}

}  // namespace rooftop::ops
