// The header's JSON reader and string writer on their own.
#include <gtest/gtest.h>

#include <string>

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
