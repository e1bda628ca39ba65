#include "tests/data/golden.h"

#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace engine::data::testing {

namespace {

constexpr const char* kMagic = "ENGINE-DATA-GOLDEN";
constexpr int kVersion = 1;
constexpr const char* kRegenerate =
    "/usr/bin/python3 tools/make_data_goldens.py tests/data/golden (augment.golden: "
    "tools/make_augment_goldens.py)";

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  throw std::runtime_error(std::string("bad hex digit '") + c + "' in a golden file");
}

}  // namespace

std::vector<GoldenRecord> read_golden(const std::string& name) {
  const std::string path = std::string(ENGINE_DATA_GOLDEN_DIR) + "/" + name + ".golden";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("missing golden file " + path + "; regenerate: " + kRegenerate);
  std::string line;
  std::getline(in, line);
  std::istringstream magic_line(line);
  std::string magic;
  int version = 0;
  magic_line >> magic >> version;
  if (magic != kMagic || version != kVersion) {
    throw std::runtime_error(path + " starts with '" + line + "', expected '" + kMagic + " " +
                             std::to_string(kVersion) + "'; regenerate: " + kRegenerate);
  }
  std::vector<GoldenRecord> records;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    GoldenRecord record;
    fields >> record.keyword;
    for (std::string field; fields >> field;)
      record.fields.push_back(field);
    records.push_back(std::move(record));
  }
  return records;
}

std::vector<GoldenRecord> golden_records(const std::vector<GoldenRecord>& all,
                                         const std::string& keyword) {
  std::vector<GoldenRecord> selected;
  for (const GoldenRecord& record : all) {
    if (record.keyword == keyword) selected.push_back(record);
  }
  if (selected.empty()) throw std::runtime_error("no '" + keyword + "' records in a golden file");
  return selected;
}

std::vector<uint8_t> decode_base64(const std::string& text) {
  static const std::string alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<uint8_t> out;
  uint32_t buffer = 0;
  int bits = 0;
  for (const char c : text) {
    if (c == '=') break;
    const size_t value = alphabet.find(c);
    if (value == std::string::npos) throw std::runtime_error("bad base64 in a golden file");
    buffer = (buffer << 6) | static_cast<uint32_t>(value);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<uint8_t>(buffer >> bits));
    }
  }
  return out;
}

std::vector<uint8_t> decode_hex(const std::string& text) {
  if (text.size() % 2 != 0) throw std::runtime_error("odd-length hex in a golden file");
  std::vector<uint8_t> out(text.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<uint8_t>(hex_digit(text[2 * i]) * 16 + hex_digit(text[2 * i + 1]));
  }
  return out;
}

std::vector<float> decode_float_hex(const std::string& text) {
  const std::vector<uint8_t> bytes = decode_hex(text);
  std::vector<float> values(bytes.size() / 4);
  std::memcpy(values.data(), bytes.data(), values.size() * 4);  // little-endian host
  return values;
}

}  // namespace engine::data::testing
