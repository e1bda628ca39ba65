// Safetensors files built byte by byte, as the format's description lays them out, so that
// the tests check the reader against the format rather than against our own writer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace engine::nn::testing {

inline std::vector<std::byte> to_bytes(std::string_view text) {
  std::vector<std::byte> bytes(text.size());
  if (!text.empty()) std::memcpy(bytes.data(), text.data(), text.size());
  return bytes;
}

inline void append_le64(std::vector<std::byte>& out, uint64_t value) {
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<std::byte>((value >> (8 * i)) & 0xFF));
}

// 8-byte length, `header` as is, then `data_bytes` bytes 0, 1, 2, ...
inline std::vector<std::byte> file_with_header(std::string_view header, size_t data_bytes) {
  std::vector<std::byte> file;
  append_le64(file, header.size());
  const std::vector<std::byte> text = to_bytes(header);
  file.insert(file.end(), text.begin(), text.end());
  for (size_t i = 0; i < data_bytes; ++i)
    file.push_back(static_cast<std::byte>(i & 0xFF));
  return file;
}

// A file whose length field claims `claimed_header_bytes` but holds `header` and no more.
inline std::vector<std::byte> file_claiming(uint64_t claimed_header_bytes,
                                            std::string_view header) {
  std::vector<std::byte> file;
  append_le64(file, claimed_header_bytes);
  const std::vector<std::byte> text = to_bytes(header);
  file.insert(file.end(), text.begin(), text.end());
  return file;
}

inline std::vector<std::byte> f32_bytes(const std::vector<float>& values) {
  std::vector<std::byte> bytes(values.size() * sizeof(float));
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;  // little-endian hosts only, as the engine itself
}

}  // namespace engine::nn::testing
