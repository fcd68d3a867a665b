// Unit tests for command-line option handling (options.hpp).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "json.hpp"
#include "options.hpp"

using namespace rooftop;

namespace {

// Holds argv storage for Options::parse (which takes the arguments after the
// subcommand name, i.e. argv[0] is the first option).
struct Args {
  std::vector<std::string> s;
  std::vector<char*> p;
  explicit Args(std::vector<std::string> a) : s(std::move(a)) {
    for (auto& x : s) p.push_back(x.data());
    p.push_back(nullptr);
  }
  int argc() const { return static_cast<int>(s.size()); }
  char** argv() { return p.data(); }
};

std::vector<OptSpec> specs() {
  return {
      {"name", OptKind::Str, "", "a free-form name", ""},
      {"count", OptKind::Int, "10", "how many", ""},
      {"msg-size", OptKind::Size, "4KiB", "message size", ""},
      {"duration", OptKind::Seconds, "5s", "how long", ""},
      {"verify", OptKind::Bool, "false", "check the data", ""},
      {"progress", OptKind::Choice, "busy", "progress mode", "busy|block|adaptive|spindown*"},
      {"limit", OptKind::Int, "", "optional limit", ""},
  };
}

Options make() { return Options("test-cmd", "A command for tests.", specs()); }

// Parses and returns the UsageError text ("" if none was thrown).
std::string usage_error(std::vector<std::string> a) {
  Options o = make();
  Args args(std::move(a));
  try {
    o.parse(args.argc(), args.argv());
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

}  // namespace

// ---------------------------------------------------------------- parse_size

TEST(ParseSize, AcceptsBinaryAndDecimalUnits) {
  EXPECT_EQ(parse_size("0"), 0u);
  EXPECT_EQ(parse_size("4096"), 4096u);
  EXPECT_EQ(parse_size("4096b"), 4096u);
  EXPECT_EQ(parse_size("4k"), 4096u);
  EXPECT_EQ(parse_size("4K"), 4096u);
  EXPECT_EQ(parse_size("64KiB"), 65536u);
  EXPECT_EQ(parse_size("64kib"), 65536u);
  EXPECT_EQ(parse_size("4M"), 4u << 20);
  EXPECT_EQ(parse_size("4MiB"), 4u << 20);
  EXPECT_EQ(parse_size("1GiB"), 1u << 30);
  EXPECT_EQ(parse_size("1g"), 1u << 30);
  EXPECT_EQ(parse_size("2TiB"), 2ULL << 40);
  EXPECT_EQ(parse_size("4MB"), 4000000u);
  EXPECT_EQ(parse_size("4kB"), 4000u);
  EXPECT_EQ(parse_size("3GB"), 3000000000u);
}

TEST(ParseSize, RejectsBadInput) {
  for (const char* bad : {"", "abc", "4XB", "k", "-1", "4 KiB", "4.5MiB", "4KiBs", "0x10"})
    EXPECT_THROW(parse_size(bad), std::invalid_argument) << "'" << bad << "'";
  // Too large: too many digits, or overflowing with the multiplier.
  EXPECT_THROW(parse_size("99999999999999999999"), std::invalid_argument);
  EXPECT_THROW(parse_size("1234567890123456"), std::invalid_argument);
  EXPECT_THROW(parse_size("99999999999999TiB"), std::invalid_argument);
  EXPECT_THROW(parse_size("9999999999GiB"), std::invalid_argument);
  // The message names the input.
  try {
    parse_size("4XB");
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "4XB")) << e.what();
  }
}

// ------------------------------------------------------------- parse_seconds

TEST(ParseSeconds, AcceptsPlainSecondsAndMilliseconds) {
  EXPECT_DOUBLE_EQ(parse_seconds("5"), 5.0);
  EXPECT_DOUBLE_EQ(parse_seconds("5s"), 5.0);
  EXPECT_DOUBLE_EQ(parse_seconds("2.5s"), 2.5);
  EXPECT_DOUBLE_EQ(parse_seconds("2.5"), 2.5);
  EXPECT_DOUBLE_EQ(parse_seconds("250ms"), 0.25);
  EXPECT_DOUBLE_EQ(parse_seconds("0"), 0.0);
  EXPECT_DOUBLE_EQ(parse_seconds("0.5ms"), 0.0005);
}

TEST(ParseSeconds, RejectsBadInput) {
  for (const char* bad : {"-1", "-1s", "abc", "", "s", "ms", "5x", "5 s", "nan", "inf", "1e999"})
    EXPECT_THROW(parse_seconds(bad), std::invalid_argument) << "'" << bad << "'";
}

// ------------------------------------------------------------------- Options

TEST(Options, DefaultsWithoutArguments) {
  Options o = make();
  Args a({});
  ASSERT_TRUE(o.parse(a.argc(), a.argv()));
  EXPECT_EQ(o.str("name"), "");
  EXPECT_EQ(o.integer("count"), 10);
  EXPECT_EQ(o.size("msg-size"), 4096u);
  EXPECT_DOUBLE_EQ(o.seconds("duration"), 5.0);
  EXPECT_FALSE(o.flag("verify"));
  EXPECT_EQ(o.str("progress"), "busy");
  EXPECT_FALSE(o.given("count"));
}

TEST(Options, SpaceAndEqualsForms) {
  Options o = make();
  Args a({"--name", "alpha beta", "--count=42", "--msg-size", "1MiB", "--duration=250ms",
          "--progress", "block"});
  ASSERT_TRUE(o.parse(a.argc(), a.argv()));
  EXPECT_EQ(o.str("name"), "alpha beta");
  EXPECT_EQ(o.integer("count"), 42);
  EXPECT_EQ(o.size("msg-size"), 1u << 20);
  EXPECT_DOUBLE_EQ(o.seconds("duration"), 0.25);
  EXPECT_EQ(o.str("progress"), "block");
  EXPECT_TRUE(o.given("name"));
  EXPECT_TRUE(o.given("count"));
  EXPECT_FALSE(o.given("verify"));
  // --name=value keeps everything after the first '=' (and allows empty).
  Options o2 = make();
  Args b({"--name=a=b", "--count=-3"});
  ASSERT_TRUE(o2.parse(b.argc(), b.argv()));
  EXPECT_EQ(o2.str("name"), "a=b");
  EXPECT_EQ(o2.integer("count"), -3);
  Options o3 = make();
  Args c({"--name="});
  ASSERT_TRUE(o3.parse(c.argc(), c.argv()));
  EXPECT_EQ(o3.str("name"), "");
  EXPECT_TRUE(o3.given("name"));
  // The last occurrence wins.
  Options o4 = make();
  Args d({"--count", "1", "--count", "2"});
  ASSERT_TRUE(o4.parse(d.argc(), d.argv()));
  EXPECT_EQ(o4.integer("count"), 2);
}

TEST(Options, BoolFlagWithoutValue) {
  Options o = make();
  Args a({"--verify", "--count", "3"});
  ASSERT_TRUE(o.parse(a.argc(), a.argv()));
  EXPECT_TRUE(o.flag("verify"));
  EXPECT_TRUE(o.given("verify"));
  EXPECT_EQ(o.integer("count"), 3);  // the flag did not swallow the next option

  Options o2 = make();
  Args b({"--verify=false"});
  ASSERT_TRUE(o2.parse(b.argc(), b.argv()));
  EXPECT_FALSE(o2.flag("verify"));
  Options o3 = make();
  Args c({"--verify=true"});
  ASSERT_TRUE(o3.parse(c.argc(), c.argv()));
  EXPECT_TRUE(o3.flag("verify"));

  std::string err = usage_error({"--verify=yes"});
  EXPECT_TRUE(contains(err, "--verify")) << err;
  // A bare word after a flag is not taken as its value.
  err = usage_error({"--verify", "true"});
  EXPECT_TRUE(contains(err, "unexpected argument 'true'")) << err;
}

TEST(Options, UnknownOptionNamed) {
  std::string err = usage_error({"--count", "1", "--bogus-opt", "3"});
  EXPECT_TRUE(contains(err, "--bogus-opt")) << err;
  EXPECT_TRUE(contains(err, "unknown option")) << err;
  EXPECT_TRUE(contains(err, "test-cmd --help")) << err;
  err = usage_error({"--bogus=1"});
  EXPECT_TRUE(contains(err, "--bogus")) << err;
  EXPECT_FALSE(contains(err, "=1")) << err;
  err = usage_error({"count"});
  EXPECT_TRUE(contains(err, "unexpected argument 'count'")) << err;
  err = usage_error({"-c"});
  EXPECT_TRUE(contains(err, "'-c'")) << err;
}

TEST(Options, MissingValue) {
  for (const char* opt : {"--count", "--name", "--msg-size", "--duration", "--progress"}) {
    std::string err = usage_error({opt});
    EXPECT_TRUE(contains(err, std::string(opt) + " needs a value")) << err;
  }
  // An option then swallows the next argument, which then fails validation.
  std::string err = usage_error({"--count", "--verify"});
  EXPECT_TRUE(contains(err, "--count")) << err;
  EXPECT_TRUE(contains(err, "not an integer")) << err;
}

TEST(Options, ChoiceValidationWithPrefixPattern) {
  for (const char* ok : {"busy", "block", "adaptive", "spindown", "spindown:5", "spindown:100"}) {
    Options o = make();
    Args a({"--progress", ok});
    EXPECT_NO_THROW(o.parse(a.argc(), a.argv())) << ok;
    EXPECT_EQ(o.str("progress"), ok);
  }
  for (const char* bad : {"", "fast", "spin", "Busy", "busyx", "xspindown", "block:5", " busy"}) {
    std::string err = usage_error({"--progress", bad});
    EXPECT_TRUE(contains(err, "--progress")) << "'" << bad << "': " << err;
    EXPECT_TRUE(contains(err, "must be one of busy|block|adaptive|spindown*")) << err;
  }
  // The same validation applies to set().
  Options o = make();
  EXPECT_NO_THROW(o.set("progress", "spindown:7"));
  EXPECT_THROW(o.set("progress", "nope"), UsageError);
}

TEST(Options, IntValidationNamesOption) {
  for (const char* bad : {"abc", "12x", "", "1.5", "99999999999999999999"}) {
    std::string err = usage_error({"--count", bad});
    EXPECT_TRUE(contains(err, "--count")) << "'" << bad << "': " << err;
  }
  EXPECT_TRUE(contains(usage_error({"--count", "abc"}), "not an integer"));
  EXPECT_TRUE(contains(usage_error({"--count", "abc"}), "--count abc:"));
  EXPECT_TRUE(contains(usage_error({"--count", ""}), "--count '':"));
  EXPECT_TRUE(contains(usage_error({"--count", "99999999999999999999"}), "out of range"));
  // Size and seconds errors also name the option and the reason.
  std::string err = usage_error({"--msg-size", "4XB"});
  EXPECT_TRUE(contains(err, "--msg-size 4XB")) << err;
  EXPECT_TRUE(contains(err, "unknown size unit")) << err;
  err = usage_error({"--duration=-1"});
  EXPECT_TRUE(contains(err, "--duration -1")) << err;
}

TEST(Options, UndeclaredNameIsAProgrammingError) {
  Options o = make();
  EXPECT_THROW(o.str("nope"), std::logic_error);
  EXPECT_THROW(o.set("nope", "1"), std::logic_error);
}

TEST(Options, WriteJsonEmitsEveryOptionTyped) {
  {
    Options o = make();
    JsonWriter w;
    o.write_json(w);
    EXPECT_EQ(w.str(),
              R"({"name":"","count":10,"msg_size":4096,"duration":5,"verify":false,)"
              R"("progress":"busy","limit":null})");
  }
  {
    Options o = make();
    Args a({"--name", "q\"x", "--count", "-7", "--msg-size", "4MB", "--duration", "250ms",
            "--verify", "--progress", "spindown:5", "--limit", "123456789012"});
    ASSERT_TRUE(o.parse(a.argc(), a.argv()));
    JsonWriter w;
    o.write_json(w);
    EXPECT_EQ(w.str(),
              R"({"name":"q\"x","count":-7,"msg_size":4000000,"duration":0.25,"verify":true,)"
              R"("progress":"spindown:5","limit":123456789012})");
  }
  {
    // As a member of an enclosing document.
    Options o = make();
    JsonWriter w;
    w.begin_object().kv("command", "test-cmd").key("config");
    o.write_json(w);
    w.kv("after", 1).end_object();
    EXPECT_TRUE(contains(w.str(), R"({"command":"test-cmd","config":{"name":"")")) << w.str();
    EXPECT_TRUE(contains(w.str(), R"("limit":null},"after":1})")) << w.str();
  }
}

TEST(Options, HelpMentionsEveryOptionAndDefault) {
  Options o = make();
  std::string h = o.help();
  EXPECT_TRUE(contains(h, "usage: rooftop-engine test-cmd [options]")) << h;
  EXPECT_TRUE(contains(h, "A command for tests.")) << h;
  for (const OptSpec& s : specs()) {
    EXPECT_TRUE(contains(h, "--" + s.name)) << s.name;
    EXPECT_TRUE(contains(h, s.help)) << s.name;
    if (!s.def.empty() && s.kind != OptKind::Bool) {
      EXPECT_TRUE(contains(h, "[default: " + s.def + "]")) << s.name;
    }
  }
  EXPECT_TRUE(contains(h, "--count N")) << h;
  EXPECT_TRUE(contains(h, "--msg-size SIZE")) << h;
  EXPECT_TRUE(contains(h, "--duration SECONDS")) << h;
  EXPECT_TRUE(contains(h, "--progress busy|block|adaptive|spindown*")) << h;
  EXPECT_TRUE(contains(h, "--help")) << h;
  // Bool options take no value and show no default.
  EXPECT_FALSE(contains(h, "[default: false]")) << h;
}

TEST(Options, HelpFlagPrintsHelpAndStops) {
  for (const char* flag : {"-h", "--help"}) {
    Options o = make();
    Args a({"--count", "5", flag, "--bogus"});
    testing::internal::CaptureStdout();
    bool go_on = o.parse(a.argc(), a.argv());
    std::string out = testing::internal::GetCapturedStdout();
    EXPECT_FALSE(go_on);
    EXPECT_EQ(out, o.help());
  }
}
