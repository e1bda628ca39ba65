// Reader of the golden files written by tools/make_data_goldens.py and
// tools/make_augment_goldens.py: a magic line with the format version, comment lines, then one
// record per line (a keyword and space-separated fields). Plus the decoders of the field
// encodings the tools use.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace engine::data::testing {

struct GoldenRecord {
  std::string keyword;
  std::vector<std::string> fields;
};

// Reads ENGINE_DATA_GOLDEN_DIR/<name>.golden; throws std::runtime_error with the
// regeneration command when the file is missing or its magic or version is wrong.
std::vector<GoldenRecord> read_golden(const std::string& name);

// Only the records with this keyword.
std::vector<GoldenRecord> golden_records(const std::vector<GoldenRecord>& all,
                                         const std::string& keyword);

std::vector<uint8_t> decode_base64(const std::string& text);
std::vector<uint8_t> decode_hex(const std::string& text);
// 8 hex digits per value: little-endian float32 bits, as the tool writes them.
std::vector<float> decode_float_hex(const std::string& text);

}  // namespace engine::data::testing
