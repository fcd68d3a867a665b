// Minimal streaming JSON writer: rooftop's output documents are written
// with it so that every value is escaped and every number is finite.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rooftop {

class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view k);
  JsonWriter& value(std::string_view v);
  JsonWriter& value(const char* v) { return value(std::string_view(v)); }
  JsonWriter& value(const std::string& v) { return value(std::string_view(v)); }
  JsonWriter& value(bool v);
  JsonWriter& value(int64_t v);
  JsonWriter& value(uint64_t v);
  JsonWriter& value(int v) { return value(static_cast<int64_t>(v)); }
  JsonWriter& value(unsigned v) { return value(static_cast<uint64_t>(v)); }
  JsonWriter& value(double v);  // non-finite values are written as null
  JsonWriter& null();
  // Inserts an already-serialised JSON value (from another JsonWriter).
  JsonWriter& raw(std::string_view json);
  // Inserts the members of an already-serialised object ("{...}").
  JsonWriter& raw_members(std::string_view object);
  // Convenience: key + value.
  template <typename T>
  JsonWriter& kv(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }
  const std::string& str() const { return out_; }

  static std::string escape(std::string_view s);

 private:
  void comma();
  std::string out_;
  std::vector<bool> first_;  // per nesting level: no element written yet
  bool after_key_ = false;
};

}  // namespace rooftop
