// The safetensors reader against files built by hand: valid ones laid out as Python's
// writer lays them out, and a table of hostile ones, each with the error it must give.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "kernels/error.h"
#include "nn/safetensors.h"
#include "tests/error_text.h"
#include "tests/nn/safetensors_test_files.h"

namespace engine::nn {
namespace {

using testing::file_claiming;
using testing::file_with_header;
using testing::to_bytes;

std::string parse_error(const std::vector<std::byte>& file) {
  try {
    SafetensorsReader::parse(file);
  } catch (const Error& error) {
    return error.what();
  }
  return "(accepted)";
}

using engine::testing::contains;

std::string tensor_json(const std::string& name, const std::string& dtype, const std::string& shape,
                        uint64_t begin, uint64_t end) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
         ",\"data_offsets\":[" + std::to_string(begin) + "," + std::to_string(end) + "]}";
}

// Two F32 [2, 2] tensors and metadata: the small valid file the truncation test cuts.
std::vector<std::byte> small_valid_file() {
  const std::string header = "{\"__metadata__\":{\"format\":\"pt\"}," +
                             tensor_json("a", "F32", "[2,2]", 0, 16) + "," +
                             tensor_json("b", "F32", "[2,2]", 16, 32) + "}";
  return file_with_header(header, 32);
}

TEST(SafetensorsRead, FileLaidOutAsPythonWritesIt) {
  // json.dumps-style spacing, a \u escape, tensors listed out of data order (older writers
  // sort by name), an unknown field (ignored, as the reference reader does), space padding.
  const std::string header =
      "{\"__metadata__\": {\"format\": \"pt\", \"note\": \"caf\\u00e9 \\\"ok\\\"\"}, "
      "\"layer.bias\": {\"dtype\": \"BF16\", \"shape\": [3], \"data_offsets\": [24, 30]}, "
      "\"layer.weight\": {\"dtype\": \"F32\", \"shape\": [2, 3], \"data_offsets\": [0, 24], "
      "\"extra\": {\"k\": [1, [2, {\"x\": \"y\"}]]}}}      ";
  std::vector<std::byte> file = file_with_header(header, 0);
  const std::vector<float> weight = {0, 1, 2, 3, 4, 5};
  const std::vector<std::byte> weight_bytes = testing::f32_bytes(weight);
  file.insert(file.end(), weight_bytes.begin(), weight_bytes.end());
  const std::vector<std::byte> bias_bytes = {std::byte{0x80}, std::byte{0x3f}, std::byte{0x00},
                                             std::byte{0x40}, std::byte{0x40}, std::byte{0x40}};
  // bf16 1, 2, 3
  file.insert(file.end(), bias_bytes.begin(), bias_bytes.end());

  const SafetensorsReader reader = SafetensorsReader::parse(file);
  ASSERT_EQ(reader.entries().size(), 2u);
  EXPECT_EQ(reader.entries()[0].name, "layer.bias");  // header order
  EXPECT_EQ(reader.entries()[1].name, "layer.weight");
  const SafetensorsEntry& w = reader.at("layer.weight");
  EXPECT_EQ(w.dtype, "F32");
  EXPECT_EQ(w.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(reader.read(w), weight_bytes);
  EXPECT_EQ(reader.read(reader.at("layer.bias")), bias_bytes);
  EXPECT_EQ(reader.metadata().at("note"), "caf\xc3\xa9 \"ok\"");
  EXPECT_EQ(reader.find("missing"), nullptr);
  EXPECT_TRUE(contains(
      [&] {
        try {
          reader.at("missing");
        } catch (const Error& e) {
          return std::string(e.what());
        }
        return std::string();
      }(),
      "<memory>: no tensor named 'missing'"));
}

TEST(SafetensorsRead, EmptyAndZeroSizedTensors) {
  EXPECT_TRUE(SafetensorsReader::parse(file_with_header("{}      ", 0)).entries().empty());
  const SafetensorsReader reader =
      SafetensorsReader::parse(file_with_header("{" + tensor_json("e", "F32", "[0,7]", 0, 0) + "," +
                                                    tensor_json("s", "I64", "[]", 0, 8) + "}",
                                                8));
  EXPECT_EQ(reader.read(reader.at("e")).size(), 0u);
  EXPECT_EQ(reader.read(reader.at("s")).size(), 8u);
}

TEST(SafetensorsRead, DestinationMustMatchTheTensor) {
  const std::vector<std::byte> file = small_valid_file();
  const SafetensorsReader reader = SafetensorsReader::parse(file);
  std::vector<std::byte> small(15);
  try {
    reader.read(reader.at("a"), small);
    FAIL() << "a 15-byte destination was accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "tensor 'a' has 16 bytes but the destination holds 15"));
  }
  SafetensorsEntry forged = reader.at("b");
  forged.end = 1000;
  EXPECT_THROW(reader.read(forged, small), Error);
}

TEST(SafetensorsRead, EveryTruncationIsAnError) {
  const std::vector<std::byte> file = small_valid_file();
  ASSERT_NO_THROW(SafetensorsReader::parse(file));
  const size_t data_start = file.size() - 32;
  for (size_t length = 0; length < file.size(); ++length) {
    const std::vector<std::byte> cut(file.begin(), file.begin() + static_cast<ptrdiff_t>(length));
    const std::string error = parse_error(cut);
    SCOPED_TRACE("truncated to " + std::to_string(length) + " bytes");
    if (length < 8) {
      EXPECT_TRUE(contains(error, "too short for the 8-byte header length"));
    } else if (length < data_start) {
      EXPECT_TRUE(contains(error, "header length " + std::to_string(data_start - 8) +
                                      " exceeds the file's " + std::to_string(length) + " bytes"));
    } else if (length < data_start + 16) {
      EXPECT_TRUE(contains(error,
                           "tensor 'a': data_offsets [0, 16] run past the end of the data "
                           "section"));
    } else {
      EXPECT_TRUE(contains(error, "tensor 'b': data_offsets [16, 32] run past the end"));
    }
  }
}

struct HostileCase {
  std::string label;
  std::vector<std::byte> file;
  std::string expected;
};

std::vector<HostileCase> hostile_cases() {
  const std::string a16 = tensor_json("a", "F32", "[4]", 0, 16);
  const auto with = [](const std::string& members, size_t data) {
    return file_with_header("{" + members + "}", data);
  };
  std::string deep_unknown = "{\"t\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1],\"x\":";
  deep_unknown += std::string(70, '[') + std::string(70, ']') + "}}";
  std::string ok_depth = "{\"t\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1],\"x\":";
  ok_depth += std::string(61, '[') + std::string(61, ']') + "}}";
  return {
      {"empty file", {}, "<memory>: the file has 0 bytes, too short"},
      {"header length past the end", file_claiming(100, "{}"),
       "<memory>: header length 100 exceeds the file's 10 bytes"},
      {"10 GB header length", file_claiming(10'737'418'240, "{}"),
       "header length 10737418240 exceeds the file's 10 bytes"},
      {"2^64-1 header length", file_claiming(UINT64_MAX, "{}"),
       "header length 18446744073709551615 exceeds"},
      {"empty header", file_with_header("", 0), "bad JSON at byte 8: unexpected end of input"},
      {"header not an object", file_with_header("[]", 0),
       "bad JSON at byte 8: the header must be a JSON object"},
      {"garbage after the object", file_with_header("{} x", 0),
       "bad JSON at byte 11: unexpected 'x' after the top-level value"},
      {"NUL padding", file_with_header(std::string("{}\0", 3), 0),
       "unexpected byte 0x00 after the top-level value"},
      {"unterminated object", file_with_header("{\"a\":{", 0), "unterminated object"},
      {"missing colon", file_with_header("{\"a\" 1}", 0), "expected ':' after an object key"},
      {"trailing comma in object", with(a16 + ",", 16), "expected a string key"},
      {"trailing comma in array", with(tensor_json("a", "F32", "[4,]", 0, 16), 16),
       "trailing comma in an array"},
      {"offsets out of range", with(tensor_json("a", "F32", "[100]", 0, 400), 16),
       "<memory>: tensor 'a': data_offsets [0, 400] run past the end of the data section (16 "
       "bytes"},
      {"offsets end before begin", with(tensor_json("a", "F32", "[4]", 16, 0), 16),
       "tensor 'a': data_offsets [16, 0] end before they begin"},
      {"overlap", with(a16 + "," + tensor_json("b", "F32", "[4]", 8, 24), 24),
       "<memory>: tensor 'b' at [8, 24) overlaps tensor 'a' at [0, 16)"},
      {"gap between tensors", with(a16 + "," + tensor_json("b", "F32", "[4]", 20, 36), 36),
       "<memory>: bytes [16, 20) of the data section belong to no tensor (a gap before tensor "
       "'b')"},
      {"gap at the start", with(tensor_json("a", "F32", "[4]", 4, 20), 20),
       "bytes [0, 4) of the data section belong to no tensor"},
      {"trailing data", with(a16, 17),
       "the data section has 17 bytes but the tensors end at byte 16 (1 trailing bytes)"},
      {"wrong byte count", with(tensor_json("fc.weight", "F32", "[10,5]", 0, 100), 100),
       "<memory>: tensor 'fc.weight': data_offsets [0, 100] but F32 [10, 5] needs 200 bytes"},
      {"size overflow", with(tensor_json("a", "F32", "[4294967296,4294967296]", 0, 0), 0),
       "tensor 'a': F32 [4294967296, 4294967296] needs more than 2^64-1 bytes"},
      {"dimension past int64", with(tensor_json("a", "U8", "[9223372036854775808]", 0, 0), 0),
       "tensor 'a': dimension 0 is 9223372036854775808, more than 2^63-1"},
      {"unknown dtype", with(tensor_json("a", "F33", "[4]", 0, 16), 16),
       "<memory>: tensor 'a': unknown dtype 'F33'"},
      {"dtype not a string", with("\"a\":{\"dtype\":4,\"shape\":[],\"data_offsets\":[0,4]}", 4),
       "tensor 'a': \"dtype\" must be a string"},
      {"shape not integers", with(tensor_json("a", "F32", "[\"4\"]", 0, 16), 16),
       "tensor 'a': \"shape\" must be an array of non-negative integers"},
      {"three data_offsets",
       with("\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1,2]}", 1),
       "tensor 'a': \"data_offsets\" must be [begin, end]"},
      {"one data_offset", with("\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1]}", 1),
       "tensor 'a': \"data_offsets\" must be [begin, end]"},
      {"missing shape", with("\"a\":{\"dtype\":\"U8\",\"data_offsets\":[0,1]}", 1),
       "tensor 'a': missing \"shape\""},
      {"duplicate field",
       with("\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"shape\":[1],"
            "\"data_offsets\":[0,1]}",
            1),
       "tensor 'a': duplicate key \"shape\""},
      {"tensor not an object", with("\"a\":[1]", 0), "tensor 'a': expected an object"},
      {"duplicate tensor names", with(a16 + "," + tensor_json("a", "F32", "[4]", 16, 32), 32),
       "<memory>: duplicate tensor name 'a'"},
      {"non-string metadata", with("\"__metadata__\":{\"epoch\":3}", 0),
       "<memory>: metadata 'epoch': value must be a string"},
      {"metadata not an object", with("\"__metadata__\":\"pt\"", 0),
       "\"__metadata__\" must be an object of strings"},
      {"duplicate metadata key", with("\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}", 0),
       "duplicate metadata key 'k'"},
      {"two metadata objects", with("\"__metadata__\":{},\"__metadata__\":{}", 0),
       "duplicate \"__metadata__\""},
      {"deep nesting", file_with_header(deep_unknown, 1), "nesting deeper than 64 levels"},
      {"nesting at the limit is fine, the size is not", file_with_header(ok_depth, 2),
       "1 trailing bytes"},
      {"invalid UTF-8", with(tensor_json("a\xc3\x28", "U8", "[1]", 0, 1), 1),
       "bad JSON at byte 11: invalid UTF-8 (byte 0xC3) in a string"},
      {"overlong UTF-8", with(tensor_json("\xc0\xaf", "U8", "[1]", 0, 1), 1),
       "invalid UTF-8 (byte 0xC0)"},
      {"UTF-8 surrogate", with(tensor_json("\xed\xa0\x80", "U8", "[1]", 0, 1), 1),
       "invalid UTF-8 (byte 0xED)"},
      {"UTF-8 past U+10FFFF", with(tensor_json("\xf4\x90\x80\x80", "U8", "[1]", 0, 1), 1),
       "invalid UTF-8 (byte 0xF4)"},
      {"UTF-8 cut by the header's end", file_with_header("{\"\xe2\x82", 0), "invalid UTF-8"},
      {"unknown escape", with(tensor_json("a\\q", "U8", "[1]", 0, 1), 1),
       "bad JSON at byte 12: unknown escape \\q"},
      {"short \\u escape", with(tensor_json("\\u12G4", "U8", "[1]", 0, 1), 1),
       "\\u escape needs 4 hex digits, got 'G'"},
      {"lone high surrogate", with(tensor_json("\\ud800x", "U8", "[1]", 0, 1), 1),
       "high surrogate not followed by a \\u escape"},
      {"high surrogate, then no low one", with(tensor_json("\\ud800\\u0041", "U8", "[1]", 0, 1), 1),
       "high surrogate not followed by a low one"},
      {"lone low surrogate", with(tensor_json("\\udc00", "U8", "[1]", 0, 1), 1),
       "lone low surrogate"},
      {"raw control character", with(tensor_json("a\nb", "U8", "[1]", 0, 1), 1),
       "control character byte 0x0A in a string (must be escaped)"},
      {"unterminated string", file_with_header("{\"abc", 0), "unterminated string"},
      {"number overflow",
       with("\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,18446744073709551616]}", 1),
       "integer 18446744073709551616 overflows 2^64-1"},
      {"largest integer is read, then found out of range",
       with(tensor_json("a", "U8", "[1]", 0, UINT64_MAX), 1),
       "data_offsets [0, 18446744073709551615] but U8 [1] needs 1 bytes"},
      {"negative number", with(tensor_json("a", "F32", "[-1]", 0, 16), 16),
       "negative numbers are not allowed"},
      {"fraction", with(tensor_json("a", "F32", "[4.0]", 0, 16), 16),
       "only integers are allowed (no fractions or exponents)"},
      {"exponent", with(tensor_json("a", "F32", "[4e0]", 0, 16), 16), "only integers are allowed"},
      {"leading zero", with(tensor_json("a", "F32", "[04]", 0, 16), 16),
       "leading zeros are not allowed"},
      {"literal", with("\"__metadata__\":{\"k\":null}", 0), "true, false and null are not allowed"},
  };
}

TEST(SafetensorsRead, HostileInputsGiveTheirOwnError) {
  for (const HostileCase& c : hostile_cases()) {
    EXPECT_TRUE(contains(parse_error(c.file), c.expected)) << c.label;
  }
}

}  // namespace
}  // namespace engine::nn
