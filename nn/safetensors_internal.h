// Helpers the safetensors reader and writer share: sizes computed without overflow, and
// names and shapes as messages show them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nn/safetensors.h"

namespace engine::nn {

// numel(shape) * dtype size, or nullopt when that overflows 64 bits. Dimensions are >= 0 and
// the dtype is known (the callers check both first).
inline std::optional<uint64_t> tensor_bytes(std::string_view dtype,
                                            const std::vector<int64_t>& shape) {
  uint64_t bytes = safetensors_dtype_size(dtype);
  for (const int64_t dim : shape) {
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(dim), &bytes)) return std::nullopt;
  }
  return bytes;
}

// "[10, 5]"
inline std::string format_shape(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

// 'name' with control characters shown as \xNN and a hostile 100 MB name cut short, so that
// a message stays one readable line.
inline std::string quoted_for_message(std::string_view name) {
  constexpr size_t kMaxShown = 120;
  const bool cut = name.size() > kMaxShown;
  size_t shown = cut ? kMaxShown : name.size();
  // Never cut a UTF-8 sequence in half.
  while (cut && shown > 0 && (static_cast<unsigned char>(name[shown]) & 0xC0) == 0x80)
    --shown;
  std::string text = "'";
  for (const char c : name.substr(0, shown)) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7F || c == '\'' || c == '\\') {
      constexpr char kHex[] = "0123456789abcdef";
      text += "\\x";
      text.push_back(kHex[byte >> 4]);
      text.push_back(kHex[byte & 0xF]);
    } else {
      text.push_back(c);
    }
  }
  if (cut) text += "...(" + std::to_string(name.size()) + " bytes)";
  return text + "'";
}

}  // namespace engine::nn
