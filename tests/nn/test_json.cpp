// The header's JSON reader and string writer on their own.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/error.h"
#include "nn/json.h"

namespace engine::nn {
namespace {

std::string read_one_string(const std::string& literal) {
  JsonReader json(literal, "");
  std::string value = json.read_string();
  json.expect_end();
  return value;
}

std::string error_of(const std::string& text) {
  try {
    JsonReader json(text, "test: ", 100);
    json.skip_value();
    json.expect_end();
  } catch (const Error& error) {
    return error.what();
  }
  return "(accepted)";
}

TEST(JsonReader, DecodesEveryEscape) {
  EXPECT_EQ(read_one_string(R"("\" \\ \/ \b \f \n \r \t")"), "\" \\ / \b \f \n \r \t");
  EXPECT_EQ(read_one_string(R"("\u0041\u00e9\u20AC\ud83d\ude00")"),
            "A\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
  EXPECT_EQ(read_one_string(R"("\u0000")"), std::string(1, '\0'));
  EXPECT_EQ(read_one_string("\"raw \xc3\xa9 \xf0\x9f\x98\x80\""), "raw \xc3\xa9 \xf0\x9f\x98\x80");
}

TEST(JsonReader, WriterOutputReadsBackForEveryByte) {
  std::string all;
  for (int c = 1; c < 0x80; ++c)
    all.push_back(static_cast<char>(c));
  all += std::string(1, '\0') + "\xc3\xa9\xe2\x82\xac\xf4\x8f\xbf\xbf";
  std::string literal;
  append_json_string(literal, all);
  EXPECT_EQ(read_one_string(literal), all);
  EXPECT_EQ(literal.find('\n'), std::string::npos);
}

TEST(JsonReader, IntegersUpTo2To64Minus1) {
  JsonReader json("[0, 18446744073709551615, 42]", "");
  json.begin_array();
  std::vector<uint64_t> values;
  while (json.next_element())
    values.push_back(json.read_integer());
  json.expect_end();
  EXPECT_EQ(values, (std::vector<uint64_t>{0, UINT64_MAX, 42}));
  EXPECT_NE(error_of("18446744073709551616").find("overflows 2^64-1"), std::string::npos);
  EXPECT_NE(error_of("99999999999999999999999").find("overflows"), std::string::npos);
}

TEST(JsonReader, ErrorsNameThePosition) {
  EXPECT_EQ(error_of("{\"a\": tru}"),
            "test: bad JSON at byte 106: true, false and null are not allowed");
  EXPECT_EQ(error_of("[1 2]"),
            "test: bad JSON at byte 103: expected ',' or ']' after an array element");
  EXPECT_EQ(error_of("{\"a\":1 \"b\":2}"),
            "test: bad JSON at byte 107: expected ',' or '}' after an object member");
  EXPECT_EQ(error_of("[\"\\x\"]"), "test: bad JSON at byte 103: unknown escape \\x");
}

TEST(JsonReader, DepthLimit) {
  const auto nested = [](int depth) {
    return std::string(static_cast<size_t>(depth), '[') +
           std::string(static_cast<size_t>(depth), ']');
  };
  EXPECT_EQ(error_of(nested(kMaxJsonDepth)), "(accepted)");
  EXPECT_NE(error_of(nested(kMaxJsonDepth + 1)).find("nesting deeper than 64 levels"),
            std::string::npos);
  // A million open brackets: refused at the limit, without recursing a million deep.
  EXPECT_NE(error_of(std::string(1'000'000, '[')).find("nesting deeper"), std::string::npos);
}

struct Refusal {
  std::string text;
  uint64_t byte;  // in error_of's messages, which count from 100
  std::string what;
};

// Every refusal of the reader, each with the position and the words it must give.
std::vector<Refusal> refusals() {
  std::string long_number(400, '9');
  return {
      // Outside the top-level value.
      {"", 100, "unexpected end of input"},
      {"  ", 102, "unexpected end of input"},
      {"{} x", 103, "unexpected 'x' after the top-level value"},
      {std::string("{}\0", 3), 102, "unexpected byte 0x00 after the top-level value"},
      {"{} {}", 103, "unexpected '{' after the top-level value"},
      {"\xef\xbb\xbf{}", 100, "unexpected byte 0xEF"},  // a byte order mark
      {"}", 100, "unexpected '}'"},
      {"x", 100, "unexpected 'x'"},
      {"/* comment */ {}", 100, "unexpected '/'"},
      // Objects and arrays.
      {"{", 101, "unterminated object"},
      {"{\"a\":1", 106, "unterminated object"},
      {"[", 101, "unterminated array"},
      {"[1", 102, "unterminated array"},
      {"{\"a\" 1}", 105, "expected ':' after an object key"},
      {"{\"a\"", 104, "expected ':' after an object key"},
      {"{\"a\":}", 105, "unexpected '}'"},
      {"{\"a\":", 105, "unexpected end of input"},
      {"{\"a\":1,}", 107, "expected a string key"},  // trailing comma in an object
      {"{1:2}", 101, "expected a string key"},
      {"{\"a\":1 \"b\":2}", 107, "expected ',' or '}' after an object member"},
      {"[1,]", 103, "trailing comma in an array"},
      {"[1,,2]", 103, "unexpected ','"},
      {"[1,", 103, "unexpected end of input"},
      {"[1:2]", 102, "expected ',' or ']' after an array element"},
      {"[1 x]", 103, "expected ',' or ']' after an array element"},
      {"{\"a\":1,\"a\":2}", 107, "duplicate key 'a'"},
      {"[{\"k\":[],\"j\":0,\"k\":{}}]", 115, "duplicate key 'k'"},
      // Literals and numbers.
      {"true", 100, "true, false and null are not allowed"},
      {"[false]", 101, "true, false and null are not allowed"},
      {"{\"a\": nul}", 106, "true, false and null are not allowed"},
      {"-1", 100, "negative numbers are not allowed"},
      {"[-0]", 101, "negative numbers are not allowed"},
      {"-", 100, "negative numbers are not allowed"},
      {"1.5", 101, "only integers are allowed (no fractions or exponents)"},
      {"[12e3]", 103, "only integers are allowed (no fractions or exponents)"},
      {"1E3", 101, "only integers are allowed (no fractions or exponents)"},
      {"1.", 101, "only integers are allowed (no fractions or exponents)"},
      {"01", 100, "leading zeros are not allowed"},
      {"[7, 00]", 104, "leading zeros are not allowed"},
      {"18446744073709551616", 100, "integer 18446744073709551616 overflows 2^64-1"},
      {long_number, 100, "integer " + long_number.substr(0, 40) + "... overflows 2^64-1"},
      // Strings.
      {"\"abc", 104, "unterminated string"},
      {"\"a\nb\"", 102, "control character byte 0x0A in a string (must be escaped)"},
      {std::string("\"\0\"", 3), 101, "control character byte 0x00 in a string (must be escaped)"},
      {"\"a\\", 103, "unterminated escape"},
      {"\"\\q\"", 102, "unknown escape \\q"},
      {"\"\\u12G4\"", 105, "\\u escape needs 4 hex digits, got 'G'"},
      {"\"\\u12", 105, "unterminated \\u escape"},
      {"\"\\ud800x\"", 107, "high surrogate not followed by a \\u escape"},
      {"\"\\ud800\"", 107, "high surrogate not followed by a \\u escape"},
      {"\"\\ud800\\u0041\"", 112, "high surrogate not followed by a low one"},
      {"\"\\udc00\"", 106, "lone low surrogate in a \\u escape"},
      // Invalid UTF-8: the message names the sequence's first byte.
      {"\"a\xc3\x28\"", 102, "invalid UTF-8 (byte 0xC3) in a string"},
      {"\"\x80\"", 101, "invalid UTF-8 (byte 0x80) in a string"},      // stray continuation
      {"\"\xc0\xaf\"", 101, "invalid UTF-8 (byte 0xC0) in a string"},  // overlong
      {"\"\xe0\x9f\xbf\"", 101, "invalid UTF-8 (byte 0xE0) in a string"},
      {"\"\xed\xa0\x80\"", 101, "invalid UTF-8 (byte 0xED) in a string"},      // surrogate
      {"\"\xf4\x90\x80\x80\"", 101, "invalid UTF-8 (byte 0xF4) in a string"},  // past U+10FFFF
      {"\"\xf5\x80\x80\x80\"", 101, "invalid UTF-8 (byte 0xF5) in a string"},
      {"\"ok\xe2\x82", 103, "invalid UTF-8 (byte 0xE2) in a string"},  // cut by the end
      {"{\"\xff\":1}", 102, "invalid UTF-8 (byte 0xFF) in a string"},  // in a key
  };
}

TEST(JsonReader, EveryRefusalNamesItsCause) {
  for (const Refusal& refusal : refusals()) {
    EXPECT_EQ(error_of(refusal.text),
              "test: bad JSON at byte " + std::to_string(refusal.byte) + ": " + refusal.what)
        << "for " << ::testing::PrintToString(refusal.text);
  }
}

TEST(JsonReader, RepeatedKeyGoesToTheCallerFirst) {
  // The caller sees both keys (so it can say what the key names), and expect_end() refuses
  // the repetition when the caller did not.
  JsonReader json("{\"a\": 1, \"a\": 2}", "test: ");
  json.begin_object();
  std::string key;
  std::vector<uint64_t> values;
  while (json.next_key(key)) {
    EXPECT_EQ(key, "a");
    values.push_back(json.read_integer());
  }
  EXPECT_EQ(values, (std::vector<uint64_t>{1, 2}));
  try {
    json.expect_end();
    ADD_FAILURE() << "a repeated key was accepted";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "test: bad JSON at byte 9: duplicate key 'a'");
  }
  // The same key in two objects is no repetition.
  EXPECT_EQ(error_of("{\"a\":{\"a\":1},\"b\":{\"a\":{\"a\":[]}}}"), "(accepted)");
}

TEST(JsonWriter, EscapesAsNlohmannWrites) {
  std::string out;
  append_json_string(out, "q\" b\\ \n\t\b\f\r \x01\x1f\x7f \xc3\xa9");
  EXPECT_EQ(out, "\"q\\\" b\\\\ \\n\\t\\b\\f\\r \\u0001\\u001f\x7f \xc3\xa9\"");
  try {
    append_json_string(out, "ok\xe2\x28");
    ADD_FAILURE() << "invalid UTF-8 was written";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "a JSON string is not valid UTF-8 (byte 2)");
  }
}

TEST(FindInvalidUtf8, AcceptsValidAndLocatesInvalid) {
  EXPECT_EQ(find_invalid_utf8("plain \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf"),
            std::string_view::npos);
  EXPECT_EQ(find_invalid_utf8("ab\x80"), 2u);            // stray continuation byte
  EXPECT_EQ(find_invalid_utf8("\xc1\xbf"), 0u);          // overlong 2-byte
  EXPECT_EQ(find_invalid_utf8("\xe0\x9f\xbf"), 0u);      // overlong 3-byte
  EXPECT_EQ(find_invalid_utf8("\xf0\x8f\xbf\xbf"), 0u);  // overlong 4-byte
  EXPECT_EQ(find_invalid_utf8("x\xed\xbf\xbf"), 1u);     // surrogate U+DFFF
  EXPECT_EQ(find_invalid_utf8("\xf4\x90\x80\x80"), 0u);  // past U+10FFFF
  EXPECT_EQ(find_invalid_utf8("\xf5\x80\x80\x80"), 0u);
  EXPECT_EQ(find_invalid_utf8("\xe2\x82"), 0u);      // truncated
  EXPECT_EQ(find_invalid_utf8("\xe2\x28\xa1"), 0u);  // bad continuation
}

}  // namespace
}  // namespace engine::nn
