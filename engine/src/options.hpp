// Command-line options: each subcommand declares its options once (name,
// kind, default, help); parsing, --help text, validation and the "config"
// section of the output (every parameter, defaults included) all come from
// that one table.
#pragma once
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "json.hpp"

namespace rooftop {

// Error in what the user asked for: exit code 2 and a message.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class OptKind { Str, Int, Size, Seconds, Bool, Choice };

struct OptSpec {
  std::string name;     // without leading dashes
  OptKind kind;
  std::string def;      // default, as text ("" = unset for Str)
  std::string help;
  std::string choices;  // for Choice: "a|b|c"
};

class Options {
 public:
  Options(std::string command, std::string summary, std::vector<OptSpec> specs);
  // Parses argv; throws UsageError naming the option. Returns false if
  // --help was given (help already printed).
  bool parse(int argc, char** argv);
  std::string help() const;

  const std::string& str(const std::string& name) const;
  int64_t integer(const std::string& name) const;
  uint64_t size(const std::string& name) const;
  double seconds(const std::string& name) const;
  bool flag(const std::string& name) const;
  bool given(const std::string& name) const { return given_.count(name) > 0; }
  bool has(const std::string& name) const;
  void set(const std::string& name, const std::string& value);  // validated
  void write_json(JsonWriter& w) const;  // typed values of every option, then records
  // An option no longer accepted: giving it, in any form, is a UsageError
  // with this message (its value is never echoed). Not listed in --help.
  void retire(const std::string& name, const std::string& message);
  // A derived entry of the "config" section, written after the options.
  void record(const std::string& key, const std::string& value);

 private:
  const OptSpec& spec(const std::string& name) const;
  void validate(const OptSpec& s, const std::string& v) const;
  std::string command_, summary_;
  std::vector<OptSpec> specs_;
  std::map<std::string, std::string> values_;
  std::map<std::string, bool> given_;
  std::map<std::string, std::string> retired_;            // name -> message
  std::vector<std::pair<std::string, std::string>> records_;
};

// "4MiB", "4M", "4096", "1GiB", "64k" (binary multiples), "4MB" (decimal).
uint64_t parse_size(const std::string& s);
// "5", "5s", "250ms", "2.5" seconds.
double parse_seconds(const std::string& s);

}  // namespace rooftop
