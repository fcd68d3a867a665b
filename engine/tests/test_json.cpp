// Unit tests for the streaming JSON writer (json.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>

#include "json.hpp"

using rooftop::JsonWriter;

TEST(JsonEscape, QuotesAndBackslash) {
  EXPECT_EQ(JsonWriter::escape(""), "");
  EXPECT_EQ(JsonWriter::escape("plain text 123"), "plain text 123");
  EXPECT_EQ(JsonWriter::escape("a\"b"), "a\\\"b");
  EXPECT_EQ(JsonWriter::escape("a\\b"), "a\\\\b");
  EXPECT_EQ(JsonWriter::escape("\\\""), "\\\\\\\"");
  EXPECT_EQ(JsonWriter::escape("/"), "/");
}

TEST(JsonEscape, ControlCharacters) {
  EXPECT_EQ(JsonWriter::escape("\n"), "\\n");
  EXPECT_EQ(JsonWriter::escape("\r"), "\\r");
  EXPECT_EQ(JsonWriter::escape("\t"), "\\t");
  EXPECT_EQ(JsonWriter::escape(std::string_view("\0", 1)), "\\u0000");
  EXPECT_EQ(JsonWriter::escape("\x01"), "\\u0001");
  EXPECT_EQ(JsonWriter::escape("\b\f"), "\\u0008\\u000c");
  EXPECT_EQ(JsonWriter::escape("\x1f"), "\\u001f");
  EXPECT_EQ(JsonWriter::escape("\x7f"), "\\u007f");
  EXPECT_EQ(JsonWriter::escape(" ~"), " ~");  // first and last printable ASCII untouched
  // Every control character comes out as printable ASCII.
  for (int c = 0; c < 0x20; c++) {
    std::string e = JsonWriter::escape(std::string(1, static_cast<char>(c)));
    ASSERT_GE(e.size(), 2u) << c;
    EXPECT_EQ(e[0], '\\') << c;
    for (char x : e) EXPECT_TRUE(x >= 0x20 && x < 0x7f) << c;
  }
}

TEST(JsonEscape, NonAsciiBytesEscapedIndividually) {
  // "é" in UTF-8 is C3 A9: each byte becomes its own \u00XX escape, so the
  // output is plain ASCII whatever the input.
  EXPECT_EQ(JsonWriter::escape("\xc3\xa9"), "\\u00c3\\u00a9");
  EXPECT_EQ(JsonWriter::escape("\x80"), "\\u0080");
  EXPECT_EQ(JsonWriter::escape("\xff"), "\\u00ff");
  EXPECT_EQ(JsonWriter::escape("a\xfe" "b"), "a\\u00feb");
  for (int c = 0x80; c < 0x100; c++) {
    std::string e = JsonWriter::escape(std::string(1, static_cast<char>(c)));
    char want[8];
    std::snprintf(want, sizeof want, "\\u%04x", c);
    EXPECT_EQ(e, want);
  }
}

TEST(JsonWriter, StringValuesAndKeysAreEscaped) {
  JsonWriter w;
  w.begin_object().kv("k\"ey", "va\\l\n").end_object();
  EXPECT_EQ(w.str(), R"({"k\"ey":"va\\l\n"})");
}

TEST(JsonWriter, NestedObjectsAndArraysHaveCorrectCommas) {
  JsonWriter w;
  w.begin_object();
  w.kv("a", 1);
  w.key("b").begin_array();
  w.value(1).value("x");
  w.begin_object().end_object();
  w.begin_array().end_array();
  w.null();
  w.begin_array().value(true).begin_array().value(false).end_array().end_array();
  w.end_array();
  w.key("c").begin_object().kv("d", 2).key("e").begin_object().end_object().end_object();
  w.kv("f", true);
  w.end_object();
  EXPECT_EQ(w.str(),
            R"({"a":1,"b":[1,"x",{},[],null,[true,[false]]],"c":{"d":2,"e":{}},"f":true})");
}

TEST(JsonWriter, TopLevelValues) {
  JsonWriter a;
  a.begin_array().end_array();
  EXPECT_EQ(a.str(), "[]");
  JsonWriter o;
  o.begin_object().end_object();
  EXPECT_EQ(o.str(), "{}");
  JsonWriter s;
  s.value("x");
  EXPECT_EQ(s.str(), "\"x\"");
}

TEST(JsonWriter, NumbersAndNonFiniteAsNull) {
  JsonWriter w;
  w.begin_array();
  w.value(std::numeric_limits<double>::quiet_NaN());
  w.value(std::numeric_limits<double>::infinity());
  w.value(-std::numeric_limits<double>::infinity());
  w.value(0.5);
  w.value(-2.0);
  w.value(static_cast<int64_t>(INT64_MIN));
  w.value(static_cast<uint64_t>(UINT64_MAX));
  w.value(-7);
  w.value(7u);
  w.end_array();
  EXPECT_EQ(w.str(),
            "[null,null,null,0.5,-2,-9223372036854775808,18446744073709551615,-7,7]");

  JsonWriter o;
  o.begin_object().kv("nan", std::nan("")).kv("x", 1.0).end_object();
  EXPECT_EQ(o.str(), R"({"nan":null,"x":1})");
}

TEST(JsonWriter, DoublesRoundTrip) {
  for (double d : {0.1, 1.0 / 3.0, 1e-300, 1e300, 123456.789, -0.000123, 4.9e-324}) {
    JsonWriter w;
    w.value(d);
    EXPECT_EQ(std::strtod(w.str().c_str(), nullptr), d) << w.str();
  }
}

TEST(JsonWriter, RawInsertsSerialisedValue) {
  JsonWriter sub;
  sub.begin_object().kv("y", 1).end_object();

  JsonWriter w;
  w.begin_object().key("x").raw(sub.str()).kv("z", 2).end_object();
  EXPECT_EQ(w.str(), R"({"x":{"y":1},"z":2})");

  JsonWriter a;
  a.begin_array().raw("1").raw(sub.str()).value(3).raw("[4]").end_array();
  EXPECT_EQ(a.str(), R"([1,{"y":1},3,[4]])");
}

TEST(JsonWriter, RawMembersMergesObjects) {
  JsonWriter sub;
  sub.begin_object().kv("y", 1).kv("z", "two").end_object();

  JsonWriter w;
  w.begin_object().kv("a", 1).raw_members(sub.str()).kv("b", 2).end_object();
  EXPECT_EQ(w.str(), R"({"a":1,"y":1,"z":"two","b":2})");

  // As the first members.
  JsonWriter f;
  f.begin_object().raw_members(sub.str()).kv("b", 2).end_object();
  EXPECT_EQ(f.str(), R"({"y":1,"z":"two","b":2})");

  // As the only members.
  JsonWriter only;
  only.begin_object().raw_members(sub.str()).end_object();
  EXPECT_EQ(only.str(), sub.str());

  // An empty object inserts nothing and leaves the commas right.
  JsonWriter e;
  e.begin_object().raw_members("{}").kv("a", 1).raw_members("{}").kv("b", 2).end_object();
  EXPECT_EQ(e.str(), R"({"a":1,"b":2})");
  JsonWriter e2;
  e2.begin_object().raw_members("{}").end_object();
  EXPECT_EQ(e2.str(), "{}");
}

TEST(JsonWriter, KvChaining) {
  const std::string s = "str";
  JsonWriter w;
  w.begin_object()
      .kv("i", 1)
      .kv("neg", int64_t{-5})
      .kv("u", uint64_t{1} << 40)
      .kv("d", 2.5)
      .kv("b", false)
      .kv("cs", "literal")  // const char* must stay a string, not become a bool
      .kv("s", s)
      .kv("sv", std::string_view("view"))
      .end_object();
  EXPECT_EQ(w.str(),
            R"({"i":1,"neg":-5,"u":1099511627776,"d":2.5,"b":false,"cs":"literal",)"
            R"("s":"str","sv":"view"})");
}
