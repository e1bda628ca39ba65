// bfloat16 on the host: the same bits as CUDA's __nv_bfloat16, converted the same way
// (round to nearest even, NaN -> 0x7FFF), so CPU and GPU results compare bit for bit.
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>

namespace engine {

struct bf16 {
  uint16_t bits = 0;

  bf16() = default;
  explicit bf16(float value) : bits(from_float(value)) {}
  explicit operator float() const { return std::bit_cast<float>(uint32_t{bits} << 16); }

  static constexpr uint16_t from_float(float value) {
    const uint32_t x = std::bit_cast<uint32_t>(value);
    if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fff;  // any NaN becomes the canonical NaN
    const uint32_t remainder = x << 16;
    uint32_t upper = x >> 16;
    if (remainder > 0x80000000u || (remainder == 0x80000000u && (upper & 1u))) ++upper;
    return static_cast<uint16_t>(upper);
  }
  static bf16 from_bits(uint16_t bits) {
    bf16 value;
    value.bits = bits;
    return value;
  }
};
static_assert(sizeof(bf16) == 2);

inline float to_float(float value) {
  return value;
}
inline float to_float(bf16 value) {
  return static_cast<float>(value);
}

// Converts a float to T (float or bf16) with the rounding the GPU uses.
template <typename T>
inline T from_float(float value) {
  if constexpr (std::is_same_v<T, float>) {
    return value;
  } else {
    return T(value);
  }
}

}  // namespace engine
